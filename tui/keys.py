"""Key translation for the terminal pane: Textual key events to the bytes a program in a
PTY expects, honouring the modes it asked for (DECCKM, bracketed paste, keypad).

Also the chords shared by the pane and the full-screen attach:

- ``LEAVE_KEY`` (Ctrl-]): leave the terminal pane (focus goes back to the dashboard).
- ``FULL_ATTACH_KEY`` (Ctrl-T): open the full-screen attach of the job.
- Ctrl-] (0x1d) also detaches a full-screen attach, as in ``hermes-procs attach ID``
  (``hermes_procs.core.registry.attach.DETACH_KEY``; telnet's escape key; every other byte goes to the job).

One chord, Ctrl-], therefore gets you out of a job's terminal everywhere. Ctrl-] and Ctrl-T
are never sent to the job from the pane; the full-screen attach passes Ctrl-T through.
"""

from __future__ import annotations

from .vt import Modes

LEAVE_KEY = "ctrl+right_square_bracket"
FULL_ATTACH_KEY = "ctrl+t"

ESC = "\x1b"
CSI = ESC + "["
SS3 = ESC + "O"

# Cursor keys: final byte; sent as CSI x or (DECCKM) SS3 x; with modifiers CSI 1;m x.
_CURSOR = {"up": "A", "down": "B", "right": "C", "left": "D", "home": "H", "end": "F"}
# Keys sent as CSI n ~ (with modifiers CSI n;m ~).
_TILDE = {"insert": 2, "delete": 3, "pageup": 5, "pagedown": 6,
          "f5": 15, "f6": 17, "f7": 18, "f8": 19, "f9": 20, "f10": 21, "f11": 23, "f12": 24}
# F1-F4: SS3 P..S (with modifiers CSI 1;m P..S).
_PF = {"f1": "P", "f2": "Q", "f3": "R", "f4": "S"}
_SIMPLE = {"enter": "\r", "tab": "\t", "escape": ESC, "backspace": "\x7f", "space": " "}
_MOD_BITS = {"shift": 1, "alt": 2, "meta": 2, "ctrl": 4}
# Ctrl + punctuation as terminals send it.
_CTRL_PUNCT = {"@": "\x00", "space": "\x00", "left_square_bracket": ESC, "backslash": "\x1c",
               "right_square_bracket": "\x1d", "circumflex_accent": "\x1e", "underscore": "\x1f",
               "question_mark": "\x7f"}


def _split(key: str) -> tuple[set[str], str]:
    parts = key.split("+")
    return set(parts[:-1]), parts[-1]


def translate_key(key: str, character: str | None, modes: Modes | None = None) -> bytes | None:
    """Bytes for a Textual key (``event.key``, ``event.character``), or None when the key
    has no terminal meaning. ``modes`` comes from the engine (``VTEngine.modes``)."""
    if key == "shift+tab" or key == "backtab":
        return (CSI + "Z").encode()
    mods, base = _split(key)
    sequence = _function_key(mods, base, modes or Modes())
    if sequence is not None:
        return sequence.encode()
    alt = "alt" in mods or "meta" in mods
    prefix = ESC if alt else ""
    text = _ctrl_char(base) if "ctrl" in mods else None
    if text is None:
        text = _typed_text(mods, base, character)
    if text is not None:
        return (prefix + text).encode("utf-8")
    if alt and len(base) == 1:
        return (ESC + base).encode()
    return None


def _function_key(mods: set[str], base: str, modes: Modes) -> str | None:
    """Cursor, editing and F keys as CSI/SS3 sequences, modifiers as xterm's parameter (1 + bits)."""
    m = 1 + sum(_MOD_BITS.get(x, 0) for x in mods)
    if base in _CURSOR:
        if m > 1:
            return f"{CSI}1;{m}{_CURSOR[base]}"
        return (SS3 if modes.app_cursor else CSI) + _CURSOR[base]
    if base in _TILDE:
        n = _TILDE[base]
        return f"{CSI}{n};{m}~" if m > 1 else f"{CSI}{n}~"
    if base in _PF:
        return f"{CSI}1;{m}{_PF[base]}" if m > 1 else SS3 + _PF[base]
    return None


def _ctrl_char(base: str) -> str | None:
    """The control character Ctrl+`base` sends (Ctrl-A is 0x01, Ctrl-Backspace 0x08, ...)."""
    if len(base) == 1 and base.isalpha():
        return chr(ord(base.lower()) - 96)
    if base in _CTRL_PUNCT:
        return _CTRL_PUNCT[base]
    if base == "backspace":
        return "\x08"
    if base in ("enter", "tab", "escape"):
        return _SIMPLE[base]
    return None


def _typed_text(mods: set[str], base: str, character: str | None) -> str | None:
    """What a key types: Enter, Tab, Space... (with at most Shift/Alt held), or its character."""
    if base in _SIMPLE and not (mods - {"alt", "meta", "shift"}):
        return _SIMPLE[base]
    if character and (character.isprintable() or (len(character) == 1 and ord(character) < 32)):
        return character
    return None


def paste_bytes(text: str, modes: Modes | None = None) -> bytes:
    """Pasted text as the program expects it: newlines as CR (what a terminal sends),
    wrapped in ESC[200~ ... ESC[201~ when bracketed paste is on. An embedded end marker
    is removed so a paste cannot break out of the bracket."""
    modes = modes or Modes()
    text = text.replace("\r\n", "\r").replace("\n", "\r")
    if modes.bracketed_paste:
        text = text.replace(CSI + "201~", "")
        return (CSI + "200~" + text + CSI + "201~").encode("utf-8")
    return text.encode("utf-8")
