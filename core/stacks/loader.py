"""Finding and reading a stack file: which of the four formats, which name, and the whole
validation before anything starts (each format's loader, then the checks every stack gets)."""

from __future__ import annotations

import os
import re
from collections.abc import Callable

from . import fmt_compose, fmt_mprocs, fmt_procfile, fmt_toml
from .files import read_regular
from .model import StackError, StackSpec, check_name

# what `up` looks for without -f, in this order
DEFAULT_FILES = ("hermes-procs.toml", "Procfile", "process-compose.yaml", "process-compose.yml", "mprocs.yaml")
MAX_FILE = 1 << 20
Loader = Callable[[str, str, bytes, str], StackSpec]


def find_file(folder: str) -> str:
    """The first of DEFAULT_FILES in `folder` that is a regular file; StackError naming a folder or
    link by such a name when there is none, else listing them."""
    odd = None  # a folder or a dangling link by such a name: said when no stack file is found
    for name in DEFAULT_FILES:
        path = os.path.join(folder, name)
        if os.path.isfile(path):
            return path
        if odd is None and os.path.lexists(path):
            odd = path
    if odd is not None:
        raise StackError(f"{odd} is {_not_a_file(odd)}: a stack file must be a regular file (or give -f FILE)")
    raise StackError(f"no stack file in {folder}: looked for {', '.join(DEFAULT_FILES)} (or give -f FILE)")


def _not_a_file(path: str) -> str:
    """What the thing at `path`, which exists but is no regular file, is, in words."""
    if os.path.isdir(path):
        return "a folder"
    return "a link to nothing" if os.path.islink(path) else "a special file"


def loader_for(path: str) -> Loader:
    """The format of a file, from its name."""
    base = os.path.basename(path).lower()
    if base.endswith(".toml"):
        return fmt_toml.load
    if base.startswith("procfile"):
        return fmt_procfile.load
    if "process-compose" in base and base.endswith((".yaml", ".yml")):
        return fmt_compose.load
    if "mprocs" in base and base.endswith((".yaml", ".yml")):
        return fmt_mprocs.load
    raise StackError(f"cannot tell the format of {os.path.basename(path)}: name it hermes-procs.toml (or *.toml), "
                     "Procfile, process-compose.yaml or mprocs.yaml")


def load_stack(path: str | None = None, name: str | None = None, cwd: str | None = None) -> StackSpec:
    """The validated stack of `path` (None: the first stack file in `cwd`; a folder: the first
    stack file in it), named `name` (None: the file's `name`, else its folder's name). Raises
    StackError with one line."""
    path = stack_path(path, cwd)
    load = loader_for(path)
    label = os.path.basename(path)
    try:
        spec = load(path, os.path.dirname(path), read_regular(path, label, MAX_FILE), label)
    except RecursionError:  # the parsers recurse into lists and tables: [[[[... a hundred thousand deep
        raise StackError(f"{label}: nested too deeply") from None
    spec.name = check_name(name) if name else (check_name(spec.name, f"{label}: name") if spec.name
                                               else folder_name(spec.root))
    return spec


def stack_path(path: str | None, cwd: str | None = None) -> str:
    """The absolute path of the stack file `path` names (None: the first stack file in `cwd`;
    a folder: the first stack file in it; `~` and relative paths as a shell reads them)."""
    folder = os.path.abspath(cwd or os.getcwd())
    if path in (None, ""):
        return find_file(folder)
    assert path is not None
    found = os.path.abspath(os.path.join(folder, os.path.expanduser(path)))
    if os.path.isdir(found):
        return find_file(found)
    if not os.path.lexists(found):
        raise StackError(f"no such file: {found}")
    return found


def folder_name(folder: str) -> str:
    """A stack name made from a folder's name (`My App` -> `My-App`)."""
    name = re.sub(r"[^A-Za-z0-9._-]+", "-", os.path.basename(os.path.normpath(folder))).strip("-._")[:64]
    return name or "stack"
