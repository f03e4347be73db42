"""File watching for ``watch`` globs: which files a job's globs match now, and which of them
changed since the last look.

Globs are relative to the stack file's folder: ``*`` and ``?`` stay inside one path part,
``**`` spans folders (``src/**/*.py``), ``[abc]`` is a class, and a glob naming a folder means
everything under it. Folders nobody means to watch (``.git``, ``node_modules``,
``__pycache__``, virtual environments, caches) are skipped unless a glob names them.

A look is a walk with ``os.scandir`` and one ``stat`` per matching file (a project of a few
thousand files costs a few milliseconds); the stack supervisor looks every
``watch_interval`` seconds (0.5 by default) and restarts the job once the files have stayed
unchanged for ``debounce`` seconds, so an editor's save (write, rename, touch) or a ``git
checkout`` restarts it once. At most MAX_FILES files are looked at per job.
"""

from __future__ import annotations

import os
import re

SKIP = frozenset({".git", ".hg", ".svn", "node_modules", "__pycache__", ".venv", "venv", ".mypy_cache",
                  ".pytest_cache", ".ruff_cache", ".tox", ".cache", "target", "dist", "build"})
MAX_FILES = 20_000
WILD = re.compile(r"[*?\[]")

Snapshot = dict[str, tuple[int, int, int]]


def translate(glob: str) -> re.Pattern[str]:
    """A glob (see the module docstring) as a regex over `/`-separated relative paths."""
    out, i = [], 0
    while i < len(glob):
        if glob.startswith("**/", i):
            out.append("(?:[^/]+/)*")
            i += 3
        elif glob.startswith("**", i):
            out.append(".*")
            i += 2
        elif glob[i] == "*":
            out.append("[^/]*")
            i += 1
        elif glob[i] == "?":
            out.append("[^/]")
            i += 1
        elif glob[i] == "[" and "]" in glob[i + 2:]:
            end = glob.index("]", i + 2)
            body = glob[i + 1:end]
            out.append("[" + ("^" + body[1:] if body.startswith("!") else body).replace("\\", "\\\\") + "]")
            i = end + 1
        else:
            out.append(re.escape(glob[i]))
            i += 1
    return re.compile("".join(out))


class FileWatch:
    """The files one job's globs match, and what changed between two looks."""

    def __init__(self, root: str, globs: list[str]) -> None:
        self.root = os.path.abspath(root)
        self.rules: list[tuple[str, re.Pattern[str], bool]] = []  # (folder to walk, regex, recursive)
        for glob in globs:
            glob = os.path.normpath(glob).replace(os.sep, "/")
            if not WILD.search(glob) and os.path.isdir(os.path.join(self.root, glob)):
                glob += "/**"
            parts = glob.split("/")
            literal = []
            for part in parts[:-1]:
                if WILD.search(part):
                    break
                literal.append(part)
            deep = len(literal) < len(parts) - 1 or "**" in parts[-1]
            self.rules.append(("/".join(literal), translate(glob), deep))
        self.snapshot = self.scan()

    def scan(self) -> Snapshot:
        found: Snapshot = {}
        for base, regex, deep in self.rules:
            self._walk(base, regex, deep, found)
        return found

    def _walk(self, base: str, regex: re.Pattern[str], deep: bool, found: Snapshot) -> None:
        folders = [base]
        while folders and len(found) < MAX_FILES:
            rel = folders.pop()
            try:
                entries = list(os.scandir(os.path.join(self.root, rel) if rel else self.root))
            except OSError:
                continue
            for entry in entries:
                path = f"{rel}/{entry.name}" if rel else entry.name
                try:
                    if entry.is_dir(follow_symlinks=False):
                        if deep and entry.name not in SKIP:
                            folders.append(path)
                    elif regex.fullmatch(path):
                        st = entry.stat()
                        found[path] = (st.st_mtime_ns, st.st_size, st.st_ino)
                except OSError:
                    continue

    def changes(self) -> list[str]:
        """The paths added, removed or modified since the last call (or since it was made)."""
        now = self.scan()
        changed = [p for p in now.keys() | self.snapshot.keys() if now.get(p) != self.snapshot.get(p)]
        self.snapshot = now
        return sorted(changed)
