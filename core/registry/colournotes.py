"""Notes of the log blocks a search found to be clean coloured text, so that no search looks
them over again.

A block of coloured output is searched without converting it (core/registry/colourfind.py)
once two checks over its bytes pass: it holds only the bytes coloured text may hold, and no
line is more than its bytes without CSI sequences (no ``\\r`` redraw, backspace, title, C1
control or escape that is not CSI). The checks are ~1 ms a MiB, five times the search itself,
and their answer is a fact of the bytes alone, which never change at an absolute offset of a
log (it only grows; rotation drops the oldest bytes and the offsets stay). So the first search
of a block notes ``START END`` (absolute offsets of the block's whole lines) in the job's
``coloured.idx``, and later searches, of any pattern, skip both checks for that block. This is
what lines.idx's plain flags do for plain logs, for the blocks the supervisor cannot check (it
has no RE2).

The file is a cache: lines it cannot read are ignored, a missing or damaged one costs only the
checks, a full one (:data:`MAX_BYTES`) takes no more notes, and a write that fails is dropped.
It is opened without following a link and only as a regular file, so a name planted in the job
folder never makes a search write elsewhere or wait on a pipe.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

NOTES_FILE = "coloured.idx"
MAX_BYTES = 1 << 20  # ~50,000 blocks of 1 MiB: 50 GB of coloured log
_FLAGS = os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC


class ColourNotes:
    """The clean blocks of one job's log, as noted so far, and those this search found."""

    def __init__(self, jobdir: Path) -> None:
        self.path = Path(jobdir) / NOTES_FILE
        self._known: set[tuple[int, int]] | None = None  # read at the first coloured block: a plain log never opens it
        self.found: list[tuple[int, int]] = []

    @property
    def known(self) -> set[tuple[int, int]]:
        if self._known is None:
            self._known = _load(self.path)
        return self._known

    def clean(self, start: int, end: int) -> bool:
        return (start, end) in self.known

    def note(self, start: int, end: int) -> None:
        if (start, end) not in self.known:
            self.known.add((start, end))
            self.found.append((start, end))

    def save(self) -> None:
        """Append what this search found (one write: searches running at once never mix lines)."""
        if not self.found:
            return
        data = "".join(f"{start} {end}\n" for start, end in self.found).encode()
        self.found = []
        try:
            fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT | _FLAGS, 0o600)
        except OSError:
            return
        try:
            st = os.fstat(fd)
            if stat.S_ISREG(st.st_mode) and st.st_size + len(data) <= MAX_BYTES:
                os.write(fd, data)
        except OSError:
            pass
        finally:
            os.close(fd)


def _load(path: Path) -> set[tuple[int, int]]:
    try:
        fd = os.open(path, os.O_RDONLY | _FLAGS)
    except OSError:
        return set()
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return set()
        data = os.read(fd, MAX_BYTES)
    except OSError:
        return set()
    finally:
        os.close(fd)
    known = set()
    for line in data.split(b"\n"):
        parts = line.split(b" ")
        if len(parts) == 2 and all(part.isdigit() and len(part) <= 20 for part in parts):
            known.add((int(parts[0]), int(parts[1])))
    return known
