"""Live connections to a running job: `attach` (raw terminal <-> PTY job) and
`log --follow` (stream output until the job exits).

Both read the job through `registry.stream(...)`, the supervisor's live byte stream, and
read the bytes that came *before* the stream from the on-disk log, cut at the exact byte
offset the stream starts from, so nothing is shown twice or skipped.

Standard library only (termios/tty/select); imported lazily by the CLI and by the
dashboard's full-screen attach (which calls `attach_terminal` inside `App.suspend()`).
"""

from __future__ import annotations

import codecs
import os
import re
import select
import signal
import sys
import threading
import time
from typing import Any, Optional

from hermes_procs.core.model import JobInfo

DETACH_KEY = b"\x1d"  # Ctrl-]
DETACH_KEY_NAME = "Ctrl-]"


class AttachError(ValueError):
    """The job cannot be attached/followed (unknown id, pipe job, already exited...).

    Raised before the terminal is touched, so callers can show it however they like."""


# --------------------------------------------------------------------------- text filter

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
      `hermes_procs.core.text.to_text` (UTF-8 with U+FFFD, every escape sequence removed,
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
        from hermes_procs.core.text import to_text

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


# --------------------------------------------------------------------------- registry helpers


def _is_error(result: dict) -> bool:
    return result.get("status") in ("error", "not_found")


def _resolve(registry, session_id: str) -> JobInfo:
    """poll() the job; AttachError for an unknown/bad id."""
    info = registry.poll(session_id)
    if _is_error(info):
        raise AttachError(info.get("error") or f"No process with ID {session_id}")
    return JobInfo.from_dict(info, session_id)


def _open_stream(registry, sid: str, *, input: bool, source: str = "cli"):
    """registry.stream(...) or None when the job has no live supervisor any more."""
    try:
        return registry.stream(sid, input=input, source=source)
    except Exception:  # protocol.SupervisorGone, IdError, OSError
        return None


def _stream_read(st, timeout: float) -> Optional[bytes]:
    """Bytes from the stream; b"" at its end; None when nothing came within timeout."""
    try:
        data = st.read(timeout)
    except TimeoutError:
        return None
    except (ConnectionError, OSError):
        return b""
    if data is None:
        return None
    if data == b"" and getattr(st, "eof", None) is False:
        return None
    return data


def _log_tail_bytes(registry, sid: str, end: Optional[int], max_lines: Optional[int], max_bytes: int = 1 << 20) -> Optional[bytes]:
    """The raw log bytes before absolute offset `end` (None: the current end), cut to the
    last `max_lines` lines (a final unfinished line counts as one).

    None when the log cannot be read (then callers fall back to read_log)."""
    try:
        from hermes_procs.core import logstore

        jobdir = registry.job_dir(sid)
        if end is None:
            end = logstore.total_bytes(jobdir)
        data = logstore.read_bytes(jobdir, max(0, end - max_bytes), end)
    except Exception:
        return None
    return data if max_lines is None else _last_lines(data, max_lines)


def _last_lines(data: bytes, count: int) -> bytes:
    """The last `count` lines of `data` (a final unfinished line counts as one)."""
    if count <= 0:
        return b""
    body = data[:-1] if data.endswith(b"\n") else data
    idx = len(body)
    for _ in range(count):
        idx = body.rfind(b"\n", 0, idx)
        if idx < 0:
            return data
    return data[idx + 1 :]


def _reconnect(registry, sid: str, *, input: bool, source: str = "cli"):
    """A new stream when the job is still running (we were dropped), else None."""
    if registry.poll(sid).get("status") != "running":
        return None
    return _open_stream(registry, sid, input=input, source=source)


def _log_range(registry, sid: str, start: Optional[int], end: Optional[int]) -> bytes:
    """Log bytes [start, end) (absolute offsets); b"" when unknown or unreadable."""
    if start is None or end is None or end <= start:
        return b""
    try:
        from hermes_procs.core import logstore

        return logstore.read_bytes(registry.job_dir(sid), start, end)
    except Exception:
        return b""


def _exit_summary(registry, sid: str, wait_s: float = 2.0) -> str:
    return _exit_info(registry, sid, wait_s)[0]


def _exit_info(registry, sid: str, wait_s: float = 2.0) -> tuple[str, JobInfo | None]:
    """("proc_x exited with code N", the job) once the exit is recorded (waits up to wait_s)."""
    res = registry.wait(sid, timeout=wait_s)
    if res.get("status") != "exited":
        res = registry.poll(sid)
    if res.get("status") != "exited":
        return f"{sid} output stream ended", None
    job = JobInfo.from_dict(res, sid)
    return f"{sid} {job.ended_phrase()}", job


# --------------------------------------------------------------------------- log --follow


def follow_log(registry, session_id: str, *, limit: int = 200, offset: Optional[int] = None, raw: bool = False, out=None) -> int:
    """Print the last `limit` lines, then stream live output until the job's stream ends.

    Text mode (default): ANSI stripped; to a terminal colours are kept and `\\r` passes
    through; to a pipe/file whole lines are written, `\\r` progress collapsed.
    raw=True: the job's bytes unchanged.  Returns the exit status for the CLI (0)."""
    if offset is not None:
        raise AttachError("--offset cannot be combined with --follow (it prints the last --limit lines, then follows)")
    if limit < 0:
        raise AttachError("--limit must not be negative")
    out = out if out is not None else sys.stdout
    info = _resolve(registry, session_id)
    sid = info.session_id
    bout = out.buffer if hasattr(out, "buffer") else None
    tty = False
    try:
        tty = out.isatty()
    except (AttributeError, ValueError):
        pass
    filt = None if raw else TextFilter(keep_sgr=tty)

    def emit(data: bytes, final: bool = False) -> None:
        if raw and bout is not None:
            bout.write(data)
            bout.flush()
            return
        text = filt.feed(data, final) if filt else data.decode("utf-8", "replace")
        if text:
            out.write(text)
            out.flush()

    st = _open_stream(registry, sid, input=False) if info.running else None
    if st is None:
        # finished (or the supervisor is gone): what is on disk is everything
        tail = _log_tail_bytes(registry, sid, None, limit)
        if tail is None:
            res = registry.read_log(sid, limit=limit)
            if _is_error(res):
                raise AttachError(res.get("error"))
            text = res.get("output") or ""
            out.write(text if not text or text.endswith("\n") else text + "\n")
            out.flush()
            return 0
        emit(tail)
        if filt:
            out.write(filt.finish())
            out.flush()
        return 0
    try:
        start = getattr(st, "offset", None)
        tail = _log_tail_bytes(registry, sid, start, limit)
        if tail is None:
            res = registry.read_log(sid, limit=limit)
            text = "" if _is_error(res) else (res.get("output") or "")
            if text:
                out.write(text if text.endswith("\n") else text + "\n")
                out.flush()
        else:
            emit(tail)
        while True:
            data = _stream_read(st, 1.0)
            if data is None:
                continue
            if data:
                emit(data)
                continue
            # The stream ended: the supervisor exited, or dropped us for falling behind
            # (> 4 MiB).  In the second case reconnect and fill the gap from the log.
            st2 = _reconnect(registry, sid, input=False)
            if st2 is None:
                # ended: whatever the stream did not deliver (we may have been dropped
                # just before the end) is in the log
                pos = getattr(st, "offset", None)
                try:
                    from hermes_procs.core import logstore

                    end = logstore.total_bytes(registry.job_dir(sid))
                except Exception:
                    end = None
                rest = _log_range(registry, sid, pos, end)
                if rest:
                    emit(rest)
                break
            pos = getattr(st, "offset", None)
            try:
                st.close()
            except Exception:
                pass
            st = st2
            gap = _log_range(registry, sid, pos, getattr(st, "offset", None))
            if gap:
                emit(gap)
    finally:
        try:
            st.close()
        except Exception:
            pass
        if filt:
            rest = filt.finish()
            if rest:
                out.write(rest)
                out.flush()
    try:
        if sys.stderr.isatty():
            sys.stderr.write(f"[{_exit_summary(registry, sid)}]\n")
    except (OSError, ValueError):
        pass
    return 0


# --------------------------------------------------------------------------- attach


RESET_MODES = (
    b"\x1b[0m"  # attributes
    b"\x1b[?25h"  # cursor visible
    b"\x1b[?1l\x1b>"  # normal cursor keys and keypad
    b"\x1b[?2004l"  # bracketed paste off
    b"\x1b[?1000l\x1b[?1002l\x1b[?1003l\x1b[?1006l"  # mouse reporting off
)
_ALT_ON = (b"\x1b[?1049h", b"\x1b[?1047h", b"\x1b[?47h")
_ALT_OFF = (b"\x1b[?1049l", b"\x1b[?1047l", b"\x1b[?47l")


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


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        try:
            n = os.write(fd, view)
        except BlockingIOError:
            select.select([], [fd], [], 1.0)
            continue
        except InterruptedError:  # pragma: no cover - PEP 475 retries
            continue
        view = view[n:]


def _std_fd(stream, default: int) -> int:
    try:
        return stream.fileno()
    except Exception:
        return default


def _terminal_size(fd: int) -> tuple[int, int]:
    try:
        sz = os.get_terminal_size(fd)
    except OSError:
        return 24, 80
    return (sz.lines or 24), (sz.columns or 80)


def attach_terminal(
    registry,
    session_id: str,
    detach_key: bytes = DETACH_KEY,
    *,
    stdin_fd: Optional[int] = None,
    stdout_fd: Optional[int] = None,
    replay_lines: int = 20,
    source: str = "cli",
    banner: bool = True,
) -> int:
    """Connect the real terminal (raw) to a PTY job until detach or the job ends.

    - Raises AttachError *before touching the terminal* when the id is unknown, the job is
      not a PTY job (pipe jobs: use `log --follow` + `write`/`submit`), has exited, or
      its supervisor does not answer.
    - Prints "[attached to proc_x — detach with Ctrl-]]", replays the last lines of the
      job's output (escape sequences other than colours removed) for context, then sends
      a resize nudge (size-1, then the real size) so full-screen programs repaint.
    - Terminal in raw mode (every key, Ctrl-C and Ctrl-Z included, goes to the job),
      restored in `finally` even on exceptions, SIGTERM or SIGHUP.
    - SIGWINCH -> registry.resize (size also re-checked twice a second, so it works when
      called off the main thread, where signal handlers cannot be installed).
    - Detach on `detach_key` (Ctrl-]) or EOF on stdin; ends when the job's stream ends and
      prints how the job exited.

    - `banner=False` skips the "[attached to ...]" line (for callers that print their own).

    Returns 0 after a detach; the job's exit status when it ended while attached (128+N
    when it was ended by signal N; 0 if unknown); 128+N when attach itself got signal N
    (SIGTERM/SIGHUP).
    """
    import termios
    import tty

    # the process's real streams (a TUI may have replaced sys.stdout with a capture object)
    stdin_fd = _std_fd(sys.__stdin__, 0) if stdin_fd is None else stdin_fd
    stdout_fd = _std_fd(sys.__stdout__, 1) if stdout_fd is None else stdout_fd
    if not os.isatty(stdin_fd):
        raise AttachError("attach needs a terminal on stdin")

    info = _resolve(registry, session_id)
    sid = info.session_id
    if not info.running:
        raise AttachError(info.already_exited())
    if not info.pty:
        raise AttachError(
            f"{sid} is not a PTY job; attach works with jobs started with --pty "
            f"(for pipe jobs use `hermes-procs log --follow {sid}` and `write`/`submit`)"
        )
    st = _open_stream(registry, sid, input=True, source=source)
    if st is None:
        raise AttachError(f"cannot connect to {sid}: its supervisor is not answering (has it just exited?)")

    for stream in (sys.stdout, sys.__stdout__):
        try:
            stream.flush()
        except Exception:
            pass

    key_name = DETACH_KEY_NAME if detach_key == DETACH_KEY else repr(detach_key)
    if banner:
        _write_all(stdout_fd, f"[attached to {sid} — detach with {key_name}]\r\n".encode())

    # Context: is the job on the alternate screen (a full-screen program)?  Then switch
    # this terminal to its alternate screen too (the user's screen comes back on detach)
    # and let the resize nudge repaint it; otherwise replay the last lines for context.
    try:
        raw_tail = _log_tail_bytes(registry, sid, getattr(st, "offset", None), None, 256 << 10)
    except Exception:
        raw_tail = None
    alt = AltScreenTracker()
    if raw_tail:
        alt.feed(raw_tail)
    if alt.on:
        _write_all(stdout_fd, b"\x1b[?1049h\x1b[H\x1b[2J")
    elif replay_lines > 0 and raw_tail:
        f = TextFilter(keep_sgr=True)
        text = f.feed(_last_lines(raw_tail, replay_lines)) + f.finish()
        text = text.replace("\r\n", "\n").replace("\n", "\r\n")
        _write_all(stdout_fd, text.encode("utf-8", "replace"))

    old_attrs = termios.tcgetattr(stdin_fd)
    main_thread = threading.current_thread() is threading.main_thread()
    wake_r, wake_w = os.pipe()
    os.set_blocking(wake_r, False)
    os.set_blocking(wake_w, False)
    got_signal: list[int] = []
    old_handlers: dict[int, Any] = {}

    def on_signal(signum, frame):  # noqa: ARG001
        if signum != signal.SIGWINCH:
            got_signal.append(signum)
        try:
            os.write(wake_w, b"x")
        except OSError:
            pass

    reason = "detached"
    try:
        if main_thread:
            for s in (signal.SIGWINCH, signal.SIGTERM, signal.SIGHUP):
                try:
                    old_handlers[s] = signal.signal(s, on_signal)
                except (ValueError, OSError):
                    pass
        tty.setraw(stdin_fd, termios.TCSANOW)

        size = _terminal_size(stdout_fd)
        rows, cols = size
        try:
            registry.resize(sid, rows, max(1, cols - 1) if cols > 1 else cols + 1)
            time.sleep(0.05)
            registry.resize(sid, rows, cols)
        except Exception:
            pass
        last_size_check = time.monotonic()

        st_fd = st.fileno()
        # bytes the stream may already hold (read together with its header): select()
        # on the socket would not see them.  One read only: a job flooding output must
        # not keep us from reading the keyboard.
        pending = _stream_read(st, 0)
        if pending:
            alt.feed(pending)
            _write_all(stdout_fd, pending)
        while True:
            if got_signal:
                reason = "signal"
                break
            try:
                ready, _, _ = select.select([stdin_fd, st_fd, wake_r], [], [], 0.5)
            except InterruptedError:  # pragma: no cover
                continue
            if wake_r in ready:
                try:
                    while os.read(wake_r, 512):
                        pass
                except (BlockingIOError, OSError):
                    pass
            now = time.monotonic()
            if wake_r in ready or now - last_size_check >= 0.5:
                last_size_check = now
                new = _terminal_size(stdout_fd)
                if new != size:
                    size = new
                    try:
                        registry.resize(sid, new[0], new[1])
                    except Exception:
                        pass
            if st_fd in ready:
                data = _stream_read(st, 0)
                if data == b"":
                    # supervisor gone, or it dropped us for falling > 4 MiB behind (a slow
                    # terminal under a flood): then reconnect, skipping ahead like tmux
                    st2 = _reconnect(registry, sid, input=True, source=source)
                    if st2 is None:
                        reason = "ended"
                        break
                    try:
                        st.close()
                    except Exception:
                        pass
                    st = st2
                    st_fd = st.fileno()
                    continue
                if data:
                    alt.feed(data)
                    _write_all(stdout_fd, data)
            if stdin_fd in ready:
                try:
                    data = os.read(stdin_fd, 4096)
                except (BlockingIOError, InterruptedError):
                    data = None
                except OSError:
                    data = b""
                if data == b"":
                    break  # terminal closed: detach
                if data:
                    k = data.find(detach_key) if detach_key else -1
                    if k >= 0:
                        if k:
                            st.send(data[:k])
                        break
                    try:
                        st.send(data)
                    except (OSError, ValueError):
                        reason = "ended"
                        break
    finally:
        # modes the job may have left on: colours, hidden cursor, application keys,
        # bracketed paste, mouse reporting; and the alternate screen if it is still on
        try:
            _write_all(stdout_fd, RESET_MODES + (b"\x1b[?1049l" if alt.on else b""))
        except OSError:
            pass
        try:
            termios.tcsetattr(stdin_fd, termios.TCSADRAIN, old_attrs)
        except termios.error:
            pass
        for s, h in old_handlers.items():
            try:
                signal.signal(s, h if h is not None else signal.SIG_DFL)
            except (ValueError, OSError):
                pass
        for fd in (wake_r, wake_w):
            try:
                os.close(fd)
            except OSError:
                pass
        try:
            st.close()
        except Exception:
            pass

    job: JobInfo | None = None
    if reason == "ended":
        summary, job = _exit_info(registry, sid)
        msg = f"\r\n[{summary}]\r\n"
    elif reason == "signal":
        msg = f"\r\n[detached from {sid} (signal)]\r\n"
    else:
        msg = f"\r\n[detached from {sid}; it keeps running]\r\n"
    _write_all(stdout_fd, msg.encode())
    if reason == "signal" and got_signal:
        return 128 + got_signal[0]
    return job.shell_exit_code() if job is not None and job.exit_code is not None else 0
