"""The real terminal in raw mode, given back as it was: `with raw_terminal(stdin_fd, stdout_fd)`.

Inside the block every key (Ctrl-C and Ctrl-Z included) reaches the program as bytes; SIGTERM
and SIGHUP are caught (`RawTerminal.signals`) so the terminal is restored before the caller
exits, and SIGWINCH wakes the caller's select() (`RawTerminal.wake_fd`). On the way out, in all
cases, the modes a job may have left on (colours, hidden cursor, application keys, bracketed
paste, mouse reporting, the alternate screen) are reset and the terminal settings restored.

Standard library only (termios/tty/select); used by `attach` (core/registry/attach.py).
"""

from __future__ import annotations

import os
import select
import signal
import termios
import threading
import time
import tty
from collections.abc import Iterator
from contextlib import contextmanager
from types import FrameType
from typing import Any

RESET_MODES = (
    b"\x1b[0m"  # attributes
    b"\x1b[?25h"  # cursor visible
    b"\x1b[?1l\x1b>"  # normal cursor keys and keypad
    b"\x1b[?2004l"  # bracketed paste off
    b"\x1b[?1000l\x1b[?1002l\x1b[?1003l\x1b[?1006l"  # mouse reporting off
)
ALT_SCREEN_ON = b"\x1b[?1049h"
ALT_SCREEN_OFF = b"\x1b[?1049l"
_ALT_ON = (ALT_SCREEN_ON, b"\x1b[?1047h", b"\x1b[?47h")
_ALT_OFF = (ALT_SCREEN_OFF, b"\x1b[?1047l", b"\x1b[?47l")
SIZE_CHECK_EVERY = 0.5  # seconds; signals cannot be caught off the main thread


class AltScreenTracker:
    """Follows whether a byte stream left the terminal on the alternate screen."""

    def __init__(self) -> None:
        self.on = False
        self._carry = b""

    def feed(self, data: bytes) -> None:
        buf = self._carry + data
        on = max(buf.rfind(s) for s in _ALT_ON)
        off = max(buf.rfind(s) for s in _ALT_OFF)
        if on > off:
            self.on = True
        elif off > on:
            self.on = False
        self._carry = buf[-8:]


def write_all(fd: int, data: bytes) -> None:
    """Write every byte, waiting while a non-blocking descriptor is full."""
    view = memoryview(data)
    while view:
        try:
            n = os.write(fd, view)
        except BlockingIOError:
            select.select([], [fd], [], 1.0)
            continue
        view = view[n:]


def terminal_size(fd: int) -> tuple[int, int]:
    """(rows, cols) of the terminal on `fd`; (24, 80) when it has none."""
    try:
        size = os.get_terminal_size(fd)
    except OSError:
        return 24, 80
    return (size.lines or 24), (size.columns or 80)


class RawTerminal:
    """What `raw_terminal` yields: output with alternate-screen tracking, keys, signals, size."""

    def __init__(self, stdin_fd: int, stdout_fd: int, alt: AltScreenTracker) -> None:
        self.stdin_fd = stdin_fd
        self.stdout_fd = stdout_fd
        self.alt = alt
        self.signals: list[int] = []  # SIGTERM/SIGHUP received: the caller should stop
        self.size = terminal_size(stdout_fd)
        self._last_size_check = time.monotonic()
        self.wake_fd, self._wake_w = os.pipe()
        os.set_blocking(self.wake_fd, False)
        os.set_blocking(self._wake_w, False)

    def write(self, data: bytes) -> None:
        """Show a job's bytes as they are."""
        self.alt.feed(data)
        write_all(self.stdout_fd, data)

    def read_keys(self) -> bytes | None:
        """Bytes typed (call when stdin is readable); b"" when the terminal closed."""
        try:
            return os.read(self.stdin_fd, 4096)
        except (BlockingIOError, InterruptedError):
            return None
        except OSError:
            return b""

    def wait(self, fds: list[int], timeout: float) -> list[int]:
        """select() on stdin, `fds` and the wake pipe; the ready ones (the wake pipe drained)."""
        try:
            ready, _, _ = select.select([self.stdin_fd, self.wake_fd, *fds], [], [], timeout)
        except InterruptedError:
            return []
        if self.wake_fd in ready:
            try:
                while os.read(self.wake_fd, 512):
                    pass
            except OSError:
                pass
        return ready

    def new_size(self, woken: bool) -> tuple[int, int] | None:
        """The terminal's size when it changed (checked when woken or every half second)."""
        now = time.monotonic()
        if not woken and now - self._last_size_check < SIZE_CHECK_EVERY:
            return None
        self._last_size_check = now
        size = terminal_size(self.stdout_fd)
        if size == self.size:
            return None
        self.size = size
        return size

    def _on_signal(self, signum: int, frame: FrameType | None) -> None:  # noqa: ARG002
        if signum != signal.SIGWINCH:
            self.signals.append(signum)
        try:
            os.write(self._wake_w, b"x")
        except OSError:
            pass

    def _catch_signals(self) -> dict[int, Any]:
        old: dict[int, Any] = {}
        if threading.current_thread() is not threading.main_thread():
            return old  # only the main thread may install handlers; size is polled instead
        for signum in (signal.SIGWINCH, signal.SIGTERM, signal.SIGHUP):
            try:
                old[signum] = signal.signal(signum, self._on_signal)
            except (ValueError, OSError):
                pass
        return old

    def _close(self) -> None:
        for fd in (self.wake_fd, self._wake_w):
            try:
                os.close(fd)
            except OSError:
                pass


@contextmanager
def raw_terminal(stdin_fd: int, stdout_fd: int, alt: AltScreenTracker | None = None) -> Iterator[RawTerminal]:
    """Raw mode on `stdin_fd` for the block; everything restored afterwards (see the module)."""
    old_attrs = termios.tcgetattr(stdin_fd)
    term = RawTerminal(stdin_fd, stdout_fd, alt or AltScreenTracker())
    old_handlers = term._catch_signals()
    try:
        tty.setraw(stdin_fd, termios.TCSANOW)
        yield term
    finally:
        try:
            write_all(stdout_fd, RESET_MODES + (ALT_SCREEN_OFF if term.alt.on else b""))
        except OSError:
            pass
        try:
            termios.tcsetattr(stdin_fd, termios.TCSADRAIN, old_attrs)
        except termios.error:
            pass
        for signum, handler in old_handlers.items():
            try:
                signal.signal(signum, handler if handler is not None else signal.SIG_DFL)
            except (ValueError, OSError):
                pass
        term._close()
