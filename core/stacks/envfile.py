"""Environment files (``env_file`` in hermes-procs.toml, ``.env`` next to a Procfile): one
``NAME=value`` a line, as docker compose and foreman read them.

    # a comment
    export DEBUG=1          # `export ` is allowed
    GREETING="hello world"  # quotes are removed; "..." knows \\n, \\t, \\" and \\\\
    EMPTY=

A line that is not a comment and has no `=`, or a name that cannot be a variable, is an error
naming the file and line.
"""

from __future__ import annotations

import os
import re

from .files import read_regular
from .model import StackError

NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_.]*")
MAX_BYTES = 1 << 20
_ESCAPES = {"n": "\n", "t": "\t", "r": "\r", '"': '"', "\\": "\\"}


def read_env_files(names: list[str], root: str, where: str) -> dict[str, str]:
    """The variables of each file (relative to `root`), later files winning."""
    env: dict[str, str] = {}
    for name in names:
        env.update(read_env_file(os.path.join(root, os.path.expanduser(name)), f"{where} {name}"))
    return env


def read_env_file(path: str, where: str) -> dict[str, str]:
    data = read_regular(path, where, MAX_BYTES)
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        raise StackError(f"{where}: not UTF-8 text") from None
    env = {}
    for number, line in enumerate(text.splitlines(), 1):
        parsed = parse_line(line)
        if parsed is None:
            continue
        if isinstance(parsed, str):
            raise StackError(f"{where} line {number}: {parsed}")
        env[parsed[0]] = parsed[1]
    return env


def parse_line(line: str) -> tuple[str, str] | str | None:
    """(name, value); None for a blank line or a comment; an error message otherwise."""
    line = line.strip()
    if not line or line.startswith("#"):
        return None
    if line.startswith("export "):
        line = line[7:].lstrip()
    name, sep, value = line.partition("=")
    name = name.strip()
    if not sep:
        return "expected NAME=value"
    if not NAME.fullmatch(name):
        return f"{name[:40]!r} is not a variable name"
    return name, _value(value.strip())


def _value(raw: str) -> str:
    if len(raw) >= 2 and raw[0] == raw[-1] == "'":
        return raw[1:-1]
    if len(raw) >= 2 and raw[0] == raw[-1] == '"':
        return re.sub(r"\\(.)", lambda m: _ESCAPES.get(m.group(1), m.group(0)), raw[1:-1])
    return raw.split(" #", 1)[0].rstrip()  # an unquoted value ends at a comment
