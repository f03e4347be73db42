"""The supervisor's `awaiting_input` and `quiet` events. Stdlib only (loaded by the supervisor).

The supervisor is the only piece that always runs, so it notices by itself when its job waits
for input or goes quiet, and appends one event to the home's event log:

- ``awaiting_input``: a process of the job is blocked reading its stdin or terminal
  (:func:`stats.waiting_for_input`), once per episode: an episode ends when the job prints
  something or is seen no longer reading.
- ``quiet``: the job has printed nothing for ``quiet_after`` seconds (set at spawn), once per
  quiet stretch: new output starts a new one.

It stays cheap: the loop calls :meth:`IdleWatch.check` after each wake-up, which does nothing
until CHECK_EVERY seconds have passed, and reads /proc only when no output arrived since the
previous check (a job that prints is neither waiting nor quiet).
"""

from __future__ import annotations

import os
import time

import stats

TYPE_CHECKING = False
if TYPE_CHECKING:
    from supervisor_state import SupervisorState

CHECK_EVERY = 0.5  # seconds between checks


class IdleWatch:
    """Watches one job for its supervisor (its pid, offset, exit, meta, _event, _tail_text)."""

    def __init__(self, sup: SupervisorState) -> None:
        self.sup = sup
        self.quiet_after = float(sup.meta.get("quiet_after") or 0) or None
        self.offset = sup.offset
        self.last_output = time.monotonic()
        self.next_check = self.last_output + CHECK_EVERY
        self.waiting = False  # inside an awaiting-input episode (its event sent)
        self.quiet_sent = False

    def timeout(self) -> float | None:
        """Seconds the loop may sleep before the next check (None: no more checks)."""
        if self.sup.exit is not None:
            return None
        return max(0.0, self.next_check - time.monotonic())

    def check(self) -> None:
        now = time.monotonic()
        if now < self.next_check or self.sup.exit is not None:
            return
        self.next_check = now + CHECK_EVERY
        if self.sup.offset != self.offset:  # it printed: neither waiting nor quiet
            self.offset, self.last_output = self.sup.offset, now
            self.waiting = self.quiet_sent = False
            return
        pids = stats.tree(os.getpid(), include_root=False)
        waiting = stats.waiting_for_input(pids, stats.fd_target(self.sup.pid, 0))
        if waiting and not self.waiting:
            self.sup._event("awaiting_input", command=self.sup.meta.get("command", ""),
                            output=self.sup._tail_text(1000))
        self.waiting = waiting
        quiet = now - self.last_output
        if self.quiet_after and not self.quiet_sent and quiet >= self.quiet_after:
            self.quiet_sent = True
            self.sup._event("quiet", command=self.sup.meta.get("command", ""), quiet_seconds=round(quiet, 1),
                            output=self.sup._tail_text(1000))
