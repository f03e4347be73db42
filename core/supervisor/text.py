"""Text handling of job output: raw bytes on disk -> plain text for agents and humans; and the
one sanitiser for every other text a job controls before it is shown or printed.

Job output is stored as raw bytes (PTY jobs hold CRLF line ends, colour codes, cursor
movement, title changes, progress bars redrawn with ``\\r`` ...).  Every text result of the
API goes through :func:`to_text`, which

1. decodes UTF-8 with ``errors="replace"`` (invalid bytes become U+FFFD),
2. removes terminal escape sequences and stray control characters (:func:`strip_ansi`),
3. collapses carriage-return redraws and backspaces (:func:`collapse_cr`).

``collapse_cr`` uses *terminal overwrite semantics*: a ``\\r`` moves the cursor back to column 0
and the following text overwrites what was there, so ``"abc\\rX"`` becomes ``"Xbc"`` and a
progress bar ``"10%\\r50%\\r100%"`` becomes ``"100%"``.  ``\\r\\n`` (and ``\\r\\r\\n``) fold to a
plain line break.  A backspace moves the cursor one column left (never past column 0)
without erasing, so ``"abc\\b \\b"`` gives ``"ab "`` and a spinner ``"|\\b/\\b-"`` gives ``"-"``.
Columns are counted in code points: tabs and wide characters count as one column.

Names, commands, argv, working directories, environment values and prompts are not output:
they are shown as they are, except for the characters that could act on a terminal, which
:func:`safe_text` shows as escapes (``\\x1b``, ``\\x9b``, ``\\u202e``): C0 controls but tab and
newline, DEL, the C1 controls U+0080-U+009F (a terminal may take U+009B as CSI and U+009D as
OSC), the bidirectional embeddings, overrides and isolates U+202A-U+202E, U+2066-U+2069 (they
reorder what a line shows), the line and paragraph separators U+2028, U+2029 (a line break to
some programs, none to others) and lone surrogates (they cannot be encoded).  :func:`safe_line` is
the same on one line; :func:`safe_json` is JSON with those characters as ``\\uXXXX`` escapes
(the JSON module leaves C1 and bidi characters raw); :func:`safe_strings` applies
:func:`safe_text` to every string of a result before a human rendering of it.

Stdlib only (the supervisor may import it).
"""

from __future__ import annotations

import codecs
import functools
import json
import re
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from collections.abc import Callable

__all__ = [
    "Utf8Stream",
    "collapse_cr",
    "last_chars",
    "looks_plain",
    "one_line",
    "safe_json",
    "safe_line",
    "safe_strings",
    "safe_text",
    "strip_ansi",
    "to_text",
]


class Utf8Stream:
    """Incremental UTF-8 decoder: a character split across reads survives.

    Invalid bytes become U+FFFD.  Call :meth:`flush` at end of stream to turn an
    unfinished trailing sequence into U+FFFD.
    """

    __slots__ = ("_dec",)

    def __init__(self) -> None:
        self._dec = codecs.getincrementaldecoder("utf-8")(errors="replace")

    def feed(self, b: bytes) -> str:
        return self._dec.decode(b, False)

    def flush(self) -> str:
        out = self._dec.decode(b"", True)
        self._dec.reset()
        return out


# --- escape sequence stripping --------------------------------------------------------
#
# One regex.  It starts with a single character class (every C0 control except \t \n \r,
# ESC, DEL, C1 controls) so the regex engine scans plain text at C speed; what follows the
# introducer is chosen by a look-behind on it:
#
# * ESC [  (or C1 \x9b): CSI -- parameter bytes 0x30-0x3F (includes private "?", "<", "=", ">"),
#   intermediates 0x20-0x2F, final byte 0x40-0x7E.
# * ESC ]  (or C1 \x9d): OSC -- body up to BEL or ST (ESC \ or C1 \x9c): titles, OSC 8
#   hyperlinks (the link text between the two OSC 8 sequences is kept), OSC 52 clipboard.
#   An unterminated OSC ends at the next ESC or newline, so a truncated title never swallows
#   the rest of the log.
# * ESC P / X / ^ / _  (or C1 \x90 \x98 \x9e \x9f): DCS / SOS / PM / APC -- body up to ST; an
#   unterminated one ends at the next ESC or newline, so it never hides the lines after it.
# * other escapes: ESC, intermediates 0x20-0x2F, final 0x30-0x7E
#   (ESC = , ESC > , ESC ( B , ESC 7 , ESC # 8 , ESC M ...).
# * anything else in the class (a lone ESC, BEL, NUL, DEL, C1 ...) is removed on its own.
_ST = r"(?:\x1b\\|\x9c)"
_CSI_BODY = r"[0-?]*[ -/]*[@-~]"
_OSC_BODY = r"[^\x07\x1b\x9c\n]*(?:\x07|" + _ST + r")?"
_STR_BODY = r"[^\x1b\x9c\n]*" + _ST + r"?"
_TAIL = (
    r"(?:(?<=\x1b)(?:\[" + _CSI_BODY + r"|\]" + _OSC_BODY + r"|[PX^_]" + _STR_BODY + r"|[ -/]*[0-~])"
    r"|(?<=\x9b)" + _CSI_BODY
    + r"|(?<=\x9d)" + _OSC_BODY
    + r"|(?<=[\x90\x98\x9e\x9f])" + _STR_BODY
    + r")?"
)


@functools.cache  # compiled on first use: ~1 ms each, paid by no CLI query that shows no output
def _ansi_re(keep_backspace: bool, keep_sgr: bool = False) -> re.Pattern[str]:
    bs = "" if keep_backspace else r"\x08"
    if not keep_sgr:
        return re.compile(r"[\x00-\x07" + bs + r"\x0b\x0c\x0e-\x1f\x7f-\x9f]" + _TAIL)
    # an ESC that starts an SGR (colour) sequence is not an introducer
    intro = r"(?:\x1b(?!\[[0-9;:]*m)|[\x00-\x07" + bs + r"\x0b\x0c\x0e-\x1a\x1c-\x1f\x7f-\x9f])"
    return re.compile(intro + _TAIL)


def strip_ansi(s: str, *, keep_sgr: bool = False) -> str:
    """Remove terminal escape sequences and control characters other than ``\\n \\t \\r``.

    Handles CSI (incl. private parameters such as ``ESC[?1049h``), OSC (BEL or ST terminated:
    titles, OSC 8 hyperlinks, OSC 52 clipboard), DCS/SOS/PM/APC strings, two-character escapes
    (``ESC =``, ``ESC (B``, ``ESC 7`` ...), lone C0 controls, DEL and C1 controls (U+0080-U+009F,
    including the 8-bit CSI ``\\x9b``).  The visible text of an OSC 8 hyperlink is kept.

    ``keep_sgr=True`` (for a renderer that parses colours itself, the dashboard's log pane)
    keeps 7-bit SGR colour sequences (``ESC[...m``) and backspaces, so the caller can still
    collapse ``\\b`` redraws; every other sequence is removed as above.
    """
    return _ansi_re(keep_backspace=keep_sgr, keep_sgr=keep_sgr).sub("", s)


_CR_BS_SPLIT = re.compile(r"([\r\b])")


def _collapse_line(line: str) -> str:
    """Overwrite semantics for one line (no ``\\n`` inside)."""
    if "\b" not in line:
        # Only \r: walk the segments from the last one backwards; each earlier segment
        # contributes only the columns that later (overwriting) segments did not reach, so
        # the pieces come out in column order.  Linear even for many redraws.
        segs = line.split("\r")
        pieces: list[str] = []
        covered = 0
        for seg in reversed(segs):
            n = len(seg)
            if n > covered:
                pieces.append(seg[covered:])
                covered = n
        return "".join(pieces)
    # General case with backspaces: a small cursor machine over text runs.
    buf: list[str] = []
    cur = 0
    for tok in _CR_BS_SPLIT.split(line):
        if not tok:
            continue
        if tok == "\r":
            cur = 0
        elif tok == "\b":
            if cur > 0:
                cur -= 1
        else:
            end = cur + len(tok)
            if cur == len(buf):
                buf.extend(tok)
            else:
                buf[cur:end] = tok  # overwrite (may extend past the old end)
            cur = end
    return "".join(buf)


def collapse_cr(s: str) -> str:
    """Collapse carriage-return redraws and backspaces line by line (overwrite semantics).

    ``"a\\r\\n"`` -> ``"a\\n"``; ``"10%\\r100%"`` -> ``"100%"``; ``"abc\\rX"`` -> ``"Xbc"``;
    ``"ab\\bX"`` -> ``"aX"``.  A trailing ``\\r`` without text after it changes nothing.
    """
    if "\r" not in s and "\b" not in s:
        return s
    s = s.replace("\r\n", "\n")  # a terminal's line end: a last \r changes nothing (4x faster than per line)
    if "\r" not in s and "\b" not in s:
        return s
    lines = s.split("\n")
    for i, line in enumerate(lines):
        if "\r" in line or "\b" in line:
            lines[i] = _collapse_line(line)
    return "\n".join(lines)


_PLAIN_TEXT = bytes(range(0x20, 0x7F)) + b"\t\n"  # what to_text keeps as it is


def looks_plain(data: bytes) -> bool:
    """Printable ASCII, tabs and line ends only: the bytes of an ordinary log, which are its
    :func:`to_text`, so a search can match them as they are (a check at ~3 GB/s, no decoding).
    Any other control character (an escape, ``\r``, a backspace, ``\x01`` ...) is rewritten or
    removed by to_text."""
    if not data.isascii() or b"\x1b" in data or b"\r" in data:  # a memchr finds the usual ones at once
        return False
    return not data.translate(None, _PLAIN_TEXT)


def to_text(data: bytes) -> str:
    """Raw output bytes -> display text: decode (replace errors), strip escapes, collapse ``\\r``."""
    s = data.decode("utf-8", "replace")
    s = _ansi_re(keep_backspace=True).sub("", s)
    return collapse_cr(s)


def _skip_continuation(data: bytes, start: int) -> int:
    """Move ``start`` past at most 3 UTF-8 continuation bytes (a character cut in half)."""
    for _ in range(3):
        if start < len(data) and 0x80 <= data[start] <= 0xBF:
            start += 1
        else:
            break
    return start


def last_chars(data: bytes, n: int) -> str:
    """Text (as :func:`to_text`) of the last ``n`` characters of ``data``.

    Only a bounded tail is decoded: it starts at about ``4*n + 1 KiB`` bytes and doubles while
    escape sequences eat too much of it, up to ``64*n + 1 MiB`` bytes, so a 50 MB input is never
    decoded whole.  When the window starts inside a line, that partial first line is dropped if
    the rest still holds ``n`` characters (so ``\\r`` collapsing sees whole lines).
    """
    if n <= 0 or not data:
        return ""
    total = len(data)
    size = 4 * n + 1024
    cap = 64 * n + (1 << 20)
    while True:
        if size >= total:
            return to_text(data)[-n:]
        mv = memoryview(data)
        start = total - size
        # Prefer to start at a line boundary.
        nl = data.find(b"\n", start, total)
        if nl != -1:
            text = to_text(mv[nl + 1:].tobytes())
            if len(text) >= n:
                return text[-n:]
        start = _skip_continuation(data, start)
        text = to_text(mv[start:].tobytes())
        if len(text) >= n or size >= cap:
            return text[-n:]
        size *= 2


# --- the sanitiser for text a job controls ------------------------------------------------

_BIDI = "\u202a-\u202e\u2066-\u2069"


@functools.cache  # compiled on first use (~0.8 ms each): a CLI query prints with one of the two
def _unsafe(in_json: bool, keep_c0: bool = False) -> re.Pattern[str]:
    if in_json:  # json escapes C0 itself
        return re.compile("[\x7f-\x9f" + _BIDI + "\u2028\u2029\ud800-\udfff]")
    c0 = "" if keep_c0 else "\x00-\x08\x0b-\x1f"
    return re.compile("[" + c0 + "\x7f-\x9f" + _BIDI + "\u2028\u2029\ud800-\udfff]")


def _escape(match: re.Match[str]) -> str:
    code = ord(match.group())
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def safe_text(text: str) -> str:
    """``text`` fit for a terminal: every character that could act on one (C0 but tab and
    newline, DEL, C1, bidi overrides and isolates, U+2028/U+2029, lone surrogates) shown as its escape,
    ``"\\x1b"``, ``"\\u202e"``; everything else, and so every ordinary text, unchanged."""
    return _unsafe(in_json=False).sub(_escape, text)


def safe_marks(text: str) -> str:
    """:func:`safe_text` for text that keeps its C0 controls (``log --follow`` on a terminal keeps
    ``\\r`` and backspace, which redraw progress in place, and colours): DEL, C1, bidi controls,
    U+2028/U+2029 and lone surrogates shown as their escapes."""
    return _unsafe(in_json=False, keep_c0=True).sub(_escape, text)


def safe_line(text: str) -> str:
    """:func:`safe_text` on one line: every run of whitespace (newlines, tabs) one space."""
    return " ".join(safe_text(text.replace("\u2028", " ").replace("\u2029", " ")).split())


def safe_strings(value: Any) -> Any:
    """``value`` (a result: dicts, lists, strings, numbers) with :func:`safe_text` applied to
    every string in it, for a human rendering that formats its fields (about 10 µs a ``list()``
    row)."""
    return _each_string(value, safe_text)


def encodable(value: Any) -> Any:
    """``value`` with each lone surrogate in its strings shown as its escape (``"\\udc9b"``, a
    byte of a name or command that was not UTF-8): what a UTF-8 writer can send (the MCP
    SDK's structured content, which would fail on the surrogate); every other character kept."""
    surrogates = _surrogates()
    return _each_string(value, lambda text: surrogates.sub(_escape, text))


@functools.cache
def _surrogates() -> re.Pattern[str]:
    return re.compile("[\ud800-\udfff]")


def _each_string(value: Any, change: Callable[[str], str]) -> Any:
    if isinstance(value, str):
        return change(value)
    if isinstance(value, dict):
        return {key: _each_string(item, change) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [_each_string(item, change) for item in value]
    return value


def _json_escape(match: re.Match[str]) -> str:
    return f"\\u{ord(match.group()):04x}"


def safe_json(value: Any) -> str:
    """``value`` as one JSON document that decodes to exactly ``value`` and holds no character
    a terminal could act on: C0 (by the json module), DEL, C1, bidi controls, U+2028/U+2029 and
    lone surrogates are ``\\uXXXX`` escapes.  Other text stays readable (no ``ensure_ascii``)."""
    return safe_json_text(json.dumps(value, ensure_ascii=False, default=str))


def safe_json_text(text: str) -> str:
    """JSON text another encoder wrote (the MCP SDK's lines) with what :func:`safe_json`
    escapes escaped: such characters stand only inside its strings, where the escape reads the same."""
    return _unsafe(in_json=True).sub(_json_escape, text)


ERROR_CHARS = 2000  # characters of an error message (it may quote a huge bad value)


def one_line(message: str) -> str:
    """An error message on one line: line breaks inside it (from a value it quotes) shown as \\n,
    and what could act on a terminal as :func:`safe_text` shows it; cut to ERROR_CHARS."""
    line = safe_text(message.strip().replace("\r", "\\r").replace("\n", "\\n"))
    return line if len(line) <= ERROR_CHARS else f"{line[:ERROR_CHARS]}... [{len(line) - ERROR_CHARS} more characters]"
