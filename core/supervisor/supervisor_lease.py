"""The job's lease (spawn's `lease`): the job lives only as long as its owner, another process.

meta.json names the owner by identity, `{"pid", "start_ticks"}`, so a pid reused by a new
process never counts as the owner. The supervisor watches it through a pidfd in its select
loop (a look every LEASE_POLL seconds where pidfds are missing) and, when the owner has ended,
kills the job's whole tree (completion_reason `killed`, SIGKILL after at most LEASE_GRACE
seconds) unless the job is pinned. `pin` / `unpin` (the PIN op) change that at any time; an
unpin after the owner ended kills at once. The state is kept in `lease.json` for the registry's
poll and list: `{"pinned": bool, "owner_ended": bool}`.

A mixin of supervisor_loop.Supervisor (it uses the supervisor's state); stdlib only.
"""

from __future__ import annotations

import os
import selectors
import time

import bounds
import proctree
from supervisor_state import SupervisorState

TYPE_CHECKING = False
if TYPE_CHECKING:
    from supervisor_clients import Client

LEASE_POLL = 0.5  # seconds between looks at the owner without a pidfd
LEASE_GRACE = 1.0  # the longest SIGTERM -> SIGKILL wait of a kill because the owner ended


class Lease(SupervisorState):
    def _init_lease(self) -> None:
        self.lease_owner = None
        self.lease_fd = -1
        self.lease_next = None
        self.pinned = False
        self.owner_ended = False
        lease = self.meta.get("lease")
        if lease is None:
            return
        try:
            self.lease_owner = (int(lease["pid"]), int(lease["start_ticks"]))
        except (KeyError, TypeError, ValueError):
            self._complain("ignoring a damaged lease in meta.json")

    def _watch_lease(self) -> None:
        """Start watching the owner (after the selector is set up): its pidfd, else a timer."""
        if self.lease_owner is None:
            return
        try:
            self.lease_fd = os.pidfd_open(self.lease_owner[0])
            self.sel.register(self.lease_fd, selectors.EVENT_READ, "lease")
        except (AttributeError, OSError):  # no pidfds here (or the pid is gone already)
            self.lease_fd = -1
        self._write_lease()
        self._look_at_owner()  # it may have ended before we looked, its pid reused since

    def _look_at_owner(self) -> None:
        """Called when the owner's pidfd is readable, or every LEASE_POLL without one."""
        if self.lease_owner is None or self.owner_ended:
            return
        if proctree.is_alive(*self.lease_owner):
            self.lease_next = None if self.lease_fd >= 0 else time.monotonic() + LEASE_POLL
            return
        self.owner_ended = True
        self.lease_next = None
        if self.lease_fd >= 0:
            self.sel.unregister(self.lease_fd)
            os.close(self.lease_fd)
            self.lease_fd = -1
        self._write_lease()
        self._end_if_unpinned()

    def _end_if_unpinned(self) -> None:
        if self.owner_ended and not self.pinned and self.exit is None:
            grace = bounds.setting(self.meta.get("kill_grace"), 3.0, bounds.MAX_SECONDS)
            self._start_kill(min(grace, LEASE_GRACE), "killed", None, "lease")

    def _pin(self, client: Client, pinned: object) -> None:
        """The PIN op: keep the job when the owner ends (pinned), or not."""
        if self.lease_owner is None:
            return self._reply(client, {"ok": False, "error": "this job has no lease"})
        if not isinstance(pinned, bool):
            return self._reply(client, {"ok": False, "error": "pinned must be true or false"})
        self.pinned = pinned
        self._write_lease()
        self._reply(client, {"ok": True, "pinned": pinned})
        self._end_if_unpinned()

    def _write_lease(self) -> None:
        self._write_json("lease.json", {"pinned": self.pinned, "owner_ended": self.owner_ended})
