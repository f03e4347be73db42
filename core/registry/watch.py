"""Push instead of poll: wake up when something happens in a state home.

    with HomeWatch(home) as watch:
        while True:
            watch.wait(timeout=5.0)   # True: something changed (re-read what you show)
            ...

What it sees: a job folder appearing or going (`jobs/`: a spawn renames its staged folder into
place, prune removes it) and every line appended to `events.jsonl` (a job started, exited,
matched a watch pattern...; the exit record is on disk before its event is). Output written to
a job's log is not watched (it would wake readers on every write); follow it through the job's
socket.

Linux inotify through ctypes (stdlib only); where it is missing (not Linux, no more inotify
instances) it falls back to comparing the folder's and the log's stat every `poll_interval`
seconds. A wake-up may be spurious; a change is never lost, only coalesced.
"""

from __future__ import annotations

import os
import select
import time
from pathlib import Path

IN_MODIFY = 0x2
IN_MOVED_FROM = 0x40
IN_MOVED_TO = 0x80
IN_CREATE = 0x100
IN_DELETE = 0x200
IN_DELETE_SELF = 0x400
IN_MOVE_SELF = 0x800
IN_NONBLOCK = 0o4000
IN_CLOEXEC = 0o2000000
_HOME_MASK = IN_MODIFY | IN_CREATE | IN_MOVED_TO | IN_DELETE | IN_DELETE_SELF | IN_MOVE_SELF
# no IN_CREATE: a job folder appears by a rename; a wake-up when its staged copy is made
# (`.new-ID`) would have a reader list the jobs before the new one is there
_JOBS_MASK = IN_MOVED_TO | IN_DELETE | IN_MOVED_FROM | IN_DELETE_SELF | IN_MOVE_SELF


class HomeWatch:
    """Wake-ups for changes under one state home (see the module docstring)."""

    def __init__(self, home: str | os.PathLike[str], poll_interval: float = 0.5, use_inotify: bool = True) -> None:
        self.home = Path(home)
        self.poll_interval = poll_interval
        self.fd = _inotify(self.home) if use_inotify else None
        self._stamp = None if self.fd is not None else self._poll_stamp()

    @property
    def pushed(self) -> bool:
        """True when changes are pushed by the kernel (inotify), False when polled."""
        return self.fd is not None

    def fileno(self) -> int | None:
        """The inotify descriptor (readable when something changed), for a caller's own select."""
        return self.fd

    def wait(self, timeout: float | None = None) -> bool:
        """Block until something changed (True) or `timeout` seconds passed (False)."""
        if self.fd is None:
            return self._poll(timeout)
        ready, _, _ = select.select([self.fd], [], [], timeout)
        if not ready:
            return False
        self.drain()
        return True

    def drain(self) -> None:
        """Forget the changes seen so far (after a select of your own said the fd is ready)."""
        if self.fd is None:
            return
        try:
            while os.read(self.fd, 65536):
                pass
        except BlockingIOError:
            pass

    def close(self) -> None:
        if self.fd is not None:
            os.close(self.fd)
            self.fd = None

    def __enter__(self) -> HomeWatch:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # ---- the fallback ------------------------------------------------------------------
    def _poll_stamp(self) -> tuple[tuple[int, int, int] | None, ...]:
        stamp: list[tuple[int, int, int] | None] = []
        for path in (self.home / "jobs", self.home / "events.jsonl"):
            try:
                st = os.stat(path)
                stamp.append((st.st_ino, st.st_size, st.st_mtime_ns))
            except OSError:
                stamp.append(None)
        return tuple(stamp)

    def _poll(self, timeout: float | None) -> bool:
        deadline = None if timeout is None else time.monotonic() + timeout
        while True:
            stamp = self._poll_stamp()
            if stamp != self._stamp:
                self._stamp = stamp
                return True
            left = None if deadline is None else deadline - time.monotonic()
            if left is not None and left <= 0:
                return False
            time.sleep(self.poll_interval if left is None else min(self.poll_interval, left))


def _inotify(home: Path) -> int | None:
    """An inotify fd watching the home and its jobs folder, or None where that is impossible."""
    try:
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)
        init, add = libc.inotify_init1, libc.inotify_add_watch
    except (OSError, AttributeError):
        return None
    fd: int = init(IN_NONBLOCK | IN_CLOEXEC)
    if fd < 0:
        return None
    for path, mask in ((home, _HOME_MASK), (home / "jobs", _JOBS_MASK)):
        if add(fd, os.fsencode(path), mask) < 0:
            os.close(fd)
            return None
    return fd
