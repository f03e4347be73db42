"""The supervisor's kill: the job's whole tree, in a helper thread (it sleeps through the grace
period) that hands its result back through the wake pipe.

A mixin of supervisor_loop.Supervisor (it uses the supervisor's state); stdlib only.
"""

import os
import threading

import proctree


class Killer:
    def _init_kill(self) -> None:
        self.kill_reason = None
        self.kill_thread = None
        self.kill_waiters: list = []
        self.kill_results: list = []

    def _start_kill(self, grace: float, reason: str, client) -> None:
        if client is not None:
            self.kill_waiters.append(client)
        if self.kill_thread is not None:
            return
        if self.exit is None:
            self.kill_reason = reason
        self.kill_thread = threading.Thread(target=self._kill_worker, args=(grace,), daemon=True)
        self.kill_thread.start()

    def _kill_worker(self, grace: float) -> None:
        root = self.pid if self.exit is None else None
        survivors = proctree.kill_tree(root, self.ticks, extra_root=os.getpid(), session=self.pid, grace=grace,
                                       hangup=self.pty)
        self.kill_results.append((survivors, self.kill_waiters))
        self.kill_waiters = []
        try:
            os.write(self.wake_w, b"k")
        except OSError:
            pass
