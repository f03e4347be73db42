"""Live output for Hermes' ``on_output`` sink (the desktop app's agent-terminal tabs), read from the
jobs' durable logs.

Stock Hermes calls ``on_output(session, chunk)`` from the thread that reads the job's pipe, so a
slow sink slows the job. Here one thread follows the logs the supervisors write: it reads at most
``CHUNK`` bytes of a job per turn, decodes them (a character split between two reads is kept for
the next), and calls the sink with the text. A job never waits for it. When the sink falls more
than ``SKIP_AFTER`` bytes behind a job that floods output, it skips ahead to the last ``CHUNK``
bytes (the tab shows the latest output, as a terminal would) and says so in the stream.

As in Hermes, output goes to the sink while one is set: a job started with a sink set is
followed from its first byte, the running jobs present when a sink is set from their current
end; following ends once a job has exited and its log is read, or when the sink is unset.
"""

from __future__ import annotations

import codecs
import threading
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # pragma: no cover
    from .compat_session import ProcessSession

__all__ = ["OutputFollower"]

CHUNK = 64 << 10
SKIP_AFTER = 4 << 20
INTERVAL = 0.05  # seconds between looks at the logs


class _Follow:
    def __init__(self, session: ProcessSession, registry: Any) -> None:
        self.session = session
        self.registry = registry
        self.offset = 0
        self.decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")


class OutputFollower:
    """Feeds ``sink()`` (read at each call: the adapter's ``on_output``) from the jobs it follows."""

    def __init__(self, sink: Callable[[], Any]) -> None:
        self._sink = sink
        self._jobs: dict[str, _Follow] = {}
        self._lock = threading.Lock()
        self._wake = threading.Event()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def follow(self, session: ProcessSession, registry: Any, from_start: bool = True) -> None:
        """Stream `session`'s output from its first byte (else from now) while a sink is set."""
        if self._sink() is None:
            return
        job = _Follow(session, registry)
        if not from_start:
            got = registry.log_bytes(session.id, max_bytes=1)
            job.offset = int(got.get("total", 0)) if isinstance(got, dict) else 0
        with self._lock:
            self._jobs.setdefault(session.id, job)
        self.poke()

    def stop_all(self) -> None:
        """The sink was unset: nothing is followed any more."""
        with self._lock:
            self._jobs.clear()

    def poke(self) -> None:
        """A sink was set or a job added: start the thread if needed."""
        with self._lock:
            if self._sink() is None or not self._jobs or self._stop.is_set():
                return
            if self._thread is None or not self._thread.is_alive():
                self._thread = threading.Thread(target=self._run, name="hermes-procs-on-output", daemon=True)
                self._thread.start()
        self._wake.set()

    def close(self) -> None:
        self._stop.set()
        self._wake.set()
        thread = self._thread
        if thread is not None and thread is not threading.current_thread():
            thread.join(timeout=2)

    def _run(self) -> None:
        while not self._stop.is_set():
            sink = self._sink()
            with self._lock:
                jobs = list(self._jobs.values())
            if sink is None or not jobs:
                return  # poke() starts a new thread when there is something to do again
            busy = False
            for job in jobs:
                busy = self._turn(job, sink) or busy
            if not busy:
                self._wake.wait(INTERVAL)
                self._wake.clear()

    def _turn(self, job: _Follow, sink: Callable[[Any, str], Any]) -> bool:
        """Hand one chunk of `job` to the sink; True when there may be more right away."""
        exited = job.session.exited  # read first: output written before the exit is then in the log
        got = job.registry.log_bytes(job.session.id, start=job.offset, max_bytes=CHUNK)
        if not isinstance(got, dict) or got.get("status") not in ("running", "exited"):
            self._drop(job)  # pruned, or a host that went away
            return False
        total, note = int(got.get("total", 0)), ""
        if total - job.offset > SKIP_AFTER:
            job.offset, note = max(0, total - CHUNK), "\n[... output skipped: the view fell behind ...]\n"
            got = job.registry.log_bytes(job.session.id, start=job.offset, max_bytes=CHUNK)
        data = got.get("data") or b""
        job.offset = int(got.get("end", job.offset))
        chunk = note + job.decoder.decode(data, final=exited and job.offset >= total)
        if chunk:
            try:
                sink(job.session, chunk)
            except Exception:  # noqa: BLE001 - as in Hermes: a failing sink never stops the stream
                pass
        if exited and job.offset >= total:
            self._drop(job)
        return bool(data) and job.offset < total

    def _drop(self, job: _Follow) -> None:
        with self._lock:
            self._jobs.pop(job.session.id, None)
