"""The size cap of one agent answer (the tool's, and so every MCP tool's).

`log` and `search` cap their own lines (tool.ANSWER_CHARS); what is left could still grow
without bound: `list` of many jobs with long names and folders, `tree` of 800 processes with
3,000-character command lines, `screen` of a 1000x1000 terminal. :func:`capped` keeps an answer
under MAX_ANSWER characters of JSON: it keeps the first rows of its longest list (newest jobs,
parents first) and then cuts its longest strings, and says so in ``answer_capped``.
"""

from __future__ import annotations

import json
from typing import Any

__all__ = ["MAX_ANSWER", "capped"]

MAX_ANSWER = 200_000  # characters of one answer's JSON


def _size(value: Any) -> int:
    return len(json.dumps(value, ensure_ascii=False, default=str))


def capped(result: dict[str, Any], limit: int = MAX_ANSWER) -> dict[str, Any]:
    """`result`, or a copy of it cut to `limit` characters of JSON with an ``answer_capped`` note."""
    if _size(result) <= limit:
        return result
    out, notes = dict(result), []
    for key in sorted((k for k, v in out.items() if isinstance(v, list) and v), key=lambda k: -_size(out[k])):
        if _size(out) <= limit:
            break
        rows = out[key]
        kept = _rows_that_fit(out, key, rows, limit)
        out[key] = rows[:kept]
        notes.append(f"{key}: the first {kept} of {len(rows)}")
    for key in sorted((k for k, v in out.items() if isinstance(v, str)), key=lambda k: -len(out[k])):
        over = _size(out) - limit
        if over <= 0:
            break
        text = out[key]
        out[key] = text[:max(0, len(text) - over - 100)]
        notes.append(f"{key}: the first {len(out[key])} of {len(text)} characters")
    if _size(out) > limit:
        return {"status": "error", "error": f"the answer is larger than {limit} characters even when cut"}
    out["answer_capped"] = f"the answer is capped at {limit} characters: " + "; ".join(notes)
    return out


def _rows_that_fit(out: dict[str, Any], key: str, rows: list[Any], limit: int) -> int:
    """The most leading rows of `out[key]` with which `out` fits `limit` (a binary search)."""
    low, high = 0, len(rows)
    while low < high:
        middle = (low + high + 1) // 2
        if _size({**out, key: rows[:middle]}) + 200 <= limit:  # 200: room for the note
            low = middle
        else:
            high = middle - 1
    return low
