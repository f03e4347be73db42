"""Text a job colours to be unreadable: a foreground on (nearly) its own background.

SGR 8 (conceal) is dropped where it is drawn (log_lines.py, vt.py); black on black (`30;40`),
`38;2;1;1;1;48;2;1;1;1`, or black on the pane's own dark background (`30` alone: Textual draws
ANSI black in the theme's background colour) hid text the same way, from the human only: the
agent's log, search and the raw log show it. :func:`readable` drops the background of text
that sets both colours this close, and a near-black foreground set without a background (the
default foreground reads on every theme). Not handled: white alone on a light theme.
"""

from __future__ import annotations

from rich.color import Color

__all__ = ["readable"]

TOO_CLOSE = 60  # the sum of |R|, |G|, |B| differences under which text does not read
NEAR_BLACK = 40  # no channel above this: black to the eye


def readable(color: Color | None, bgcolor: Color | None) -> tuple[Color | None, Color | None]:
    """`color` and `bgcolor`, or what is left of them for the text to be readable."""
    if color is None:
        return color, bgcolor
    fore = color.get_truecolor()
    if bgcolor is not None:
        back = bgcolor.get_truecolor(foreground=False)
        if abs(fore.red - back.red) + abs(fore.green - back.green) + abs(fore.blue - back.blue) >= TOO_CLOSE:
            return color, bgcolor
    return (None if max(fore) <= NEAR_BLACK else color), None  # on the pane's own background
