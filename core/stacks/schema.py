"""Typed reads of a parsed stack file (TOML or YAML), each failure one line naming the place:
``hermes-procs.toml: jobs.api.backoff: must be a number of seconds, not 'soon'``."""

from __future__ import annotations

import math
import os
import reprlib
from typing import Any

from .model import StackError, closest

MAX_SECONDS = 86400.0 * 7
# a job's grace between SIGTERM and SIGKILL on `down`: `down`, `up` and `restart` wait for it
# (a client gives up after 120 s), so a file cannot hold them for days
MAX_STOP_GRACE = 60.0
MAX_TEXT = 128 << 10  # characters of a command, like an exec argument


_SHORT = reprlib.Repr()  # a few levels and items: a YAML alias of aliases never repr'd whole
_SHORT.maxlevel, _SHORT.maxlist, _SHORT.maxdict, _SHORT.maxstring, _SHORT.maxother = 2, 4, 4, 60, 60


def describe(value: object) -> str:
    """A value as an error quotes it: its repr, cut to 40 characters."""
    text = _SHORT.repr(value)
    return text if len(text) <= 40 else text[:37] + "..."


def check_url(url: str, where: str) -> None:
    """An http(s) URL a probe can GET: its scheme, and no space or control character in it
    (http.client refuses those on every attempt; the file is where to say so)."""
    if not url.startswith(("http://", "https://")) or not url.split("://", 1)[1]:
        raise StackError(f"{where}: must be an http:// or https:// URL, not {describe(url)}")
    if any(ord(c) <= 0x20 or 0x7f <= ord(c) <= 0x9f for c in url):
        raise StackError(f"{where}: a URL holds no spaces or control characters, not {describe(url)}")


def table(value: object, where: str) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise StackError(f"{where}: must be a table of keys, not {describe(value)}")
    return {str(k): v for k, v in value.items()}


def unknown_keys(data: dict[str, Any], allowed: tuple[str, ...], where: str) -> None:
    """StackError for the first key not in `allowed`, with the nearest allowed one."""
    for key in data:
        if key not in allowed:
            raise StackError(f"{where}: unknown key {key!r}{closest(key, allowed)}")


def text(data: dict[str, Any], key: str, where: str, default: str | None = None) -> str | None:
    value = data.get(key, default)
    if value is None:
        return default
    if not isinstance(value, str) or "\0" in value:
        raise StackError(f"{where}.{key}: must be a string, not {describe(value)}")
    if len(value) > MAX_TEXT:
        raise StackError(f"{where}.{key}: is {len(value)} characters; at most {MAX_TEXT}")
    return value


def flag(data: dict[str, Any], key: str, where: str, default: bool) -> bool:
    value = data.get(key, default)
    if not isinstance(value, bool):
        raise StackError(f"{where}.{key}: must be true or false, not {describe(value)}")
    return value


def seconds(data: dict[str, Any], key: str, where: str, default: float, allow_zero: bool = True,
            maximum: float = MAX_SECONDS) -> float:
    value = data.get(key, default)
    ok = isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)
    if not ok or not (0 <= value <= maximum) or (value == 0 and not allow_zero):
        low = "0" if allow_zero else "more than 0"
        raise StackError(f"{where}.{key}: must be a number of seconds from {low} to {maximum:g}, "
                         f"not {describe(value)}")
    return float(value)


def count(data: dict[str, Any], key: str, where: str, default: int | None) -> int | None:
    value = data.get(key, default)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= 1_000_000:
        raise StackError(f"{where}.{key}: must be a whole number from 0 to 1000000, not {describe(value)}")
    return value


def text_list(data: dict[str, Any], key: str, where: str) -> list[str]:
    value = data.get(key, [])
    if isinstance(value, str):
        value = [value]
    if not isinstance(value, list) or not all(isinstance(v, str) and v and "\0" not in v for v in value):
        raise StackError(f"{where}.{key}: must be a list of non-empty strings, not {describe(value)}")
    return list(value)


def env_table(value: object, where: str) -> dict[str, str]:
    """Variables as a table of names to strings (booleans written as text, a number of a YAML
    file as it was written there; a TOML float is refused: `3.10` would reach the job as 3.1)."""
    data = table(value, where)
    env = {}
    for key, item in data.items():
        if not key or "=" in key or "\0" in key:
            raise StackError(f"{where}: {key!r} is not a variable name")
        if isinstance(item, bool):
            item = "true" if item else "false"
        if isinstance(item, float) and not hasattr(item, "text"):
            raise StackError(f"{where}.{key}: a TOML float (read as {item!r}): quote it ({key} = \"...\") "
                             "so that the job gets the text as written")
        if isinstance(item, (int, float)):
            item = getattr(item, "text", None) or str(item)
        if not isinstance(item, str) or "\0" in item:
            raise StackError(f"{where}.{key}: must be a string, not {describe(item)}")
        env[key] = item
    return env


def choice(data: dict[str, Any], key: str, where: str, choices: tuple[str, ...], default: str) -> str:
    value = data.get(key, default)
    if value not in choices:
        raise StackError(f"{where}.{key}: must be one of {', '.join(choices)}, not {describe(value)}"
                         + (closest(value, choices) if isinstance(value, str) else ""))
    return str(value)


def job_name(name: str, where: str) -> str:
    """A job's name (its name in the file): printable, no `/`, at most 64 characters."""
    if not name or len(name) > 64 or not name.isprintable() or "/" in name or name != name.strip():
        raise StackError(f"{where}: job name {describe(name)} must be 1-64 printable characters without '/' "
                         "or surrounding spaces")
    return name


def folder(root: str, cwd: str | None, where: str) -> str:
    """A job's working folder: `cwd` relative to the stack file's folder (default: that folder)."""
    path = os.path.normpath(os.path.join(root, os.path.expanduser(cwd))) if cwd else root
    if not os.path.isdir(path):
        raise StackError(f"{where}: no folder {path}")
    return path
