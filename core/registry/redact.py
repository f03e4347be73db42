"""Secret masking for agent-facing text.

Every string that the agent tool, the MCP server or the event stream hands to an agent goes
through :func:`redact` (or :func:`redact_obj` for whole result dicts, including the ``command``
of start/list/poll results). The raw log on disk, the Python API and the dashboard keep the
original text: the human owns it. docs/security.md says what is and is not promised.

What is masked:

- values of secret-named variables and fields, written as ``NAME=value``, ``NAME: value``,
  ``"NAME": "value"``, ``export NAME=value``, ``--name=value`` or ``--name value``; the names
  are those of core/registry/secretwords.py (the list the env filter uses too). A plain word after a
  colon or a spaced ``=`` (``GITHUB_TOKEN: present``, ``password = required``) describes the
  secret and is kept;
- credentials in command lines and config files: ``-pX`` on a mysql/mariadb line,
  ``docker|podman|helm ... login -p X``, ``curl -u user:pw``, netrc ``password X``,
  ``.pgpass`` lines (``host:port:db:user:password``);
- well-known token shapes wherever they appear: ``sk-...`` / ``sk-ant-...`` (OpenAI,
  Anthropic), ``ghp_ gho_ ghu_ ghs_ ghr_ github_pat_`` (GitHub), ``xox[baprs]-`` (Slack),
  ``AKIA`` / ``ASIA`` + 16 (AWS access key ids), bare 40-character AWS secret keys (mixed case
  and digits), ``glpat-``, ``hf_``, ``AIza``, ``npm_``, Stripe ``sk_live_``..., JWTs,
  ``Bearer <token>``, passwords in ``scheme://user:pass@host`` URLs, webhook URLs (Slack,
  Office, ``/api/webhooks/``), and PEM private-key blocks (including a block cut at either end,
  and a line of a key's body on its own, as a log window or a search match inside the block
  shows it: a line of 40-76 base64 characters with digits and both cases).

Tails cut at a fixed length (``output_preview``, the ``output`` of wait/kill/completion) may
begin in the middle of a secret (``EN=hunter2``, ``p_a1B2...`` of a cut ``ghp_`` token, a PEM
body): :func:`redact_obj` also masks such a partial first line (:func:`redact_cut`).

A mask keeps only a short hint of what was there: ``sk-ant-...***``, ``ghp_...***``, ``***``.
Masking is idempotent (``redact(redact(t)) == redact(t)``).

Redaction is on unless the environment variable ``HERMES_PROCS_REDACT`` is ``0`` (or
``false``/``no``/``off``); it is read at every call, so a test or a user can flip it at runtime.

Every pattern runs in time linear in the text: each starts at a literal or a rare anchor and
every repetition that could run on is bounded or cannot fail after it (tests/test_redact_linear.py
checks each against a plain ``re.sub`` over the same adversarial megabyte). Text without any
candidate is returned as is.
"""

from __future__ import annotations

import os
import re
from typing import Any

from .secretwords import TRIGGERS, WORDS_RE

__all__ = ["CUT_KEYS", "CUT_LENGTHS", "CUT_MARKER_RE", "MASK", "contains_secret", "redact", "redact_cut", "redact_obj",
           "redaction_enabled"]

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


_HINT_RE = re.compile("|".join(re.escape(p) for p in _HINT_PREFIXES))  # tried in order: longest first


def _hint(value: str) -> str:
    """The mask for one secret value: its well-known prefix (if any) then ``...***``."""
    m = _HINT_RE.match(value)
    if m and len(value) > m.end():
        return m.group(0) + "..." + MASK
    return MASK


# ---------------------------------------------------------------------------------------------
# 1. Values of secret-named variables.
#
# The match starts at the secret keyword inside the name (the part of the name before it is
# left alone, which is what we want anyway) so the scan is driven by the keywords, not by every
# word of the text. AUTH is not matched inside AUTHOR; TOKENS (max_tokens=100) is not a secret.
# ---------------------------------------------------------------------------------------------
# Run on a lower-cased copy of the text (much faster than re.IGNORECASE); the spans are then
# applied to the original. The name tail is bounded (40) so a long run of "tokentoken..." stays
# linear, and an unterminated quoted value runs to the end of its line (it never fails after a
# long scan). No possessive `{0,40}+` (Python 3.11; remote hosts run 3.9): the tail's characters
# are none of those that may follow it, so backtracking into it can never match anyway.
_VALUE = r"(?:(?P<q>[\"'])(?P<qval>[^\"'\r\n]+)|(?P<val>[^\s\"',;&|<>(){}\[\]]+))"
_ASSIGN_RE = re.compile(
    r"(?:" + WORDS_RE + r")[a-z0-9_.-]{0,40}[\"']?[ \t]{0,20}[:=][ \t]{0,20}"
    r"(?:(?:bearer|basic|token)[ \t]+)?" + _VALUE
)
# --name value (a space instead of "="): options named with a secret word, or --pass.
_OPTION_RE = re.compile(
    r"(?<![\w-])--?(?:[a-z0-9]{1,30}[_-]){0,3}(?:" + WORDS_RE + r"|pass)[ \t]+(?![-\s])" + _VALUE
)
_ASSIGN_TRIGGERS = TRIGGERS
# Command lines and config files (on the lower-cased text too).
_MYSQL_P_RE = re.compile(r"(?<=[ \t])-p(?P<val>[^\s]+)")  # only on lines that run mysql/mariadb
_LOGIN_P_RE = re.compile(r"(?<![\w-])(?:-p|--password)(?:[ \t]+|=)(?P<val>[^\s-]\S*)")  # docker ... login
_LOGIN_TOOLS = ("docker", "podman", "helm", "nerdctl", "buildah", "skopeo", "oras", "crane", "az ")
# Tools that take a password in an option of their own, in a command the tool starts (its first
# word, after `sudo`, `NAME=value` assignments and a folder): the option in the command's next
# _TOOL_REACH characters, before a `;`, `|`, `&` or the line's end.
_PW_VALUE = r"(?P<val>\"[^\"\n]*\"|'[^'\n]*'|[^\s\"'-]\S*)"
_SMB_USER_PW = re.compile(r"(?<![\w-])(?:-u|--user)(?:[ \t]+|=)[^\s%]{1,256}%(?P<val>\S+)")
_TOOL_OPTIONS = {  # the start of the tool's name -> its password option
    "mongo": re.compile(r"(?<![\w-])(?:-p|--password)(?:[ \t]+|=)" + _PW_VALUE),  # mongosh, mongodump
    "redis-cli": re.compile(r"(?<![\w-])-a[ \t]+" + _PW_VALUE),
    "ldap": re.compile(r"(?<![\w-])-w[ \t]+" + _PW_VALUE),  # ldapsearch, ldapmodify -w PW
    "openssl": re.compile(r"(?<![\w-])pass:(?P<val>\S+)"),  # -passin pass:PW
    "smbclient": _SMB_USER_PW, "rpcclient": _SMB_USER_PW,  # -U user%PW
}
_TOOL_REACH = 300
_TOOL_COMMAND_RE = re.compile(
    r"(?:^|(?<=[;|&(]))[ \t]*(?:sudo[ \t]+)?(?:[a-z_][a-z0-9_]*=\S*[ \t]+){0,8}(?:[^\s;|&]*/)?"
    r"(?P<tool>" + "|".join(_TOOL_OPTIONS) + r")[a-z0-9_.-]*(?=[ \t])[^\n;|&]{0,%d}" % _TOOL_REACH, re.MULTILINE)
# sshpass: -p among its own options, before the command it runs (`sshpass -p PW ssh -p 2222 h`)
_SSHPASS_RE = re.compile(r"(?<![\w-])sshpass(?:[ \t]+-[a-oq-z]\S*(?:[ \t]+[^\s-]\S*)?){0,8}[ \t]+-p[ \t]*" + _PW_VALUE)
_XML_PASSWORD_RE = re.compile(
    r"<(?P<tag>password|passwd|passphrase|secret|token)(?:[ \t][^<>]{0,200})?>(?P<val>[^<\s][^<]{0,1024})</(?P=tag)>")


def _tool_spans(low: str) -> list[tuple[int, int]]:
    """The values of the password options of _TOOL_OPTIONS' tools and sshpass (lower-cased text)."""
    spans = [m.span("val") for m in _SSHPASS_RE.finditer(low)] if "sshpass" in low else []
    if any(tool in low for tool in _TOOL_OPTIONS):
        for command in _TOOL_COMMAND_RE.finditer(low):
            option = _TOOL_OPTIONS[command.group("tool")]
            spans += [m.span("val") for m in option.finditer(low, command.end("tool"), command.end())]
    return spans


_USER_PW_RE = re.compile(
    r"(?<![\w-])(?:-u|--user)(?:[ \t]+|=)[\"']?(?P<user>[^\s:\"']{1,256}):(?P<val>[^\s\"']+)")
_NETRC_RE = re.compile(r"(?<![\w-])(?:login|machine|account)[ \t]+\S{1,256}[ \t]+password[ \t]+(?P<val>\S+)")
_NETRC_LINE_RE = re.compile(r"[ \t]*password[ \t]+(?P<val>\S+)[ \t]*")  # a line of its own
_PGPASS_RE = re.compile(
    r"^(?=[^\s:]{0,252}[^\d\s:])[^\s:]{1,253}:(?:\d{1,5}|\*):[^\s:]{1,128}:[^\s:]{1,128}:(?P<val>\S+)[ \t]*$",
    re.MULTILINE)

# ---------------------------------------------------------------------------------------------
# 2. Token shapes, anywhere in the text (one combined pattern, one pass).
# ---------------------------------------------------------------------------------------------
# Each pattern starts with its literal prefix (so the regex engine can skip ahead with a fast
# substring search) and checks with a fixed-width lookbehind that the prefix does not end a
# word: the prefixes that could end an ordinary word (`sk-` in `disk-usage-...`, `AKIA`,
# `AIza`, `eyJ`) after any word character, `-` included; the distinctive ones (`ghp_`,
# `sk-ant-`, `glpat-`, ...) after a letter or digit only (`task_test_...`, `risk-ant-...` are
# words), so `out-ghp_...` and `foo_ghp_...` are tokens too. A pattern only runs when its
# prefix occurs in the text at all.
_WORD = "A-Za-z0-9_-"


def _tok(prefix: str, rest: str, before: str = "A-Za-z0-9") -> tuple[str, re.Pattern[str]]:
    lit = re.escape(prefix)
    return prefix, re.compile(lit + r"(?<![" + before + r"]" + lit + r")" + rest)


_TOKEN_PATTERNS = (
    _tok("sk-ant-", r"[A-Za-z0-9_-]{16,}"),
    _tok("sk-", r"(?:proj-)?[A-Za-z0-9_-]{20,}", _WORD),
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
    _tok("xox", r"[baprs]-[A-Za-z0-9-]{10,}", _WORD),
    _tok("AKIA", r"[A-Z0-9]{16}(?![A-Za-z0-9])", "A-Za-z0-9"),
    _tok("ASIA", r"[A-Z0-9]{16}(?![A-Za-z0-9])", "A-Za-z0-9"),
    _tok("glpat-", r"[A-Za-z0-9_-]{20,}"),
    _tok("hf_", r"[A-Za-z0-9]{30,}", _WORD),
    _tok("npm_", r"[A-Za-z0-9]{36,}"),
    _tok("AIza", r"[0-9A-Za-z_-]{35}", _WORD),
    _tok("eyJ", r"[A-Za-z0-9_-]{5,}\.eyJ[A-Za-z0-9_-]{5,}\.[A-Za-z0-9_-]*", _WORD),
)


def _token_sub(m: re.Match[str]) -> str:
    return _hint(m.group(0))


_BEARER_RE = re.compile(r"(?<![A-Za-z0-9_])(?P<head>[Bb][Ee][Aa][Rr][Ee][Rr][ \t]+)(?P<val>[A-Za-z0-9._~+/=-]{8,})")

# scheme://user:password@host  ->  scheme://user:***@host (anchored at "://"; the scheme is kept);
# the user may be empty (redis://:password@host) and the password may hold "@" (up to the last
# "@" before the host: postgres://app:p@ss@db)
_URL_CRED_RE = re.compile(r"(?P<head>://[^\s:/@]{0,256}:)(?P<val>[^\s@/]{1,1024}(?:@[^\s@/?#,;]{1,1024}){0,8})(?=@)")

# Webhook URLs carry their secret in the path.
_WEBHOOK_RE = re.compile(r"(?P<head>(?:hooks\.slack\.com|webhook\.office\.com|/api/webhooks)/)(?P<val>[^\s\"'<>)\]]+)")

# A bare AWS secret access key: exactly 40 base64 characters, mixed case and digits.
_AWS_SECRET_RE = re.compile(r"(?<![A-Za-z0-9/+=])[A-Za-z0-9/+]{40}(?![A-Za-z0-9/+=])")

# PEM private keys: whole blocks, a block cut at its end (BEGIN without END: mask to the end of
# the text), and a block cut at its start (base64 lines then END: found by walking back from
# each END line, never by a pattern that rescans the text from every position).
_PEM_RE = re.compile(
    r"(?P<begin>-----BEGIN (?P<kind>[A-Z0-9 ]{0,40}?)PRIVATE KEY-----)"
    r"(?:[\s\S]*?-----END [A-Z0-9 ]{0,40}?PRIVATE KEY-----|[\s\S]*\Z)"
)
_PEM_END_RE = re.compile(r"-----END [A-Z0-9 ]{0,40}?PRIVATE KEY-----")
_BASE64_LINE_RE = re.compile(r"[A-Za-z0-9+/=]{8,}\r?")

_ASCII_LOWER = {c: c + 32 for c in range(ord("A"), ord("Z") + 1)}


def _lower(text: str) -> str:
    """A lower-cased copy with the same length (str.lower can grow a few non-ASCII chars)."""
    low = text.lower()
    if len(low) != len(text):
        low = text.translate(_ASCII_LOWER)
    return low


def _pem_sub(m: re.Match[str]) -> str:
    """A whole block: BEGIN, the mask, END. A block cut at its end keeps its BEGIN line and
    masks what follows, adding no END line that the text does not hold."""
    begin, rest = m.group("begin"), m.group(0)[len(m.group("begin")):]
    if not rest.endswith("PRIVATE KEY-----") or not _PEM_END_RE.search(rest):
        return begin + (f"\n{MASK}" if rest.strip() else rest)
    return f"{begin}\n{MASK}\n-----END {m.group('kind')}PRIVATE KEY-----"


def _mask_pem_tails(text: str) -> str:
    """Mask the base64 lines just before each PEM END line (a key block cut at its start)."""
    out, pos = [], 0
    for m in _PEM_END_RE.finditer(text):
        start = m.start()
        cut = start
        while cut > pos and text[cut - 1] == "\n":  # walk back one line at a time, never past pos
            line_start = text.rfind("\n", pos, cut - 1) + 1 or pos
            if not _BASE64_LINE_RE.fullmatch(text, line_start, cut - 1):
                break
            cut = line_start
        if cut < start:
            out += [text[pos:cut], MASK, "\n"]
            pos = start
    if not out:
        return text
    out.append(text[pos:])
    return "".join(out)


def _aws_secret_sub(m: re.Match[str]) -> str:
    value = m.group(0)
    mixed = (any(c.isupper() for c in value) and any(c.islower() for c in value)
             and any(c.isdigit() for c in value))
    return MASK if mixed else value


def _line_spans(low: str, needles: tuple[str, ...]) -> list[tuple[int, int]]:
    """(start, end) of each line of `low` that contains one of `needles` (each line once)."""
    spans = set()
    for needle in needles:
        pos = low.find(needle)
        while pos >= 0:
            start = low.rfind("\n", 0, pos) + 1
            end = low.find("\n", pos)
            end = len(low) if end < 0 else end
            spans.add((start, end))
            pos = low.find(needle, end)
    return sorted(spans)


def _value_spans(low: str) -> list[tuple[int, int]]:
    """Spans of the values to mask that are found by name or by command shape (lower-cased text)."""
    spans: list[tuple[int, int]] = []

    def add(pattern: re.Pattern[str], start: int = 0, end: int | None = None) -> None:
        for m in pattern.finditer(low, start, len(low) if end is None else end):
            group = "qval" if "q" in m.re.groupindex and m.group("q") else "val"
            if m.re is _USER_PW_RE and m.group("user").isdigit() and m.group("val").isdigit():
                continue  # -u 1000:1000 is a uid:gid, not a login
            if m.re is _ASSIGN_RE and _describes(m):
                continue
            spans.append(m.span(group))

    if any(t in low for t in _ASSIGN_TRIGGERS) or "pass" in low:
        add(_ASSIGN_RE)
        add(_OPTION_RE)
    if "-p" in low:
        for start, end in _line_spans(low, ("mysql", "mariadb")):
            add(_MYSQL_P_RE, start, end)
        for start, end in _line_spans(low, ("login",)):
            if any(tool in low[start:end] for tool in _LOGIN_TOOLS):
                add(_LOGIN_P_RE, start, end)
    if "-u" in low:
        add(_USER_PW_RE)
    spans += _tool_spans(low)
    if "</" in low:
        add(_XML_PASSWORD_RE)
    if "password" in low:
        add(_NETRC_RE)
        for start, end in _line_spans(low, ("password",)):
            m = _NETRC_LINE_RE.fullmatch(low, start, end)
            if m:
                spans.append(m.span("val"))
    if ":" in low:
        add(_PGPASS_RE)
    return spans


def _describes(m: re.Match[str]) -> bool:
    """``GITHUB_TOKEN: present``, ``password = required``: a plain word after a colon or a spaced
    ``=`` says something about the secret rather than being it; ``${API_KEY:-unset}`` is a shell
    default. ``NAME=word`` (an assignment, as in an env dump), a quoted value and a value with
    digits or symbols are values."""
    value = m.group("val")
    if m.group("q") or value is None:
        return False
    gap = m.group(0)[: m.start("val") - m.start()]  # the name, the separator, blanks
    if gap.endswith(":") and value[:1] in ("-", "=", "+", "?"):
        return True  # ${NAME:-default}
    if not (value.isascii() and value.isalpha()):
        return False
    sep = gap.rstrip(" \t")
    if sep.endswith(":"):
        return True
    if not sep.endswith("="):
        return False  # "Bearer ", "Basic " or "token " stands between: a credential follows
    return gap != sep or sep[:-1] != sep[:-1].rstrip(" \t")  # a spaced "="


def _before_shell_operator(text: str, start: int, end: int) -> int:
    """The end of a value taken up to a blank (``mysql -pPW; next``, ``-pPW && next``) without
    the `;`, `&&`, `|` or `)` that ends the shell word when a blank or the end follows them."""
    if end < len(text) and not text[end].isspace():
        return end
    kept = len(text[start:end].rstrip(";&|)"))
    return start + kept if kept else end


def _mask_values(text: str) -> str:
    """Replace the value spans found in a lower-cased copy of `text` (overlaps: the first wins)."""
    spans = sorted(_value_spans(_lower(text)))
    if not spans:
        return text
    out, pos = [], 0
    for start, end in spans:
        if start < pos:
            continue
        end = _before_shell_operator(text, start, end)
        out += [text[pos:start], _hint(text[start:end])]
        pos = end
    out.append(text[pos:])
    return "".join(out)


# A line of a key's base64 body on its own: a log window or a search match (and its context
# lines, each a string of its own) inside a PEM block shows neither its BEGIN nor its END line.
# 40-76 base64 characters (PEM 64 a line, OpenSSH 70, MIME 76) with digits and both cases; not
# in a text that shows a block which is not a private key's (a certificate, a public key).
_KEY_LINE_RE = re.compile(r"^[A-Za-z0-9+/]{40,76}={0,2}(?=\r?$)", re.MULTILINE)


def _key_line_sub(m: re.Match[str]) -> str:
    return MASK if _random_looking(m.group(0)) else m.group(0)


def _mask_key_lines(text: str) -> str:
    if "-----BEGIN " in text and "PRIVATE KEY-----" not in text:
        return text  # a certificate or a public key, shown with its BEGIN line
    return _KEY_LINE_RE.sub(_key_line_sub, text)


def _redact_text(text: str) -> str:
    if "PRIVATE KEY-----" in text:
        text = _PEM_RE.sub(_pem_sub, text)
        text = _mask_pem_tails(text)
    text = _mask_key_lines(text)
    for prefix, pattern in _TOKEN_PATTERNS:
        if prefix in text:
            text = pattern.sub(_token_sub, text)
    if "earer" in text or "EARER" in text:
        text = _BEARER_RE.sub(lambda m: m.group("head") + _hint(m.group("val")), text)
    if "://" in text:
        text = _URL_CRED_RE.sub(lambda m: m.group("head") + MASK, text)
    if "hook" in text:
        text = _WEBHOOK_RE.sub(lambda m: m.group("head") + MASK, text)
    text = _AWS_SECRET_RE.sub(_aws_secret_sub, text)
    return _mask_values(text)


def contains_secret(text: str) -> bool:
    """True when masking would change `text` (whatever HERMES_PROCS_REDACT says): the env filter
    uses it to keep values such as ``http://user:pw@proxy`` or a token out of jobs."""
    return isinstance(text, str) and bool(text) and _redact_text(text) != text


# ---------------------------------------------------------------------------------------------
# 3. Tails cut at a fixed length (output_preview, output of wait/kill/completion) may begin in
#    the middle of a secret: "EN=hunter2", "p_a1B2c3..." (a cut ghp_ token), or inside a PEM
#    body. Their partial first line(s) get a stricter treatment.
# ---------------------------------------------------------------------------------------------
CUT_LENGTHS = frozenset((200, 1000, 2000))  # the registry's and supervisor's tail sizes
CUT_KEYS = ("output_preview", "output")
_HEAD_RUN_RE = re.compile(r"[A-Za-z0-9_+/=.-]{12,}")
_HEAD_ASSIGN_RE = re.compile(
    r"[A-Za-z0-9_.-]{0,40}[\"']?[ \t]*[:=][ \t]*(?:(?:bearer|basic|token)[ \t]+)?"
    r"(?:(?P<q>[\"'])(?P<qval>[^\"'\r\n]+)|(?P<val>[^\s\"',;&|<>(){}\[\]]+))",
    re.IGNORECASE,
)
_BASE64_LINES_RE = re.compile(r"(?:[A-Za-z0-9+/=]{40,76}\r?\n)+")  # PEM: 64 a line, OpenSSH 70, MIME 76


def _random_looking(line: str) -> bool:
    """A line of a key's base64 body has digits and both cases (`yyy...` or a row of a table
    does not: a notification's whole output was masked as a key's tail)."""
    return any(c.isdigit() for c in line) and any(c.isupper() for c in line) and any(c.islower() for c in line)


def _mask_head(text: str) -> str:
    """Mask what may be the remains of a secret at the start of a text cut mid-line."""
    m = _BASE64_LINES_RE.match(text)
    if m and _random_looking(text[:m.end()].split("\n", 1)[0]):  # inside a key body: mask those lines
        return MASK + "\n" + text[m.end():]
    m = _HEAD_RUN_RE.match(text)
    if m and any(c.isdigit() for c in m.group(0)) and any(c.isalpha() for c in m.group(0)) \
            and not m.group(0).endswith(MASK):
        return MASK + text[m.end():]
    m = _HEAD_ASSIGN_RE.match(text)
    if m and not _describes(m):
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


# exec/write/submit output cut in its middle (core/registry/yielding.py's marker): the end of the
# head and the start of the tail may each be part of a secret
CUT_MARKER_RE = re.compile(r"\n\[\.\.\. (?:about )?\d+ (?:characters|bytes) left out \.\.\.\]\n")
_TAIL_RUN_RE = re.compile(r"[A-Za-z0-9_+/=.-]{12,}\Z")


def _mask_around_cut(text: str) -> str:
    """`text` with the run before and the run after a cut marker masked where they have a
    secret's shape (as the head of a tail cut at its start is)."""
    m = CUT_MARKER_RE.search(text)
    if m is None:
        return text
    head, tail = text[:m.start()], text[m.end():]
    run = _TAIL_RUN_RE.search(head, max(0, len(head) - 300))
    if run and any(c.isdigit() for c in run.group(0)) and any(c.isalpha() for c in run.group(0)):
        head = head[:run.start()] + MASK
    return _mask_tail(head) + m.group(0) + _mask_head(tail)


def _walk(obj: Any) -> Any:
    if isinstance(obj, str):
        return _redact_text(obj) if obj else obj
    if isinstance(obj, dict):
        out = {k: _walk(v) for k, v in obj.items()}
        if isinstance(out.get("output"), str) and "left out ...]" in out["output"]:
            out["output"] = _mask_around_cut(out["output"])
        if "total_lines" not in out:  # read_log output is whole lines; tails are not
            for key in CUT_KEYS:
                value = out.get(key)
                if isinstance(value, str) and len(obj[key]) in CUT_LENGTHS:
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
