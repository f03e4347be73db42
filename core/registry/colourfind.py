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
searches that in RE2 and names the lines that hold it, and the few lines that are more than
that (a ``\r`` redraw, a backspace, a title, a C1 control, an escape that is not CSI: found
byte by byte); only those are converted and matched by the whole pattern
(core/registry/search.py). A block with a NUL, a DEL or a rarer C0 control is converted whole.

Standard library and RE2 only.
"""

from __future__ import annotations

from typing import Any

__all__ = ["ColourFinder"]

# a coloured block holds these bytes only (bytes.translate deletes them: ~3 GB/s, where an RE2
# class over every byte runs ~0.6 GB/s); NUL, DEL and the rarer C0 controls send it the slow way
COLOURED_TEXT = bytes(range(0x20, 0x7F)) + b"\t\n\r\x07\x08\x1b" + bytes(range(0x80, 0x100))
CSI = r"\x1b\[[0-?]*[ -/]*[@-~]"  # parameters, intermediates, final: as text.to_text removes them
# what makes a line's text more than its bytes without whole CSI sequences and a last \r: its
# lines are converted one by one; each is found from one byte to the next (memchr)
ODD = (rb"\x1b(?:$|[^\[]|\[[0-?]*[ -/]*(?:$|[^ -~]|[ -/][0-?]))",  # an escape that is not a whole CSI
       rb"\r(?:$|[^\n])",  # a \r that does not end the line (a redraw)
       rb"\x08", rb"\x07",  # a backspace, a BEL (the end of a title)
       rb"\xc2[\x80-\x9f]")  # a C1 control in UTF-8 (which to_text removes)
MOST = 256  # bytes per candidate line below which converting the whole block is cheaper


class ColourFinder:
    """The lines of a coloured block whose text may match a pattern every match of which holds
    one of ``literals`` (UTF-8)."""

    def __init__(self, literals: list[bytes], re2: Any) -> None:
        options, latin1 = _options(re2), _options(re2, latin1=True)
        # byte by byte (Latin-1): in UTF-8, \xc2 is U+00C2 and [^\n] misses a byte that is not UTF-8
        self.odd = [re2.compile(pattern, latin1)._regexp.Match for pattern in ODD]
        # a byte that is not UTF-8 is U+FFFD in the text and never part of a CSI sequence: it
        # cannot hide a literal, only be one (a pattern that holds U+FFFD converts every block)
        self.usable = not any("\ufffd".encode() in literal for literal in literals)
        texts = [text for text in map(_text, literals) if text]  # the others never occur in text
        between = f"(?:{CSI})*"  # colours, erases, cursor moves between two characters
        pattern = "|".join(between.join(text) for text in texts)
        self.literal = re2.compile(pattern, options)._regexp.Match if texts else None
        regexp = re2.compile("x", options)._regexp
        self.anchor = type(regexp).Anchor.UNANCHORED

    def candidates(self, data: bytes, end: int, clean: bool = False) -> tuple[list[int] | None, bool]:
        """Starts of the lines of ``data[:end]`` whose text may match (ascending): those that
        hold the literal, and the odd lines; None when the block holds bytes that are not
        coloured text, or when too many lines would have to be converted one by one. And
        whether the block is *clean*, coloured text without odd lines (a fact of its bytes
        alone, which a search notes: core/registry/colournotes.py); ``clean``: known already,
        so neither is looked for again."""
        if not self.usable:
            return None, False
        room = end // MOST if MOST else end  # (MOST 0: no line too many, for tests)
        lines: set[int] = set()
        if not clean:
            if data.translate(None, COLOURED_TEXT):  # bytes past ``end`` too: no copy
                return None, False
            for find in self.odd:
                found = self._lines(find, data, end, room - len(lines))
                if found is None:
                    return None, False
                lines.update(found)
            clean = not lines
        if self.literal is not None:
            found = self._lines(self.literal, data, end, room - len(lines))
            if found is None:
                return None, clean
            lines.update(found)
        return sorted(lines), clean

    def _lines(self, find: Any, data: bytes, end: int, room: int) -> list[int] | None:
        """Starts of the lines of ``data[:end]`` where ``find`` finds something; None past ``room``."""
        found: list[int] = []
        pos = 0
        while pos < end:
            start = find(self.anchor, data, pos, end)[0][0]
            if start < 0:
                break
            found.append(data.rfind(b"\n", pos, start) + 1 or pos)
            pos = data.find(b"\n", start, end) + 1 or end
            if len(found) > room:
                return None
        return found


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
