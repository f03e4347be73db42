"""The selected job's recent samples: what the resource sparklines draw (tui/sparklines.py).

:class:`TrendRecorder` runs in the sampler thread: it keeps the last :data:`HISTORY` samples of
the ONE selected job, taken from the list rows the sampler reads anyway (``cpu_percent``,
``rss_bytes``, ``output_bytes``: nothing new is sampled, and nothing for jobs nobody looks at),
at most one point per sampler interval. Selecting another job starts a new history. Each
sample becomes an immutable :class:`Trend` the UI can hold without locks.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass
from typing import Protocol

__all__ = ["HISTORY", "Trend", "TrendRecorder"]

HISTORY = 120  # samples kept: two minutes at the sampler's one a second


@dataclass(frozen=True, slots=True)
class Trend:
    """The selected job's recent samples, oldest first; `first` counts the samples dropped
    before them (so a column always covers the same samples)."""

    session_id: str
    cpu: tuple[float, ...] = ()
    rss: tuple[int, ...] = ()
    rate: tuple[float, ...] = ()  # output bytes per second
    first: int = 0
    running: bool = True
    seconds: float = 0.0  # the time the samples cover


class Sample(Protocol):
    """What a trend takes of a job's row (sampler.JobRow, whose thread records the trend)."""

    @property
    def session_id(self) -> str: ...
    @property
    def running(self) -> bool: ...
    @property
    def unreachable(self) -> bool: ...
    @property
    def cpu(self) -> float | None: ...
    @property
    def rss(self) -> int | None: ...
    @property
    def output_bytes(self) -> int | None: ...


class TrendRecorder:
    """The history of the selected job (used by the sampler thread only)."""

    def __init__(self, interval: float = 1.0, size: int = HISTORY) -> None:
        self.interval = interval
        self.min_gap = interval * 0.9  # a sample poked in between adds no point
        self.size = size
        self._reset(None)

    def _reset(self, session_id: str | None) -> None:
        self.session_id = session_id
        self.cpu: deque[float] = deque(maxlen=self.size)
        self.rss: deque[int] = deque(maxlen=self.size)
        self.rate: deque[float] = deque(maxlen=self.size)
        self.times: deque[float] = deque(maxlen=self.size)
        self.count = 0  # points ever added
        self._last: tuple[float, int | None] | None = None  # (time, output_bytes) of the last look

    def add(self, row: Sample | None, now: float) -> Trend | None:
        """Record `row` (the selected job's row, None when nothing is selected) sampled at `now`;
        return the history to show."""
        if row is None:
            self._reset(None)
            return None
        if row.session_id != self.session_id:
            self._reset(row.session_id)
        live = row.running and not row.unreachable
        if live and (self._last is None or now - self._last[0] >= self.min_gap):
            if self._last is not None:  # the first look only sets where the output stood
                before = self._last[1]
                wrote = row.output_bytes - before if row.output_bytes is not None and before is not None else 0
                self.cpu.append(float(row.cpu or 0.0))
                self.rss.append(int(row.rss or 0))
                self.rate.append(max(0, wrote) / max(now - self._last[0], 1e-3))
                self.times.append(now)
                self.count += 1
            self._last = (now, row.output_bytes)
        covered = self.times[-1] - self.times[0] + self.interval if self.times else 0.0
        return Trend(row.session_id, tuple(self.cpu), tuple(self.rss), tuple(self.rate),
                     self.count - len(self.cpu), live, covered)
