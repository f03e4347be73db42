"""Full-screen attach from the dashboard: suspend the Textual app and connect the real
terminal to the job (raw proxy to the supervisor's socket) for perfect fidelity (vim, htop).

Detach with Ctrl-], the same chord as ``hermes-procs attach ID``. The proxy is the CLI's
``hermes_procs.attach.attach_terminal`` when it is there; :func:`proxy_terminal` below is a
minimal stand-in with the same behaviour, also usable on any pair of file descriptors.
"""

from __future__ import annotations

import os
import select
import signal
import termios
import time
import tty

from .keys import DETACH_BYTE, DETACH_CHORD_NAME
from .vt import safe_tail

# Put the real terminal back in a sane state after the job had it (the job may have left
# the alternate screen on, hidden the cursor, enabled mouse reporting...). Textual sets up
# what it needs again when it resumes.
RESTORE_SEQ = (
    b"\x1b[0m"  # attributes
    b"\x1b[?1049l"  # main screen
    b"\x1b[?25h"  # cursor visible
    b"\x1b[?1l\x1b>"  # normal cursor keys and keypad
    b"\x1b[?2004l"  # bracketed paste off
    b"\x1b[?1000l\x1b[?1002l\x1b[?1003l\x1b[?1006l"  # mouse reporting off
    b"\x1b[r"  # full scroll region
)
TAIL_BYTES = 256 * 1024


class AttachFailed(Exception):
    """The job cannot be attached (unknown id, supervisor gone...)."""


def _terminal_size(fd: int) -> tuple[int, int]:
    try:
        size = os.get_terminal_size(fd)
        return size.lines, size.columns
    except OSError:
        return 24, 80


def proxy_terminal(registry, session_id: str, stdin_fd: int = 0, stdout_fd: int = 1,
                   *, replay: bool = True, nudge: bool = True) -> int:
    """Connect the terminal on ``stdin_fd``/``stdout_fd`` to the job until Ctrl-] or the
    job ends. Returns 0 on detach, the job's exit code when it ended (1 if unknown)."""
    from .terminal import _read_tail  # late: keeps this module light

    try:
        stream = registry.stream(session_id, input=True, source="human")
    except Exception as exc:
        raise AttachFailed(str(exc) or type(exc).__name__) from exc
    if isinstance(stream, dict):
        raise AttachFailed(stream.get("error") or f"cannot attach to {session_id}")

    is_tty = os.isatty(stdin_fd)
    saved = termios.tcgetattr(stdin_fd) if is_tty else None
    old_winch = None
    rows, cols = _terminal_size(stdout_fd)

    def on_winch(signum, frame):
        r, c = _terminal_size(stdout_fd)
        try:
            registry.resize(session_id, r, c)
        except Exception:
            pass

    try:
        if is_tty:
            tty.setraw(stdin_fd)
        try:
            old_winch = signal.signal(signal.SIGWINCH, on_winch)
        except ValueError:  # not the main thread
            old_winch = None
        out = [b"\x1b[0m\x1b[H\x1b[2J"]
        if replay:
            tail = _read_tail(registry, session_id, getattr(stream, "offset", None), TAIL_BYTES)
            cut, tail = safe_tail(tail, rows, cols)
            out.append(tail)
        os.write(stdout_fd, b"".join(out))
        # Give the job this terminal's size; change it and back so a full-screen program
        # repaints even when the size did not change.
        try:
            if nudge:
                registry.resize(session_id, rows, max(1, cols - 1))
                time.sleep(0.05)
            registry.resize(session_id, rows, cols)
        except Exception:
            pass
        return _pump(registry, session_id, stream, stdin_fd, stdout_fd)
    finally:
        try:
            stream.close()
        except Exception:
            pass
        if old_winch is not None:
            try:
                signal.signal(signal.SIGWINCH, old_winch)
            except ValueError:
                pass
        try:
            os.write(stdout_fd, RESTORE_SEQ + b"\r\n")
        except OSError:
            pass
        if saved is not None:
            termios.tcsetattr(stdin_fd, termios.TCSADRAIN, saved)


def _pump(registry, session_id, stream, stdin_fd: int, stdout_fd: int) -> int:
    sfd = stream.fileno()
    while True:
        # Drain anything the stream already holds before waiting on its socket.
        data = stream.read(0)
        if data == b"":
            return _exit_code(registry, session_id, stdout_fd)
        if data:
            os.write(stdout_fd, data)
            continue
        try:
            ready, _, _ = select.select([stdin_fd, sfd], [], [], 0.5)
        except InterruptedError:
            continue
        if stdin_fd in ready:
            try:
                keys = os.read(stdin_fd, 4096)
            except OSError:
                keys = b""
            if not keys:
                return 0
            i = keys.find(DETACH_BYTE)
            if i >= 0:
                if i:
                    stream.send(keys[:i])
                return 0
            try:
                stream.send(keys)
            except OSError:
                return _exit_code(registry, session_id, stdout_fd)


def _exit_code(registry, session_id, stdout_fd: int) -> int:
    status: dict = {}
    for _ in range(20):
        try:
            status = registry.poll(session_id)
        except Exception:
            break
        if not isinstance(status, dict) or status.get("status") != "running":
            break
        time.sleep(0.1)
    code = status.get("exit_code") if isinstance(status, dict) else None
    try:
        os.write(stdout_fd, f"\r\n[process exited with code {code}]\r\n".encode())
    except OSError:
        pass
    return code if isinstance(code, int) else 1


def _cli_attach():
    """The CLI's shared proxy, when it is installed."""
    try:
        from hermes_procs.attach import attach_terminal  # type: ignore
    except ImportError:
        return None
    return attach_terminal


def full_attach(app, registry, session_id: str) -> int | None:
    """Suspend ``app``, attach the real terminal to the job until Ctrl-], resume.

    Returns the proxy's result (0 on detach, the job's exit code if it ended), or None when
    the attach failed (the app shows a notification). Terminal panes showing the same job
    get their size back (with a repaint nudge) afterwards.
    """
    cli_attach = _cli_attach()
    result: int | None = None
    error = ""
    try:
        with app.suspend():
            try:
                if cli_attach is not None:
                    result = cli_attach(registry, session_id, source="human")
                else:
                    os.write(1, f"[attached to {session_id} - detach with {DETACH_CHORD_NAME}]\r\n".encode())
                    result = proxy_terminal(registry, session_id)
            except Exception as exc:  # AttachError, AttachFailed, SupervisorGone...
                error = str(exc) or type(exc).__name__
    except Exception as exc:  # SuspendNotSupported (e.g. headless or web)
        error = f"full-screen attach is not available here ({type(exc).__name__})"
    if error:
        try:
            app.notify(error, title="Attach", severity="error")
        except Exception:
            pass
        result = None
    _resync_panes(app, session_id)
    app.refresh()
    return result


def _resync_panes(app, session_id: str) -> None:
    try:
        from .terminal import TerminalPane

        for pane in app.screen.query(TerminalPane):
            if pane.session_id == session_id:
                pane.resync()
    except Exception:
        pass
