"""The size cap of one agent answer (the tool's, and so every MCP tool's).

`log` and `search` cap their own lines (tool.ANSWER_CHARS); what is left could still grow
without bound: `list` of many jobs with long names and folders, `tree` of 800 processes with
3,000-character command lines, `screen` of a 1000x1000 terminal. :func:`capped` keeps an answer
under MAX_ANSWER characters of JSON: it keeps the first rows of its longest list (newest jobs,
parents first), then cuts a table inside the same way (`stacks`), then its longest strings, and
says so in ``answer_capped``.
"""

from __future__ import annotations

from typing import Any

from ..supervisor.text import safe_json

__all__ = ["MAX_ANSWER", "capped"]

MAX_ANSWER = 200_000  # characters of one answer's JSON


def _size(value: Any) -> int:
    """Characters of `value` as the answer is written (safe_json: a C1 control is 6 of them)."""
    return len(safe_json(value))


def capped(result: dict[str, Any], limit: int = MAX_ANSWER) -> dict[str, Any]:
    """`result`, or a copy of it cut to `limit` characters of JSON with an ``answer_capped`` note."""
    if _size(result) <= limit:
        return result
    out: dict[str, Any] = dict(result)
    notes = (_cut_heads(out, limit, list, 0, "") + _cut_tables(out, limit)
             + _cut_heads(out, limit, str, 1000, " characters"))
    if _size(out) > limit:
        return {"status": "error", "error": f"the answer is larger than {limit} characters even when cut"}
    out["answer_capped"] = f"the answer is capped at {limit} characters: " + "; ".join(notes)
    return out


def _largest(out: dict[str, Any], kind: type, least: int = 0) -> list[str]:
    """The keys of `out` holding a `kind` longer than `least`, the largest first."""
    keys = [k for k, v in out.items() if isinstance(v, (list, dict, str)) and isinstance(v, kind) and len(v) > least]
    return sorted(keys, key=lambda k: -_size(out[k]))


def _cut_heads(out: dict[str, Any], limit: int, kind: type, least: int, unit: str) -> list[str]:
    """Keep the longest head of each largest `kind` that fits: the leading rows of a list
    (newest jobs, parents first), the first characters of a string (never a short one:
    status, session_id, error)."""
    notes = []
    for key in _largest(out, kind, least):
        if _size(out) <= limit:
            break
        whole = out[key]
        out[key] = whole[:_head_that_fits(out, key, whole, limit)]
        notes.append(f"{key}: the first {len(out[key])} of {len(whole)}{unit}")
    return notes


def _cut_tables(out: dict[str, Any], limit: int) -> list[str]:
    """Cut a table inside (a list's `stacks`) the same way, in the room the rest leaves."""
    notes = []
    for key in _largest(out, dict):
        room = limit - _size({**out, key: {}}) - 300
        if _size(out) <= limit or room < 1000:
            break
        out[key] = capped(out[key], room)
        notes.append(f"{key}: cut")
    return notes


def _head_that_fits(out: dict[str, Any], key: str, whole: list[Any] | str, limit: int) -> int:
    """The longest head of `whole` with which `out` fits `limit` (a binary search: a row or a
    character takes what it takes as written)."""
    low, high = 0, len(whole)
    while low < high:
        middle = (low + high + 1) // 2
        if _size({**out, key: whole[:middle]}) + 200 <= limit:  # 200: room for the note
            low = middle
        else:
            high = middle - 1
    return low
