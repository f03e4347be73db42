"""The files the dashboard writes on the machine it runs on, through one door.

Two things write there: a saved log (Ctrl-S, a new file at a path the user names) and the
remembered theme (``state.json`` beside the config file).  Both go through :class:`Files`, whose
read-only form (`hermes-procs web --read-only`) refuses at the point of writing: a viewer in a
browser may not create files on the server, whatever keys its client sends.  Nothing else in
tui/ writes files (``tests/test_web_readonly.py`` checks the source for other writes).
"""

from __future__ import annotations

import errno
import os
from pathlib import Path
from typing import BinaryIO

from hermes_procs.core.registry.paths import write_text_atomic

__all__ = ["Files"]

READ_ONLY = "read-only: this dashboard writes no files on the server"


class Files:
    """Writes files for the dashboard; with ``read_only`` every write raises PermissionError."""

    def __init__(self, read_only: bool = False) -> None:
        self.read_only = read_only

    def _check(self, path: Path) -> None:
        if self.read_only:
            raise PermissionError(errno.EROFS, READ_ONLY, str(path))

    def create(self, path: Path) -> BinaryIO:
        """A new file (0600) open for writing; never an existing one (FileExistsError)."""
        self._check(path)
        return os.fdopen(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600), "wb")

    def replace(self, path: Path, text: str) -> None:
        """``path`` holds ``text`` afterwards, replaced whole: private (0600, its folder 0700 when
        made here), written atomically without following a planted link (core/registry/paths.py)."""
        self._check(path)
        path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        write_text_atomic(path, text)
