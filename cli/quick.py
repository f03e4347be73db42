"""The fast path: the hot queries answered without typer (issue 26: a CLI that starts like git).

Importing typer and click costs several times a bare interpreter's start, and agents run
`ls`, `poll`, `log`, `wait` and `search` from a shell in loops. `answer(argv)` parses the plain
forms of those five: the root's --home/--json/--host, then the command, its arguments and its own
options, as `--opt VALUE` or `--opt=VALUE`, and answers with the same code as the typer commands
(queries.py). Anything else returns None and typer parses the whole line as before: help,
--version, `log -f`, an option or value it does not know, `--`, an argument that starts with a
dash. So this parser never says an error of its own; typer stays the one interface.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable
from typing import Any, Optional

FLAG = bool  # an option without a value

# command -> (fewest, most arguments (None: any number), its options: flag -> (keyword, type))
_COMMON: dict[str, tuple[str, type]] = {"--home": ("home", str), "--json": ("as_json", FLAG)}
_LS = {"--all": ("show_all", FLAG), "-a": ("show_all", FLAG), "--task": ("task", str),
       "--session-key": ("session_key", str), "--stack": ("stack", str)}
COMMANDS: dict[str, tuple[int, Optional[int], dict[str, tuple[str, type]]]] = {
    "ls": (0, 0, _LS),
    "list": (0, 0, _LS),
    "poll": (1, 1, {}),
    "log": (1, 1, {"--offset": ("offset", int), "--limit": ("limit", int), "-n": ("limit", int),
                   "--lines": ("limit", int), "--since": ("since", str)}),
    "wait": (1, None, {"--timeout": ("timeout", float), "--exit-code": ("exit_code", FLAG),
                       "--until": ("until", str)}),
    "search": (1, None, {"--context": ("context", int), "-C": ("context", int), "--limit": ("limit", int),
                         "--task": ("task", str)}),
}
_ROOT = {**_COMMON, "--host": ("host", str)}


class _NotMine(Exception):
    """The line is not one of the plain forms: typer parses it."""


def answer(argv: list[str]) -> Optional[int]:
    """The exit status of a hot query answered here, or None when typer must parse `argv`."""
    try:
        command, args, options = parse(argv)
    except _NotMine:
        return None
    from . import queries  # the registry loads only for a line that is ours

    root = options.pop("_root")
    if root.get("host") is not None:  # as the root callback does (cli/app.py)
        os.environ["HERMES_PROCS_HOST"] = root["host"]
    home = options.pop("home", root.get("home"))
    as_json = bool(options.pop("as_json", False) or root.get("as_json"))
    run: dict[str, Callable[..., int]] = {
        "ls": queries.ls, "list": queries.ls,
        "poll": lambda home, as_json: queries.poll(home, args[0], as_json),
        "log": lambda home, as_json, **kw: queries.log(home, args[0], as_json, **kw),
        "wait": lambda home, as_json, **kw: queries.wait(home, args, as_json, **kw),
        "search": lambda home, as_json, **kw: queries.search(home, args, as_json, **kw),
    }
    return run[command](home, as_json, **options)


def parse(argv: list[str]) -> tuple[str, list[str], dict[str, Any]]:
    """(command, arguments, options by keyword, with the root's under "_root"); _NotMine when
    the line is not a plain form of a hot query."""
    root, rest = _options(argv, _ROOT, stop_at_word=True)
    if not rest or rest[0] not in COMMANDS:
        raise _NotMine
    command = rest[0]
    fewest, most, own = COMMANDS[command]
    options, args = _options(rest[1:], {**_COMMON, **own}, stop_at_word=False)
    if len(args) < fewest or (most is not None and len(args) > most):
        raise _NotMine
    options["_root"] = root
    return command, args, options


def _options(words: list[str], known: dict[str, tuple[str, type]], stop_at_word: bool
             ) -> tuple[dict[str, Any], list[str]]:
    """The options among `words` and the other words (all of them from the first word on, with
    `stop_at_word`)."""
    options: dict[str, Any] = {}
    others: list[str] = []
    i = 0
    while i < len(words):
        word = words[i]
        if not word.startswith("-") or word == "-":
            if word == "-":
                raise _NotMine
            if stop_at_word:
                return options, words[i:]
            others.append(word)
            i += 1
            continue
        # click splits `--opt=VALUE`; `-C=3` is -C with the value "=3"
        name, eq, value = word.partition("=") if word.startswith("--") else (word, "", "")
        if name not in known:
            raise _NotMine
        keyword, kind = known[name]
        if kind is FLAG:
            if eq:
                raise _NotMine
            options[keyword] = True
        else:
            if not eq:
                i += 1
                if i >= len(words) or words[i].startswith("-"):
                    raise _NotMine
                value = words[i]
            options[keyword] = _convert(value, kind)
        i += 1
    return options, others


# what both int()/float() and typer's checks accept alike: ASCII digits only (int() also takes
# "٣", "1_000" and " 5"; typer's pydantic coercion, when cli/fastcoerce.py cannot patch it, does not)
_NUMBER = {int: re.compile(r"[+-]?[0-9]+"), float: re.compile(r"[+-]?([0-9]+\.?[0-9]*|\.[0-9]+)([eE][+-]?[0-9]+)?")}


def _convert(value: str, kind: type) -> Any:
    if kind in _NUMBER and not _NUMBER[kind].fullmatch(value):
        raise _NotMine
    try:
        return kind(value)
    except ValueError:
        raise _NotMine from None
