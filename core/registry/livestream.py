"""A job's output as it happens, without gaps: the log before the stream, then live bytes.

`LiveStream.open(registry, session_id)` attaches to the job's supervisor (`registry.stream`).
`backlog()` gives the log bytes *before* the stream's first byte (cut at that exact offset, so
nothing is shown twice or skipped), `read()` the live bytes after it. When the supervisor drops
a reader that fell more than 4 MiB behind, `read()` reconnects by itself and (unless
`fill_gaps=False`, for a terminal that would rather skip ahead like tmux) first returns the
missed bytes from the log; when the job ends it returns what the stream did not deliver, then
b"". Used by `attach` (core/registry/attach.py), `log --follow` (cli/) and the dashboard.

Standard library only.
"""

from __future__ import annotations

import sys
import time
from typing import Any

from .model import JobInfo
from .protocol import Stream


class AttachError(ValueError):
    """The job cannot be attached or followed (unknown id, pipe job, already exited, ...).

    Raised before anything is written or the terminal is touched, so callers can show it."""


def resolve(registry: Any, session_id: str) -> JobInfo:
    """poll() the job; AttachError for an unknown or bad id."""
    info = registry.poll(session_id)
    if info.get("status") in ("error", "not_found"):
        raise AttachError(info.get("error") or f"No process with ID {session_id}")
    return JobInfo.from_dict(info, session_id)


def last_lines(data: bytes, count: int) -> bytes:
    """The last `count` lines of `data` (a final unfinished line counts as one)."""
    if count <= 0:
        return b""
    body = data[:-1] if data.endswith(b"\n") else data
    idx = len(body)
    for _ in range(count):
        idx = body.rfind(b"\n", 0, idx)
        if idx < 0:
            return data
    return data[idx + 1:]


MAX_BEFORE = 8 << 20  # bytes of the log before the live output read at most (a 50 MB line is cut)


def log_before(registry: Any, session_id: str, end: int | None, *, max_lines: int | None = None,
               max_bytes: int = 1 << 20) -> bytes:
    """The raw log bytes before absolute offset `end` (None: the current end): the last
    `max_bytes`, or, when `max_lines` is given, the last `max_lines` lines (read in windows
    from `max_bytes` up, doubling, until they hold that many lines or reach the log's start or
    MAX_BEFORE bytes: a line longer than that comes cut, its end kept).
    Read through `registry.log_bytes`, so it works for jobs on remote hosts too."""
    if end is None:
        end = _checked(registry.log_bytes(session_id, None, None, 1))["total"]
    size = max_bytes
    while True:
        data = log_range(registry, session_id, max(0, end - size), end)
        if max_lines is None:
            return data
        if len(data) < size or data.count(b"\n") > max_lines or size >= MAX_BEFORE:
            return last_lines(data, max_lines)
        size *= 2


def log_range(registry: Any, session_id: str, start: int, end: int | None) -> bytes:
    """Log bytes [start, end) (absolute offsets; end None: to the current end), in chunks of
    at most what one `log_bytes` call returns; b"" for an empty range."""
    chunks = []
    while end is None or start < end:
        data = _checked(registry.log_bytes(session_id, start, end))
        if not data["data"]:
            break
        chunks.append(data["data"])
        start = data["end"]
    return b"".join(chunks)


def _checked(result: dict[str, Any]) -> dict[str, Any]:
    if "data" not in result:
        raise AttachError(result.get("error") or "the job's log cannot be read")
    return result


def exit_summary(registry: Any, session_id: str, wait_s: float = 2.0) -> tuple[str, JobInfo | None]:
    """("proc_x exited with code N", the job) once its exit is recorded (waits up to wait_s);
    ("proc_x output stream ended", None) when it is not."""
    result = registry.wait(session_id, timeout=wait_s)
    if result.get("status") != "exited":
        result = registry.poll(session_id)
    if result.get("status") != "exited":
        return f"{session_id} output stream ended", None
    job = JobInfo.from_dict(result, session_id)
    return f"{job.session_id} {job.ended_phrase()}", job


class LiveStream:
    """A job's live output that survives being dropped; see the module docstring."""

    def __init__(self, registry: Any, session_id: str, stream: Stream, *, input: bool, source: str,
                 fill_gaps: bool) -> None:
        self.registry = registry
        self.session_id = session_id
        self._stream = stream
        self._input = input
        self._source = source
        self._fill_gaps = fill_gaps
        self._start = stream.offset
        self.ended = False

    @classmethod
    def open(cls, registry: Any, session_id: str, *, input: bool = False, source: str = "cli",
             fill_gaps: bool = True) -> LiveStream | None:
        """Attach to the job; None when it has no live supervisor (finished, or lost)."""
        stream = cls._connect(registry, session_id, input, source)
        if stream is None:
            return None
        return cls(registry, session_id, stream, input=input, source=source, fill_gaps=fill_gaps)

    @staticmethod
    def _connect(registry: Any, session_id: str, input: bool, source: str) -> Stream | None:
        try:
            stream: Stream = registry.stream(session_id, input=input, source=source)
            return stream
        except Exception:  # noqa: BLE001 - SupervisorGone, IdError, OSError: no live job
            return None

    @property
    def offset(self) -> int:
        """Absolute log offset of the next byte `read` returns."""
        return self._stream.offset

    def backlog(self, *, max_lines: int | None = None, max_bytes: int = 1 << 20) -> bytes:
        """The log bytes before the first live byte (see `log_before`)."""
        return log_before(self.registry, self.session_id, self._start, max_lines=max_lines,
                          max_bytes=max_bytes)

    def fileno(self) -> int:
        """For select(): readable when `read` has something (it changes on reconnect)."""
        return self._stream.fileno()

    def read(self, timeout: float | None) -> bytes | None:
        """Live bytes; None when nothing came within `timeout`; b"" once the job's output ended."""
        if self.ended:
            return b""
        try:
            data = self._stream.read(timeout)
        except OSError:
            data = b""
        if data != b"":
            return data
        return self._after_drop()

    def _after_drop(self) -> bytes | None:
        """The stream ended: reconnect if the job still runs (it dropped us), else finish."""
        lost_from = self._stream.offset
        fresh = None
        if self._poll_when_reachable().get("status") == "running":
            fresh = self._connect(self.registry, self.session_id, self._input, self._source)
        self._stream.close()
        if fresh is None:
            self.ended = True
            # whatever the stream did not deliver (we may have been dropped just before the end)
            return self._log_range(lost_from, None) if self._fill_gaps else b""
        self._stream = fresh
        gap = self._log_range(lost_from, fresh.offset) if self._fill_gaps else b""
        return gap or None

    def _poll_when_reachable(self) -> dict[str, Any]:
        """poll(); while the job's host is unreachable (core/remote/client.py), keep trying: the job
        runs on over there, and the stream resumes from the exact offset it reached."""
        info: dict[str, Any] = self.registry.poll(self.session_id)
        if info.get("host_state") == "unreachable":
            sys.stderr.write(f"[{info.get('error')}; reconnecting]\r\n")
            while info.get("host_state") == "unreachable":
                time.sleep(1.0)
                info = self.registry.poll(self.session_id)
        return info

    def _log_range(self, start: int, end: int | None) -> bytes:
        return log_range(self.registry, self.session_id, start, end)

    def send(self, data: bytes) -> None:
        """Type into the job (opened with input=True)."""
        self._stream.send(data)

    def close(self) -> None:
        self._stream.close()

    def __enter__(self) -> LiveStream:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
