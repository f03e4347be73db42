"""The supervisor's stdin queue: input for the job is queued (at most 1 MiB pending), written
as the job reads it, closed (or, on a PTY, ended with the terminal's EOF character), and
recorded in inputs.jsonl.

A mixin of supervisor_loop.Supervisor (it uses the supervisor's state); stdlib only.
"""

from __future__ import annotations

import json
import os
import re  # already loaded by json
import selectors
import termios
import time

from supervisor_clients import Client
from supervisor_output import LOG
from supervisor_state import SupervisorState
from supervisor_watch import _plain

MAX_PENDING_STDIN = 1 << 20


class StdinQueue(SupervisorState):
    def _init_stdin(self) -> None:
        self.stdin_open = True
        self.stdin_closing = False
        self.stdin_registered = False  # in_fd is in the selector (a pipe job's stdin)
        self.pending = bytearray()

    def _queue_stdin(self, data: bytes) -> str | None:
        if not self.stdin_open or self.stdin_closing:
            return "stdin is closed"
        if self.exit is not None:
            return "the process has exited"
        if len(self.pending) + len(data) > MAX_PENDING_STDIN:
            return f"stdin buffer full: the job has not read {len(self.pending)} pending bytes"
        was_empty = not self.pending
        self.pending += data
        if was_empty:
            self._flush_stdin()
        return None

    def _flush_stdin(self) -> None:
        try:
            while self.pending:
                done = os.write(self.in_fd, self.pending[:65536])
                del self.pending[:done]
        except BlockingIOError:
            pass
        except OSError:
            self.pending.clear()
            self.stdin_open = False
        self._watch_stdin()
        if not self.pending and self.stdin_closing:
            self._do_close_stdin()

    def _watch_stdin(self) -> None:
        want = bool(self.pending) and self.stdin_open
        if self.in_fd == self.out_fd:
            events = selectors.EVENT_READ | (selectors.EVENT_WRITE if want else 0)
            if self.output_open:
                self.sel.modify(self.out_fd, events, "output")
            return
        if want and not self.stdin_registered:
            self.sel.register(self.in_fd, selectors.EVENT_WRITE, "stdin")
        elif not want and self.stdin_registered:
            self.sel.unregister(self.in_fd)
        self.stdin_registered = want

    def _close_stdin(self) -> None:
        if self.pending:
            self.stdin_closing = True
        else:
            self._do_close_stdin()

    def _do_close_stdin(self) -> None:
        self.stdin_closing = False
        if self.pty:  # a PTY has no "closed": send the terminal's EOF character (Ctrl-D)
            try:
                eof = termios.tcgetattr(self.in_fd)[6][termios.VEOF]
                os.write(self.in_fd, eof if isinstance(eof, bytes) else bytes([eof]))
            except (OSError, termios.error):
                pass
            return
        if self.stdin_open:
            self.stdin_open = False
            if self.stdin_registered:
                self.sel.unregister(self.in_fd)
                self.stdin_registered = False
            os.close(self.in_fd)

    def _log_input(self, data: bytes, source: str) -> None:
        """Record an input as typed (also when a REPL's readline turned echo off); an answer to
        a password prompt only as hidden."""
        hidden = _is_password_prompt(self._last_output_line())
        preview = "(hidden: password prompt)" if hidden else data[:200].decode(errors="replace")
        entry = {"t": time.time(), "source": source, "preview": preview, "bytes": len(data)}
        try:
            fd = os.open("inputs.jsonl", os.O_WRONLY | os.O_CREAT | os.O_APPEND | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
            try:
                os.write(fd, (json.dumps(entry) + "\n").encode())
            finally:
                os.close(fd)
        except OSError as exc:  # the input itself went to the job; only its history entry is lost
            self._complain(f"cannot write inputs.jsonl: {exc.strerror}")

    def _last_output_line(self) -> str:
        """The job's last non-empty output line (the prompt an input answers), as plain text."""
        try:
            with open(LOG, "rb") as fh:
                fh.seek(max(0, self.log_size - 1024))
                raw = fh.read(1024)
        except OSError:
            return ""
        lines = [line for line in _plain(raw.replace(b"\r\n", b"\n")).split("\n") if line.strip()]
        return lines[-1] if lines else ""

    def _attached_input(self, client: Client, data: bytes) -> None:
        """Keystrokes from an attached terminal; the input history gets one entry per line."""
        if not client.input or self._queue_stdin(data) is not None:
            return
        client.typed += data
        if b"\r" in data or b"\n" in data or len(client.typed) > 200:
            self._log_input(bytes(client.typed), client.source)
            client.typed = bytearray()


# A prompt whose answer is a secret: "Password: ", "[sudo] password for me: ",
# "Enter passphrase for key '/root/.ssh/id_rsa': ", "Enter PIN:".
PASSWORD_PROMPT = re.compile(
    r"(?i)\b(?:password|passphrase|pass phrase|passcode|passwd|pin|secret|token)\b[^\n]{0,120}:\s*$")


def _is_password_prompt(line: str) -> bool:
    return bool(PASSWORD_PROMPT.search(line[-200:]))
