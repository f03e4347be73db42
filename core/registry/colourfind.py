"""Coloured output searched without converting it: the lines of a block of coloured text that
may hold a match, found by RE2 over the raw bytes.

A log of coloured output (``ESC[32mINFO ESC[0m ...``: SGR sequences on every line; erases,
cursor moves and a terminal's ``\r\n`` line ends when it ran in a PTY) is not plain
(text.looks_plain), so a search matches its text (text.to_text), and converting a block costs
one Python regex substitution per escape sequence: ~25 MB/s. When the block holds nothing but
text (UTF-8) without control characters other than tabs, line ends (``\r`` only before ``\n``)
and whole CSI sequences (``ESC [`` parameters, intermediates, a final byte: colours, erases,
cursor moves, modes), the text of each line is its bytes without those sequences (and its last
``\r``), so a literal that every match holds (linefind.required_literals) is in a line's text
exactly when it is in its bytes with CSI sequences between its characters. :class:`ColourFinder`
searches that in RE2 and names the lines that hold it; only those are converted and matched by
the whole pattern (core/registry/search.py). Any other block (a ``\r`` redraw, an OSC title, a
C1 control) is converted whole.

Standard library and RE2 only.
"""

from __future__ import annotations

from typing import Any

__all__ = ["ColourFinder"]

# a coloured block holds these bytes only (bytes.translate deletes them: ~3 GB/s, where an RE2
# class over every byte runs ~0.6 GB/s): its every ESC starts a whole CSI sequence, its every
# \r ends a line (a terminal's \r\n: to_text drops it) and the rest holds no C1 control
COLOURED_TEXT = bytes(range(0x20, 0x7F)) + b"\t\n\r\x1b" + bytes(range(0x80, 0x100))
CSI = r"\x1b\[[0-?]*[ -/]*[@-~]"  # parameters, intermediates, final: as text.to_text removes them
NOT_CSI = rb"\x1b(?:$|[^\[]|\[[0-?]*[ -/]*(?:$|[^ -~]|[ -/][0-?]))"  # found from ESC to ESC (memchr)
LONE_CR = rb"\r(?:$|[^\n])"  # a \r that does not end a line (a redraw): from \r to \r (memchr)
C1 = rb"\xc2[\x80-\x9f]"  # a C1 control in UTF-8, which to_text removes (RE2 reading Latin-1: memchr)
MOST = 256  # bytes per candidate line below which converting the whole block is cheaper


class ColourFinder:
    """The lines of a coloured block whose text may match a pattern every match of which holds
    one of ``literals`` (UTF-8)."""

    def __init__(self, literals: list[bytes], re2: Any) -> None:
        options = _options(re2)
        self.not_csi, self.lone_cr = (re2.compile(p, options)._regexp.Match for p in (NOT_CSI, LONE_CR))
        self.c1 = re2.compile(C1, _options(re2, latin1=True))._regexp.Match
        # a byte that is not UTF-8 is U+FFFD in the text and never part of a CSI sequence: it
        # cannot hide a literal, only be one (a pattern that holds U+FFFD converts every block)
        self.usable = not any("\ufffd".encode() in literal for literal in literals)
        texts = [text for text in map(_text, literals) if text]  # the others never occur in text
        between = f"(?:{CSI})*"  # colours, erases, cursor moves between two characters
        pattern = "|".join(between.join(text) for text in texts)
        self.literal = re2.compile(pattern, options)._regexp.Match if texts else None
        regexp = re2.compile("x", options)._regexp
        self.anchor = type(regexp).Anchor.UNANCHORED

    def candidates(self, data: bytes, end: int) -> list[int] | None:
        """Starts of the lines of ``data[:end]`` whose text may match (ascending); None when the
        block holds more than coloured text, or when too many lines would have to be converted
        one by one."""
        if not self.usable or not self.coloured(data, end):
            return None
        found: list[int] = []
        pos = 0
        while pos < end and self.literal is not None:
            start = self.literal(self.anchor, data, pos, end)[0][0]
            if start < 0:
                break
            found.append(data.rfind(b"\n", pos, start) + 1 or pos)
            pos = data.find(b"\n", start, end) + 1 or end
            if len(found) * MOST > end:
                return None
        return found

    def coloured(self, data: bytes, end: int) -> bool:
        """Whether ``data[:end]`` is text without C0 or C1 controls but tabs, line ends
        (``\n`` or ``\r\n``) and whole CSI sequences (the bytes past ``end``, the start of the
        next line, are checked for the bytes they hold too: no copy of the block, and a False only
        costs the slower way)."""
        if data.translate(None, COLOURED_TEXT):
            return False
        if not data.isascii() and self.c1(self.anchor, data, 0, end)[0][0] >= 0:
            return False
        return all(find(self.anchor, data, 0, end)[0][0] < 0 for find in (self.lone_cr, self.not_csi))


def _options(re2: Any, latin1: bool = False) -> Any:
    options = re2.Options()
    options.never_capture = True
    options.log_errors = False
    if latin1:  # a byte is a character: \xc2 is that byte, not U+00C2
        options.encoding = options.Encoding.LATIN1
    return options


def _text(literal: bytes) -> list[str]:
    """The characters of ``literal`` as RE2 escapes; [] when it never occurs in text (a
    surrogate, a control character)."""
    try:
        chars = literal.decode("utf-8")
    except UnicodeDecodeError:
        return []
    if any((ord(c) < 0x20 and c != "\t") or 0x7F <= ord(c) <= 0x9F for c in chars):
        return []
    return [f"\\x{{{ord(c):x}}}" for c in chars]
