"""Secret masking for agent-facing text.

Every string that the agent tool, the MCP server or the event stream hands to an agent goes
through :func:`redact` (or :func:`redact_obj` for whole result dicts). The raw log on disk, the
Python API and the dashboard keep the original text: the human owns it.

What is masked:

- values of secret-named variables written as ``NAME=value``, ``NAME: value``,
  ``"NAME": "value"``, ``export NAME=value``, ``--name=value`` (names containing API_KEY, TOKEN,
  SECRET, PASSWORD, PASSWD, PASSPHRASE, PRIVATE_KEY, ACCESS_KEY, CREDENTIAL, AUTH, COOKIE, ...);
- well-known token shapes wherever they appear: ``sk-...`` / ``sk-ant-...`` (OpenAI,
  Anthropic), ``ghp_ gho_ ghu_ ghs_ ghr_ github_pat_`` (GitHub), ``xox[baprs]-`` (Slack),
  ``AKIA`` / ``ASIA`` + 16 (AWS access key ids), ``glpat-``, ``hf_``, ``AIza``, ``npm_``,
  Stripe ``sk_live_``..., JWTs, ``Bearer <token>``, passwords in ``scheme://user:pass@host``
  URLs, and PEM private-key blocks (including a block cut at either end).

A mask keeps only a short hint of what was there: ``sk-ant-...***``, ``ghp_...***``, ``***``.
Masking is idempotent (``redact(redact(t)) == redact(t)``).

Redaction is on unless the environment variable ``HERMES_PROCS_REDACT`` is ``0`` (or
``false``/``no``/``off``); it is read at every call, so a test or a user can flip it at runtime.

All regular expressions are compiled once at import; a megabyte of ordinary log text is
processed in a few tens of milliseconds, and text without any candidate is returned as is.
"""

from __future__ import annotations

import os
import re
from typing import Any

__all__ = ["redact", "redact_obj", "redaction_enabled", "MASK"]

MASK = "***"

# Prefixes kept as a hint, longest first so "sk-ant-" wins over "sk-".
_HINT_PREFIXES = (
    "github_pat_",
    "sk-ant-",
    "sk-proj-",
    "sk_live_",
    "sk_test_",
    "rk_live_",
    "rk_test_",
    "glpat-",
    "sk-",
    "ghp_",
    "gho_",
    "ghu_",
    "ghs_",
    "ghr_",
    "xoxb-",
    "xoxa-",
    "xoxp-",
    "xoxr-",
    "xoxs-",
    "npm_",
    "hf_",
    "AKIA",
    "ASIA",
    "AIza",
    "eyJ",
)


def redaction_enabled() -> bool:
    """True unless ``HERMES_PROCS_REDACT`` is set to 0/false/no/off (read at call time)."""
    value = os.environ.get("HERMES_PROCS_REDACT", "").strip().lower()
    return value not in ("0", "false", "no", "off")


def _hint(value: str) -> str:
    """The mask for one secret value: its well-known prefix (if any) then ``...***``."""
    for prefix in _HINT_PREFIXES:
        if value.startswith(prefix) and len(value) > len(prefix):
            return prefix + "..." + MASK
    return MASK


# ---------------------------------------------------------------------------------------------
# 1. Values of secret-named variables.
#
# The match starts at the secret keyword inside the name (the part of the name before it is
# left alone, which is what we want anyway) so the scan is driven by the keywords, not by every
# word of the text. AUTH is not matched inside AUTHOR; TOKENS (max_tokens=100) is not a secret.
# ---------------------------------------------------------------------------------------------
_KEYWORDS = (
    r"API[_-]?KEY|APIKEY|ACCESS[_-]?KEY|SECRET|PASSWORD|PASSWD|PASSPHRASE|PRIVATE[_-]?KEY"
    r"|CREDENTIALS?|TOKEN(?!S\b)|AUTHORIZATION|AUTH(?!OR)|COOKIE|SIGNING[_-]?KEY|ENCRYPTION[_-]?KEY"
    r"|MASTER[_-]?KEY|SESSION[_-]?KEY|CLIENT[_-]?KEY|DSN|PGPASS"
)
_ASSIGN_RE = re.compile(
    r"(?P<head>(?:" + _KEYWORDS + r")[A-Za-z0-9_.-]*[\"']?[ \t]*[:=][ \t]*"
    r"(?:(?:bearer|basic|token)[ \t]+)?)"
    r"(?P<q>[\"']?)"
    r"(?P<val>(?(q)[^\"'\r\n]+|[^\s\"',;&|<>(){}\[\]]+))",
    re.IGNORECASE,
)


def _assign_sub(m: re.Match) -> str:
    val = m.group("val")
    return m.group("head") + m.group("q") + _hint(val)


# ---------------------------------------------------------------------------------------------
# 2. Token shapes, anywhere in the text (one combined pattern, one pass).
# ---------------------------------------------------------------------------------------------
_B = r"(?<![A-Za-z0-9_-])"  # token must not be glued to a preceding word
_TOKEN_RE = re.compile(
    "|".join(
        (
            _B + r"sk-ant-[A-Za-z0-9_-]{16,}",
            _B + r"sk-(?:proj-)?[A-Za-z0-9_-]{20,}",
            _B + r"(?:sk|rk)_(?:live|test)_[A-Za-z0-9]{16,}",
            _B + r"gh[pousr]_[A-Za-z0-9]{20,}",
            _B + r"github_pat_[A-Za-z0-9_]{20,}",
            _B + r"xox[baprs]-[A-Za-z0-9-]{10,}",
            r"(?<![A-Za-z0-9])(?:AKIA|ASIA)[A-Z0-9]{16}(?![A-Za-z0-9])",
            _B + r"glpat-[A-Za-z0-9_-]{20,}",
            _B + r"hf_[A-Za-z0-9]{30,}",
            _B + r"npm_[A-Za-z0-9]{36,}",
            _B + r"AIza[0-9A-Za-z_-]{35}",
            _B + r"eyJ[A-Za-z0-9_-]{5,}\.eyJ[A-Za-z0-9_-]{5,}\.[A-Za-z0-9_-]*",
        )
    )
)

_BEARER_RE = re.compile(
    r"(?<![A-Za-z0-9_])(?P<head>bearer[ \t]+)(?P<val>[A-Za-z0-9._~+/=-]{8,})", re.IGNORECASE
)

# scheme://user:password@host  ->  scheme://user:***@host
_URL_CRED_RE = re.compile(r"(?P<head>\b[a-zA-Z][a-zA-Z0-9+.-]*://[^\s:/@]+:)(?P<val>[^\s@/]+)(?=@)")

# PEM private keys: whole blocks, a block cut at its end (BEGIN without END: mask to the end of
# the text), and a block cut at its start (base64 lines then END).
_PEM_RE = re.compile(
    r"(?P<begin>-----BEGIN (?P<kind>[A-Z0-9 ]*?)PRIVATE KEY-----)"
    r"(?:[\s\S]*?-----END [A-Z0-9 ]*?PRIVATE KEY-----|[\s\S]*\Z)"
)
_PEM_TAIL_RE = re.compile(r"(?:[A-Za-z0-9+/=]{8,}\r?\n)+(?P<end>-----END [A-Z0-9 ]*?PRIVATE KEY-----)")

# Cheap pre-filter: if none of these substrings occurs, nothing can match.
_ANY_RE = re.compile(
    r"(?i:" + _KEYWORDS + r"|bearer|://|PRIVATE KEY)"
    r"|sk-|sk_|rk_|gh[pousr]_|github_pat_|xox|AKIA|ASIA|glpat-|hf_|npm_|AIza|eyJ"
)


def _pem_sub(m: re.Match) -> str:
    kind = m.group("kind")
    return f"{m.group('begin')}\n{MASK}\n-----END {kind}PRIVATE KEY-----"


def _pem_tail_sub(m: re.Match) -> str:
    return f"{MASK}\n{m.group('end')}"


def _redact_text(text: str) -> str:
    if not _ANY_RE.search(text):
        return text
    if "PRIVATE KEY-----" in text:
        text = _PEM_RE.sub(_pem_sub, text)
        text = _PEM_TAIL_RE.sub(_pem_tail_sub, text)
    text = _TOKEN_RE.sub(lambda m: _hint(m.group(0)), text)
    text = _BEARER_RE.sub(lambda m: m.group("head") + _hint(m.group("val")), text)
    if "://" in text:
        text = _URL_CRED_RE.sub(lambda m: m.group("head") + MASK, text)
    text = _ASSIGN_RE.sub(_assign_sub, text)
    return text


def redact(text: str) -> str:
    """Mask secrets in ``text`` (returned unchanged when redaction is off or not a str)."""
    if not isinstance(text, str) or not text or not redaction_enabled():
        return text
    return _redact_text(text)


def redact_obj(obj: Any) -> Any:
    """A copy of ``obj`` with every str inside dicts, lists and tuples masked.

    Dict keys are kept as they are; non-string leaves (numbers, None, bools) pass through.
    """
    if not redaction_enabled():
        return obj
    return _walk(obj)


def _walk(obj: Any) -> Any:
    if isinstance(obj, str):
        return _redact_text(obj) if obj else obj
    if isinstance(obj, dict):
        return {k: _walk(v) for k, v in obj.items()}
    if isinstance(obj, list):
        return [_walk(v) for v in obj]
    if isinstance(obj, tuple):
        return tuple(_walk(v) for v in obj)
    return obj
