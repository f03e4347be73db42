"""The values of secret-named variables a job was given, masked wherever an agent reads them.

A job gets the variables it needs: a database password from a stack file's `env` or `env_file`,
a deploy token from a tool call's `env`, everything stock Hermes passes its jobs. The agent should
not read them back. Besides the masking of core/registry/redact.py (``NAME=value``, token shapes),
the agent faces mask these values wherever they appear in their answers, also printed bare
(``echo $MY_DB_PASSWORD``): the Hermes adapter the values of the environments it built
(:class:`SecretValues`), the tool and the MCP server those of the jobs an answer is about, read
from each job's meta.json (:func:`mask_job_secrets`). Values shorter than 6 characters, numbers
and words such as ``true`` are left alone: masking them would eat ordinary text.
"""

from __future__ import annotations

import functools
import re
import threading
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..registry.paths import read_json
from ..registry.redact import CUT_KEYS, CUT_LENGTHS, CUT_MARKER_RE, MASK, redaction_enabled
from ..registry.secretwords import is_secret_name

if TYPE_CHECKING:
    from ..registry.interface import Registry

__all__ = ["SecretValues", "mask_job_secrets"]

MIN_LENGTH = 6
MAX_VALUES = 256  # a pattern of at most this many alternatives (the first ones kept)
MAX_JOBS = 4096  # jobs whose values are kept between calls (an id's env never changes)
_PLAIN = frozenset({"true", "false", "none", "null", "enabled", "disabled"})
_ID_RE = re.compile(r"proc_[0-9a-f]{12}")


def _maskable(value: str) -> bool:
    return (MIN_LENGTH <= len(value) <= 4096 and not value.isdigit() and value.lower() not in _PLAIN
            and "\n" not in value and value.strip() == value)


def secret_values(environ: Mapping[str, Any]) -> set[str]:
    """The values worth masking of the secret-named variables of `environ`."""
    return {v for k, v in environ.items() if isinstance(v, str) and is_secret_name(str(k)) and _maskable(v)}


def _pattern(values: Iterable[str], limit: int | None = None) -> re.Pattern[str]:
    """One pattern finding any of `values` (the longest `limit` of them), the longest first: a
    value that contains another is masked whole. Compiled once per set (re's own cache)."""
    alternatives = sorted(values, key=len, reverse=True)[:limit]
    return re.compile("|".join(re.escape(v) for v in alternatives))


class SecretValues:
    """The secret values seen so far, and one pattern that finds any of them."""

    def __init__(self) -> None:
        self._values: set[str] = set()
        self._pattern: re.Pattern[str] | None = None
        self._lock = threading.Lock()

    def add_from(self, environ: Mapping[str, str]) -> None:
        """Remember the values of the secret-named variables of `environ`."""
        new = secret_values(environ) - self._values
        if not new or len(self._values) >= MAX_VALUES:
            return
        with self._lock:
            self._values |= set(sorted(new)[: MAX_VALUES - len(self._values)])
            self._pattern = _pattern(self._values, MAX_VALUES)

    def mask(self, obj: Any) -> Any:
        """`obj` with every known value inside its strings (dicts, lists, tuples) replaced by ``***``."""
        pattern = self._pattern
        if pattern is None or not redaction_enabled():
            return obj
        return _walk(obj, pattern)


# ---------------------------------------------------------------------------------------------
# the values of the jobs an answer is about
# ---------------------------------------------------------------------------------------------
_job_values: dict[tuple[str, str], frozenset[str]] = {}
_job_lock = threading.Lock()


def mask_job_secrets(result: dict[str, Any], registry: Registry, raw: Any = None) -> dict[str, Any]:
    """`result` with the secret values given to each job it names masked where that job's
    answer is: the whole answer about one job (its ``session_id`` at the top), each row of a
    list or search answer (the row's ``session_id``), with no cut-off (another job's many
    values cannot push one out). A job printing another job's secret is not found by this.
    `raw`, the answer before redaction, tells a tail cut at a fixed length (by its length, as
    redact_obj does): its head may be the end of a value. A remote host's jobs keep their meta
    there: masked by name and shape only."""
    if getattr(registry, "remote", False) or not redaction_enabled():
        return result
    masked: dict[str, Any] = _mask_rows(result, raw, registry, frozenset(), 0)
    return masked


def _mask_rows(obj: Any, raw: Any, registry: Registry, values: frozenset[str], depth: int) -> Any:
    """`obj` with `values` and those of the jobs its dicts name (for what is inside them) masked."""
    if isinstance(obj, list):
        raws = raw if isinstance(raw, list) and len(raw) == len(obj) else [None] * len(obj)
        return [_mask_rows(item, was, registry, values, depth + 1) for item, was in zip(obj, raws)]
    if not isinstance(obj, dict):
        return _walk(obj, _job_pattern(values)) if values and isinstance(obj, str) else obj
    sid = obj.get("session_id")
    if isinstance(sid, str) and _ID_RE.fullmatch(sid):
        values = values | _values_of(registry, sid)
    if depth >= 4:  # deeper than any row: one pattern for the rest
        return _walk(obj, _job_pattern(values)) if values else obj
    raw = raw if isinstance(raw, dict) else {}
    out = {k: _mask_rows(v, raw.get(k), registry, values, depth + 1) for k, v in obj.items()}
    if values and "cols" in out and isinstance(out.get("lines"), list):  # a screen: rows a value wraps over
        out["lines"] = _mask_wrapped(out["lines"], values)
    for key in CUT_KEYS if values else ():  # tails cut at a fixed length, or in their middle
        text, was = out.get(key), raw.get(key)
        if not isinstance(text, str):
            continue
        if isinstance(was, str) and len(was) in CUT_LENGTHS:
            out[key] = _mask_cut_head(text, sorted(values))
        elif (marker := CUT_MARKER_RE.search(text)) is not None:
            out[key] = _mask_around_marker(text, marker, sorted(values))
    return out


def _mask_around_marker(text: str, m: re.Match[str], values: list[str]) -> str:
    """exec's output cut in its middle (at `m`): the head may end in a value's start, the tail
    begin in a value's end."""
    head = _mask_cut_head(text[:m.start()][::-1], [v[::-1] for v in values])[::-1]  # MASK reads the same
    return head + m.group(0) + _mask_cut_head(text[m.end():], values)


@functools.lru_cache(maxsize=64)
def _job_pattern(values: frozenset[str]) -> re.Pattern[str]:
    return _pattern(values)


def _values_of(registry: Registry, session_id: str) -> frozenset[str]:
    key = (str(registry.home), session_id)
    values = _job_values.get(key)
    if values is None:
        try:
            meta = read_json(Path(registry.home) / "jobs" / session_id / "meta.json") or {}
        except (OSError, ValueError):
            meta = {}
        env = meta.get("env")
        values = frozenset(secret_values(env) if isinstance(env, dict) else ())
        with _job_lock:
            if len(_job_values) >= MAX_JOBS:
                _job_values.clear()
            _job_values[key] = values
    return values


def _mask_wrapped(rows: list[Any], values: frozenset[str]) -> list[Any]:
    """A screen's rows with a value that wraps from one row to the next masked, a `*` a
    character (the rows keep their width); each row was masked alone before."""
    if not all(isinstance(row, str) for row in rows):
        return rows
    joined = "".join(rows)
    spans = [m.span() for m in _job_pattern(values).finditer(joined)]
    if not spans:
        return rows
    chars = list(joined)
    for start, end in spans:
        chars[start:end] = "*" * (end - start)
    out, pos = [], 0
    for row in rows:
        out.append("".join(chars[pos:pos + len(row)]))
        pos += len(row)
    return out


MIN_CUT = 4  # the shortest piece of a value masked at a cut (fewer letters say too little)


def _walk(obj: Any, pattern: re.Pattern[str]) -> Any:
    if isinstance(obj, str):
        return pattern.sub(MASK, obj) if obj else obj
    if isinstance(obj, dict):
        return {k: _walk(v, pattern) for k, v in obj.items()}
    if isinstance(obj, list):
        return [_walk(v, pattern) for v in obj]
    if isinstance(obj, tuple):
        return tuple(_walk(v, pattern) for v in obj)
    return obj


def _mask_cut_head(text: str, values: list[str]) -> str:
    """`text` with a head that is the last MIN_CUT or more characters of one of `values`
    masked (the longest such end)."""
    if not text:
        return text
    longest = 0
    for value in values:
        start = value.find(text[:1], 1)
        while 0 < start <= len(value) - MIN_CUT:
            if len(value) - start > longest and text.startswith(value[start:]):
                longest = len(value) - start
                break
            start = value.find(text[:1], start + 1)
    return MASK + text[longest:] if longest else text
