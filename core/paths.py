"""State-home resolution, session ids and their prefixes, and job folder paths."""

from __future__ import annotations

import json
import os
import re
import secrets
from pathlib import Path

ID_PREFIX = "proc_"
_FULL_ID = re.compile(r"proc_[0-9a-f]{12}")
_PREFIX = re.compile(r"(?:proc_)?([0-9a-f]{4,12})")


class IdError(Exception):
    """A session id that is malformed, unknown or ambiguous; `status` is the contract status."""

    def __init__(self, status: str, message: str) -> None:
        super().__init__(message)
        self.status = status


def resolve_home(home: str | os.PathLike | None = None) -> Path:
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


def ensure_private_dir(path: Path) -> Path:
    """Create `path` (and parents) with mode 0700 if missing; tighten it if it exists."""
    path.mkdir(mode=0o700, parents=True, exist_ok=True)
    if path.stat().st_mode & 0o077:
        os.chmod(path, 0o700)
    return path


def new_session_id() -> str:
    return ID_PREFIX + secrets.token_hex(6)


def resolve_id(jobs_dir: Path, session_id: object) -> str:
    """The full id named by `session_id` (full id or unique prefix of >= 4 hex), or IdError."""
    if isinstance(session_id, int) and not isinstance(session_id, bool):
        session_id = str(session_id)
    if not isinstance(session_id, str) or not session_id.strip():
        raise IdError("error", "session_id must be a non-empty string like proc_0123456789ab")
    text = session_id.strip()
    if _FULL_ID.fullmatch(text):
        if (jobs_dir / text).is_dir():
            return text
        raise IdError("not_found", f"No process with ID {text}")
    match = _PREFIX.fullmatch(text)
    if not match:
        shown = text if len(text) <= 60 and text.isprintable() else repr(text[:60])
        raise IdError("error", f"Invalid session id {shown}: expected proc_ + 12 hex digits or a prefix of at least 4")
    hits = [name for name in _job_names(jobs_dir) if name[len(ID_PREFIX):].startswith(match.group(1))]
    if not hits:
        raise IdError("not_found", f"No process with ID {text}")
    if len(hits) > 1:
        raise IdError("error", f"Session id prefix {text} is ambiguous: it matches {len(hits)} processes")
    return hits[0]


def _job_names(jobs_dir: Path) -> list[str]:
    try:
        return [name for name in os.listdir(jobs_dir) if _FULL_ID.fullmatch(name)]
    except FileNotFoundError:
        return []


def list_job_ids(jobs_dir: Path) -> list[str]:
    return _job_names(jobs_dir)


def write_json_atomic(path: Path, data: dict) -> None:
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as fh:
        json.dump(data, fh)
    os.replace(tmp, path)


def read_json(path: Path) -> dict | None:
    """The JSON object in `path`; None when missing; ValueError when corrupt."""
    try:
        with open(path, "rb") as fh:
            raw = fh.read(1 << 20)
    except FileNotFoundError:
        return None
    data = json.loads(raw)
    if not isinstance(data, dict):
        raise ValueError(f"{path.name} is not a JSON object")
    return data
