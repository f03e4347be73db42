"""Job output made safe to print, chunk by chunk: `TextFilter` (for `log --follow` and the
context `attach` replays).

Standard library only.
"""

from __future__ import annotations

import codecs
import re

from ..supervisor.text import to_text

# Complete escape sequences: CSI, OSC (BEL or ST terminated), DCS/SOS/PM/APC strings,
# and two/three-character escapes (charset selection, keypad modes, RIS, ...).
_SEQ = re.compile(
    r"\x1b\[[0-?]*[ -/]*[@-~]"
    r"|\x1b\][^\x07\x1b\n]*(?:\x07|\x1b\\|(?=[\x1b\n]))"  # unterminated: ends at ESC/newline
    r"|\x1b[PX^_][^\x1b\n]*(?:\x1b\\|(?=[\x1b\n]))"  # as core.text: unterminated ends at ESC/newline
    r"|\x1b[ -/]+[0-~]|\x1b[0-OQ-WYZ\\`-~]"  # not [ ] P X ^ _ (they open the forms above)
    r"|\x9b[0-?]*[ -/]*[@-~]",
    re.DOTALL,
)
# What an escape sequence cut off by the end of a chunk looks like.
_PARTIAL = re.compile(
    r"(?:\x1b(?:\[[0-?]*[ -/]*|\][^\x07\x1b\n]*\x1b?|[PX^_][^\x1b\n]*\x1b?|[ -/]*)?|\x9b[0-?]*[ -/]*)\Z",
    re.DOTALL,
)
# Other control characters dropped from terminal text (keep \t \n \r \b).
_CTRL = re.compile(r"[\x00-\x07\x0b\x0c\x0e-\x1a\x1c-\x1f\x7f\x80-\x9f]")
_INTRO = re.compile(r"[\x1b\x9b]")
_SGR_SPLIT = re.compile(r"(\x1b\[[0-?]*m)")
_MAX_PENDING = 8192  # an "escape sequence" longer than this is garbage: drop it
_MAX_LINE = 65536  # non-terminal output: flush a line without newline at this size


class TextFilter:
    """Incremental bytes -> safe text for printing.

    - `keep_sgr=False` (output to a file or pipe): whole lines are passed through
      `hermes_procs.core.supervisor.text.to_text` (UTF-8 with U+FFFD, every escape sequence removed,
      `\\r\\n` folded, `\\r` progress redraws collapsed to their final state), the same
      text `log` and `read_log` give; an unfinished line is held until its newline (or
      the end of the stream, or 64 KiB).
    - `keep_sgr=True` (output to a terminal): decoded incrementally, colours (SGR,
      `ESC[...m`) kept, every other sequence (cursor motion, alternate screen, title,
      clipboard, ...) dropped, `\\r` and backspace kept so progress bars redraw in place;
      an escape sequence split across chunks is held back until complete.
    """

    def __init__(self, keep_sgr: bool = False):
        self.keep_sgr = keep_sgr
        self._dec = codecs.getincrementaldecoder("utf-8")(errors="replace")
        self._pending = ""  # terminal mode: incomplete escape sequence
        self._line = b""  # file mode: current unfinished line (bytes)
        self.sgr_used = False

    def _strip(self, text: str) -> str:
        text = self._pending + text
        self._pending = ""
        out = []
        i = 0
        n = len(text)
        while i < n:
            m = _INTRO.search(text, i)
            if m is None:
                out.append(text[i:])
                break
            j = m.start()
            out.append(text[i:j])
            m = _SEQ.match(text, j)
            if m:
                seq = m.group(0)
                if seq.startswith("\x1b[") and seq.endswith("m"):
                    out.append(seq)
                    self.sgr_used = True
                i = m.end()
                continue
            rest = text[j:]
            if _PARTIAL.match(rest) and len(rest) <= _MAX_PENDING:
                self._pending = rest
                break
            i = j + 1  # a lone/malformed ESC: drop it
        parts = _SGR_SPLIT.split("".join(out))
        return "".join(p if p.startswith("\x1b[") else _CTRL.sub("", p) for p in parts)

    def feed(self, data: bytes, final: bool = False) -> str:
        if self.keep_sgr:
            text = self._strip(self._dec.decode(data, final))
            if final:
                self._pending = ""
            return text
        buf = self._line + data
        k = buf.rfind(b"\n")
        out = ""
        if k >= 0:
            out = to_text(buf[: k + 1])
            buf = buf[k + 1 :]
        if buf and (final or len(buf) > _MAX_LINE):
            out += to_text(buf)
            buf = b""
        self._line = buf
        return out

    def finish(self) -> str:
        tail = self.feed(b"", final=True)
        if self.keep_sgr and self.sgr_used:
            tail += "\x1b[0m"
        return tail
