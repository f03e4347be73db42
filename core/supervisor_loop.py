"""The supervisor's event loop: output to disk and clients, the socket protocol, exit, kill.

Loaded by supervisor.py only after the job is running; stdlib only. One thread runs the loop;
a kill runs in a helper thread (it sleeps through its grace period) and hands its result back
through the wake pipe.
"""

import base64
import json
import os
import selectors
import signal
import socket
import sys
import termios
import threading
import time

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
        with open(os.path.join(jobdir, "meta.json")) as fh:
            self.meta = json.load(fh)
        self.home = os.path.dirname(os.path.dirname(os.path.abspath(jobdir)))
        self.session_id = self.meta["session_id"]
        self.cap = int(self.meta.get("log_cap") or 64 << 20)
        self.log_fd = os.open(os.path.join(jobdir, LOG), os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
        self.log_size = os.fstat(self.log_fd).st_size
        self.dropped = 0
        self.log_errors = 0
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
        self.watch_interval = float(self.meta.get("watch_interval", WATCH_INTERVAL))
        self.watch_last = 0.0
        self.watch_suppressed = 0
        deadline = self.meta.get("max_runtime")
        self.deadline = time.monotonic() + float(deadline) if deadline else None
        self.sel = selectors.DefaultSelector()

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
            except Exception:  # noqa: BLE001 - one bad request must never cost the job its supervisor
                import traceback

                traceback.print_exc()
                time.sleep(0.01)
        self._shutdown()
        return 0

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
        return self.exit is not None and not self.output_open and self.kill_thread is None

    # ---- loop --------------------------------------------------------------------------
    def _tick(self) -> None:
        timeout = None
        if self.deadline is not None and self.exit is None and self.kill_thread is None:
            timeout = max(0.0, self.deadline - time.monotonic())
            if timeout == 0:
                self.deadline = None
                self._start_kill(float(self.meta.get("kill_grace", 3.0)), "timed_out", None)
                return
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
        try:
            self._write_log(data)
        except OSError as exc:  # disk full or gone: keep the job and the live stream going
            self.log_errors += 1
            if self.log_errors == 1:
                print(f"hermes-procs supervisor: cannot write output log: {exc}", file=sys.stderr)
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

    def _write_log(self, data: memoryview) -> None:
        """Append to the log; each segment holds at most half the cap, so the newest output stays."""
        view = memoryview(data)
        half = max(1, self.cap // 2)
        while view:
            if self.log_size >= half:
                self._rotate()
            written = os.write(self.log_fd, view[:half - self.log_size])
            self.log_size += written
            view = view[written:]

    def _rotate(self) -> None:
        """output.log becomes output.log.1; the older half is dropped (freed off the loop)."""
        doomed = None
        try:
            self.dropped += os.path.getsize(LOG + ".1")
            doomed = f".{LOG}.1.dropped"
            os.rename(LOG + ".1", doomed)
        except OSError:
            pass
        os.rename(LOG, LOG + ".1")
        if doomed:  # freeing tens of MiB of blocks takes a while: not on the output path
            threading.Thread(target=os.unlink, args=(doomed,)).start()
        os.close(self.log_fd)
        self.log_fd = os.open(LOG, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
        self.log_size = 0
        self._write_json("logstate.json", {"dropped_bytes": self.dropped})

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
        self.exit = _record_exit(record)
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

    def _tail_text(self, chars: int) -> str:
        try:
            with open(LOG, "rb") as fh:
                fh.seek(max(0, self.log_size - chars * 4))
                raw = fh.read()
        except OSError:
            return ""
        import text

        return text.last_chars(raw, chars)

    def _event(self, kind: str, **fields) -> None:
        event = {"type": kind, "session_id": self.session_id, "t": time.time(), **fields}
        line = (json.dumps(event) + "\n").encode()
        fd = os.open(os.path.join(self.home, "events.jsonl"), os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
        try:
            os.write(fd, line)
        finally:
            os.close(fd)

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
        fd = os.open("inputs.jsonl", os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
        try:
            os.write(fd, (json.dumps(entry) + "\n").encode())
        finally:
            os.close(fd)

    # ---- clients -----------------------------------------------------------------------
    def _accept(self) -> None:
        try:
            sock, _ = self.listener.accept()
        except BlockingIOError:
            return
        sock.setblocking(False)
        client = Client(sock)
        self.clients[sock.fileno()] = client
        self.sel.register(sock, selectors.EVENT_READ, client)

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
        while b"\n" in client.inbuf and not client.attached:
            line, client.inbuf = client.inbuf.split(b"\n", 1)
            try:
                request = json.loads(line)
                self._dispatch(client, request)
            except (ValueError, KeyError, TypeError, AttributeError) as exc:
                self._reply(client, {"ok": False, "error": f"bad request: {exc}"})
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
                                 "offset": self.offset, "stdin_open": self.stdin_open})
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
            self._resize(client, int(req["rows"]), int(req["cols"]))
        elif op == "signal":
            self._signal(client, req["signal"])
        elif op == "kill":
            self._start_kill(float(req.get("grace", 3.0)), str(req.get("reason", "killed")), client)
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
        if not (0 < rows < 10000 and 0 < cols < 10000):
            return self._reply(client, {"ok": False, "error": "rows and cols must be between 1 and 9999"})
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
        os.close(self.log_fd)

    def _flush_blocking(self, client: Client) -> None:
        try:
            client.sock.setblocking(True)
            client.sock.settimeout(1.0)
            client.sock.sendall(client.outbuf)
        except OSError:
            pass

    def _write_json(self, name: str, data: dict) -> None:
        tmp = f".{name}.tmp"
        with open(tmp, "w") as fh:
            json.dump(data, fh)
        os.replace(tmp, name)


def _record_exit(record: dict) -> dict:
    """Write exit.json unless someone already did; return the record that stands."""
    tmp = ".exit.json.tmp"
    with open(tmp, "w") as fh:
        json.dump(record, fh)
    try:
        os.link(tmp, "exit.json")
    except FileExistsError:
        with open("exit.json") as fh:
            record = json.load(fh)
    finally:
        os.unlink(tmp)
    return record


def _plain(raw: bytes) -> str:
    """A line of raw output as plain text (core/text.py, loaded only when first needed)."""
    import text

    return text.to_text(raw).rstrip("\n")
