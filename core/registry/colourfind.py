"""Coloured output searched without converting it: the lines of a block of coloured text that
may hold a match, found by RE2 over the raw bytes.

A log of coloured output (``ESC[32mINFO ESC[0m ...``: SGR sequences on every line, and a
terminal's ``\r\n`` line ends when it ran in a PTY) is not plain (text.looks_plain), so a search
matches its text (text.to_text), and converting a block costs one Python regex substitution per
escape sequence: ~25 MB/s. When the block holds nothing but ASCII, tabs, line ends (``\r`` only
before ``\n``) and SGR sequences (``ESC [ digits ; : m``), the text of each line is its bytes
without those sequences (and its last ``\r``), so a literal that every match holds
(linefind.required_literals) is in a line's text exactly when it is in its bytes with SGR
sequences between its characters. :class:`ColourFinder` searches that in RE2 and names the lines
that hold it; only those are converted and matched by the whole pattern (core/registry/search.py).

Standard library and RE2 only.
"""

from __future__ import annotations

from typing import Any

__all__ = ["ColourFinder"]

# a coloured block holds these bytes only (bytes.translate deletes them: ~3 GB/s, where an RE2
# class over every byte runs ~0.6 GB/s), its every ESC starts a whole SGR sequence and its every
# \r ends a line (a terminal's \r\n: to_text drops it)
COLOURED_TEXT = bytes(range(0x20, 0x7F)) + b"\t\n\r\x1b"
NOT_SGR = rb"\x1b(?:$|[^\[]|\[[0-9;:]*(?:$|[^0-9;:m]))"  # found from ESC to ESC (memchr)
LONE_CR = rb"\r(?:$|[^\n])"  # a \r that does not end a line (a redraw): from \r to \r (memchr)
SGR = "(?:\\x1b\\[[0-9;:]*m)*"
MOST = 256  # bytes per candidate line below which converting the whole block is cheaper


class ColourFinder:
    """The lines of a coloured block whose text may match a pattern every match of which holds
    one of ``literals`` (UTF-8)."""

    def __init__(self, literals: list[bytes], re2: Any) -> None:
        options = re2.Options()
        options.never_capture = True
        options.log_errors = False
        self.not_sgr = re2.compile(NOT_SGR, options)._regexp.Match
        self.lone_cr = re2.compile(LONE_CR, options)._regexp.Match
        ascii_ = [literal for literal in literals if literal.isascii()]  # the others never occur in ASCII text
        pattern = "|".join(SGR.join(f"\\x{byte:02x}" for byte in literal) for literal in ascii_)
        self.literal = re2.compile(pattern, options)._regexp.Match if ascii_ else None
        regexp = re2.compile("x", options)._regexp
        self.anchor = type(regexp).Anchor.UNANCHORED

    def candidates(self, data: bytes, end: int) -> list[int] | None:
        """Starts of the lines of ``data[:end]`` whose text may match (ascending); None when the
        block holds more than coloured ASCII text, or when too many lines would have to be
        converted one by one."""
        if not self.coloured(data, end):
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
        """Whether ``data[:end]`` is ASCII text, tabs, line ends (``\n`` or ``\r\n``) and whole
        SGR sequences only (the bytes past ``end``, the start of the next line, are checked for
        the bytes they hold too: no copy of the block, and a False only costs the slower way)."""
        if data.translate(None, COLOURED_TEXT):
            return False
        return all(find(self.anchor, data, 0, end)[0][0] < 0 for find in (self.lone_cr, self.not_sgr))
