"""The supervisor's event loop: output to disk and clients, the socket protocol, exit, kill.

Loaded by supervisor.py only after the job is running; stdlib only. One thread runs the loop;
a kill runs in a helper thread (it sleeps through its grace period) and hands its result back
through the wake pipe.
"""

import base64
import errno
import json
import os
import selectors
import signal
import socket
import termios
import threading
import time

import bounds
import proctree

LOG = "output.log"
PROTOCOL_VERSION = 1  # docs/internals.md; every reply carries it as "v"
READ_SIZE = 1 << 20  # pipe reads (the pipe holds 1 MiB)
PTY_READ_SIZE = 1 << 16  # a PTY hands out a few KiB a read
MAX_PENDING_STDIN = 1 << 20
MAX_CLIENT_BACKLOG = 4 << 20
MAX_LINE = 64 << 10
QUERY_REPLIES = ((b"\x1b[6n", b"\x1b[1;1R"), (b"\x1b[c", b"\x1b[?1;2c"), (b"\x1b[0c", b"\x1b[?1;2c"),
                 (b"\x1b[5n", b"\x1b[0n"))
WATCH_INTERVAL = 15.0
WATCH_MAX = 8
MAX_CLIENTS = 256  # connections served at once (fewer when the fd limit is low); the rest get an error
RESERVED_FDS = 24  # descriptors kept free for the log, state files and the job's pipes
ACCEPT_BACKOFF = (0.05, 1.0)  # pause accepting this long (doubling) while out of descriptors
RETRY_WRITES = (0.2, 5.0)  # retry a failed exit.json / logstate.json / events write (doubling)
MAX_PENDING_EVENTS = 1000
MAX_LINGER = 24 * 3600.0  # after the job ended, keep retrying to store its exit this long
MAX_SELECT = 3600.0  # no select() timeout is longer (a huge deadline must not overflow it)


def signal_name(num: int) -> str | None:
    try:
        return signal.Signals(num).name
    except ValueError:
        return None


class Client:
    """One socket connection: a request/reply peer, or (after attach) a raw stream."""

    def __init__(self, sock: socket.socket) -> None:
        self.sock = sock
        self.inbuf = b""
        self.outbuf = bytearray()
        self.attached = False
        self.input = False
        self.source = "human"
        self.typed = bytearray()


class Supervisor:
    def __init__(self, jobdir: str, pid: int, ticks: int, out_fd: int, in_fd: int, pty: bool) -> None:
        self.jobdir, self.pid, self.ticks, self.pty = jobdir, pid, ticks, pty
        self.out_fd, self.in_fd = out_fd, in_fd
        self.meta = _read_meta(jobdir)
        self.home = os.path.dirname(os.path.dirname(os.path.abspath(jobdir)))
        self.session_id = str(self.meta.get("session_id") or os.path.basename(os.path.abspath(jobdir)))
        self.cap = int(bounds.setting(self.meta.get("log_cap"), 64 << 20, 1 << 50))
        self.complaints = 0
        self.log_fd = -1
        self.log_size = 0
        self._open_log()
        self.dropped = 0  # bytes rotated out by the log cap
        self.output_dropped = 0  # bytes of output that could not be stored (disk full, folder gone)
        self.write_failing = False
        self.exit_stored = False
        self.exited_at = 0.0
        self.state_dirty = False
        self.pending_events: list = []
        self.retry_at = None
        self.retry_delay = RETRY_WRITES[0]
        self.accept_paused_until = None
        self.accept_delay = ACCEPT_BACKOFF[0]
        self.max_clients = max(1, min(MAX_CLIENTS, _open_max() - RESERVED_FDS))
        self.spare_fd = _spare_fd()
        self.buf = bytearray(PTY_READ_SIZE if pty else READ_SIZE)  # output is read into this
        self.view = memoryview(self.buf)
        self.offset = self.log_size
        self.exit = None
        self.output_open = True
        self.stdin_open = True
        self.stdin_closing = False
        self.pending = bytearray()
        self.clients: dict = {}
        self.waiters: list = []
        self.kill_reason = None
        self.kill_thread = None
        self.kill_waiters: list = []
        self.kill_results: list = []
        self.watch = [p for p in self.meta.get("watch_patterns") or [] if p]
        self.watch_partial = b""
        self.watch_count = 0
        self.watch_interval = bounds.setting(self.meta.get("watch_interval"), WATCH_INTERVAL, 86400.0)
        self.watch_last = 0.0
        self.watch_suppressed = 0
        self.deadline = self._deadline(self.meta.get("max_runtime"))
        self.sel = selectors.DefaultSelector()

    def _deadline(self, max_runtime) -> float | None:
        if max_runtime is None:
            return None
        try:
            return time.monotonic() + bounds.seconds(max_runtime, "max_runtime")
        except bounds.BadNumber as exc:  # the registry checks it; a hand-edited meta.json may not be
            self._complain(f"ignoring max_runtime: {exc}")
            return None

    def _open_log(self) -> None:
        try:
            self.log_fd = os.open(os.path.join(self.jobdir, LOG), os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
            self.log_size = os.fstat(self.log_fd).st_size
        except OSError as exc:  # no room for even an empty file: output is counted as dropped
            self._complain(f"cannot open the output log: {exc}")

    # ---- setup -------------------------------------------------------------------------
    def run(self) -> int:
        os.chdir(self.jobdir)
        self.wake_r, self.wake_w = os.pipe2(os.O_NONBLOCK | os.O_CLOEXEC)
        signal.set_wakeup_fd(self.wake_w)
        signal.signal(signal.SIGCHLD, lambda *_: None)
        for sig in (signal.SIGHUP, signal.SIGINT, signal.SIGPIPE):
            signal.signal(sig, signal.SIG_IGN)
        signal.signal(signal.SIGTERM, lambda *_: self._start_kill(3.0, "killed", None))
        self.listener = self._listen()
        os.set_blocking(self.out_fd, False)
        if self.in_fd != self.out_fd:
            os.set_blocking(self.in_fd, False)
        self.sel.register(self.wake_r, selectors.EVENT_READ, "wake")
        self.sel.register(self.listener, selectors.EVENT_READ, "accept")
        self.sel.register(self.out_fd, selectors.EVENT_READ, "output")
        self._event("started", command=self.meta.get("command", ""))
        self._reap()
        while not self._finished():
            try:
                self._tick()
            except Exception as exc:  # noqa: BLE001 - nothing may cost the job its supervisor
                self._complain_error(exc)
                time.sleep(0.01)
        self._shutdown()
        return 0

    def _complain(self, message: str) -> None:
        """One line to supervisor.log (our stderr); never raises, imports or allocates much:
        it runs on error paths, when the disk may be full or descriptors exhausted."""
        self.complaints += 1
        if self.complaints > 100:  # a persistent fault: the first ones say it all
            return
        try:
            os.write(2, b"hermes-procs supervisor: " + message.encode(errors="replace")[:500] + b"\n")
        except OSError:
            pass

    def _complain_error(self, exc: BaseException) -> None:
        """An unexpected error, with where it happened (no traceback module: no import here)."""
        tb, where = exc.__traceback__, ""
        while tb is not None:
            where = f" at {os.path.basename(tb.tb_frame.f_code.co_filename)}:{tb.tb_lineno}"
            tb = tb.tb_next
        self._complain(f"internal error {exc!r}{where}")

    def _listen(self) -> socket.socket:
        try:
            os.unlink("sock")
        except FileNotFoundError:
            pass
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        old = os.umask(0o177)
        try:
            sock.bind("sock")
        finally:
            os.umask(old)
        sock.listen(64)
        sock.setblocking(False)
        return sock

    def _finished(self) -> bool:
        """The job has ended, its output is drained, and its exit is on disk (or cannot ever be:
        the job folder was deleted)."""
        if self.exit is None or self.output_open or self.kill_thread is not None:
            return False
        if time.monotonic() - self.exited_at > MAX_LINGER:
            return True
        return (self.exit_stored and not self.pending_events) or self._folder_gone()

    def _folder_gone(self) -> bool:
        try:
            return os.stat(".").st_nlink == 0  # we run in the job folder; a removed one has no links
        except OSError:
            return True

    # ---- loop --------------------------------------------------------------------------
    def _tick(self) -> None:
        now = time.monotonic()
        timeout = MAX_SELECT
        if self.deadline is not None and self.exit is None and self.kill_thread is None:
            timeout = min(timeout, max(0.0, self.deadline - now))
            if timeout == 0:
                self.deadline = None
                grace = bounds.setting(self.meta.get("kill_grace"), 3.0, bounds.MAX_SECONDS)
                self._start_kill(grace, "timed_out", None)
                return
        for at in (self.retry_at, self.accept_paused_until):
            if at is not None:
                timeout = min(timeout, max(0.0, at - now))
        for key, mask in self.sel.select(timeout):
            tag = key.data
            if tag == "output":
                if mask & selectors.EVENT_WRITE:
                    self._flush_stdin()
                if mask & selectors.EVENT_READ:
                    self._read_output()
            elif tag == "wake":
                self._on_wake()
            elif tag == "accept":
                self._accept()
            elif tag == "stdin":
                self._flush_stdin()
            else:
                self._on_client(tag, mask)
        self._timers()

    def _timers(self) -> None:
        now = time.monotonic()
        if self.accept_paused_until is not None and now >= self.accept_paused_until:
            self.accept_paused_until = None
            self.sel.register(self.listener, selectors.EVENT_READ, "accept")
        if self.retry_at is not None and now >= self.retry_at:
            self.retry_at = None
            self._retry_writes()

    def _retry_writes(self) -> None:
        """Try again what a full disk (or another write error) kept from being stored."""
        if self.exit is not None and not self.exit_stored:
            self._store_exit()
        if self.state_dirty:
            self._write_state()
        if self.pending_events:
            self._flush_events()
        if self._writes_pending():
            self._schedule_retry()
        else:
            self.retry_delay = RETRY_WRITES[0]

    def _writes_pending(self) -> bool:
        if self._folder_gone():
            return bool(self.pending_events)
        return (self.exit is not None and not self.exit_stored) or self.state_dirty or bool(self.pending_events)

    def _schedule_retry(self) -> None:
        if self.retry_at is None:
            self.retry_at = time.monotonic() + self.retry_delay
            self.retry_delay = min(self.retry_delay * 2, RETRY_WRITES[1])

    def _on_wake(self) -> None:
        try:
            while os.read(self.wake_r, 4096):
                pass
        except BlockingIOError:
            pass
        self._reap()
        while self.kill_results:
            survivors, waiters = self.kill_results.pop(0)
            self.kill_thread = None
            for client in waiters:
                self._reply(client, {"ok": True, "survivors": survivors, "exit": self.exit})

    def _reap(self) -> None:
        while True:
            try:
                pid, status = os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:
                return
            if pid == 0:
                return
            if pid == self.pid and self.exit is None:
                self._child_exited(status)

    # ---- output ------------------------------------------------------------------------
    def _read_output(self) -> bool:
        """Read what is there into the reused buffer (no allocation per read); a PTY hands out
        ~4 KiB a read, so take several per wake-up."""
        size, ended = 0, False
        while size < len(self.buf):
            try:
                got = os.readv(self.out_fd, [self.view[size:]])
            except BlockingIOError:
                break
            except OSError:  # EIO: every holder of the PTY's other side has gone
                got = 0
            if not got:
                ended = True
                break
            size += got
            if not self.pty:
                break
        if size:
            self._append(self.view[:size])
        if ended:
            self._close_output()
        return bool(size)

    def _append(self, data: memoryview) -> None:
        """New output: to the log, to attached clients, then the checks that need the bytes."""
        stored = self._write_log(data)
        if stored < len(data):  # disk full or folder gone: keep the job and the live stream going
            self.output_dropped += len(data) - stored
            self.state_dirty = True
            self._schedule_retry()
        self.offset += len(data)
        for client in list(self.clients.values()):
            if client.attached:
                self._send(client, data)
        watching = self.watch and self.exit is None
        if not (self.pty or watching):
            return
        chunk = bytes(data)
        if self.pty and b"\x1b[" in chunk and not any(c.input for c in self.clients.values()):
            self._answer_queries(chunk)
        if watching:
            self._scan_watch(chunk)

    def _write_log(self, data: memoryview) -> int:
        """Append to the log and return the bytes stored; each segment holds at most half the cap,
        so the newest output stays. A write error stops here: the rest is not stored."""
        view = memoryview(data)
        half = max(1, self.cap // 2)
        stored = 0
        try:
            while view:
                if self.log_size >= half or self.log_fd < 0:
                    self._rotate()
                written = os.write(self.log_fd, view[:half - self.log_size])
                self.log_size += written
                stored += written
                view = view[written:]
            if self.write_failing:
                self.write_failing = False
                self._complain(f"the output log is writable again ({self.output_dropped} bytes dropped so far)")
        except OSError as exc:
            if not self.write_failing:
                self.write_failing = True
                self._complain(f"cannot write the output log, dropping output until it can: {exc.strerror}")
        return stored

    def _rotate(self) -> None:
        """output.log becomes output.log.1; the older half is dropped (freed off the loop).

        The new segment is created first, so a failure (no room for a file) changes nothing;
        logstate.json names the inode of the first retained segment, so a reader can tell a
        finished rotation from one under way."""
        new_fd = os.open(f".{LOG}.new", os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_APPEND, 0o600)
        doomed = None
        if self.log_fd >= 0:
            try:
                size = os.path.getsize(LOG + ".1")
                os.rename(LOG + ".1", f".{LOG}.1.dropped")
                self.dropped += size
                doomed = f".{LOG}.1.dropped"
            except OSError:
                pass
            try:
                os.rename(LOG, LOG + ".1")
            except OSError:
                os.close(new_fd)
                raise
            os.close(self.log_fd)
        os.rename(f".{LOG}.new", LOG)
        if doomed:  # freeing tens of MiB of blocks takes a while: not on the output path
            threading.Thread(target=_unlink_quietly, args=(doomed,)).start()
        self.log_fd, self.log_size = new_fd, 0
        self._write_state()

    def _write_state(self) -> None:
        """logstate.json: bytes rotated out, the first retained segment, output not stored."""
        state = {"dropped_bytes": self.dropped, "output_dropped": self.output_dropped}
        try:
            state["first_segment"] = os.stat(LOG + ".1").st_ino
        except OSError:
            pass
        self.state_dirty = not self._write_json("logstate.json", state)
        if self.state_dirty:
            self._schedule_retry()

    def _answer_queries(self, data: bytes) -> None:
        for query, reply in QUERY_REPLIES:
            if query in data:
                self._queue_stdin(reply)

    def _drain_output(self) -> None:
        """Read what the job already wrote, without waiting for more."""
        deadline = time.monotonic() + 0.5
        while self.output_open and time.monotonic() < deadline and self._read_output():
            pass

    def _close_output(self) -> None:
        if self.output_open:
            self.output_open = False
            self.sel.unregister(self.out_fd)
            if self.out_fd != self.in_fd:
                os.close(self.out_fd)
            elif not self.stdin_open or self.exit is not None:
                os.close(self.out_fd)

    # ---- watch patterns ----------------------------------------------------------------
    def _scan_watch(self, data: bytes) -> None:
        lines = (self.watch_partial + data).split(b"\n")
        self.watch_partial = lines.pop()[-MAX_LINE:]
        for raw in lines:
            line = _plain(raw)
            for pattern in self.watch:
                if pattern in line:
                    self._watch_hit(pattern, line)
                    break
            if not self.watch:
                return

    def _watch_hit(self, pattern: str, line: str) -> None:
        now = time.monotonic()
        if self.watch_count and now - self.watch_last < self.watch_interval:
            self.watch_suppressed += 1
            return
        self.watch_count += 1
        self.watch_last = now
        extra = {"suppressed": self.watch_suppressed} if self.watch_suppressed else {}
        self.watch_suppressed = 0
        self._event("watch_match", pattern=pattern, output=line[-1000:], **extra)
        if self.watch_count >= WATCH_MAX:
            self.watch = []
            self._event("watch_match", pattern=pattern, output="", notice=(
                f"watch_patterns matched {WATCH_MAX} times; watching stopped for this job"))

    # ---- exit --------------------------------------------------------------------------
    def _child_exited(self, status: int) -> None:
        self._drain_output()
        if os.WIFSIGNALED(status):
            code, sig = -os.WTERMSIG(status), signal_name(os.WTERMSIG(status))
        else:
            code, sig = os.waitstatus_to_exitcode(status), None
        record = {"exit_code": code, "signal": sig, "completion_reason": self.kill_reason or "exited",
                  "ended_at": time.time()}
        if self.output_dropped:
            record["output_dropped"] = self.output_dropped
        self.exited_at = time.monotonic()
        self.exit = record  # in memory first: served over the socket even if the disk refuses it
        self._store_exit()
        self._event("exited", exit_code=self.exit["exit_code"],
                    completion_reason=self.exit["completion_reason"])
        if self.meta.get("notify_on_complete"):
            self._event("completion", command=self.meta.get("command", ""), exit_code=self.exit["exit_code"],
                        completion_reason=self.exit["completion_reason"], output=self._tail_text(2000))
        for client in self.waiters:
            self._reply(client, {"ok": True, "exit": self.exit})
        self.waiters = []
        if self.out_fd == self.in_fd and not self.output_open:
            os.close(self.out_fd)

    def _store_exit(self) -> None:
        """exit.json, unless someone already wrote a valid one (then theirs stands); on a write
        error the exit stays in memory and is retried (the supervisor lingers until it is stored,
        or until the job folder is gone)."""
        try:
            self.exit = _record_exit(self.exit)
            self.exit_stored = True
        except OSError as exc:
            if not self._folder_gone():
                self._complain(f"cannot write exit.json yet, will retry: {exc.strerror}")
                self._schedule_retry()

    def _tail_text(self, chars: int) -> str:
        try:
            with open(LOG, "rb") as fh:
                fh.seek(max(0, self.log_size - chars * 4))
                raw = fh.read()
            import text
        except (OSError, ImportError):  # ImportError: out of descriptors
            return ""
        return text.last_chars(raw, chars)

    def _event(self, kind: str, **fields) -> None:
        """Append an event to the home's events.jsonl; kept in memory and retried when it cannot
        be written (in order: queued events go first)."""
        event = {"type": kind, "session_id": self.session_id, "t": time.time(), **fields}
        if len(self.pending_events) < MAX_PENDING_EVENTS:
            self.pending_events.append((json.dumps(event) + "\n").encode())
        self._flush_events()

    def _flush_events(self) -> None:
        try:
            fd = os.open(os.path.join(self.home, "events.jsonl"), os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
        except OSError as exc:
            return self._event_failed(exc)
        try:
            while self.pending_events:
                line = self.pending_events[0]
                if os.write(fd, line) != len(line):  # a partial line: the disk filled up
                    os.write(fd, b"\n")  # end it, so the next event starts a line of its own
                    raise OSError(errno.ENOSPC, "No space left on device")
                self.pending_events.pop(0)
        except OSError as exc:
            self._event_failed(exc)
        finally:
            os.close(fd)

    def _event_failed(self, exc: OSError) -> None:
        self._complain(f"cannot write events.jsonl, will retry: {exc.strerror}")
        self._schedule_retry()

    # ---- kill --------------------------------------------------------------------------
    def _start_kill(self, grace: float, reason: str, client) -> None:
        if client is not None:
            self.kill_waiters.append(client)
        if self.kill_thread is not None:
            return
        if self.exit is None:
            self.kill_reason = reason
        self.kill_thread = threading.Thread(target=self._kill_worker, args=(grace,), daemon=True)
        self.kill_thread.start()

    def _kill_worker(self, grace: float) -> None:
        root = self.pid if self.exit is None else None
        survivors = proctree.kill_tree(root, self.ticks, extra_root=os.getpid(), session=self.pid, grace=grace,
                                       hangup=self.pty)
        self.kill_results.append((survivors, self.kill_waiters))
        self.kill_waiters = []
        try:
            os.write(self.wake_w, b"k")
        except OSError:
            pass

    # ---- stdin -------------------------------------------------------------------------
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

    # ---- clients -----------------------------------------------------------------------
    def _accept(self) -> None:
        try:
            sock, _ = self.listener.accept()
        except (BlockingIOError, InterruptedError, ConnectionAbortedError):
            return
        except OSError as exc:
            if exc.errno not in (errno.EMFILE, errno.ENFILE, errno.ENOBUFS, errno.ENOMEM):
                raise
            return self._out_of_descriptors()
        if len(self.clients) >= self.max_clients:
            return self._turn_away(sock, f"too many clients: this supervisor serves {self.max_clients} "
                                         "connections at once; try again")
        self.accept_delay = ACCEPT_BACKOFF[0]
        sock.setblocking(False)
        client = Client(sock)
        self.clients[sock.fileno()] = client
        self.sel.register(sock, selectors.EVENT_READ, client)

    def _out_of_descriptors(self) -> None:
        """accept() found no free descriptor: answer the waiting client with an error through
        the spare one, then stop accepting for a moment (the listener would wake us at once)."""
        if self.spare_fd >= 0:
            os.close(self.spare_fd)
            self.spare_fd = -1
            try:
                sock, _ = self.listener.accept()
                self._turn_away(sock, "the supervisor is out of file descriptors; try again")
            except OSError:
                pass
            self.spare_fd = _spare_fd()
        self._complain("out of file descriptors: not accepting connections for a moment")
        self.sel.unregister(self.listener)
        self.accept_paused_until = time.monotonic() + self.accept_delay
        self.accept_delay = min(self.accept_delay * 2, ACCEPT_BACKOFF[1])

    def _turn_away(self, sock: socket.socket, error: str) -> None:
        try:
            sock.setblocking(False)
            sock.send(json.dumps({"ok": False, "error": error, "busy": True, "v": PROTOCOL_VERSION}).encode()
                      + b"\n")
        except OSError:
            pass
        sock.close()

    def _on_client(self, client, mask: int) -> None:
        if mask & selectors.EVENT_WRITE:
            self._flush_client(client)
        if mask & selectors.EVENT_READ and client.sock.fileno() in self.clients:
            try:
                data = client.sock.recv(65536)
            except (BlockingIOError, InterruptedError):
                return
            except OSError:
                data = b""
            if not data:
                self._drop(client)
                return
            if client.attached:
                self._attached_input(client, data)
                return
            client.inbuf += data
            self._handle_lines(client)

    def _handle_lines(self, client: Client) -> None:
        while b"\n" in client.inbuf and not client.attached and client.sock.fileno() in self.clients:
            line, client.inbuf = client.inbuf.split(b"\n", 1)
            try:
                request = json.loads(line, parse_constant=_no_constant)
                if not isinstance(request, dict) or not isinstance(request.get("op"), str):
                    raise ValueError('a request is a JSON object with an "op" string')
                self._dispatch(client, request)
            except KeyError as exc:
                self._reply(client, {"ok": False, "error": f"bad request: missing {exc}"})
            except Exception as exc:  # noqa: BLE001 - any bad request gets an answer, the next ones too
                self._reply(client, {"ok": False, "error": f"bad request: {_short(exc)}"})
        if len(client.inbuf) > 8 << 20:
            self._drop(client)
        elif client.attached and client.inbuf:
            rest, client.inbuf = client.inbuf, b""
            self._attached_input(client, rest)

    def _attached_input(self, client: Client, data: bytes) -> None:
        """Keystrokes from an attached terminal; the input history gets one entry per line."""
        if not client.input or self._queue_stdin(data) is not None:
            return
        client.typed += data
        if b"\r" in data or b"\n" in data or len(client.typed) > 200:
            self._log_input(bytes(client.typed), client.source)
            client.typed = bytearray()

    def _dispatch(self, client: Client, req: dict) -> None:
        op = req["op"]
        if op == "status":
            self._reply(client, {"ok": True, "pid": self.pid, "running": self.exit is None,
                                 "offset": self.offset, "stdin_open": self.stdin_open, "exit": self.exit,
                                 "exit_stored": self.exit_stored, "output_dropped": self.output_dropped})
        elif op == "write":
            data = base64.b64decode(req["data"])
            error = self._queue_stdin(data)
            if error is None:
                self._log_input(data, str(req.get("source", "agent")))
            self._reply(client, {"ok": error is None, "bytes_written": len(data)} if error is None
                        else {"ok": False, "error": error, "exited": self.exit is not None})
        elif op == "close_stdin":
            if self.exit is not None:
                self._reply(client, {"ok": False, "error": "the process has exited", "exited": True})
            else:
                self._close_stdin()
                self._reply(client, {"ok": True})
        elif op == "resize":
            self._resize(client, *bounds.terminal_size(req.get("rows"), req.get("cols")))
        elif op == "signal":
            self._signal(client, req["signal"])
        elif op == "kill":
            grace = bounds.seconds(req.get("grace", 3.0), "grace", allow_zero=True)
            self._start_kill(grace, str(req.get("reason", "killed")), client)
        elif op == "wait":
            if self.exit is not None:
                self._reply(client, {"ok": True, "exit": self.exit})
            else:
                self.waiters.append(client)
        elif op == "attach":
            client.input = bool(req.get("input"))
            client.source = str(req.get("source", "human"))
            self._reply(client, {"ok": True, "offset": self.offset, "pty": self.pty})
            client.attached = True
        else:
            self._reply(client, {"ok": False, "error": f"unknown op {op!r}"})

    def _resize(self, client: Client, rows: int, cols: int) -> None:
        if not self.pty:
            return self._reply(client, {"ok": False, "error": "resize needs a PTY job"})
        if self.output_open or self.exit is None:
            import fcntl
            import struct

            fcntl.ioctl(self.in_fd, termios.TIOCSWINSZ, struct.pack("HHHH", rows, cols, 0, 0))
        self._reply(client, {"ok": True})

    def _signal(self, client: Client, name: str) -> None:
        try:
            sig = signal.Signals[name if str(name).startswith("SIG") else "SIG" + str(name).upper()]
        except KeyError:
            return self._reply(client, {"ok": False, "error": f"unknown signal {name}"})
        if self.exit is not None:
            return self._reply(client, {"ok": False, "error": "the process has exited", "exited": True})
        groups = {self.pid}
        if self.pty:
            try:
                groups.add(os.tcgetpgrp(self.in_fd))
            except OSError:
                pass
        for pgid in groups:
            try:
                os.killpg(pgid, sig)
            except (ProcessLookupError, PermissionError):
                pass
        self._reply(client, {"ok": True})

    def _reply(self, client: Client, message: dict) -> None:
        message["v"] = PROTOCOL_VERSION
        self._send(client, (json.dumps(message) + "\n").encode())

    def _send(self, client: Client, data: bytes) -> None:
        if client.sock.fileno() not in self.clients:
            return
        if len(client.outbuf) > MAX_CLIENT_BACKLOG:
            return self._drop(client)
        was_empty = not client.outbuf
        client.outbuf += data
        if was_empty:
            self._flush_client(client)

    def _flush_client(self, client: Client) -> None:
        try:
            while client.outbuf:
                done = client.sock.send(client.outbuf[:262144])
                del client.outbuf[:done]
        except (BlockingIOError, InterruptedError):
            pass
        except OSError:
            return self._drop(client)
        events = selectors.EVENT_READ | (selectors.EVENT_WRITE if client.outbuf else 0)
        self.sel.modify(client.sock, events, client)

    def _drop(self, client: Client) -> None:
        fd = client.sock.fileno()
        if self.clients.pop(fd, None) is not None:
            self.sel.unregister(client.sock)
        client.sock.close()
        if client in self.waiters:
            self.waiters.remove(client)

    def _shutdown(self) -> None:
        try:
            os.unlink("sock")
        except OSError:
            pass
        for client in list(self.clients.values()):
            self._flush_blocking(client)
            self._drop(client)
        if self.log_fd >= 0:
            os.close(self.log_fd)

    def _flush_blocking(self, client: Client) -> None:
        try:
            client.sock.setblocking(True)
            client.sock.settimeout(1.0)
            client.sock.sendall(client.outbuf)
        except OSError:
            pass

    def _write_json(self, name: str, data: dict) -> bool:
        """Write a small JSON file atomically; False (and a note in supervisor.log) on failure."""
        tmp = f".{name}.tmp"
        try:
            _write_file(tmp, json.dumps(data).encode())
            os.replace(tmp, name)
            return True
        except OSError as exc:
            self._complain(f"cannot write {name}: {exc.strerror}")
            _unlink_quietly(tmp)
            return False


def _record_exit(record: dict) -> dict:
    """Write exit.json unless a valid one is there already (the first writer wins); return the
    record that stands. A damaged exit.json (not an exit record) is replaced by ours."""
    tmp = ".exit.json.tmp"
    try:
        _write_file(tmp, json.dumps(record).encode())
        try:
            os.link(tmp, "exit.json")
        except FileExistsError:
            theirs = _read_json("exit.json")
            if isinstance(theirs, dict) and "exit_code" in theirs:
                return theirs
            os.replace(tmp, "exit.json")
    finally:
        _unlink_quietly(tmp)
    return record


def _write_file(path: str, data: bytes) -> None:
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    try:
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view):]
    finally:
        os.close(fd)


def _read_json(path: str):
    """A JSON file's value, or None when it is missing or damaged."""
    try:
        with open(path, "rb") as fh:
            return json.loads(fh.read(1 << 20))
    except (OSError, ValueError, RecursionError):
        return None


def _read_meta(jobdir: str) -> dict:
    """meta.json as the registry wrote it; {} when it is gone or damaged (the job runs on with
    the defaults: it was started, and only its description is lost)."""
    meta = _read_json(os.path.join(jobdir, "meta.json"))
    return meta if isinstance(meta, dict) else {}


def _unlink_quietly(path: str) -> None:
    try:
        os.unlink(path)
    except OSError:
        pass


def _open_max() -> int:
    try:
        return os.sysconf("SC_OPEN_MAX")  # the soft RLIMIT_NOFILE
    except (OSError, ValueError):
        return 1024


def _spare_fd() -> int:
    """A descriptor held in reserve, released to answer a client when all others are in use."""
    try:
        return os.open(os.devnull, os.O_RDONLY | os.O_CLOEXEC)
    except OSError:
        return -1


def _no_constant(name: str):
    raise ValueError(f"{name} is not a number")


def _short(exc: BaseException) -> str:
    text = str(exc) or type(exc).__name__
    return text if len(text) <= 200 else text[:197] + "..."


def _plain(raw: bytes) -> str:
    """A line of raw output as plain text (core/text.py, loaded only when first needed)."""
    import text

    return text.to_text(raw).rstrip("\n")
