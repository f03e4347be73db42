"""State-home resolution and checks, session ids and their prefixes, job folder paths, and
reading/writing the small JSON state files without following symbolic links."""

from __future__ import annotations

import errno
import json
import os
import re
import stat
from pathlib import Path
from typing import Any

NOFOLLOW = os.O_NOFOLLOW | os.O_CLOEXEC

ID_PREFIX = "proc_"
_FULL_ID = re.compile(r"proc_[0-9a-f]{12}")
_PREFIX = re.compile(r"(?:proc_)?([0-9a-f]{4,12})")


class IdError(Exception):
    """A session id that is malformed, unknown or ambiguous; `status` is the contract status."""

    def __init__(self, status: str, message: str) -> None:
        super().__init__(message)
        self.status = status


def resolve_home(home: str | os.PathLike[str] | None = None) -> Path:
    """The state home: explicit, $HERMES_PROCS_HOME, $HERMES_HOME/procs, ~/.hermes/procs."""
    if home:
        return Path(home).expanduser().absolute()
    env = os.environ.get("HERMES_PROCS_HOME")
    if env:
        return Path(env).expanduser().absolute()
    hermes = os.environ.get("HERMES_HOME")
    if hermes:
        return (Path(hermes).expanduser() / "procs").absolute()
    return Path.home() / ".hermes" / "procs"


class HomeError(ValueError):
    """A state home (or a folder in it) that is unsafe to use; the message says why in one line."""


def ensure_private_dir(path: Path) -> Path:
    """Create `path` with mode 0700 if missing (parents as usual); if it exists, check it.

    An existing folder must be a real directory (not a symbolic link), owned by the caller and
    not writable by group or others; otherwise HomeError. Nothing that exists is ever chmodded:
    `--home /tmp` is refused, and /tmp stays as it was.
    """
    path = Path(path)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        os.mkdir(path, 0o700)
        return path
    except FileExistsError:
        pass
    except OSError as exc:
        raise HomeError(f"cannot create {path}: {exc.strerror or exc}") from None
    check_private_dir(path)
    return path


def check_private_dir(path: Path) -> None:
    """HomeError unless `path` is a real directory of ours that no one else can write to."""
    try:
        st = os.lstat(path)
    except OSError as exc:
        raise HomeError(f"cannot use {path}: {exc.strerror or exc}") from None
    if stat.S_ISLNK(st.st_mode):
        raise HomeError(f"{path} is a symbolic link; give the real directory (or a new path) as the home")
    if not stat.S_ISDIR(st.st_mode):
        raise HomeError(f"{path} exists and is not a directory")
    if st.st_uid != os.geteuid():
        raise HomeError(f"{path} is owned by uid {st.st_uid}, not by you (uid {os.geteuid()}); "
                        "use a home of your own")
    if st.st_mode & 0o022:
        raise HomeError(f"{path} is writable by group or others (mode {stat.S_IMODE(st.st_mode):04o}); "
                        "use a private directory (chmod go-w) or a new path")


def new_session_id() -> str:
    return ID_PREFIX + os.urandom(6).hex()  # as secrets.token_hex(6), without its imports


def resolve_id(jobs_dir: Path, session_id: object) -> str:
    """The full id named by `session_id` (full id or unique prefix of >= 4 hex), or IdError."""
    if isinstance(session_id, int) and not isinstance(session_id, bool):
        session_id = str(session_id)
    if not isinstance(session_id, str) or not session_id.strip():
        raise IdError("error", "session_id must be a non-empty string like proc_0123456789ab")
    text = session_id.strip()
    if _FULL_ID.fullmatch(text):
        if is_real_dir(jobs_dir / text):
            return text
        raise IdError("not_found", f"No process with ID {text}")
    match = _PREFIX.fullmatch(text)
    if not match:
        shown = text if len(text) <= 60 and text.isprintable() else repr(text[:60])
        raise IdError("error", f"Invalid session id {shown}: expected proc_ + 12 hex digits or a prefix of at least 4")
    hits = [name for name in _job_names(jobs_dir) if name[len(ID_PREFIX):].startswith(match.group(1))]
    if not hits:
        raise IdError("not_found", f"No process with ID {text}")
    if len(hits) > 1:  # the ids, as git names the objects an ambiguous prefix matches (at most 5)
        named = ", ".join(sorted(hits)[:5]) + (", ..." if len(hits) > 5 else "")
        raise IdError("error", f"Session id prefix {text} is ambiguous: it matches {len(hits)} processes ({named})")
    return hits[0]


def is_real_dir(path: Path) -> bool:
    """True for a directory that is not a symbolic link (a job folder is never followed)."""
    try:
        return stat.S_ISDIR(os.lstat(path).st_mode)
    except OSError:
        return False


def _job_names(jobs_dir: Path, links: bool = False) -> list[str]:
    """Job folders in `jobs_dir` (real directories), or with `links` the symlinks named like one."""
    try:
        with os.scandir(jobs_dir) as entries:
            return [e.name for e in entries if _FULL_ID.fullmatch(e.name)
                    and (e.is_symlink() if links else e.is_dir(follow_symlinks=False))]
    except FileNotFoundError:
        return []


def list_job_ids(jobs_dir: Path) -> list[str]:
    return _job_names(jobs_dir)


def job_inodes(jobs_dir: Path) -> dict[str, int]:
    """The job folders of `jobs_dir` (as list_job_ids) with their inode numbers, as the listing
    gives them (no stat per folder)."""
    try:
        with os.scandir(jobs_dir) as entries:
            return {e.name: e.inode() for e in entries
                    if _FULL_ID.fullmatch(e.name) and e.is_dir(follow_symlinks=False)}
    except FileNotFoundError:
        return {}


def list_job_links(jobs_dir: Path) -> list[str]:
    """Symbolic links named like job folders: never jobs, never followed (prune removes them)."""
    return _job_names(jobs_dir, links=True)


def open_nofollow(path: Path | str, flags: int, mode: int = 0o600) -> int:
    """os.open that refuses a symbolic link as the last component with a clear OSError."""
    try:
        return os.open(path, flags | NOFOLLOW, mode)
    except OSError as exc:
        if exc.errno == errno.ELOOP:  # the name is a symbolic link
            raise OSError(exc.errno, f"{path} is a symbolic link; refusing to follow it") from None
        raise


def write_json_atomic(path: Path, data: dict[str, Any]) -> None:
    write_text_atomic(path, json.dumps(data))


def write_text_atomic(path: Path, text: str) -> None:
    """Write `text` to a temporary name and rename it over `path` (a planted link is replaced)."""
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    fd = open_nofollow(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC)
    with os.fdopen(fd, "w") as fh:
        fh.write(text)
    os.replace(tmp, path)  # replaces a planted link itself, never its target


def read_json(path: Path | str) -> dict[str, Any] | None:
    """The JSON object in `path` (its first MiB); None when missing; ValueError when corrupt
    (or a symlink). Read with plain os.read calls: list() reads a few of these per job."""
    try:
        fd = open_nofollow(path, os.O_RDONLY | os.O_CLOEXEC)
    except FileNotFoundError:
        return None
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise ValueError(str(exc)) from None
        raise
    try:
        raw = os.read(fd, 1 << 16)
        if len(raw) == 1 << 16:  # a big one (a short read of a regular file is its end)
            raw += os.read(fd, (1 << 20) - len(raw))
    finally:
        os.close(fd)
    data = json.loads(raw)
    if not isinstance(data, dict):
        raise ValueError(f"{os.path.basename(path)} is not a JSON object")
    return data
