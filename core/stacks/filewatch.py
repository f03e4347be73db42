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
checkout`` restarts it once. At most MAX_FILES files are looked at per job, and at most
MAX_ENTRIES folder entries walked.

A glob is matched by RE2 (linear in the path, whatever the glob: ``*a*a*a*a*b`` against a long
name cannot take minutes as with a backtracking engine); `check` says why a glob from a stack
file cannot be one (absolute, leaving the folder with ``..``, too long, a bad class).
"""

from __future__ import annotations

import os
import re
from typing import Any

SKIP = frozenset({".git", ".hg", ".svn", "node_modules", "__pycache__", ".venv", "venv", ".mypy_cache",
                  ".pytest_cache", ".ruff_cache", ".tox", ".cache", "target", "dist", "build"})
MAX_FILES = 20_000
MAX_ENTRIES = 200_000
MAX_GLOB = 300
WILD = re.compile(r"[*?\[]")

Snapshot = dict[str, tuple[int, int, int]]


def check(glob: str) -> str | None:
    """Why `glob` cannot be a watch glob, or None when it can."""
    if len(glob) > MAX_GLOB:
        return f"is longer than {MAX_GLOB} characters"
    if os.path.isabs(glob):
        return "is an absolute path (globs are relative to the stack file's folder)"
    if ".." in os.path.normpath(glob).split(os.sep):
        return "leaves the stack file's folder (..)"
    try:
        matcher(glob)
    except Exception as exc:  # re2.error (its message in bytes), or re.error where RE2 is missing
        why = exc.args[0] if exc.args else ""
        why = why.decode("utf-8", "replace") if isinstance(why, bytes) else str(why)
        return f"is not a glob ({why.splitlines()[0][:100] if why else 'a bad [class]'})"
    return None


def matcher(glob: str) -> Any:
    """The compiled regex (RE2 where installed) whose fullmatch says whether a path matches."""
    try:
        import re2
    except ImportError:  # google-re2 is a dependency; without it, Python's re
        return re.compile(translate(glob))
    options = re2.Options()
    options.log_errors = False
    return re2.compile(translate(glob), options)


def translate(glob: str) -> str:
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
    return "".join(out)


def _matches(regex: Any, path: str) -> bool:
    """Whether `path` matches; a name in bytes that are not UTF-8 (held as escapes, which RE2
    cannot take) is matched with U+FFFD in their place."""
    try:
        return regex.fullmatch(path) is not None
    except UnicodeEncodeError:
        return regex.fullmatch(path.encode("utf-8", "surrogateescape").decode("utf-8", "replace")) is not None


class FileWatch:
    """The files one job's globs match, and what changed between two looks."""

    def __init__(self, root: str, globs: list[str]) -> None:
        self.root = os.path.abspath(root)
        self.rules: list[tuple[str, Any, bool]] = []  # (folder to walk, regex, recursive)
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
            self.rules.append(("/".join(literal), matcher(glob), deep))
        self.snapshot = self.scan()

    def scan(self) -> Snapshot:
        found: Snapshot = {}
        budget = [MAX_ENTRIES]  # folder entries this look may still walk, for all the rules
        for base, regex, deep in self.rules:
            self._walk(base, regex, deep, found, budget)
        return found

    def _walk(self, base: str, regex: Any, deep: bool, found: Snapshot, budget: list[int]) -> None:
        folders = [base]
        while folders and len(found) < MAX_FILES and budget[0] > 0:
            rel = folders.pop()
            try:
                entries = list(os.scandir(os.path.join(self.root, rel) if rel else self.root))
            except OSError:
                continue
            budget[0] -= len(entries)
            for entry in entries:
                path = f"{rel}/{entry.name}" if rel else entry.name
                try:
                    if entry.is_dir(follow_symlinks=False):
                        if deep and entry.name not in SKIP:
                            folders.append(path)
                    elif _matches(regex, path):
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
