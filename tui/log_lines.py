"""One raw line of a job's log turned into safe styled text: every escape sequence but SGR
(colours) removed by the one sanitiser (``strip_ansi(keep_sgr=True)``: OSC 52, titles,
hyperlinks, cursor moves, private modes, DCS, C1 controls ...), ``\\r`` redraws collapsed, bidi
controls shown as escapes (``safe_marks``), and only then the SGR codes parsed by ``rich``'s
ANSI decoder into styles. Nothing a job wrote ever reaches the real terminal. Used by the log
pane, its reader (search) and the terminal pane's scrollback.
"""

from __future__ import annotations

import re

from rich.ansi import AnsiDecoder
from rich.style import Style
from rich.text import Span, Text

from hermes_procs.core.supervisor.text import collapse_cr, safe_marks, strip_ansi

from .legible import readable

__all__ = ["MAX_LINE_CHARS", "render_raw_line"]

_SGR = re.compile(r"\x1b\[[0-9;:]*m")
MAX_LINE_CHARS = 4000  # a longer line is cut (its end is kept when it is a \r redraw)


def _visible_len(s: str) -> int:
    return len(_SGR.sub("", s))


def _collapse(s: str) -> str:
    """Collapse ``\\r`` redraws (and backspaces) of a line that may hold SGR codes."""
    if "\r" not in s and "\b" not in s:
        return s
    if "\b" not in s:
        segs = [seg for seg in s.split("\r")]
        while len(segs) > 1 and not _SGR.sub("", segs[-1]):
            segs.pop()  # a trailing "\r" (CRLF) or colour-only tail changes nothing
        last = segs[-1]
        if len(segs) == 1 or _visible_len(last) >= max(_visible_len(x) for x in segs[:-1]):
            return last  # the usual progress redraw: the last frame covers the earlier ones
    # partial overwrite: exact columns matter more than colours
    return collapse_cr(_SGR.sub("", s))


def render_raw_line(raw: bytes) -> Text:
    """Raw bytes of one log line -> a safe, styled, single-line Text."""
    s = raw.decode("utf-8", "replace")
    if len(s) > MAX_LINE_CHARS:
        cut = len(s) - MAX_LINE_CHARS
        body = s.rstrip("\r")
        k = body.rfind("\r", 0, len(body) - 1)
        if k != -1 and len(body) - k <= MAX_LINE_CHARS:
            s = body[k + 1:]
        else:
            s = s[:MAX_LINE_CHARS] + f"… [{cut} more characters]"
    s = safe_marks(_collapse(strip_ansi(s, keep_sgr=True)))  # bidi controls shown as \u202e
    text = AnsiDecoder().decode_line(s)
    text.spans = [_shown(span) for span in text.spans]
    text.expand_tabs(8)
    text.no_wrap = True
    return text


_SHOWN = Style(conceal=False)  # SGR 8 hid text from the human that log, search and the agent see


def _shown(span: Span) -> Span:
    """`span` drawn readable: not concealed, not (nearly) its colour on its own (tui/legible.py)."""
    style = span.style
    if not isinstance(style, Style):
        return span
    if style.conceal:
        style = style + _SHOWN
    color, bgcolor = readable(style.color, style.bgcolor)
    if (color, bgcolor) != (style.color, style.bgcolor):
        style = Style(color=color, bgcolor=bgcolor, **{name: getattr(style, name) for name in _ATTRS})
    return span if style is span.style else Span(span.start, span.end, style)


_ATTRS = ("bold", "dim", "italic", "underline", "blink", "reverse", "strike", "overline", "conceal")
