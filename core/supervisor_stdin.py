"""The supervisor's stdin queue: input for the job is queued (at most 1 MiB pending), written
as the job reads it, closed (or, on a PTY, ended with the terminal's EOF character), and
recorded in inputs.jsonl.

A mixin of supervisor_loop.Supervisor (it uses the supervisor's state); stdlib only.
"""

import json
import os
import selectors
import termios
import time

from supervisor_clients import Client

MAX_PENDING_STDIN = 1 << 20


class StdinQueue:
    def _init_stdin(self) -> None:
        self.stdin_open = True
        self.stdin_closing = False
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
        registered = getattr(self, "_stdin_registered", False)
        if self.in_fd == self.out_fd:
            events = selectors.EVENT_READ | (selectors.EVENT_WRITE if want else 0)
            if self.output_open:
                self.sel.modify(self.out_fd, events, "output")
            return
        if want and not registered:
            self.sel.register(self.in_fd, selectors.EVENT_WRITE, "stdin")
        elif not want and registered:
            self.sel.unregister(self.in_fd)
        self._stdin_registered = want

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
            if getattr(self, "_stdin_registered", False):
                self.sel.unregister(self.in_fd)
                self._stdin_registered = False
            os.close(self.in_fd)

    def _log_input(self, data: bytes, source: str) -> None:
        hidden = False
        if self.pty:
            try:
                hidden = not termios.tcgetattr(self.in_fd)[3] & termios.ECHO
            except termios.error:
                pass
        preview = "(hidden: echo is off)" if hidden else data[:200].decode(errors="replace")
        entry = {"t": time.time(), "source": source, "preview": preview, "bytes": len(data)}
        try:
            fd = os.open("inputs.jsonl", os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
            try:
                os.write(fd, (json.dumps(entry) + "\n").encode())
            finally:
                os.close(fd)
        except OSError as exc:  # the input itself went to the job; only its history entry is lost
            self._complain(f"cannot write inputs.jsonl: {exc.strerror}")

    def _attached_input(self, client: Client, data: bytes) -> None:
        """Keystrokes from an attached terminal; the input history gets one entry per line."""
        if not client.input or self._queue_stdin(data) is not None:
            return
        client.typed += data
        if b"\r" in data or b"\n" in data or len(client.typed) > 200:
            self._log_input(bytes(client.typed), client.source)
            client.typed = bytearray()
