"""Jobs on other machines: the client end of the stdio protocol (see `stdio_server`).

`RemoteRegistry("ssh://box")` has the methods of `ProcessRegistry`; each call travels as one
JSON line over a long-lived transport process that carries stdin/stdout:

    ssh://[user@]host[:port]              the system `ssh` (your ~/.ssh/config, agent, keys,
                                          jump hosts), plus $HERMES_PROCS_SSH_ARGS
    docker://CONTAINER                    `docker exec -i CONTAINER`
    k8s://[NAMESPACE/]POD[/CONTAINER]     `kubectl exec -i`

A URL may end in `?home=PATH` (the remote state home) and `&python=PATH` (default `python3`).
The remote side needs only Python 3.9+: when hermes-procs is not installed there (or speaks
another protocol version) the stdlib core is sent over the connection once and cached in
~/.cache/hermes-procs/code/<hash>/ on that host. Jobs live on the remote under its own
supervisors, so they outlive the connection; a dropped connection makes the host
`unreachable` (calls return an error saying so) and the next call reconnects. A container
that is not running (stopped, restarting, removed) is `down` instead: its jobs ended with it
(core/remote/container_state.py asks the engine).
"""

from __future__ import annotations

import base64
import builtins
import hashlib
import io
import json
import os
import select
import socket
import subprocess
import threading
import time
import zipfile
from pathlib import Path
from typing import IO, Any

from ..registry.interface import Interrupt, Registry, Result, Rows
from ..registry.screen import draw as draw_screen
from ..supervisor import template
from ..supervisor.text import safe_line
from .address import Host, parse_host
from .container_state import down_reason
from .remembered import remember
from .stdio_server import STDIO_VERSION, decode_hook, dumps

RECONNECT_EVERY = 2.0  # seconds between connection attempts to an unreachable host
CONNECT_TIMEOUT = 20.0
# What goes to a remote host (paths under core/): the supervisor program, the registry and the
# stdio server, all stdlib and Python 3.9. Not the agent faces, nor this side of remote support
# (client-side only, or needing packages or a Python newer than 3.9 the remote may not have).
SHIPPED = ("__init__.py", "supervisor/*.py", "registry/*.py", "remote/__init__.py", "remote/stdio_server.py")

# Run as `python3 -I -c BOOT DIGEST HOME` on the host: isolated, so nothing of the working
# directory (the remote user's home) or of PYTHON* variables is imported. Python 3.9 and up.
BOOT = r"""
import hashlib, io, json, os, shutil, stat, sys, tempfile, zipfile
V, h, home = %d, sys.argv[1], sys.argv[2]


def say(msg):
    sys.stdout.write(json.dumps(msg) + "\n")
    sys.stdout.flush()


def parent_ok(path):
    # the folder holding ours: only we (or root) may rename what is in it
    st = os.stat(path)
    if st.st_uid not in (0, os.geteuid()) or (st.st_mode & 0o002 and not st.st_mode & stat.S_ISVTX):
        raise OSError(path + " may be written by other users: set XDG_CACHE_HOME to a folder of yours")


def own(path):
    # our folder (made if missing), closed to writes by others
    try:
        os.mkdir(path, 0o700)
    except FileExistsError:
        pass
    st = os.lstat(path)
    if not stat.S_ISDIR(st.st_mode) or st.st_uid != os.geteuid():
        raise OSError(path + " belongs to another user (or is not a folder): remove it")
    if st.st_mode & 0o022:
        os.chmod(path, stat.S_IMODE(st.st_mode) & 0o755)


def digest(d):
    # as the sending side computes it over the files it sends
    names = []
    for top, dirs, files in os.walk(d):
        dirs[:] = [x for x in dirs if x != "__pycache__"]
        names += [os.path.relpath(os.path.join(top, f), d) for f in files]
    out = hashlib.sha256()
    for name in sorted(names):
        with open(os.path.join(d, name), "rb") as fh:
            data = fh.read()
        out.update(b"%%s\0%%d\0" %% (name.encode(), len(data)) + data)
    return out.hexdigest()[:20]


def usable(d, base):
    # the cached code: ours, closed to everyone else, exactly what was sent; else moved away
    try:
        st = os.lstat(d)
    except FileNotFoundError:
        return False
    try:
        if stat.S_ISDIR(st.st_mode) and st.st_uid == os.geteuid() and not st.st_mode & 0o077 and digest(d) == h:
            return True
    except OSError:
        pass
    aside = os.path.join(base, ".old-" + os.urandom(6).hex())  # a folder of another user can be
    try:  # renamed within its parent only (its ".." stays), and may stay there if it cannot be removed
        os.rename(d, aside)
    except OSError:
        pass
    shutil.rmtree(aside, ignore_errors=True)
    return False


def unpack(base, d):
    say({"need_code": h})
    n = int(sys.stdin.buffer.readline())
    data = sys.stdin.buffer.read(n)
    mask = os.umask(0o077)
    try:
        tmp = tempfile.mkdtemp(dir=base)
        zipfile.ZipFile(io.BytesIO(data)).extractall(tmp)
    finally:
        os.umask(mask)
    try:
        os.rename(tmp, d)
    except OSError:
        shutil.rmtree(tmp, ignore_errors=True)


how = None
try:
    from hermes_procs.core.remote import stdio_server as s
    if getattr(s, "STDIO_VERSION", None) == V:
        how = "installed"
except Exception:
    pass
if how is None:
    cache = os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache")
    base = os.path.join(cache, "hermes-procs", "code")
    d = os.path.join(base, h)
    how = "cached"
    try:
        os.makedirs(cache, 0o700, exist_ok=True)
        parent_ok(cache)
        own(os.path.dirname(base))
        own(base)
        if not usable(d, base):
            how = "sent"
            unpack(base, d)
            if not usable(d, base):
                raise OSError("the code sent could not be stored in " + base)
    except OSError as exc:
        say({"hello": "hermes-procs", "v": V, "error": "cannot use the code cache: " + str(exc)})
        sys.exit(1)
    sys.path.insert(0, d)
    for m in [m for m in sys.modules if m == "hermes_procs" or m.startswith("hermes_procs.")]:
        del sys.modules[m]
    from hermes_procs.core.remote import stdio_server as s
sys.exit(s.main(home or None, code=how))
""" % STDIO_VERSION


class HostUnreachable(Exception):
    """The transport to a host could not be started or dropped."""


class RemoteError(Exception):
    """The remote end refused a request (a protocol or internal error over there)."""


# --------------------------------------------------------------------------- shipped code

_CODE: tuple[str, bytes] | None = None


def shipped_code() -> tuple[str, bytes]:
    """(digest, zip) of the stdlib core, and ptyprocess for PTY jobs, as sent to hosts that do
    not have it installed. The digest covers each file's name and bytes (see BOOT's `digest`),
    so the host can check a cached copy against it."""
    global _CODE
    if _CODE is None:
        core = Path(__file__).parent.parent
        files = {f"hermes_procs/core/{path.relative_to(core).as_posix()}": path.read_bytes()
                 for pattern in SHIPPED for path in core.glob(pattern)}
        pty_dir = template.pty_path()
        files.update({f"ptyprocess/{path.name}": path.read_bytes()
                      for path in (Path(pty_dir, "ptyprocess").glob("*.py") if pty_dir else ())})
        files["hermes_procs/__init__.py"] = (f'"""hermes-procs, as sent to a remote host."""\n'
                                             f'__version__ = {_version()!r}\n').encode()
        buf = io.BytesIO()
        digest = hashlib.sha256()
        with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as zf:
            for name in sorted(files):
                zf.writestr(zipfile.ZipInfo(name, (2020, 1, 1, 0, 0, 0)), files[name])
                digest.update(b"%s\0%d\0" % (name.encode(), len(files[name])) + files[name])
        _CODE = (digest.hexdigest()[:20], buf.getvalue())
    return _CODE


def _version() -> str:
    try:
        from importlib.metadata import version

        return version("hermes-procs")
    except Exception:  # noqa: BLE001 - a source checkout without metadata
        return "0"


# --------------------------------------------------------------------------- connection

class _Pending:
    __slots__ = ("event", "reply")

    def __init__(self) -> None:
        self.event = threading.Event()
        self.reply: dict[str, Any] | None = None


class Connection:
    """One transport process per host, carrying many concurrent calls and streams."""

    def __init__(self, host: Host) -> None:
        self.host = host
        self.state = "new"  # new, connected, unreachable, down (a container that is not running)
        self.error = ""
        self.hello: dict[str, Any] = {}
        self._proc: subprocess.Popen[bytes] | None = None
        self._lock = threading.Lock()  # connect / state
        self._wlock = threading.Lock()
        self._next = 0
        self._pending: dict[int, _Pending] = {}
        self._streams: dict[int, RemoteStream] = {}
        self._last_try = 0.0
        self._stderr: list[str] = []

    # -- lifecycle
    def ensure(self) -> None:
        """Connected, or raise HostUnreachable (reconnecting at most every RECONNECT_EVERY s)."""
        with self._lock:
            if self._proc is not None and self._proc.poll() is None and self.state == "connected":
                return
            if self.state in ("unreachable", "down") and time.monotonic() - self._last_try < RECONNECT_EVERY:
                raise HostUnreachable(self._unreachable())
            self._last_try = time.monotonic()
            try:
                try:
                    self._connect()
                except HostUnreachable:  # e.g. a shared ssh master that just died: once more
                    time.sleep(0.5)
                    self._connect()
            except HostUnreachable as exc:
                self.state, self.error = self._lost(str(exc))
                raise HostUnreachable(self._unreachable()) from None

    def _lost(self, error: str) -> tuple[str, str]:
        """(state, error) of a connection that failed or dropped: `down` with the engine's
        reason when the host is a container that is not running (core/remote/container_state.py:
        its jobs ended with it), else `unreachable` (its jobs run on over there)."""
        reason = down_reason(self.host)
        return ("down", reason) if reason else ("unreachable", error)

    def _unreachable(self) -> str:
        return f"host {self.host.label} is {'down' if self.state == 'down' else 'unreachable'}: {self.error}"

    def _connect(self) -> None:
        self._close_proc()
        self._fail_all()  # what was asked of the process just closed gets no answer now
        digest, code = shipped_code()
        remote = [self.host.python, "-I", "-c", BOOT, digest, self.host.home or ""]
        self._stderr = []
        try:
            proc = subprocess.Popen(self.host.argv(remote), stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                    stderr=subprocess.PIPE, start_new_session=True, close_fds=True)
        except OSError as exc:
            raise HostUnreachable(f"cannot run {self.host.argv([])[0]}: {exc.strerror or exc}") from None
        self._proc = proc
        threading.Thread(target=self._read_stderr, args=(proc,), daemon=True).start()
        first = self._read_line(proc)
        if first.get("need_code") == digest:
            _pipe(proc.stdin).write(b"%d\n" % len(code) + code)
            _pipe(proc.stdin).flush()
            first = self._read_line(proc)
        if first.get("hello") != "hermes-procs":
            raise HostUnreachable(self._why(proc, "the remote end did not answer as hermes-procs"))
        if first.get("error"):
            raise HostUnreachable(first["error"])
        if first.get("v") != STDIO_VERSION:
            raise HostUnreachable(f"the remote speaks protocol v{first.get('v')}, this side v{STDIO_VERSION}")
        self.hello = first
        self.state, self.error = "connected", ""
        threading.Thread(target=self._read_loop, args=(proc,), daemon=True).start()

    def _read_line(self, proc: subprocess.Popen[bytes]) -> dict[str, Any]:
        deadline = time.monotonic() + CONNECT_TIMEOUT
        fd = _pipe(proc.stdout).fileno()
        line = b""
        while not line.endswith(b"\n"):
            left = deadline - time.monotonic()
            if left <= 0 or not select.select([fd], [], [], left)[0]:
                proc.kill()
                raise HostUnreachable(f"no answer within {CONNECT_TIMEOUT:g}s")
            chunk = os.read(fd, 1)  # unbuffered: the read loop takes over this pipe afterwards
            if not chunk:
                raise HostUnreachable(self._why(proc, "the connection closed"))
            line += chunk
        try:
            msg = json.loads(line)
        except ValueError:
            raise HostUnreachable(f"unexpected output from the remote: {line[:200]!r}") from None
        return msg if isinstance(msg, dict) else {}

    def _why(self, proc: subprocess.Popen[bytes], default: str) -> str:
        try:
            proc.wait(timeout=2)
        except subprocess.TimeoutExpired:
            pass
        time.sleep(0.05)  # let the stderr reader take the last lines
        lines = [s for s in self._stderr if s.strip()]
        return lines[-1].strip() if lines else default

    def _read_stderr(self, proc: subprocess.Popen[bytes]) -> None:
        for raw in _pipe(proc.stderr):
            self._stderr = [*self._stderr, raw.decode("utf-8", "replace")][-20:]

    def _read_loop(self, proc: subprocess.Popen[bytes]) -> None:
        for line in _pipe(proc.stdout):
            try:
                msg = json.loads(line, object_hook=decode_hook)
            except ValueError:
                continue
            if isinstance(msg, dict):
                self._deliver(msg)
        if self._proc is not proc:  # closed (close() failed its requests) or already replaced
            return
        lost = self._lost(self._why(proc, "the connection dropped"))
        with self._lock:
            if self._proc is proc:  # not the requests of a connection made since: those live on
                self.state, self.error = lost
                self._last_try = 0.0
                self._fail_all()

    def _deliver(self, msg: dict[str, Any]) -> None:
        mid = msg.get("id")
        if not isinstance(mid, int):
            return
        stream = self._streams.get(mid)
        if stream is not None and ("data" in msg or "end" in msg):
            stream._feed(msg)
            if "end" in msg:
                self._streams.pop(mid, None)
            return
        pending = self._pending.pop(mid, None)
        if pending is not None:
            pending.reply = msg
            pending.event.set()

    def _fail_all(self) -> None:
        for pending in list(self._pending.values()):
            pending.event.set()
        self._pending.clear()
        for stream in list(self._streams.values()):
            stream._feed({"end": True})
        self._streams.clear()

    def _close_proc(self) -> None:
        proc, self._proc = self._proc, None
        if proc is not None:
            try:
                _pipe(proc.stdin).close()
            except OSError:
                pass
            proc.kill()
            proc.wait()

    def close(self) -> None:
        with self._lock:
            self._close_proc()
            self.state = "new"
        self._fail_all()

    # -- requests
    def send(self, message: dict[str, Any]) -> None:
        proc = self._proc
        if proc is None:
            raise HostUnreachable(self._unreachable())
        try:
            with self._wlock:
                _pipe(proc.stdin).write(dumps(message))
                _pipe(proc.stdin).flush()
        except (OSError, ValueError):
            raise HostUnreachable(self._unreachable()) from None

    def _new_id(self) -> int:
        with self._wlock:
            self._next += 1
            return self._next

    def request(self, message: dict[str, Any], timeout: float | None = None,
                cancel: Interrupt | None = None) -> dict[str, Any]:
        """Send one request and wait for its reply; `cancel` set asks the remote to stop it."""
        self.ensure()
        mid = self._new_id()
        pending = self._pending[mid] = _Pending()
        self.send({"id": mid, **message})
        deadline = None if timeout is None else time.monotonic() + timeout
        cancelled = False
        while not pending.event.wait(0.05 if cancel is not None else 1.0):
            if cancel is not None and cancel.is_set() and not cancelled:
                cancelled = True
                self.send({"id": mid, "cancel": True})
            if deadline is not None and time.monotonic() > deadline:
                self._pending.pop(mid, None)
                raise HostUnreachable(f"host {self.host.label} did not answer within {timeout:g}s")
        if pending.reply is None:
            raise HostUnreachable(self._unreachable())
        return pending.reply

    def call(self, method: str, args: tuple[Any, ...] = (), kwargs: dict[str, Any] | None = None, *,
             timeout: float | None = None, cancel: Interrupt | None = None) -> Any:
        """The result of `registry.METHOD(*args, **kwargs)` on the host."""
        reply = self.request({"call": method, "args": list(args), "kwargs": kwargs or {}}, timeout, cancel)
        if "error" in reply:
            raise RemoteError(reply["error"])
        return reply.get("result")

    def open_stream(self, session_id: str, input: bool, source: str) -> RemoteStream:
        self.ensure()
        mid = self._new_id()
        stream = RemoteStream(self, mid)
        self._streams[mid] = stream
        pending = self._pending[mid] = _Pending()
        self.send({"id": mid, "stream": {"session_id": session_id, "input": input, "source": source}})
        if not pending.event.wait(CONNECT_TIMEOUT) or pending.reply is None:
            self._streams.pop(mid, None)
            raise HostUnreachable(self._unreachable())
        reply = pending.reply
        if "opened" not in reply:
            self._streams.pop(mid, None)
            stream.close()
            raise RemoteError(reply.get("error", "stream refused"))
        stream.offset = int(reply["opened"]["offset"])
        stream.pty = bool(reply["opened"]["pty"])
        return stream


class RemoteStream:
    """The remote counterpart of `protocol.Stream`: read / send / close / fileno / offset.

    Bytes arriving on the connection are written into a local socketpair, so `fileno()` can be
    used in select() loops exactly like a local attach."""

    def __init__(self, conn: Connection, mid: int) -> None:
        self._conn = conn
        self._mid = mid
        self._r, self._w = socket.socketpair()
        self.offset = 0
        self.pty = False
        self.closed = False

    def _feed(self, msg: dict[str, Any]) -> None:
        try:
            if "data" in msg:
                self._w.sendall(base64.b64decode(msg["data"]))
            else:
                self._w.close()
        except OSError:
            pass

    def fileno(self) -> int:
        return self._r.fileno()

    def read(self, timeout: float | None = None) -> bytes | None:
        """Output bytes; None when nothing came within `timeout`; b"" at the end of the stream."""
        if self.closed:
            return b""
        ready, _, _ = select.select([self._r], [], [], timeout)
        if not ready:
            return None
        try:
            data = self._r.recv(262144)
        except OSError:
            data = b""
        self.offset += len(data)
        return data

    def send(self, data: bytes) -> None:
        self._conn.send({"id": self._mid, "send": base64.b64encode(data).decode("ascii")})

    def close(self) -> None:
        if not self.closed:
            self.closed = True
            try:
                self._conn.send({"id": self._mid, "close": True})
            except HostUnreachable:
                pass
            self._conn._streams.pop(self._mid, None)
            self._r.close()
            self._w.close()

    def __enter__(self) -> RemoteStream:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()


_CONNECTIONS: dict[str, Connection] = {}
_CONN_LOCK = threading.Lock()


def _pipe(stream: IO[bytes] | None) -> IO[bytes]:
    """A pipe of the ssh process (started with PIPE for all three: never None)."""
    if stream is None:
        raise HostUnreachable("the connection's process has no pipe")
    return stream


def connection(host: Host) -> Connection:
    """The process's one connection to `host` (shared by every RemoteRegistry of it)."""
    key = "\0".join([host.url, os.environ.get("HERMES_PROCS_SSH_ARGS", ""), *host.ssh_options])
    with _CONN_LOCK:
        conn = _CONNECTIONS.get(key)
        if conn is None:
            conn = _CONNECTIONS[key] = Connection(host)
        return conn


# --------------------------------------------------------------------------- registry

class RemoteRegistry(Registry):
    """The `Registry` of the jobs of one remote host: each call travels to its stdio server and
    back, results carry `host`."""

    remote = True

    def __init__(self, host: str, home: str | os.PathLike[str] | None = None,
                 ssh_options: tuple[str, ...] = ()) -> None:
        """`ssh_options`: ssh options for this host only, after $HERMES_PROCS_SSH_ARGS' and
        before the defaults (for each option ssh keeps the first value it is given)."""
        from .config import host_aliases

        parsed = parse_host(host, host_aliases())
        if home is not None or ssh_options:
            parsed = Host(parsed.url, parsed.scheme, parsed.target, parsed.port,
                          parsed.home if home is None else str(home), parsed.python, parsed.extra,
                          tuple(ssh_options))
        self.host = parsed
        self.conn = connection(parsed)

    @property
    def home(self) -> str:
        return f"{self.host.label}:{self.conn.hello.get('home', '?')}"

    def status(self) -> dict[str, Any]:
        """{"host", "state": connected/unreachable/down/new, "error", "code": installed/sent/cached,
        "reaper": who collects finished processes there (core/supervisor/reaper.py), "warning"}."""
        hello = self.conn.hello
        status = {"host": self.host.label, "state": self.conn.state, "error": self.conn.error,
                  "code": hello.get("code"), "remote_home": hello.get("home"), "reaper": hello.get("reaper")}
        if hello.get("warning"):  # the host's words: the one sanitiser, one line, bounded
            status["warning"] = safe_line(str(hello["warning"]))[:400]
        return status

    def host_state(self) -> str:
        """What a result of a call that could not reach the host says of it: `down` (a container
        that is not running: its jobs ended) or `unreachable` (they run on over there)."""
        return "down" if self.conn.state == "down" else "unreachable"

    def connect(self) -> dict[str, Any]:
        try:
            self.conn.ensure()
        except HostUnreachable:
            pass
        return self.status()

    def _call(self, method: str, args: tuple[Any, ...], kwargs: dict[str, Any],
              cancel: Interrupt | None = None) -> Any:
        """`registry.METHOD(*args, **kwargs)` on the host (keyword arguments left at None are
        not sent: the host takes its own defaults)."""
        kwargs = {key: value for key, value in kwargs.items() if value is not None}
        try:
            result = self.conn.call(method, args, kwargs, cancel=cancel)
        except HostUnreachable as exc:
            return {"status": "error", "error": str(exc), "host": self.host.label, "host_state": self.host_state()}
        except RemoteError as exc:
            return {"status": "error", "error": f"on {self.host.label}: {exc}", "host": self.host.label}
        return self._tag(result)

    def _tag(self, result: Any) -> Any:
        if isinstance(result, dict):
            result.setdefault("host", self.host.label)
        elif isinstance(result, list):
            for row in result:
                if isinstance(row, dict):
                    row.setdefault("host", self.host.label)
        return result

    def _result(self, method: str, *args: Any, cancel: Interrupt | None = None, **kwargs: Any) -> Result:
        """The host's answer to `method`, which must be a dict (a list or junk is an error)."""
        result = self._call(method, args, kwargs, cancel)
        return result if isinstance(result, dict) else self._junk(method)

    def _rows(self, method: str, *args: Any, **kwargs: Any) -> Rows | Result:
        """The host's answer to `method`, which lists rows (or is an error dict)."""
        result = self._call(method, args, kwargs)
        if isinstance(result, list):
            return [row for row in result if isinstance(row, dict)]
        return result if isinstance(result, dict) else self._junk(method)

    def _junk(self, method: str) -> Result:
        return {"status": "error", "error": f"on {self.host.label}: {method} answered no result",
                "host": self.host.label}

    # ---- reading (the marks: core/registry/interface.py)
    def list(self, task_id: str | None = None, session_key: str | None = None, only: Any = None) -> Rows | Result:
        return self._rows("list", task_id, session_key, only=None if only is None else builtins.list(only))

    def poll(self, session_id: str) -> Result:
        return self._result("poll", session_id)

    def get(self, session_id: str) -> Result:
        return self._result("get", session_id)

    def read_log(self, session_id: str, offset: int | None = None, limit: int = 200,
                 since: float | str | None = None, max_chars: int | None = None) -> Result:
        capped: dict[str, Any] = {} if max_chars is None else {"max_chars": max_chars}  # an older copy: no cap
        return self._result("read_log", session_id, offset=offset, limit=limit, since=since, **capped)

    def log_bytes(self, session_id: str, start: int | None = None, end: int | None = None,
                  max_bytes: int = 4 << 20, times: bool = False) -> Result:
        return self._result("log_bytes", session_id, start, end, max_bytes=max_bytes, times=times)

    def inputs(self, session_id: str, limit: int = 20) -> Rows | Result:
        return self._rows("inputs", session_id, limit=limit)

    def wait(self, session_id: str, timeout: float | None = None, interrupt: Interrupt | None = None,
             until: str = "exit") -> Result:
        """As `ProcessRegistry.wait`; setting `interrupt` stops the remote wait too."""
        return self._result("wait", session_id, timeout=timeout, until=until, cancel=interrupt)

    def wait_any(self, session_ids: builtins.list[str] | tuple[str, ...], timeout: float | None = None,
                 interrupt: Interrupt | None = None) -> Result:
        return self._result("wait_any", session_ids, timeout=timeout, cancel=interrupt)

    def screen(self, session_id: str, raw: bool = False) -> Result:
        """As `ProcessRegistry.screen`, drawn here: the host sends the bytes that draw the
        screen and its size (it has no terminal emulator: only the stdlib core is sent)."""
        result = self._result("screen", session_id, raw=True)
        data = result.pop("data", None) if not raw else None
        if not isinstance(data, bytes):
            return result
        try:
            return {**result, **draw_screen(data, int(result["rows"]), int(result["cols"]))}
        except ImportError:
            return {"status": "error", "error": "screen needs the bittty package: pip install bittty",
                    "host": self.host.label}

    def search(self, session_id: str | None = None, pattern: str | None = None, context: int = 2,
               limit: int = 50, task_id: str | None = None, max_chars: int | None = None) -> Result:
        capped: dict[str, Any] = {} if max_chars is None else {"max_chars": max_chars}
        return self._result("search", session_id, pattern, context=context, limit=limit, task_id=task_id, **capped)

    def tree(self, session_id: str) -> Result:
        return self._result("tree", session_id)

    def job_dir(self, session_id: str) -> Path:
        raise RemoteError(f"the job folder is on {self.host.label}; use log_bytes/read_log")

    def log_files(self, session_id: str) -> builtins.list[Path]:
        return []

    def drain_events(self, consumer: str = "default", all_types: bool = False, only_new: bool = False,
                     limit: int = 1000) -> Rows | Result:
        return self._rows("drain_events", consumer, all_types=all_types, only_new=only_new, limit=limit)

    def forget_consumer(self, consumer: str) -> Result:
        return self._result("forget_consumer", consumer)

    # ---- changing
    def spawn(self, command: str, **kwargs: Any) -> Result:
        """As `ProcessRegistry.spawn`, on the host; the host is remembered on this machine so its
        dashboard shows the job next to local ones (core/remote/remembered.py)."""
        result = self._result("spawn", command, **kwargs)
        if result.get("status") == "running":
            try:
                remember(self.host.url)
            except (OSError, ValueError):  # best effort: the job runs either way
                pass
        return result

    def exec(self, command: str, yield_ms: float = 10_000, **spawn_options: Any) -> Result:
        """As `ProcessRegistry.exec`, on the host (remembered as spawn does)."""
        result = self._result("exec", command, yield_ms=yield_ms, **spawn_options)
        if result.get("session_id") and result.get("status") != "error":
            try:
                remember(self.host.url)
            except (OSError, ValueError):
                pass
        return result

    def restart(self, session_id: str) -> Result:
        return self._result("restart", session_id)

    def write(self, session_id: str, data: str | bytes, source: str = "agent",
              yield_ms: float | None = None) -> Result:
        return self._result("write", session_id, data, source=source, yield_ms=yield_ms)

    def submit(self, session_id: str, data: str | bytes = "", source: str = "agent",
               yield_ms: float | None = None) -> Result:
        return self._result("submit", session_id, data, source=source, yield_ms=yield_ms)

    def pin(self, session_id: str) -> Result:
        return self._result("pin", session_id)

    def unpin(self, session_id: str) -> Result:
        return self._result("unpin", session_id)

    def caller_pid(self) -> int | None:
        """The pid of this connection's server on the host: the owner to lease a job to so that
        it ends with this process's connection (the tool's `ephemeral`); None when unreachable."""
        try:
            self.conn.ensure()
        except HostUnreachable:
            return None
        pid = self.conn.hello.get("pid")
        return pid if isinstance(pid, int) and not isinstance(pid, bool) else None

    def close_stdin(self, session_id: str) -> Result:
        return self._result("close_stdin", session_id)

    def resize(self, session_id: str, rows: int, cols: int) -> Result:
        return self._result("resize", session_id, rows, cols)

    def signal(self, session_id: str, sig: str | int) -> Result:
        return self._result("signal", session_id, sig)

    def signal_process(self, session_id: str, pid: int, sig: str | int, start_ticks: int | None = None) -> Result:
        return self._result("signal_process", session_id, pid, sig, start_ticks=start_ticks)

    def set_watch_patterns(self, session_id: str, patterns: builtins.list[str]) -> Result:
        return self._result("set_watch_patterns", session_id, patterns)

    def kill(self, session_id: str, grace: float | None = None) -> Result:
        return self._result("kill", session_id, grace=grace)

    def prune(self, keep_days: float | None = None, keep_count: int | None = None) -> Result:
        return self._result("prune", keep_days=keep_days, keep_count=keep_count)

    # ---- stacks: on the host, when hermes-procs is installed there (the shipped code has none)
    def stacks(self, name: str | None = None) -> Rows | Result:
        return self._rows("stacks", name)

    def up(self, path: str | None = None, name: str | None = None, wait: bool = False,
           timeout: float | None = None) -> Result:
        return self._result("up", path, name, wait=wait, timeout=timeout)

    def down(self, stack: str | None = None, path: str | None = None) -> Result:
        return self._result("down", stack, path)

    def restart_stack(self, stack: str, job: str | None = None) -> Result:
        return self._result("restart_stack", stack, job)

    def stream(self, session_id: str, input: bool = False, source: str = "human") -> RemoteStream:
        """A live attach, as `ProcessRegistry.stream` (raises on failure)."""
        return self.conn.open_stream(session_id, input, source)
