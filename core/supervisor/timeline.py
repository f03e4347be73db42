"""When a job's output arrived: the sparse offset -> time index next to its log.

The supervisor appends one record to ``<jobdir>/times.idx`` when a burst of output arrives,
at most one every ``EVERY`` seconds: 16 bytes, the absolute log offset of the burst's first
byte and the wall-clock time it was read (milliseconds since the epoch), both unsigned
64-bit little-endian.  Offsets are absolute like every log offset (core/registry/logstore.py), so the
index survives log rotation; when the log cap drops the oldest segment the supervisor drops
the records before it (:func:`prune`), keeping the one that dates the first retained byte.
Times never go back within a file (a clock stepped back repeats the last time).

A byte's time is the time of the last record at or before its offset (bytes between two
records take the earlier one's time, at most ``EVERY`` seconds early); a line's time is its
first byte's.  Readers search the file in place (binary search with ``pread``): nothing is
loaded whole.

:func:`parse_since` turns the API's ``since=`` (seconds ago, a duration like ``"5m"`` or
``"1h30m"``, or an ISO 8601 time) into an epoch time.

Stdlib and bounds.py only: the supervisor imports this module by its plain name.
"""

from __future__ import annotations

import os

try:
    from .bounds import EARLIEST, LATEST
except ImportError:  # the supervisor imports us as a top-level module next to bounds.py
    from bounds import EARLIEST, LATEST

TYPE_CHECKING = False  # a type checker takes it as true; the supervisor does not load typing
if TYPE_CHECKING:
    from collections.abc import Callable
    from pathlib import Path
    from typing import Any

__all__ = ["EVERY", "RECORD", "TIMES_NAME", "TimeIndex", "parse_since", "prune", "read_since", "record",
           "records_between"]

TIMES_NAME = "times.idx"
RECORD = 16  # bytes: offset (u64 LE), time in ms since the epoch (u64 LE)
EVERY = 0.1  # seconds: at most one record this often


def record(offset: int, ms: int) -> bytes:
    """One index record: output from absolute ``offset`` on arrived at ``ms`` (epoch ms)."""
    return offset.to_bytes(8, "little") + ms.to_bytes(8, "little")


def _decode(raw: bytes, i: int = 0) -> tuple[int, int]:
    return int.from_bytes(raw[i:i + 8], "little"), int.from_bytes(raw[i + 8:i + 16], "little")


class TimeIndex:
    """A job's ``times.idx``, read in place.  ``TimeIndex(jobdir)``; use as a context manager
    (or call :meth:`close`).  ``exists`` is False when the job has no index (a job started by
    an older version); every lookup then answers None."""

    def __init__(self, jobdir: str | os.PathLike[str]) -> None:
        try:
            self._fd = os.open(os.path.join(jobdir, TIMES_NAME), os.O_RDONLY | os.O_CLOEXEC)
        except OSError:
            self._fd = -1
        self.exists = self._fd >= 0
        self._n = os.fstat(self._fd).st_size // RECORD if self.exists else 0

    def __enter__(self) -> TimeIndex:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        if self._fd >= 0:
            os.close(self._fd)
            self._fd = -1

    def __len__(self) -> int:
        return self._n

    def entry(self, i: int) -> tuple[int, float]:
        """Record ``i``: (absolute offset, epoch seconds)."""
        raw = os.pread(self._fd, RECORD, i * RECORD)
        if len(raw) < RECORD:
            raise IndexError(i)
        off, ms = _decode(raw)
        return off, ms / 1000.0

    def entries(self, first: int, count: int) -> list[tuple[int, float]]:
        """Records ``first .. first+count-1`` (clamped), read in one go."""
        first = max(0, first)
        count = min(count, self._n - first)
        if count <= 0:
            return []
        raw = os.pread(self._fd, count * RECORD, first * RECORD)
        out = []
        for i in range(0, len(raw) - RECORD + 1, RECORD):
            off, ms = _decode(raw, i)
            out.append((off, ms / 1000.0))
        return out

    def _last_at_or_before(self, offset: int) -> int:
        """Index of the last record whose offset is <= ``offset`` (-1: none)."""
        lo, hi = 0, self._n  # answer in [lo-1, hi-1]
        while lo < hi:
            mid = (lo + hi) // 2
            if self.entry(mid)[0] <= offset:
                lo = mid + 1
            else:
                hi = mid
        return lo - 1

    def time_at(self, offset: int) -> float | None:
        """When the byte at absolute ``offset`` arrived (epoch seconds); None if unknown."""
        i = self._last_at_or_before(offset)
        return self.entry(i)[1] if i >= 0 else None

    def times_at(self, offsets: list[int]) -> list[float | None]:
        """:meth:`time_at` of each offset (ascending offsets, e.g. a window of line starts):
        one search, then one read of the records the window spans."""
        if not offsets or not self._n:
            return [None] * len(offsets)
        first = max(0, self._last_at_or_before(offsets[0]))
        last = self._last_at_or_before(offsets[-1])
        recs = self.entries(first, max(1, last - first + 1))
        out: list[float | None] = []
        j = -1
        for off in offsets:
            while j + 1 < len(recs) and recs[j + 1][0] <= off:
                j += 1
            out.append(recs[j][1] if j >= 0 else None)
        return out

    def offset_at(self, when: float) -> int | None:
        """Absolute offset of the first output that arrived at or after ``when`` (epoch
        seconds); None when nothing did."""
        ms = when * 1000.0
        lo, hi = 0, self._n
        while lo < hi:
            mid = (lo + hi) // 2
            if self.entry(mid)[1] * 1000.0 < ms:
                lo = mid + 1
            else:
                hi = mid
        return self.entry(lo)[0] if lo < self._n else None


def records_between(jobdir: str | os.PathLike[str], start: int, end: int) -> list[tuple[int, int]]:
    """The raw records (absolute offset, epoch ms) that date the bytes [start, end): the last
    at or before ``start`` and every later one before ``end`` (a mirror of a remote job's log
    copies them with its bytes: core/remote/hosts.py)."""
    with TimeIndex(jobdir) as times:
        if not len(times):
            return []
        first = max(0, times._last_at_or_before(start))
        out: list[tuple[int, int]] = []
        for off, when in times.entries(first, len(times) - first):
            if off >= end and out:
                break
            out.append((off, round(when * 1000)))
        return out


def prune(path: str, keep_from: int) -> None:
    """Drop the records of output before absolute offset ``keep_from`` (rotated out of the log),
    keeping the last of them (it dates the first retained byte).  Rewrites ``path`` atomically."""
    with open(path, "rb") as f:
        raw = f.read()
    n = len(raw) // RECORD
    cut = 0
    while cut + 1 < n and _decode(raw, (cut + 1) * RECORD)[0] <= keep_from:
        cut += 1
    if cut == 0:
        return
    tmp = path + ".new"
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    try:
        os.write(fd, raw[cut * RECORD:n * RECORD])
    finally:
        os.close(fd)
    os.rename(tmp, path)


def read_since(jobdir: Path, since: object, limit: int, read_lines: Callable[..., dict[str, Any]]) -> dict[str, Any]:
    """``read_log(since=...)``: the last ``limit`` lines, none older than ``since``
    (:func:`parse_since`), as ``read_lines`` (:func:`hermes_procs.core.registry.logstore.read_lines`,
    given by the registry: this room is below it) returns them, plus ``since`` (the cutoff,
    ISO 8601 UTC).  Raises ValueError for a bad ``since`` or a job without an index."""

    # within the years a UTC stamp can show: 0001-01-01T00:00:00+14:00 is in year 0 there
    when = min(max(parse_since(since), EARLIEST), LATEST)
    with TimeIndex(jobdir) as times:
        if not times.exists:
            raise ValueError("this job has no output times (it was started by an older hermes-procs)")
        start = times.offset_at(when)
    nothing = start is None
    result = read_lines(jobdir, None, limit, since_offset=(1 << 62) if nothing else start)
    stamp = _utc(when)
    if nothing or (not result["output"] and result["showing"].startswith("no lines at")):
        result["showing"] = f"no output since {stamp} ({result['total_lines']} lines in all)"
    else:
        result["showing"] += f" (output since {stamp})"
    result["since"] = stamp
    return result


def _utc(when: float) -> str:
    from datetime import datetime, timezone

    stamp = datetime.fromtimestamp(when, timezone.utc)
    return f"{stamp.year:04d}" + stamp.strftime("-%m-%dT%H:%M:%SZ")  # %Y does not pad a year before 1000


_UNITS = {"ms": 0.001, "s": 1.0, "m": 60.0, "h": 3600.0, "d": 86400.0}


def parse_since(value: object, now: float | None = None) -> float:
    """The API's ``since=`` as an epoch time.  Accepts seconds ago (a number >= 0, or a string
    of one), a duration ago (``"90s"``, ``"5m"``, ``"1h30m"``, ``"2d"``; units ms s m h d) or
    an ISO 8601 time (``"2026-11-26T06:30:00"``, local time unless it names an offset or Z).
    Raises ValueError with a one-line message."""
    import re
    import time

    now = time.time() if now is None else now
    if isinstance(value, bool) or not isinstance(value, (int, float, str)):
        raise ValueError(f"since must be seconds ago, a duration like '5m' or an ISO time, not {value!r}")
    if isinstance(value, (int, float)):
        if not value >= 0 or value == float("inf"):
            raise ValueError(f"since must be a number of seconds >= 0, not {value!r}")
        return 0.0 if value >= now else now - float(value)  # before 1970: all of it (no overflow)
    text = value.strip()
    try:
        return parse_since(float(text), now) if text and text[0] not in "+-" else _iso(text)
    except ValueError:
        pass
    parts = re.findall(r"(\d+(?:\.\d+)?)\s*(ms|s|m|h|d)", text.lower())
    if parts and re.fullmatch(r"(?:\d+(?:\.\d+)?\s*(?:ms|s|m|h|d)\s*)+", text.lower()):
        return max(0.0, now - sum(float(n) * _UNITS[unit] for n, unit in parts))
    try:
        return _iso(text)
    except ValueError:
        raise ValueError(f"since must be seconds ago (30), a duration ('5m', '1h30m') or an ISO time "
                         f"('2026-11-26T06:30:00'), not {value!r}") from None


def _iso(text: str) -> float:
    from datetime import datetime

    if not text or not text[0].isdigit() or "-" not in text:
        raise ValueError(text)
    if text.endswith(("Z", "z")):
        text = text[:-1] + "+00:00"
    return datetime.fromisoformat(text).timestamp()  # naive: local time
