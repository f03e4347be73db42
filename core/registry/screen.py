"""A PTY job's terminal screen, rendered from the tail of its log by the bittty emulator.

`render(jobdir, meta, root_pid)` answers `screen(id)`: ``{"rows", "cols", "lines", "cursor",
"alternate_screen"}``; it is :func:`source` (the bytes that draw the screen, and its size:
what a remote host sends) then :func:`draw` (the emulator: on the client for a remote job).
It feeds a fresh bittty ``Board`` (pure Python; imported only when a screen is drawn) only
the end of the log: :func:`prepare` cuts a long stretch of output to
the last screenfuls that rebuild the screen (:func:`safe_tail`) and replays the terminal modes
the skipped part set (alternate screen, cursor keys, ...). The dashboard's terminal pane
(tui/vt.py) feeds its engine through the same functions.
"""

from __future__ import annotations

import fcntl
import os
import re
import struct
import termios
from pathlib import Path
from typing import Any

from . import logstore

READ_BYTES = 1 << 20  # log tail read for a screen: the modes it set are replayed

# A chunk larger than this many screenfuls is cut to its tail before parsing.
SKIP_SCREENFULS = 8
# How far back to look for the tail: this many screenfuls of cells, within the bounds below.
# Cursor-addressed output (a full-screen program redrawing) has few newlines: then the cut
# is the first ESC or newline after the window start, so a window costs at most ~15 ms.
TAIL_SCREENFULS = 8
MIN_SKIP_BYTES = 64 * 1024
MAX_TAIL_BYTES = 512 * 1024
# Cursor-addressed output: cut at a cursor move within this many bytes of the end first.
CUP_WINDOW_MIN = 16 * 1024
CUP_WINDOW_SCREENFULS = 4

# DEC private modes the pane cares about; replayed when a chunk is skipped.
_PRIVATE_MODE_RE = re.compile(rb"\x1b\[\?([0-9;]+)([hl])")
_TRACKED_MODES = {1, 25, 47, 1047, 1049, 2004, 1000, 1002, 1003, 1006}
_KEYPAD_RE = re.compile(rb"\x1b([=>])")
_CUP_RE = re.compile(rb"\x1b\[[0-9;]*[Hf]")
_RESET_ATTRS = b"\x1b[0m"


def safe_tail(data: bytes, rows: int, cols: int) -> tuple[int, bytes]:
    """Return ``(cut, tail)``: where a big chunk may be cut so the tail still rebuilds the
    last screen. The cut is just after a newline, with at least ``rows`` newlines after it
    (so line-oriented output renders exactly as if fed whole), and never more than
    ``MAX_TAIL_BYTES`` back. ``cut == 0`` means feed everything."""
    cells = rows * max(cols, 1)
    limit = max(MIN_SKIP_BYTES, cells * SKIP_SCREENFULS)
    if len(data) <= limit:
        return 0, data
    window = min(MAX_TAIL_BYTES, max(MIN_SKIP_BYTES, cells * TAIL_SCREENFULS))
    floor = max(0, len(data) - window)
    pos = len(data)
    found = 0
    while found <= rows:
        nl = data.rfind(b"\n", floor, pos)
        if nl < 0:
            break
        found += 1
        pos = nl
    if found <= rows:
        # Not enough lines in the window (cursor-addressed output): cut just before the
        # first absolute cursor move after the window start; else just after the first
        # newline or just before the first ESC (never inside a control sequence).
        # About two frames of a full-screen program are enough: try a short window first.
        short = max(floor, len(data) - max(CUP_WINDOW_MIN, cells * CUP_WINDOW_SCREENFULS))
        m = _CUP_RE.search(data, short) or _CUP_RE.search(data, floor, short + 16)
        if m is not None:
            cut = m.start()  # a cursor move: what follows does not depend on where it was
        else:
            nl = data.find(b"\n", floor)
            esc = data.find(b"\x1b", floor)
            cands = [c for c in (nl + 1 if nl >= 0 else -1, esc) if c >= 0]
            cut = min(cands) if cands else floor
    else:
        cut = pos + 1
    # Never cut inside a UTF-8 sequence (only possible when no newline was found).
    while cut < len(data) and (data[cut] & 0xC0) == 0x80:
        cut += 1
    return cut, data[cut:]


_ALT_MODES = (47, 1047, 1049)


def scan_modes(skipped: bytes, into: dict[int | str, Any] | None = None) -> dict[int | str, Any]:
    """The DEC private modes (and keypad mode, key ``"keypad"``) that ``skipped`` left set,
    in order of their last change: ``{1049: True, 1: False, "keypad": b"=", ...}``. Pass
    ``into`` to accumulate over several skipped pieces."""
    last: dict[int | str, Any] = {} if into is None else into
    for m in _PRIVATE_MODE_RE.finditer(skipped):
        on = m.group(2) == b"h"
        for p in m.group(1).split(b";"):
            if p.isdigit() and int(p) in _TRACKED_MODES:
                n = int(p)
                last.pop(n, None)  # keep the order of the last change
                last[n] = on
    for m in _KEYPAD_RE.finditer(skipped):
        last.pop("keypad", None)
        last["keypad"] = m.group(1)
    return last


def _replay_bytes(modes: dict[int | str, Any], in_alt: bool | None) -> bytes:
    """Bytes that put an engine in ``modes``. Alternate-screen switches are only emitted
    when they change the engine's state (``in_alt``): entering it again would clear it."""
    out: list[bytes] = []
    alt_wanted = None
    for n, on in modes.items():
        if n in _ALT_MODES:
            alt_wanted = (n, on)
            continue
        if isinstance(n, str):  # "keypad": its escape
            out.append(b"\x1b" + on)
        else:
            out.append(b"\x1b[?%d%s" % (n, b"h" if on else b"l"))
    if alt_wanted is not None and (in_alt is None or alt_wanted[1] != in_alt):
        out.insert(0, b"\x1b[?%d%s" % (alt_wanted[0], b"h" if alt_wanted[1] else b"l"))
    return b"".join(out)



def prepare(data: bytes, rows: int, cols: int, in_alt: bool) -> tuple[int, bytes]:
    """``(skipped, to_feed)``: the bytes to feed an engine showing `rows` x `cols` (in the
    alternate screen or not, `in_alt`) so it ends on the screen `data` leaves."""
    cut, tail = safe_tail(data, rows, cols)
    if cut:  # reset attributes and replay the modes the skipped part set, then the tail
        tail = _RESET_ATTRS + _replay_bytes(scan_modes(data[:cut]), in_alt) + tail
    return cut, tail


def replay_modes(modes: dict[int | str, Any], in_alt: bool) -> bytes:
    """Bytes that reset attributes and apply `modes` (from :func:`scan_modes`)."""
    return _RESET_ATTRS + _replay_bytes(modes, in_alt)


class ReplySink:
    """A bittty host connection that only collects the emulator's replies (DA, DSR...)."""

    closed = False

    def __init__(self) -> None:
        self.pending = bytearray()
        self.enabled = True

    def write(self, data: str | bytes) -> int:
        if self.enabled:
            self.pending += data.encode("utf-8", "replace") if isinstance(data, str) else data
        return len(data)

    def write_bytes(self, data: bytes) -> int:
        return self.write(data)

    def flush(self) -> None:
        pass

    def resize(self, rows: int, cols: int) -> None:  # whoever shows the screen resizes the job itself
        pass

    def configure_line(self, line: object) -> None:
        pass



def render(jobdir: Path, meta: dict[str, Any], root_pid: int | None) -> dict[str, Any]:
    """The screen the job's output leaves, at its terminal's current size."""
    shown = source(jobdir, meta, root_pid)
    return {"rows": shown["rows"], "cols": shown["cols"], **draw(shown["data"], shown["rows"], shown["cols"])}


def source(jobdir: Path, meta: dict[str, Any], root_pid: int | None) -> dict[str, Any]:
    """What draws the screen, without drawing it: ``{"rows", "cols", "data"}``, the terminal's
    size and the bytes (the end of the log, modes replayed: :func:`prepare`) that leave it. A
    remote host answers this and the client draws (:func:`draw`): the host needs no emulator."""
    rows, cols = terminal_size(root_pid) or (int(meta.get("rows") or 24), int(meta.get("cols") or 80))
    _, data = prepare(logstore.tail_bytes(jobdir, READ_BYTES), rows, cols, in_alt=False)
    return {"rows": rows, "cols": cols, "data": data}


def draw(data: bytes, rows: int, cols: int) -> dict[str, Any]:
    """``{"lines", "cursor", "alternate_screen"}``: the screen a fresh bittty ``Board`` of
    ``rows`` x ``cols`` shows after ``data`` (ImportError without bittty)."""
    from bittty import Board

    board = Board(width=cols, height=rows)
    sink = ReplySink()
    sink.enabled = False  # the job asked its questions long ago
    board.host.attach(sink)
    board.feed_host_data(data)
    page = board.blitter.current_page
    lines = ["".join(cell[1] for cell in page.grid[y]).rstrip() for y in range(min(rows, page.height))]
    return {"lines": lines, "cursor": [board.cursor.y, board.cursor.x],
            "alternate_screen": bool(board.blitter.in_alt_screen)}


def terminal_size(root_pid: int | None) -> tuple[int, int] | None:
    """(rows, cols) of the terminal the job's root has on its stdin, while it runs."""
    if not root_pid:
        return None
    try:
        path = os.readlink(f"/proc/{root_pid}/fd/0")
        if not path.startswith("/dev/pts/"):
            return None
        fd = os.open(path, os.O_RDONLY | os.O_NOCTTY | os.O_NONBLOCK)
    except OSError:
        return None
    try:
        rows, cols, _, _ = struct.unpack("HHHH", fcntl.ioctl(fd, termios.TIOCGWINSZ, b"\0" * 8))
    except OSError:
        return None
    finally:
        os.close(fd)
    return (rows, cols) if rows and cols else None
