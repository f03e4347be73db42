"""A stack's folder in the state home, and how clients and its supervisor meet there.

    <home>/stacks/<name>/          0700
      spec.json         the validated stack `up` wrote (model.StackSpec), read by the supervisor
      state.json        written by the supervisor at every change: the stack's state, its
                        pid and start ticks, each job's state, session id, restarts, message
      supervisor.lock   flock held by the running supervisor for its whole life
      start.lock        flock held by a client while it starts a supervisor (no two at once)
      requests/         one JSON file per request (down, restart, reload), taken in name order
      supervisor.log    the supervisor's stderr

A client asks by writing a request file (atomically) and sending the supervisor SIGUSR1 (only
to the pid recorded in state.json with its start ticks); the supervisor wakes, takes the file
and answers through state.json. Liveness is the lock, not the pid: a supervisor holds
supervisor.lock until it exits, so a stale state.json is never mistaken for a live one.
"""

from __future__ import annotations

import fcntl
import os
import shutil
import signal
import time
from pathlib import Path
from typing import Any

from .core_api import check_private_dir, ensure_private_dir, open_nofollow, read_json, send, write_json_atomic
from .model import STACK_NAME, StackError, check_name

STACKS = "stacks"


def stacks_dir(home: Path, create: bool = False) -> Path:
    """<home>/stacks, made (0700) only for `create`: looking at stacks leaves a home as it was.
    One that exists must be a private folder of ours, never a link planted to elsewhere
    (StackError otherwise)."""
    path = home / STACKS
    if create or os.path.lexists(path):
        _private(path, create)
    return path


def stack_dir(home: Path, name: str, create: bool = False) -> Path:
    """The stack's folder, a private folder of ours like stacks/ (a link planted there is never
    followed); StackError when it does not exist (and `create` is false) or is not one."""
    path = stacks_dir(home, create) / check_name(name)
    if not create and not os.path.lexists(path):
        known = list_names(home)
        raise StackError(f"no stack named {name!r}" + (f" (stacks: {', '.join(known)})" if known else ""))
    _private(path, create)
    return path


def _private(path: Path, create: bool) -> None:
    """Make (for `create`) or check a private folder of ours; StackError naming it otherwise."""
    try:
        ensure_private_dir(path) if create else check_private_dir(path)
    except ValueError as exc:
        if not os.path.lexists(path):  # it could not be made (a read-only home): why
            raise StackError(str(exc)) from None
        raise StackError(f"{path} is not a private folder of yours (a link, another owner's, or writable "
                         "by others): nothing in it is used; remove it") from None


def list_names(home: Path) -> list[str]:
    """The stacks of the home: the private folders of ours in stacks/ (a link, or a folder others
    can write to, is none: it is left out of every listing, not an error for all of them)."""
    try:
        entries = list(os.scandir(stacks_dir(home)))
    except OSError:
        return []
    return sorted(e.name for e in entries if e.is_dir(follow_symlinks=False) and _is_private(Path(e.path)))


def _is_private(path: Path) -> bool:
    try:
        check_private_dir(path)
    except ValueError:
        return False
    return True


def read_state(folder: Path) -> dict[str, Any] | None:
    try:
        return read_json(folder / "state.json")
    except (OSError, ValueError):
        return None


def write_state(folder: Path, state: dict[str, Any]) -> None:
    write_json_atomic(folder / "state.json", state)


def read_spec(folder: Path) -> dict[str, Any]:
    try:
        data = read_json(folder / "spec.json")
    except (OSError, ValueError) as exc:
        raise StackError(f"{folder.name}: spec.json cannot be read ({exc}); run up again") from None
    if data is None:
        raise StackError(f"{folder.name}: no spec.json; run up again")
    return data


class FolderGone(StackError):
    """The lock was taken on a file that is no longer the stack's: `prune` removed the stack's
    folder while the caller waited for the lock."""


class Lock:
    """An flock on a file of the stack's folder (held until close). FolderGone when, once
    taken, the file is no longer in the folder (prune removed it meanwhile)."""

    def __init__(self, path: Path, wait: bool) -> None:
        self.fd = open_nofollow(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC)
        try:
            fcntl.flock(self.fd, fcntl.LOCK_EX | (0 if wait else fcntl.LOCK_NB))
            if not _same_file(self.fd, path):
                raise FolderGone(f"stack {path.parent.name} was pruned meanwhile")
        except (OSError, StackError):
            os.close(self.fd)
            raise

    def close(self) -> None:
        os.close(self.fd)

    def __enter__(self) -> Lock:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _same_file(fd: int, path: Path) -> bool:
    try:
        here, there = os.fstat(fd), os.lstat(path)
    except FileNotFoundError:
        return False
    return (here.st_dev, here.st_ino) == (there.st_dev, there.st_ino)


def start_lock(home: Path, name: str, create: bool) -> tuple[Path, Lock]:
    """The stack's folder (made for `create`) and its start.lock, taken (waiting for a client
    starting it). A folder that prune removed meanwhile is made again for `create`; otherwise
    StackError: there is no such stack now."""
    for _ in range(5):
        folder = stack_dir(home, name, create=create)
        try:
            return folder, Lock(folder / "start.lock", wait=True)
        except FolderGone:
            continue
        except FileNotFoundError:
            if not create:
                raise StackError(f"no stack named {name!r} (it was pruned)") from None
    raise StackError(f"stack {name} was removed again and again while it was being started")


def supervisor_alive(folder: Path) -> bool:
    """True while a supervisor holds the stack's supervisor.lock."""
    try:
        Lock(folder / "supervisor.lock", wait=False).close()
    except BlockingIOError:
        return True
    except (OSError, FolderGone):
        return False
    return False


def prune_down(home: Path, too_old: float) -> list[str]:
    """Remove the folder of every stack that is down and whose state has not changed since
    `too_old` (a time); their names. A stack being started (start.lock held) or supervised is
    left alone."""
    try:
        names = list_names(home)
    except StackError:  # stacks/ is not a private folder of ours (a planted link): nothing there is ours
        return []
    return [name for name in names if STACK_NAME.fullmatch(name) and _remove_if_down(stacks_dir(home) / name, too_old)]


def _remove_if_down(folder: Path, too_old: float) -> bool:
    try:
        with Lock(folder / "start.lock", wait=False):  # no `up` or `restart` of it meanwhile
            if supervisor_alive(folder) or not _down_since(folder, too_old):
                return False
            shutil.rmtree(folder)  # a client waiting on start.lock sees it gone (Lock: FolderGone)
            return True
    except (OSError, StackError):  # being started, removed by another prune, or not ours to remove
        return False


def _down_since(folder: Path, too_old: float) -> bool:
    """The stack is down and its state was last written before `too_old` (its folder's time if
    it never was). A state that exists and cannot be read is not taken for down: the jobs of a
    stack whose supervisor died may still run, and only that state lets a new one take over."""
    state_path = folder / "state.json"
    state = read_state(folder)
    if state is None and os.path.lexists(state_path):
        return False
    if ((state or {}).get("state") or "down") != "down":
        return False
    return os.lstat(state_path if state is not None else folder).st_mtime < too_old


def post(folder: Path, request: dict[str, Any]) -> None:
    """Leave a request for the supervisor and wake it (SIGUSR1, identity-checked)."""
    requests = ensure_private_dir(folder / "requests")
    name = f"{time.time_ns():020d}-{os.getpid()}.json"
    write_json_atomic(requests / name, request)
    wake(folder)


def wake(folder: Path) -> bool:
    sup = (read_state(folder) or {}).get("supervisor") or {}
    pid, ticks = sup.get("pid"), sup.get("start_ticks")
    if isinstance(pid, int) and isinstance(ticks, int):
        return send(pid, ticks, signal.SIGUSR1)
    return False


def take_requests(folder: Path) -> list[dict[str, Any]]:
    """The requests waiting, oldest first, each removed as it is read (a damaged one is dropped)."""
    try:
        names = sorted(n for n in os.listdir(folder / "requests") if n.endswith(".json") and not n.startswith("."))
    except OSError:
        return []
    found = []
    for name in names:
        path = folder / "requests" / name
        try:
            data = read_json(path)
        except (OSError, ValueError):
            data = None
        try:
            os.unlink(path)
        except OSError:
            pass
        if isinstance(data, dict):
            found.append(data)
    return found
