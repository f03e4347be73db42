"""The supervisor's kill: the job's whole tree, in a helper thread (it sleeps through the grace
period) that hands its result back through the wake pipe. Only the job's own processes are
signalled (proctree's rule); a later kill with a shorter grace shortens the one under way.

A mixin of supervisor_loop.Supervisor (it uses the supervisor's state); stdlib only.
"""

from __future__ import annotations

import os
import threading
import time

import bounds
import proctree
from supervisor_state import SupervisorState

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    from supervisor_clients import Client


class Killer(SupervisorState):
    def _init_kill(self) -> None:
        self.kill_reason = None
        self.kill_by = None
        self.kill_thread = None
        self.kill_deadline = None
        self.kill_waiters = []
        self.kill_results = []

    def _kill_request(self, client: Client, req: dict[str, Any]) -> None:
        """A kill from the socket. One that expired while nobody read it (the supervisor was
        stopped and the caller gave up and killed directly) is refused, not done by surprise."""
        grace = bounds.seconds(req.get("grace", 3.0), "grace", allow_zero=True)
        expires = req.get("expires")
        if isinstance(expires, (int, float)) and not isinstance(expires, bool) and time.time() > expires:
            return self._reply(client, {"ok": False, "error": "the kill request expired before it was read"})
        self._start_kill(grace, str(req.get("reason", "killed")), client, "kill")

    def _start_kill(self, grace: float, reason: str, client: Client | None, by: str) -> None:
        """Start killing the tree; a kill already under way is joined, and its grace period
        shortened when this one asks for less. `by` is what asked, for the exit record's
        `killed_by`: kill (a client), lease (its owner ended), max_runtime, signal (SIGTERM to us)."""
        if client is not None:
            self.kill_waiters.append(client)
        if self.kill_thread is not None and self.kill_deadline is not None:
            self.kill_deadline.shorten(grace)
            return
        if self.exit is None:
            self.kill_reason, self.kill_by = reason, by
        self.kill_deadline = proctree.Deadline(grace)
        self.kill_thread = threading.Thread(target=self._kill_worker, args=(self.kill_deadline,), daemon=True)
        self.kill_thread.start()

    def _job_tree(self) -> proctree.Tree:
        """The job's processes: the root (while it is unreaped, its session too) and everything
        below us, the subreaper every orphan of the job is re-parented to."""
        me = os.getpid()
        known = {me: proctree.start_ticks(me), self.pid: self.ticks}
        return proctree.Tree(known, session=self.pid, leader_ticks=self.ticks)

    def _kill_worker(self, deadline: proctree.Deadline) -> None:
        root = (self.pid, self.ticks) if self.exit is None else None
        survivors = proctree.kill_tree(self._job_tree(), deadline, root=root, pty=self.pty)
        self.kill_results.append((survivors, self.kill_waiters))
        self.kill_waiters = []
        try:
            os.write(self.wake_w, b"k")
        except OSError:
            pass

    def _record_members(self) -> None:
        """Write down the job's processes still alive as we leave (pid + start ticks), so that
        `leftover_pids` and a kill without us find them, and only them, later."""
        alive = self._job_tree().scan()
        alive.pop(self.pid, None)
        self._write_json("members.json", {"members": sorted(alive.items()), "at": time.time()})
