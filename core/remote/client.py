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
import hashlib
import io
import json
import os
import re
import select
import shlex
import socket
import subprocess
import threading
import time
import zipfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any
from urllib.parse import SplitResult, parse_qs, unquote, urlsplit

from ..registry.screen import draw as draw_screen
from ..supervisor import template
from ..supervisor.text import safe_line
from .container_state import down_reason
from .stdio_server import STDIO_VERSION, decode_hook, dumps

RECONNECT_EVERY = 2.0  # seconds between connection attempts to an unreachable host
CONNECT_TIMEOUT = 20.0
SCHEMES = ("ssh", "docker", "k8s")
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


# --------------------------------------------------------------------------- addresses

@dataclass(frozen=True)
class Host:
    """A parsed host URL and the command that reaches its stdio server."""

    url: str
    scheme: str
    target: str
    port: int | None = None
    home: str | None = None
    python: str = "python3"
    extra: tuple[str, ...] = field(default=())
    ssh_options: tuple[str, ...] = field(default=())  # given by a program (the Hermes plugin), not the URL

    @property
    def label(self) -> str:
        return self.url.split("?", 1)[0]

    def argv(self, remote: list[str]) -> list[str]:
        """The local command that runs `remote` (an argv) on the host with stdio attached."""
        if self.scheme == "ssh":
            # the user's options first: for each option ssh keeps the first value it is given
            opts = [*shlex.split(os.environ.get("HERMES_PROCS_SSH_ARGS", "")), *self.ssh_options]
            port = ["-p", str(self.port)] if self.port else []
            return ["ssh", *opts, "-T", "-o", "BatchMode=yes", "-o", "ServerAliveInterval=10",
                    "-o", "ServerAliveCountMax=3", *_control_master(), *port, "--", self.target,
                    shlex.join(remote)]
        if self.scheme == "docker":
            return ["docker", "exec", "-i", self.target, *remote]
        namespace, pod, container = self.extra
        ns = ["-n", namespace] if namespace else []
        ct = ["-c", container] if container else []
        return ["kubectl", "exec", "-i", *ns, pod, *ct, "--", *remote]


def _control_master() -> list[str]:
    """Options sharing one SSH connection per host between processes (each CLI call would
    otherwise pay a full SSH handshake): a master kept 60 s after its last use, its socket in
    a private folder. HERMES_PROCS_SSH_ARGS="-o ControlMaster=no" turns it off. Without a
    private folder (another user's, or one others may enter), no sharing: ssh would talk to any
    socket planted there as if it were its master."""
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    folder = os.path.join(base, "hermes-procs", "ssh")
    try:
        os.makedirs(folder, mode=0o700, exist_ok=True)
        st = os.stat(folder)
        if st.st_uid != os.geteuid() or st.st_mode & 0o077 or len(folder) > 60:
            return []
    except OSError:
        return []
    return ["-o", "ControlMaster=auto", "-o", f"ControlPath={folder}/%C", "-o", "ControlPersist=60"]


def parse_host(url: str, aliases: dict[str, str] | None = None) -> Host:
    """`ssh://[user@]host[:port]`, `docker://C`, `k8s://[NS/]POD[/CONTAINER]`, or an alias
    from the config file's [hosts] table. Raises ValueError with a clear sentence.

    Every part is checked after percent-decoding, as it reaches ssh, docker or kubectl: no
    control characters anywhere (C0, DEL, C1), names of letters, digits and a few marks, and
    nothing that starts with `-` (an option)."""
    url = _host_url(url, aliases)
    if _CONTROL.search(url):  # urlsplit would drop \t \r \n without a word
        raise ValueError(f"host URL contains control characters: {url!r}")
    parts = urlsplit(url)
    if parts.scheme not in SCHEMES:
        raise ValueError(f"unsupported host scheme {parts.scheme!r} in {url!r}; use one of {', '.join(SCHEMES)}")
    query = parse_qs(parts.query)
    home = query.get("home", [None])[0]
    python = query.get("python", ["python3"])[0]
    if any(_CONTROL.search(value) for value in (home or "", python)):
        raise ValueError(f"host URL contains control characters: {url!r}")
    if parts.scheme == "ssh":
        return Host(url, "ssh", *_ssh_target(url, parts), home, python)
    words = [_decoded(w, _NAME, "name", url) for w in (parts.netloc + parts.path).split("/") if w]
    if not words:
        raise ValueError(f"expected {parts.scheme}://NAME, not {url!r}")
    if parts.scheme == "docker":
        if len(words) != 1:
            raise ValueError(f"expected docker://CONTAINER, not {url!r}")
        return Host(url, "docker", words[0], None, home, python)
    namespace, pod, container = _k8s_words(url, words)
    return Host(url, "k8s", pod, None, home, python, (namespace, pod, container))


_CONTROL = re.compile("[\x00-\x1f\x7f-\x9f]")
_USER = re.compile(r"[\w.@+-]+")  # letters (any script), digits, . _ @ + -
_HOSTNAME = re.compile(r"[\w.:%-]+")  # names, IPv4, IPv6 (with a zone id)
_NAME = re.compile(r"[A-Za-z0-9_.-]+")  # containers, pods, namespaces


def _decoded(raw: str, allowed: re.Pattern[str], what: str, url: str) -> str:
    """A part of a host URL, percent-decoded; ValueError unless it is all `allowed` characters
    and does not start with "-" (ssh, docker and kubectl would take it for an option)."""
    try:
        value = unquote(raw, errors="strict")
    except UnicodeDecodeError:
        raise ValueError(f"bad {what} in host URL {url!r}: not UTF-8 once decoded") from None
    if not allowed.fullmatch(value) or value.startswith("-"):
        raise ValueError(f"bad {what} {value!r} in host URL {url!r}")
    return value


def _host_url(url: object, aliases: dict[str, str] | None) -> str:
    """`url` trimmed, an alias replaced by its URL; ValueError unless it is a URL then."""
    if not isinstance(url, str) or not url.strip():
        raise ValueError("host must be a URL such as ssh://user@box, docker://NAME or k8s://POD")
    url = url.strip()
    if "://" not in url and aliases and url in aliases:
        url = aliases[url]
    if "://" not in url:
        known = ", ".join(sorted(aliases or {})) or "none configured"
        raise ValueError(f"unknown host {url!r}: use ssh://HOST, docker://CONTAINER, k8s://POD "
                         f"or a name from [hosts] in the config file ({known})")
    return url


def _ssh_target(url: str, parts: SplitResult) -> tuple[str, int | None]:
    """(`[user@]host`, port) of an ssh:// URL."""
    if not parts.hostname or parts.path not in ("", "/"):
        raise ValueError(f"expected ssh://[user@]host[:port], not {url!r}")
    try:
        port = parts.port
    except ValueError:
        raise ValueError(f"bad port in {url!r}") from None
    host = _decoded(parts.hostname, _HOSTNAME, "host name", url)
    user = _decoded(parts.username, _USER, "user name", url) if parts.username else None
    return (f"{user}@{host}" if user else host), port


def _k8s_words(url: str, words: list[str]) -> tuple[str, str, str]:
    """(namespace, pod, container) of k8s://[NAMESPACE/]POD[/CONTAINER]; "" where not given."""
    if len(words) > 3:
        raise ValueError(f"expected k8s://[NAMESPACE/]POD[/CONTAINER], not {url!r}")
    if len(words) == 1:
        return "", words[0], ""
    if len(words) == 2:
        return words[0], words[1], ""
    return words[0], words[1], words[2]


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
        lost = self._lost(self._why(proc, "the connection dropped")) if self._proc is proc else None
        with self._lock:
            if self._proc is proc and lost is not None:
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
                cancel: threading.Event | None = None) -> dict[str, Any]:
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
             timeout: float | None = None, cancel: threading.Event | None = None) -> Any:
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

class RemoteRegistry:
    """`ProcessRegistry`'s methods for the jobs of one remote host; results carry `host`."""

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
              cancel: threading.Event | None = None) -> Any:
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

    def wait(self, session_id: Any, timeout: Any = None, interrupt: threading.Event | None = None,
             **kwargs: Any) -> dict[str, Any]:
        """As `ProcessRegistry.wait`; setting `interrupt` stops the remote wait too."""
        result: dict[str, Any] = self._call("wait", (session_id,), {"timeout": timeout, **kwargs}, cancel=interrupt)
        return result

    def spawn(self, command: Any, **kwargs: Any) -> dict[str, Any]:
        """As `ProcessRegistry.spawn`, on the host; the host is remembered on this machine so its
        dashboard shows the job next to local ones (core/remote/hosts.py)."""
        result: dict[str, Any] = self._call("spawn", (command,), kwargs)
        if result.get("status") == "running":
            try:
                from .hosts import remember

                remember(self.host.url)
            except (OSError, ValueError):  # best effort: the job runs either way
                pass
        return result

    def screen(self, session_id: Any) -> dict[str, Any]:
        """As `ProcessRegistry.screen`, drawn here: the host sends the bytes that draw the
        screen and its size (it has no terminal emulator: only the stdlib core is sent)."""
        result: dict[str, Any] = self._call("screen", (session_id,), {"raw": True})
        data = result.pop("data", None)
        if not isinstance(data, bytes):
            return result
        try:
            return {**result, **draw_screen(data, int(result["rows"]), int(result["cols"]))}
        except ImportError:
            return {"status": "error", "error": "screen needs the bittty package: pip install bittty",
                    "host": self.host.label}

    def stream(self, session_id: Any, input: bool = False, source: str = "human") -> RemoteStream:
        """A live attach, as `ProcessRegistry.stream` (raises on failure)."""
        return self.conn.open_stream(session_id, input, source)

    def job_dir(self, session_id: Any) -> Path:
        raise RemoteError(f"the job folder is on {self.host.label}; use log_bytes/read_log")

    def log_files(self, session_id: Any) -> list[Path]:
        return []

    def __getattr__(self, name: str) -> Any:
        if name.startswith("_"):
            raise AttributeError(name)
        return lambda *args, **kwargs: self._call(name, args, kwargs)
