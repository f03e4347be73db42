"""The values of secret-named variables a Hermes job was given, masked wherever the agent reads them.

Stock Hermes passes a background job every variable that is not one of its own provider keys (a
database password, a deploy token): the job needs them. The agent should not read them back.
Besides the masking of core/registry/redact.py (``NAME=value``, token shapes), the Hermes adapter masks
these values wherever they appear in its results, also printed bare (``echo $MY_DB_PASSWORD``).
Values shorter than 6 characters, numbers and words such as ``true`` are left alone: masking them
would eat ordinary text.
"""

from __future__ import annotations

import re
import threading
from collections.abc import Mapping
from typing import Any

from ..registry.redact import MASK, redaction_enabled
from ..registry.secretwords import is_secret_name

__all__ = ["SecretValues"]

MIN_LENGTH = 6
MAX_VALUES = 256  # a pattern of at most this many alternatives (the first ones kept)
_PLAIN = frozenset({"true", "false", "none", "null", "enabled", "disabled"})


def _maskable(value: str) -> bool:
    return (MIN_LENGTH <= len(value) <= 4096 and not value.isdigit() and value.lower() not in _PLAIN
            and "\n" not in value and value.strip() == value)


class SecretValues:
    """The secret values seen so far, and one pattern that finds any of them."""

    def __init__(self) -> None:
        self._values: set[str] = set()
        self._pattern: re.Pattern[str] | None = None
        self._lock = threading.Lock()

    def add_from(self, environ: Mapping[str, str]) -> None:
        """Remember the values of the secret-named variables of `environ`."""
        new = {v for k, v in environ.items() if is_secret_name(k) and _maskable(v)} - self._values
        if not new or len(self._values) >= MAX_VALUES:
            return
        with self._lock:
            self._values |= set(sorted(new)[: MAX_VALUES - len(self._values)])
            # longest first: a value that contains another is masked whole
            alternatives = sorted(self._values, key=len, reverse=True)
            self._pattern = re.compile("|".join(re.escape(v) for v in alternatives))

    def mask(self, obj: Any) -> Any:
        """`obj` with every known value inside its strings (dicts, lists, tuples) replaced by ``***``."""
        pattern = self._pattern
        if pattern is None or not redaction_enabled():
            return obj
        return _walk(obj, pattern)


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
