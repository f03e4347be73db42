"""Reading a file a stack names (the stack file, an ``env_file``): a regular file of bounded
size, or one line saying why not. A FIFO or a device is refused, never waited on."""

from __future__ import annotations

import os
import stat

from .model import StackError


def read_regular(path: str, label: str, limit: int) -> bytes:
    """The bytes of `path`; StackError naming `label` (or `path`) when it is missing, not a
    regular file, unreadable or larger than `limit` bytes."""
    try:  # O_NONBLOCK: opening a FIFO waits for a writer; it is refused below instead
        with open(os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC), "rb") as fh:
            if not stat.S_ISREG(os.fstat(fh.fileno()).st_mode):
                raise StackError(f"{label}: not a regular file")
            data = fh.read(limit + 1)
    except FileNotFoundError:
        raise StackError(f"{_named(label, path)}no such file: {path}") from None
    except OSError as exc:
        raise StackError(f"{_named(label, path)}cannot read {path}: {exc.strerror or exc}") from None
    if len(data) > limit:
        raise StackError(f"{label}: larger than {limit} bytes")
    return data


def _named(label: str, path: str) -> str:
    """`hermes-procs.toml: jobs.api.env_file .env: ` before an error about a file the stack
    names; nothing for the stack file itself (its path says it)."""
    return "" if label == os.path.basename(path) else f"{label}: "
