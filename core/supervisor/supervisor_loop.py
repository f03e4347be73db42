"""The supervisor's event loop: select, timers and retries, the exit record, events, requests.

Loaded by supervisor.py only after the job is running; stdlib only. One thread runs the loop.
The concerns live in their own modules, mixed into Supervisor: supervisor_output.py (output log
and rotation), supervisor_stdin.py (stdin queue), supervisor_clients.py (socket and clients),
supervisor_kill.py (kill thread), supervisor_watch.py (watch patterns), supervisor_lease.py (the
job's lease: killed when its owner ends); wire.py holds the
protocol's version and names shared with the client.
"""

from __future__ import annotations

import base64
import errno
import fcntl
import json
import os
import selectors
import signal
import termios
import time

import bounds
import wire
from idle_events import IdleWatch
from supervisor_clients import Client, ClientHub
from supervisor_kill import Killer
from supervisor_lease import Lease
from supervisor_output import COUNT_SLICE, OutputLog, unlink_quietly
from supervisor_stdin import StdinQueue
from supervisor_watch import Watcher

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

RETRY_WRITES = (0.2, 5.0)  # retry a failed exit.json / logstate.json / events write (doubling)
MAX_PENDING_EVENTS = 1000
MAX_LINGER = 24 * 3600.0  # after the job ended, keep retrying to store its exit this long
COUNT_QUIET = 0.1  # seconds without output or requests before counting the log's lines
MAX_SELECT = 3600.0  # no select() timeout is longer (a huge deadline must not overflow it)


def signal_name(num: int) -> str | None:
    try:
        return signal.Signals(num).name
    except ValueError:
        return None


class Supervisor(OutputLog, StdinQueue, ClientHub, Killer, Watcher, Lease):
    """One job's supervisor: the loop, the exit record, events and requests; the mixins hold
    the output log, stdin queue, client hub, kill, watch patterns and lease."""

    def __init__(self, jobdir: str, pid: int, ticks: int, out_fd: int, in_fd: int, pty: bool) -> None:
        self.jobdir, self.pid, self.ticks, self.pty = jobdir, pid, ticks, pty
        self.out_fd, self.in_fd = out_fd, in_fd
        self.meta = _read_meta(jobdir)
        self.home = os.path.dirname(os.path.dirname(os.path.abspath(jobdir)))
        self.session_id = str(self.meta.get("session_id") or os.path.basename(os.path.abspath(jobdir)))
        self.cap = int(bounds.setting(self.meta.get("log_cap"), 64 << 20, 1 << 50))
        self.complaints = 0
        self.exit = None
        self.exit_stored = False
        self.exited_at = 0.0
        self.state_dirty = False
        self.pending_events = []
        self.retry_at = None
        self.retry_delay = RETRY_WRITES[0]
        self.waiters = []
        self._init_output()
        self._init_stdin()
        self._init_clients()
        self._init_kill()
        self._init_watch()
        self._init_lease()
        self.deadline = self._deadline(self.meta.get("max_runtime"))
        self.sel = selectors.DefaultSelector()
        self.idle = IdleWatch(self)  # awaiting_input and quiet events (core/supervisor/idle_events.py)

    def _deadline(self, max_runtime: object) -> float | None:
        if max_runtime is None:
            return None
        try:
            return time.monotonic() + bounds.seconds(max_runtime, "max_runtime")
        except bounds.BadNumber as exc:  # the registry checks it; a hand-edited meta.json may not be
            self._complain(f"ignoring max_runtime: {exc}")
            return None

    # ---- setup -------------------------------------------------------------------------
    def run(self) -> int:
        os.chdir(self.jobdir)
        self.listener = wire.listen("sock", 64)  # first: whoever sees output can connect
        self.listener.setblocking(False)
        os.set_blocking(self.out_fd, False)
        self.sel.register(self.out_fd, selectors.EVENT_READ, "output")
        self._read_output()  # what the job printed while we set up goes to disk before the rest
        self.wake_r, self.wake_w = os.pipe2(os.O_NONBLOCK | os.O_CLOEXEC)
        signal.set_wakeup_fd(self.wake_w)
        signal.signal(signal.SIGCHLD, lambda *_: None)
        for sig in (signal.SIGHUP, signal.SIGINT, signal.SIGPIPE):
            signal.signal(sig, signal.SIG_IGN)
        signal.signal(signal.SIGTERM, lambda *_: self._start_kill(3.0, "killed", None, "signal"))
        if self.in_fd != self.out_fd:
            os.set_blocking(self.in_fd, False)
        self.sel.register(self.wake_r, selectors.EVENT_READ, "wake")
        self.sel.register(self.listener, selectors.EVENT_READ, "accept")
        self._watch_lease()
        self._event("started", command=self.meta.get("command", ""))
        self._reap()
        while not self._finished():
            try:
                self._tick()
            except Exception as exc:  # noqa: BLE001 - nothing may cost the job its supervisor
                self._complain_error(exc)
                time.sleep(0.01)
        self._shutdown()
        if self.lines_behind():  # every client has the exit: the rest of the counts, off anyone's path
            self.count_lines_after_exit()
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
                self._start_kill(grace, "timed_out", None, "max_runtime")
                return
        for at in (self.retry_at, self.accept_paused_until, self.lease_next):
            if at is not None:
                timeout = min(timeout, max(0.0, at - now))
        idle = self.idle.timeout()  # awaiting_input and quiet events (core/supervisor/idle_events.py)
        if idle is not None:
            timeout = min(timeout, idle)
        behind = self.lines_behind()
        if behind:
            timeout = min(timeout, COUNT_QUIET)
        ready = self.sel.select(timeout)
        if behind and (not ready or self.lines_far_behind()):  # count lines for readers (supervisor_output.py)
            self.count_lines(COUNT_SLICE)
        for key, mask in ready:
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
            elif tag == "lease":
                self._look_at_owner()
            else:
                self._on_client(tag, mask)
        self._timers()
        self.idle.check()

    def _timers(self) -> None:
        now = time.monotonic()
        if self.accept_paused_until is not None and now >= self.accept_paused_until:
            self.accept_paused_until = None
            self.sel.register(self.listener, selectors.EVENT_READ, "accept")
        if self.retry_at is not None and now >= self.retry_at:
            self.retry_at = None
            self._retry_writes()
        if self.lease_next is not None and now >= self.lease_next:
            self._look_at_owner()

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

    # ---- exit --------------------------------------------------------------------------
    def _child_exited(self, status: int) -> None:
        self._drain_output()
        if os.WIFSIGNALED(status):
            code, sig = -os.WTERMSIG(status), signal_name(os.WTERMSIG(status))
        else:
            code, sig = os.waitstatus_to_exitcode(status), None
        record = {"exit_code": code, "signal": sig, "completion_reason": self.kill_reason or "exited",
                  "ended_at": time.time()}
        if self.kill_by and self.kill_reason:
            record["killed_by"] = self.kill_by
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
        if self.exit is None:
            return
        try:
            self.exit = _record_exit(self.exit)
            self.exit_stored = True
        except OSError as exc:
            if not self._folder_gone():
                self._complain(f"cannot write exit.json yet, will retry: {exc.strerror}")
                self._schedule_retry()

    def _event(self, kind: str, **fields: Any) -> None:
        """Append an event to the home's events.jsonl; kept in memory and retried when it cannot
        be written (in order: queued events go first)."""
        event = {"type": kind, "session_id": self.session_id, "t": time.time(), **fields}
        if len(self.pending_events) < MAX_PENDING_EVENTS:
            self.pending_events.append((json.dumps(event) + "\n").encode())
        self._flush_events()

    def _flush_events(self) -> None:
        lock = self._events_lock()
        if lock == -2:  # prune is swapping in a compacted log (milliseconds): try again soon
            return self._schedule_retry()
        try:
            fd = os.open(os.path.join(self.home, "events.jsonl"),  # never through a planted link
                         os.O_WRONLY | os.O_CREAT | os.O_APPEND | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
        except OSError as exc:
            if lock >= 0:
                os.close(lock)
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
            if lock >= 0:
                os.close(lock)

    def _events_lock(self) -> int:
        """A shared lock on events.lock (core/registry/events.py), taken without waiting: its fd, -2 when
        prune holds it, -1 when it cannot be opened (then the event is written without it)."""
        try:
            fd = os.open(os.path.join(self.home, "events.lock"),
                         os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
        except OSError:
            return -1
        try:
            fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
        except OSError as exc:
            os.close(fd)
            return -2 if exc.errno in (errno.EWOULDBLOCK, errno.EAGAIN) else -1
        return fd

    def _event_failed(self, exc: OSError) -> None:
        self._complain(f"cannot write events.jsonl, will retry: {exc.strerror}")
        self._schedule_retry()

    # ---- requests ----------------------------------------------------------------------
    def _dispatch(self, client: Client, req: dict[str, Any]) -> None:
        op = req["op"]
        if op == wire.STATUS:
            self._reply(client, {"ok": True, "pid": self.pid, "running": self.exit is None,
                                 "offset": self.offset, "stdin_open": self.stdin_open, "exit": self.exit,
                                 "exit_stored": self.exit_stored, "output_dropped": self.output_dropped})
        elif op == wire.WRITE:
            data = base64.b64decode(req["data"])
            error = self._queue_stdin(data)
            if error is None:
                self._log_input(data, str(req.get("source", "agent")))
            self._reply(client, {"ok": error is None, "bytes_written": len(data)} if error is None
                        else {"ok": False, "error": error, "exited": self.exit is not None})
        elif op == wire.CLOSE_STDIN:
            if self.exit is not None:
                self._reply(client, {"ok": False, "error": "the process has exited", "exited": True})
            else:
                self._close_stdin()
                self._reply(client, {"ok": True})
        elif op == wire.RESIZE:
            self._resize(client, *bounds.terminal_size(req.get("rows"), req.get("cols")))
        elif op == wire.SIGNAL:
            self._signal(client, req["signal"])
        elif op == wire.KILL:
            self._kill_request(client, req)
        elif op == wire.WAIT:
            if self.exit is not None:
                self._reply(client, {"ok": True, "exit": self.exit})
            else:
                self.waiters.append(client)
        elif op == wire.WATCH:
            self._set_watch(client, req.get("patterns"))
        elif op == wire.PIN:
            self._pin(client, req.get("pinned"))
        elif op == wire.ATTACH:
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

    def _shutdown(self) -> None:
        self._record_members()
        try:
            os.unlink("sock")
        except OSError:
            pass
        for client in list(self.clients.values()):
            self._flush_blocking(client)
            self._drop(client)
        if self.log_fd >= 0:
            os.close(self.log_fd)

    def _write_json(self, name: str, data: dict[str, Any]) -> bool:
        """Write a small JSON file atomically; False (and a note in supervisor.log) on failure."""
        tmp = f".{name}.tmp"
        try:
            _write_file(tmp, json.dumps(data).encode())
            os.replace(tmp, name)
            return True
        except OSError as exc:
            self._complain(f"cannot write {name}: {exc.strerror}")
            unlink_quietly(tmp)
            return False


def _record_exit(record: dict[str, Any]) -> dict[str, Any]:
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
        unlink_quietly(tmp)
    return record


def _write_file(path: str, data: bytes) -> None:
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    try:
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view):]
    finally:
        os.close(fd)


def _read_json(path: str) -> object:
    """A JSON file's value, or None when it is missing or damaged."""
    try:
        with open(path, "rb") as fh:
            return json.loads(fh.read(1 << 20))
    except (OSError, ValueError, RecursionError):
        return None


def _read_meta(jobdir: str) -> dict[str, Any]:
    """meta.json as the registry wrote it; {} when it is gone or damaged (the job runs on with
    the defaults: it was started, and only its description is lost)."""
    meta = _read_json(os.path.join(jobdir, "meta.json"))
    return meta if isinstance(meta, dict) else {}


