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

Tails cut at a fixed length (``output_preview``, the ``output`` of wait/kill/completion) may
begin in the middle of a secret (``EN=hunter2``, ``p_a1B2...`` of a cut ``ghp_`` token, a PEM
body): :func:`redact_obj` also masks such a partial first line (:func:`redact_cut`).

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

__all__ = ["redact", "redact_cut", "redact_obj", "redaction_enabled", "MASK"]

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
    r"api[_-]?key|apikey|access[_-]?key|secret|password|passwd|passphrase|private[_-]?key"
    r"|credentials?|token(?!s\b)|authorization|auth(?!or)|cookie|signing[_-]?key"
    r"|encryption[_-]?key|master[_-]?key|session[_-]?key|client[_-]?key|dsn|pgpass"
)
# Run on a lower-cased copy of the text (much faster than re.IGNORECASE); the spans are then
# applied to the original. The name tail is bounded (40) so a long run of "tokentoken..." stays linear.
_ASSIGN_RE = re.compile(
    r"(?:" + _KEYWORDS + r")[a-z0-9_.-]{0,40}+[\"']?[ \t]*[:=][ \t]*"
    r"(?:(?:bearer|basic|token)[ \t]+)?"
    r"(?:(?P<q>[\"'])(?P<qval>[^\"'\r\n]+)|(?P<val>[^\s\"',;&|<>(){}\[\]]+))"
)
# Substrings (of the lower-cased text) without which _ASSIGN_RE cannot match.
_ASSIGN_TRIGGERS = (
    "key", "secret", "passw", "passphrase", "credential", "token", "auth", "cookie", "dsn",
    "pgpass",
)

# ---------------------------------------------------------------------------------------------
# 2. Token shapes, anywhere in the text (one combined pattern, one pass).
# ---------------------------------------------------------------------------------------------
# Each pattern starts with its literal prefix (so the regex engine can skip ahead with a fast
# substring search) and checks with a fixed-width lookbehind that the prefix is not glued to a
# preceding word. A pattern only runs when its prefix occurs in the text at all.
def _tok(prefix: str, rest: str, before: str = "A-Za-z0-9_-") -> tuple[str, re.Pattern]:
    lit = re.escape(prefix)
    return prefix, re.compile(lit + r"(?<![" + before + r"]" + lit + r")" + rest)


_TOKEN_PATTERNS = (
    _tok("sk-ant-", r"[A-Za-z0-9_-]{16,}"),
    _tok("sk-", r"(?:proj-)?[A-Za-z0-9_-]{20,}"),
    _tok("sk_live_", r"[A-Za-z0-9]{16,}"),
    _tok("sk_test_", r"[A-Za-z0-9]{16,}"),
    _tok("rk_live_", r"[A-Za-z0-9]{16,}"),
    _tok("rk_test_", r"[A-Za-z0-9]{16,}"),
    _tok("ghp_", r"[A-Za-z0-9]{20,}"),
    _tok("gho_", r"[A-Za-z0-9]{20,}"),
    _tok("ghu_", r"[A-Za-z0-9]{20,}"),
    _tok("ghs_", r"[A-Za-z0-9]{20,}"),
    _tok("ghr_", r"[A-Za-z0-9]{20,}"),
    _tok("github_pat_", r"[A-Za-z0-9_]{20,}"),
    _tok("xox", r"[baprs]-[A-Za-z0-9-]{10,}"),
    _tok("AKIA", r"[A-Z0-9]{16}(?![A-Za-z0-9])", "A-Za-z0-9"),
    _tok("ASIA", r"[A-Z0-9]{16}(?![A-Za-z0-9])", "A-Za-z0-9"),
    _tok("glpat-", r"[A-Za-z0-9_-]{20,}"),
    _tok("hf_", r"[A-Za-z0-9]{30,}"),
    _tok("npm_", r"[A-Za-z0-9]{36,}"),
    _tok("AIza", r"[0-9A-Za-z_-]{35}"),
    _tok("eyJ", r"[A-Za-z0-9_-]{5,}\.eyJ[A-Za-z0-9_-]{5,}\.[A-Za-z0-9_-]*"),
)


def _token_sub(m: re.Match) -> str:
    return _hint(m.group(0))


_BEARER_RE = re.compile(r"(?<![A-Za-z0-9_])(?P<head>[Bb][Ee][Aa][Rr][Ee][Rr][ \t]+)(?P<val>[A-Za-z0-9._~+/=-]{8,})")

# scheme://user:password@host  ->  scheme://user:***@host
_URL_CRED_RE = re.compile(r"(?P<head>\b[a-zA-Z][a-zA-Z0-9+.-]*://[^\s:/@]+:)(?P<val>[^\s@/]+)(?=@)")

# PEM private keys: whole blocks, a block cut at its end (BEGIN without END: mask to the end of
# the text), and a block cut at its start (base64 lines then END).
_PEM_RE = re.compile(
    r"(?P<begin>-----BEGIN (?P<kind>[A-Z0-9 ]*?)PRIVATE KEY-----)"
    r"(?:[\s\S]*?-----END [A-Z0-9 ]*?PRIVATE KEY-----|[\s\S]*\Z)"
)
_PEM_TAIL_RE = re.compile(r"(?:[A-Za-z0-9+/=]{8,}\r?\n)+(?P<end>-----END [A-Z0-9 ]*?PRIVATE KEY-----)")

_ASCII_LOWER = {c: c + 32 for c in range(ord("A"), ord("Z") + 1)}


def _lower(text: str) -> str:
    """A lower-cased copy with the same length (str.lower can grow a few non-ASCII chars)."""
    low = text.lower()
    if len(low) != len(text):
        low = text.translate(_ASCII_LOWER)
    return low


def _pem_sub(m: re.Match) -> str:
    kind = m.group("kind")
    return f"{m.group('begin')}\n{MASK}\n-----END {kind}PRIVATE KEY-----"


def _pem_tail_sub(m: re.Match) -> str:
    return f"{MASK}\n{m.group('end')}"


def _mask_assignments(text: str) -> str:
    low = _lower(text)
    if not any(t in low for t in _ASSIGN_TRIGGERS):
        return text
    out = []
    pos = 0
    for m in _ASSIGN_RE.finditer(low):
        group = "qval" if m.group("q") else "val"
        start, end = m.span(group)
        out.append(text[pos:start])
        out.append(_hint(text[start:end]))
        pos = end
    if not out:
        return text
    out.append(text[pos:])
    return "".join(out)


def _redact_text(text: str) -> str:
    if "PRIVATE KEY-----" in text:
        text = _PEM_RE.sub(_pem_sub, text)
        text = _PEM_TAIL_RE.sub(_pem_tail_sub, text)
    for prefix, pattern in _TOKEN_PATTERNS:
        if prefix in text:
            text = pattern.sub(_token_sub, text)
    if "earer" in text or "EARER" in text:
        text = _BEARER_RE.sub(lambda m: m.group("head") + _hint(m.group("val")), text)
    if "://" in text:
        text = _URL_CRED_RE.sub(lambda m: m.group("head") + MASK, text)
    return _mask_assignments(text)


# ---------------------------------------------------------------------------------------------
# 3. Tails cut at a fixed length (output_preview, output of wait/kill/completion) may begin in
#    the middle of a secret: "EN=hunter2", "p_a1B2c3..." (a cut ghp_ token), or inside a PEM
#    body. Their partial first line(s) get a stricter treatment.
# ---------------------------------------------------------------------------------------------
_CUT_LENGTHS = frozenset((200, 1000, 2000))  # the registry's and supervisor's tail sizes
_CUT_KEYS = ("output_preview", "output")
_HEAD_RUN_RE = re.compile(r"[A-Za-z0-9_+/=.-]{12,}")
_HEAD_ASSIGN_RE = re.compile(
    r"[A-Za-z0-9_.-]{0,40}+[\"']?[ \t]*[:=][ \t]*(?:(?:bearer|basic|token)[ \t]+)?"
    r"(?:(?P<q>[\"'])(?P<qval>[^\"'\r\n]+)|(?P<val>[^\s\"',;&|<>(){}\[\]]+))",
    re.IGNORECASE,
)
_BASE64_LINES_RE = re.compile(r"(?:[A-Za-z0-9+/=]{40,}\r?\n)+")


def _mask_head(text: str) -> str:
    """Mask what may be the remains of a secret at the start of a text cut mid-line."""
    m = _BASE64_LINES_RE.match(text)
    if m:  # the text starts inside a base64 block (a key body): mask those lines
        return MASK + "\n" + text[m.end():]
    m = _HEAD_RUN_RE.match(text)
    if m and any(c.isdigit() for c in m.group(0)) and any(c.isalpha() for c in m.group(0)) \
            and not m.group(0).endswith(MASK):
        return MASK + text[m.end():]
    m = _HEAD_ASSIGN_RE.match(text)
    if m:
        group = "qval" if m.group("q") else "val"
        start, end = m.span(group)
        if not text[start:end].endswith(MASK):
            return text[:start] + MASK + text[end:]
    return text


# A text cut at its end (list's command, <= 200 chars) may end in the first characters of a
# token, too short for its full pattern: mask a known prefix followed by anything at the end.
_TAIL_TOKEN_RE = re.compile(
    r"(?<![A-Za-z0-9_-])(?P<tok>(?:" + "|".join(re.escape(p) for p in _HINT_PREFIXES) + r")[A-Za-z0-9_.-]*)\Z"
)


def _mask_tail(text: str) -> str:
    m = _TAIL_TOKEN_RE.search(text, max(0, len(text) - 200))
    if m and not m.group("tok").endswith(MASK):
        return text[:m.start("tok")] + _hint(m.group("tok") + "x")
    return text


def redact_cut(text: str) -> str:
    """:func:`redact` for a tail that may start in the middle of a line (also masks its head)."""
    if not isinstance(text, str) or not text or not redaction_enabled():
        return text
    return _mask_head(_redact_text(text))


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
        out = {k: _walk(v) for k, v in obj.items()}
        if "total_lines" not in out:  # read_log output is whole lines; tails are not
            for key in _CUT_KEYS:
                value = out.get(key)
                if isinstance(value, str) and len(obj[key]) in _CUT_LENGTHS:
                    out[key] = _mask_head(value)
            command = out.get("command")
            if isinstance(command, str) and len(obj["command"]) == 200:  # list cuts commands at 200
                out["command"] = _mask_tail(command)
        return out
    if isinstance(obj, list):
        return [_walk(v) for v in obj]
    if isinstance(obj, tuple):
        return tuple(_walk(v) for v in obj)
    return obj
