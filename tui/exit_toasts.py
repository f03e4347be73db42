"""How many "job ended" toasts the dashboard shows: each of the first few, then one summary.

A build farm or a test matrix ends dozens of jobs a second. A toast (and a bell or desktop
alert for a failure) for each is noise nobody reads, and each toast is a widget that lives
five to eight seconds: at 20 exits a second the dashboard drew a hundred toasts at once and
its memory grew with every job (the soak, tools/soak.py, showed ~70 KiB a job).
:class:`ExitToasts` lets the first ``LIMIT`` exits of any ``WINDOW`` seconds be toasted one by
one and holds the rest; the screen shows the held ones as one summary toast ("9 more jobs
ended: 7 exit 0, 2 failed: build (exited 2), lint (killed)") when the window closes.

Plain Python (no Textual): the screen asks, shows and sets the timer.
"""

from __future__ import annotations

import time
from collections import deque
from collections.abc import Callable

from hermes_procs.core.supervisor.text import safe_line

from .sampler import JobRow

__all__ = ["ExitToasts", "summary"]

LIMIT = 3  # exits toasted one by one per window
WINDOW = 5.0  # seconds


class ExitToasts:
    """The rate limiter: :meth:`ended` says whether to toast a row now (True) or hold it."""

    def __init__(self, limit: int = LIMIT, window: float = WINDOW,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.limit, self.window, self._clock = limit, window, clock
        self._shown: deque[float] = deque()  # when the toasts of the window were shown
        self.held: list[JobRow] = []

    def ended(self, row: JobRow) -> bool:
        """True: toast `row` now. False: it is held for the summary (call :meth:`flush` after
        :meth:`wait` seconds; the first held row of a window is when to set that timer)."""
        now = self._clock()
        while self._shown and now - self._shown[0] >= self.window:
            self._shown.popleft()
        if len(self._shown) < self.limit and not self.held:
            self._shown.append(now)
            return True
        self.held.append(row)
        return False

    def wait(self) -> float:
        """Seconds until the window closes: when the held rows should be summed up."""
        if not self._shown:
            return 0.0
        return max(0.0, self.window - (self._clock() - self._shown[0]))

    def flush(self) -> list[JobRow]:
        """The held rows (now counted as one toast of a new window); [] when none."""
        rows, self.held = self.held, []
        if rows:
            self._shown.clear()
            self._shown.append(self._clock())
        return rows


def summary(rows: list[JobRow]) -> tuple[str, str, int]:
    """(title, message, failures) of the toast for held rows."""
    failed = [r for r in rows if r.label != "exited 0"]
    title = f"{len(rows)} more job{'s' if len(rows) != 1 else ''} ended"
    parts = [f"{len(rows) - len(failed)} exit 0"] + ([f"{len(failed)} failed"] if failed else [])
    message = ", ".join(parts)
    if failed:
        named = ", ".join(f"{safe_line(r.title)[:30]} ({r.label})" for r in failed[:3])
        message += f": {named}" + (", ..." if len(failed) > 3 else "")
    return title, message, len(failed)
