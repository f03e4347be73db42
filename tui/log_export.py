"""Getting text out of a job's on-disk log: the lines a user selected, the whole log to a file.

Both run in worker threads (a selection may span a 500 MB log) and read through
:mod:`hermes_procs.core.registry.logstore`, so line numbers are the log pane's own.
"""

from __future__ import annotations

import re
from pathlib import Path

from hermes_procs.core.registry import logstore
from hermes_procs.core.supervisor.text import to_text

from .files import Files

__all__ = ["MAX_COPY_LINES", "file_name", "save_log", "selected_text"]

MAX_COPY_LINES = 100_000
_CHUNK = 1 << 20
_NOT_IN_NAMES = re.compile(r"[^A-Za-z0-9._-]+")


def file_name(name: str, fallback: str) -> str:
    """``NAME.log``, the file a job's log is suggested to be saved to in the current folder: a
    job's name is the job's to choose, so anything but letters, digits, ``.``, ``_`` and ``-``
    (a ``/``, ``..`` at its start, a space, an escape) becomes ``-``, and no name is ``fallback``."""
    stem = _NOT_IN_NAMES.sub("-", name).strip("-.")[:80]
    return f"{stem or fallback}.log"


def selected_text(jobdir: Path, first: int, last: int) -> str:
    """Plain text (escape sequences removed, ``\\r`` redraws collapsed) of lines ``first..last``
    (inclusive) of the job's log, at most :data:`MAX_COPY_LINES` lines."""
    first, last = min(first, last), max(first, last)
    count = min(last - first + 1, MAX_COPY_LINES)
    index = logstore.LineIndex(jobdir)
    index.refresh()
    raws = index.read_raw_lines(first, count, max_bytes=None)
    return "\n".join(to_text(raw).rstrip("\r\n") for raw in raws)


def save_log(jobdir: Path, dest: Path, plain: bool, files: Files) -> int:
    """Write the job's whole retained log to ``dest`` (a new file, through ``files``): the raw
    bytes, or with ``plain`` the text without colours and escape sequences.  Returns the bytes
    written.  Raises OSError (e.g. FileExistsError, or PermissionError from a read-only
    dashboard) with the reason when the file cannot be written."""
    start, end = logstore.dropped_bytes(jobdir), logstore.total_bytes(jobdir)
    written = 0
    carry = b""
    with files.create(dest) as out:
        pos = start
        while pos < end:
            data = logstore.read_bytes(jobdir, pos, min(end, pos + _CHUNK))
            if not data:
                break
            pos += len(data)
            if plain:
                data, carry = _whole_lines(carry + data, final=pos >= end)
                data = to_text(data).encode("utf-8")
            out.write(data)
            written += len(data)
    return written


def _whole_lines(data: bytes, final: bool) -> tuple[bytes, bytes]:
    """Split ``data`` after its last newline (an escape sequence never spans a line end of
    interest), unless it is the end of the log."""
    if final:
        return data, b""
    cut = data.rfind(b"\n") + 1
    if cut == 0 and len(data) < 16 * _CHUNK:
        return b"", data
    cut = cut or len(data)
    return data[:cut], data[cut:]
