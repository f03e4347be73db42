"""Job output made safe to print, chunk by chunk: `TextFilter` (for `log --follow` and the
context `attach` replays).

Standard library only.
"""

from __future__ import annotations

import codecs
import re

from ..supervisor.text import safe_marks, safe_text, to_text

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
_SGR_SPLIT = re.compile(r"(\x1b\[[0-9;:]*m)")  # only plain SGR: not `ESC[>4;2m` (a key mode), `ESC[1 m`
_COLOUR_ARGS = frozenset({"38", "48", "58"})  # extended colours: 5;N or 2;R;G;B follow (their 8 is no conceal)
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
                if _SGR_SPLIT.fullmatch(seq):
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
        return "".join(_visible(p) if p.startswith("\x1b[") else safe_marks(_CTRL.sub("", p)) for p in parts)

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
            out = safe_text(to_text(buf[: k + 1]))
            buf = buf[k + 1 :]
        if buf and (final or len(buf) > _MAX_LINE):
            out += safe_text(to_text(buf))
            buf = b""
        self._line = buf
        return out

    def finish(self) -> str:
        tail = self.feed(b"", final=True)
        if self.keep_sgr and self.sgr_used:
            tail += "\x1b[0m"
        return tail


def _visible(sgr: str) -> str:
    """An SGR sequence without "conceal" (8), which would hide the text after it from the reader."""
    params = sgr[2:-1].split(";")
    # a terminal reads 08 as 8, and may read 8:0 (a sub-parameter) as 8 too
    numbers = [p.split(":")[0].lstrip("0") or "0" for p in params]
    if "8" not in numbers:
        return sgr
    kept, skip = [], 0
    for i, param in enumerate(params):
        if skip:
            skip -= 1
        elif numbers[i] in _COLOUR_ARGS and ":" not in param and i + 1 < len(params):  # 38:5:8 is one
            skip = 2 if numbers[i + 1] == "5" else 4 if numbers[i + 1] == "2" else 0
        elif numbers[i] == "8":
            continue
        kept.append(param)
    return "\x1b[" + ";".join(kept) + "m" if kept else ""
