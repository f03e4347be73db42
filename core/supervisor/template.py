"""The warm supervisor template of a state home: a fork server, so a spawn costs a fork, not a
new Python interpreter.

Server: `python -I -S template.py HOME LOCKFD IDLE CODE REAP [PATH]` (CODE: the fingerprint of
the code it runs, see `fingerprint`; REAP: `reap` when it must collect exits, see below, else
`-`; PATH: where ptyprocess is), started by the first registry that
needs it (`start`), holding an exclusive flock on `<home>/template-CODE.lock` for its whole life
(so exactly one runs per home and code, and a socket nobody holds the lock for is stale). It
imports what a supervisor needs (supervisor.py, supervisor_loop.py and what they load, and
ptyprocess), moves that heap out of the cyclic GC (`gc.freeze`, so the forked supervisors keep
sharing its pages) and serves `<home>/template-CODE.sock` (0600). It exits after IDLE seconds
without a request, as soon as its socket is removed or replaced, or when its code on disk
changes (an upgrade: it would fork supervisors of code no longer installed). Where pid 1
does not collect the exits of orphans (a container's `sleep infinity`: core/supervisor/reaper.py) it is
their subreaper instead and stays: it leaves only for an upgrade, and then not before the
processes it adopted have ended.

One request per connection, from the same user only (SO_PEERCRED): a 4-byte length, then a JSON
object {"args": supervisor.main's argv, "env": {...}, "umask": N, "limits": {...}}, with the
write end of the caller's report pipe attached (SCM_RIGHTS). The template forks; the child forks
again and the grandchild (reparented away from the template, in its own session, with the
request's env, umask, resource limits and nice value and nothing else of the template's fds)
writes `forked PID` on the connection and runs `supervisor.main(args)`, which starts the job and
writes its usual report line on the pipe. The template never runs job code and no job depends on
it: kill it and every job keeps running. One such grandchild is forked in advance (a spare,
`hp-spare`): it waits on the socket and takes the next request itself, so a warm spawn costs no
fork; the template then forks the next one.

Client (`spawn`): returns the supervisor's report line, or None when no template took the
request (none running for this code, stale socket, wrong owner or mode, no acknowledgement
within ANSWER_WAIT: a stopped template, which is then retired): nothing was started then, and
the caller starts the supervisor cold.
"""

from __future__ import annotations

import array
import json
import os
import select
import socket
import stat
import struct
import sys
import time
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # only for annotations: subprocess is imported where a template starts
    import subprocess
    from types import ModuleType
    from typing import Protocol

    class SupervisorModule(Protocol):
        """core/supervisor/supervisor.py, as the template loads it (by plain name)."""

        LAUNCH: str
        JOB_ENV: dict[str, str] | None

        def main(self, args: list[str]) -> int: ...

DEFAULT_IDLE = 300.0
ANSWER_WAIT = 0.5  # seconds a template (or its spare) has to say `forked PID`; then the spawn goes cold
REPORT_TIMEOUT = 30.0  # seconds a forked supervisor has to report the job's start
CHECK_EVERY = 2.0  # seconds between a template's looks at its code on disk
START_WAIT = 5.0  # seconds a spawn that must go through a template waits for a new one to serve
MAX_REQUEST = 16 << 20
TEMPLATE_NAME = b"hp-template"  # process names (comm), see _name
SUPERVISOR_NAME = b"hp-supervisor"
SPARE_NAME = b"hp-spare"  # a supervisor forked in advance, waiting for the next spawn
SPARE_PAUSE = 1.0  # seconds without a spare after one died without taking a request
SPARE_STALL = 0.1  # seconds a connection may wait for the spare before the template takes it
# The modules of this folder a forked supervisor runs (the template imports them; a test checks
# that every module they import is listed): the fingerprint covers their source.
CODE = ("supervisor", "supervisor_loop", "supervisor_clients", "supervisor_kill", "supervisor_output",
        "supervisor_state", "supervisor_stdin", "supervisor_watch", "supervisor_lease", "idle_events", "stats",
        "proctree", "text", "timeline", "linecounts", "wire", "bounds", "template", "reaper")
_HERE = os.path.dirname(os.path.abspath(__file__))


_PTY_PATH: str | None = None


def pty_path() -> str:
    """The folder holding the ptyprocess package ("" when it is missing): supervisors and the
    template run as `python -I -S`, without site-packages, and put it on their path."""
    global _PTY_PATH
    if _PTY_PATH is None:
        import importlib.util

        spec = importlib.util.find_spec("ptyprocess")
        origin = spec.origin if spec is not None else None
        _PTY_PATH = os.path.dirname(os.path.dirname(origin)) if origin else ""
    return _PTY_PATH


_FINGERPRINT: tuple[tuple[Any, ...], str] | None = None
_CODE_FILES = [os.path.join(_HERE, f"{name}.py") for name in CODE]
_PTY_FILES: dict[str, tuple[tuple[int, int, int, int] | None, list[str]]] = {}


def fingerprint(path: str | None = None) -> str:
    """16 hex digits naming the code a supervisor forked by a template runs: this interpreter
    (its path and the file behind it), the ptyprocess folder (`path`, default `pty_path()`) and
    the source of its modules, and the source of every module of CODE. A spawn uses only a
    template of its own fingerprint, and a template leaves when its own changes. The sources
    are read again only when a file's stat changes: a call costs about 25 stats (~60 us)."""
    global _FINGERPRINT
    pty = pty_path() if path is None else path
    files = _CODE_FILES + _pty_files(pty)
    python = os.path.realpath(sys.executable)  # venv/bin/python and python3 are the same interpreter
    key = (python, pty, files, [_stat_key(f) for f in [python, *files]])
    if _FINGERPRINT is not None and _FINGERPRINT[0] == key:
        return _FINGERPRINT[1]
    import hashlib  # here: the registry imports this module, and a one-shot query never spawns

    digest = hashlib.sha256(repr((python, pty, key[3][0])).encode())
    for name in files:
        digest.update(b"\0%s\0" % os.path.basename(name).encode())
        try:
            with open(name, "rb") as fh:
                digest.update(fh.read())
        except OSError:
            digest.update(b"missing")
    _FINGERPRINT = (key, digest.hexdigest()[:16])
    return _FINGERPRINT[1]


def _pty_files(path: str) -> list[str]:
    """The ptyprocess package's modules in `path` (none without one), listed again only when
    its folder changes."""
    if not path:
        return []
    folder = os.path.join(path, "ptyprocess")
    seen = _stat_key(folder)
    known = _PTY_FILES.get(folder)
    if known is None or known[0] != seen:
        try:
            names = sorted(os.path.join(folder, n) for n in os.listdir(folder) if n.endswith(".py"))
        except OSError:
            names = []
        known = _PTY_FILES[folder] = (seen, names)
    return known[1]


def _stat_key(path: str) -> tuple[int, int, int, int] | None:
    try:
        st = os.stat(path)
    except OSError:
        return None
    return st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns


def sock_name(code: str | None = None) -> str:
    """The socket (in the home) of the template running `code` (default: the installed code)."""
    return f"template-{code or fingerprint()}.sock"


def lock_name(code: str | None = None) -> str:
    return f"template-{code or fingerprint()}.lock"


# ---- client (the registry) -----------------------------------------------------------------
def spawn(home: str | os.PathLike[str], args: list[str], env: dict[str, str], umask: int) -> bytes | None:
    """Have the home's template of the installed code start a supervisor with `args`; its report
    line, or None when no template could take the request (then nothing was started). A
    template that does not answer within ANSWER_WAIT (stopped, stuck) is retired: its socket
    and lock are removed, so the next spawn starts a new one."""
    code = fingerprint()
    found = _connect(home, code)
    if found is None:
        return None
    sock, ident = found
    with sock:
        report_r, report_w = os.pipe2(os.O_CLOEXEC)
        try:
            request = {"args": args, "env": env, "umask": umask, "limits": caller_limits()}
            data = json.dumps(request).encode()
            data = struct.pack("!I", len(data)) + data
            fds = array.array("i", [report_w])
            sent = sock.sendmsg([data], [(socket.SOL_SOCKET, socket.SCM_RIGHTS, fds)])
            if sent < len(data):  # never an empty send: the supervisor may have closed it already
                sock.sendall(data[sent:])
        except OSError:
            os.close(report_r)
            return None
        finally:
            os.close(report_w)
        with os.fdopen(report_r, "rb") as pipe:
            answer = _answer(sock)
            if answer is None:
                _retire(home, code, ident)
            if not answer:
                return None
            return pipe.readline() if select.select([pipe], [], [], REPORT_TIMEOUT)[0] else b""


def _answer(sock: socket.socket) -> bool | None:
    """True when a supervisor was forked for the request (it says `forked PID` on the
    connection before it starts the job), False when the request was refused, None when no
    answer came within ANSWER_WAIT.

    A supervisor can no longer acknowledge once the connection is shut: so a caller that gives
    up waiting shuts it first, and a supervisor forked after that exits without starting
    anything; one that answered just before is still counted."""
    got = _read_answer(sock, ANSWER_WAIT)
    if got is None:
        try:
            sock.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass
        got = _read_answer(sock, 0.0) or b""
        if not got.startswith(b"forked "):
            return None
    return got.startswith(b"forked ")


def _read_answer(sock: socket.socket, wait: float) -> bytes | None:
    """The connection's line (b"" when it closed without one); None if it did not come in time."""
    deadline = time.monotonic() + wait
    got = b""
    while not got.endswith(b"\n"):
        if not select.select([sock], [], [], max(0.0, deadline - time.monotonic()))[0]:
            return None
        try:
            chunk = sock.recv(64)
        except OSError:
            chunk = b""
        if not chunk:
            break
        got += chunk
    return got


def _retire(home: str | os.PathLike[str], code: str, ident: int) -> None:
    """Remove the socket (if it is still the one of inode `ident`) and the lock of a template
    that did not answer: a new one can start, and the old one leaves if it ever runs again."""
    sock = os.path.join(os.fspath(home), sock_name(code))
    try:
        if os.lstat(sock).st_ino != ident:
            return  # already replaced by a new template
        os.unlink(sock)
        os.unlink(os.path.join(os.fspath(home), lock_name(code)))
    except OSError:
        pass


def _connect(home: str | os.PathLike[str], code: str) -> tuple[socket.socket, int] | None:
    """A connection to a template of this user running `code`, and its socket's inode; None
    when there is none (no socket, stale, foreign, too open)."""
    path = os.path.join(os.fspath(home), sock_name(code))
    try:
        st = os.lstat(path)
    except OSError:
        return None
    if not stat.S_ISSOCK(st.st_mode) or st.st_uid != os.getuid() or st.st_mode & 0o077:
        return None
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM | socket.SOCK_CLOEXEC)
    dirfd = None
    try:
        if len(path.encode()) >= 100:  # sun_path holds 108 bytes: go through the folder's fd
            dirfd = os.open(os.fspath(home), os.O_PATH | os.O_DIRECTORY)
            path = f"/proc/self/fd/{dirfd}/{sock_name(code)}"
        sock.connect(path)
        _pid, uid, _gid = struct.unpack("3i", sock.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, 12))
        if uid != os.getuid():
            raise PermissionError("the template socket is served by another user")
        return sock, st.st_ino
    except OSError:
        sock.close()
        return None
    finally:
        if dirfd is not None:
            os.close(dirfd)


def start(home: str | os.PathLike[str], idle: float, log_path: str | os.PathLike[str],
          ) -> subprocess.Popen[bytes] | None:
    """Start the home's template of the installed code unless one runs or is starting (its lock
    is held); the caller reaps the returned process. The lock is taken here and handed to the
    template, so several registries racing to start one start exactly one. Leftovers of
    templates gone (of this or other code) are removed first."""
    import fcntl
    import subprocess

    from . import reaper

    code = fingerprint()
    fd = os.open(os.path.join(os.fspath(home), lock_name(code)), os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            return None
        _remove_stale(os.fspath(home), fcntl)
        with open(os.open(log_path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600), "ab") as log:
            return subprocess.Popen([sys.executable, "-I", "-S", __file__, os.fspath(home), str(fd), repr(idle),
                                     code, "reap" if reaper.needed() else "-", pty_path()],
                                    stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=log,
                                    pass_fds=(fd,), start_new_session=True, env={})
    finally:
        os.close(fd)


def start_and_spawn(home: str | os.PathLike[str], idle: float, log_path: str | os.PathLike[str], args: list[str],
                    env: dict[str, str], umask: int) -> tuple[subprocess.Popen[bytes] | None, bytes | None]:
    """Start the home's template (unless one is starting) and spawn through it as soon as it
    serves: where pid 1 collects no exits (core/supervisor/reaper.py), a supervisor started cold would
    end as a zombie. (The template's process when started here, the report line or None.)"""
    started = start(home, idle, log_path)
    deadline = time.monotonic() + START_WAIT
    while True:
        line = spawn(home, args, env, umask)
        if line is not None or time.monotonic() > deadline or (started is not None and started.poll() is not None):
            return started, line
        time.sleep(0.01)


def _remove_stale(home: str, fcntl: ModuleType) -> None:
    """Remove the socket and lock of every template of this home that is gone (nobody holds its
    lock; the one of this code is held by the caller): killed ones, older versions' ones."""
    for name in os.listdir(home):
        if not (name.startswith("template") and name.endswith(".lock")):
            continue
        try:
            fd = os.open(os.path.join(home, name), os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
        except OSError:
            continue
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            os.close(fd)  # held: that template runs (or it is ours)
            continue
        for stale in (name[:-len(".lock")] + ".sock", name):
            try:
                os.unlink(os.path.join(home, stale))
            except OSError:
                pass
        os.close(fd)


_RLIMITS: list[int] = []


def caller_limits() -> dict[str, Any]:
    """What a supervisor started cold inherits from its caller, and one forked by the template
    takes from the request: resource limits and nice value."""
    import resource

    if not _RLIMITS:
        _RLIMITS.extend(sorted({getattr(resource, n) for n in dir(resource) if n.startswith("RLIMIT_")}))
    return {"rlimits": [[which, *resource.getrlimit(which)] for which in _RLIMITS],
            "nice": os.getpriority(os.PRIO_PROCESS, 0)}


# ---- server (the template process) ---------------------------------------------------------
def serve(home: str, lock_fd: int, idle: float, code: str, reap: bool = False, path: str = "") -> int:
    """Serve spawn requests of `code` (the fingerprint the starter saw) until IDLE seconds pass
    without one, the socket is gone or the code on disk is no longer `code`. `reap` (the
    starter's reaper.needed()): be the subreaper of what it forks, collect their exits, and
    never leave for idleness.

    One spare supervisor waits ready (forked, detached, in its own session) and takes the next
    request itself, so a spawn costs no fork of the template; as soon as it takes one, the
    template forks the next spare. Without a spare (none could be started, or the last died
    without a request: then none for SPARE_PAUSE seconds), or when a connection has waited
    SPARE_STALL seconds for it (a stopped spare), the template serves a request by forking."""
    import ctypes
    import gc
    import resource  # noqa: F401 - each forked supervisor takes the caller's limits with it

    import reaper
    import supervisor
    import supervisor_loop  # noqa: F401 - loaded here so every forked supervisor shares it
    import text  # noqa: F401
    import wire

    if path:
        sys.path.append(path)
        try:
            import ptyprocess  # noqa: F401 - what a PTY job's supervisor starts it with
        except ImportError:
            pass
    if fingerprint(path) != code:  # changed since the starter looked: what was imported may be either
        return 0

    _name(ctypes, TEMPLATE_NAME)
    os.chdir(home)
    listener = wire.listen(sock_name(code), 128)
    listener.setblocking(False)  # the spare and the template both accept on it: never block
    reaping = reap and reaper.become_subreaper(ctypes)
    server = _Server(listener, lock_fd, idle, supervisor, (code, path), reaper if reaping else None)
    gc.collect()
    gc.freeze()
    while server.step():
        pass
    server.leave()
    if reaping:  # what it adopted would be nobody's to collect: wait for the last of them
        reaper.reap_all()
    return 0


class _Server:
    """The template's loop: the listener, the current spare (the read end of its pipe, -1 for
    none) and the times that decide when to fork a spare, bypass one, or leave."""

    def __init__(self, listener: socket.socket, lock_fd: int, idle: float, supervisor: SupervisorModule,
                 code: tuple[str, str], reaper: ModuleType | None = None) -> None:
        self.listener, self.lock_fd, self.idle, self.supervisor = listener, lock_fd, idle, supervisor
        self.code, self.path = code
        self.reaper = reaper  # core/supervisor/reaper.py when it is the subreaper of what it forks: never idles out
        self.sock = sock_name(self.code)
        self.ident = os.stat(self.sock).st_ino
        self.next_check = time.monotonic() + CHECK_EVERY
        self.alive_r, self.alive_w = os.pipe2(os.O_CLOEXEC)  # ends when the template goes: spares leave
        self.spare = -1
        self.no_spare_until = 0.0
        self.pending: float | None = None  # since when a connection waits that the spare has not taken
        self.last = time.monotonic()

    def step(self) -> bool:
        """Wait for the next thing to do and do it; False when the template should leave."""
        if self.reaper is not None:
            self.reaper.reap()
        if time.monotonic() >= self.next_check:
            self.next_check = time.monotonic() + CHECK_EVERY
            if fingerprint(self.path) != self.code:  # upgraded: its supervisors would run old code
                return False
        if self.spare < 0 and time.monotonic() >= self.no_spare_until:
            self.spare = _start_spare(self.listener, self.alive_r, (self.lock_fd, self.alive_w), self.supervisor)
        ready = select.select(*self._watch())[0]
        if self.spare >= 0 and self.spare in ready:  # it took a request (a byte), or died (end of file)
            self._spare_gone()
        elif self.spare < 0 and ready:
            self._serve()
        elif ready or self.pending:
            self._waiting()
        else:
            idle = self.reaper is None and time.monotonic() - self.last >= self.idle
            return not (_replaced(self.sock, self.ident) or idle)
        return True

    def leave(self) -> None:
        """Remove the socket and the lock, unless a newer template's have replaced them, and
        stop serving (a spare leaves too)."""
        for name, ident in ((self.sock, self.ident), (lock_name(self.code), os.fstat(self.lock_fd).st_ino)):
            if not _replaced(name, ident):
                os.unlink(name)
        self.listener.close()
        os.close(self.lock_fd)
        os.close(self.alive_w)

    def _watch(self) -> tuple[list[Any], list[Any], list[Any], float]:
        """What to select on: the listener when there is no spare; the spare's pipe, and the
        listener unless a connection already waits (then look again soon)."""
        if self.spare < 0:
            return [self.listener], [], [], min(self.idle, CHECK_EVERY)
        if self.pending:
            return [self.spare], [], [], SPARE_STALL / 5
        return [self.spare, self.listener], [], [], min(self.idle, CHECK_EVERY)

    def _spare_gone(self) -> None:
        if not _read_byte(self.spare):  # it died without a request: serve directly for a while
            self.no_spare_until = time.monotonic() + SPARE_PAUSE
        os.close(self.spare)
        self.spare, self.pending, self.last = -1, None, time.monotonic()

    def _waiting(self) -> None:
        """A connection the spare should take at once: one it leaves waiting (stopped) is served
        here after SPARE_STALL seconds."""
        self.pending = self.pending or time.monotonic()
        if time.monotonic() - self.pending >= SPARE_STALL:
            self._serve()  # accepts nothing if the spare took it meanwhile

    def _serve(self) -> None:
        _serve_one(self.listener, self.supervisor, (self.lock_fd, self.alive_w))
        self.pending, self.last = None, time.monotonic()


def _close(fds: tuple[int, ...]) -> None:
    for fd in fds:
        os.close(fd)


def _read_byte(fd: int) -> bytes:
    try:
        return os.read(fd, 1)
    except OSError:
        return b""


def _name(ctypes: ModuleType, name: bytes) -> None:
    """The process name ps and top show (comm): the template and its supervisors are forks of one
    `python template.py HOME` command line, so this is what tells them apart."""
    try:
        ctypes.CDLL(None).prctl(15, ctypes.c_char_p(name), 0, 0, 0)  # PR_SET_NAME
    except (OSError, AttributeError):
        pass


def _replaced(name: str, ident: int) -> bool:
    """True when `name` (in the home) is no longer the file of inode `ident`."""
    try:
        return os.lstat(name).st_ino != ident
    except OSError:
        return True


def _start_spare(listener: socket.socket, alive_r: int, drop: tuple[int, ...], supervisor: SupervisorModule) -> int:
    """Fork the next spare supervisor; the read end of a pipe on which it says (a byte) that it
    took a request, or ends (it died). -1 when no process could be made."""
    taken_r, taken_w = os.pipe2(os.O_CLOEXEC)
    try:
        pid = os.fork()
    except OSError:
        os.close(taken_r)
        os.close(taken_w)
        return -1
    if pid == 0:
        _be_spare(listener, taken_w, alive_r, (*drop, taken_r), supervisor)
    os.close(taken_w)
    os.waitpid(pid, 0)  # the intermediate child exits as soon as it has forked
    return taken_r


def _be_spare(listener: socket.socket, taken_w: int, alive_r: int, drop: tuple[int, ...],
              supervisor: SupervisorModule) -> None:
    """In the forked child: detach now, wait for one request, then serve it as a supervisor. It
    never holds the home's lock, and leaves as soon as the template does (its `alive` pipe ends:
    so no descendant of the template may keep the write end open, or a spare would serve
    requests after its template was killed)."""
    code = 0
    try:
        _close(drop)  # before the second fork: once the template dies, no process holds alive_w
        _detach(SPARE_NAME)
        conn = _accept_one(listener, alive_r)
        if conn is not None:
            os.write(taken_w, b"x")
            request, report_fd = _take(conn)
            if request is not None:
                code = _run(conn, report_fd, request, supervisor)
    except BaseException as exc:  # noqa: BLE001 - the child must never return into the template
        code = 1
        _complain(f"hermes-procs template spare: {exc!r}")
    os._exit(code)


def _accept_one(listener: socket.socket, alive_r: int) -> socket.socket | None:
    """The next connection; None once the template has gone (or accepting fails)."""
    while True:
        watched: list[socket.socket | int] = [listener, alive_r]
        ready, _, _ = select.select(watched, [], [])
        if alive_r in ready:
            return None
        try:
            return listener.accept()[0]
        except (BlockingIOError, InterruptedError):  # the template, or a dying spare, took it
            continue
        except OSError:
            return None


def _serve_one(listener: socket.socket, supervisor: SupervisorModule, drop: tuple[int, ...]) -> None:
    """No spare is ready: take the request here and fork a supervisor for it (which closes the
    template's fds `drop` first)."""
    try:
        conn, _ = listener.accept()
    except OSError:
        return
    report_fd = -1
    try:
        request, report_fd = _take(conn)
        if request is None:
            return
        pid = os.fork()
        if pid == 0:
            _become_supervisor(conn, report_fd, request, supervisor, drop)
        os.waitpid(pid, 0)  # the intermediate child exits as soon as it has forked
    except Exception as exc:  # noqa: BLE001 - one bad request must not end the template
        _complain(f"hermes-procs template: {exc!r}")
    finally:
        conn.close()
        if report_fd >= 0:
            os.close(report_fd)


def _take(conn: socket.socket) -> tuple[dict[str, Any] | None, int]:
    """The request of a connection from this user (see _read_request); None from another."""
    conn.settimeout(5.0)
    _pid, uid, _gid = struct.unpack("3i", conn.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, 12))
    if uid != os.getuid():
        return None, -1
    return _read_request(conn)


def _read_request(conn: socket.socket) -> tuple[dict[str, Any] | None, int]:
    """The request and the report pipe's fd; (None, fd or -1) when it is not well-formed."""
    fds = array.array("i")
    data, ancdata, _flags, _addr = conn.recvmsg(1 << 16, socket.CMSG_LEN(fds.itemsize))
    for level, kind, payload in ancdata:
        if level == socket.SOL_SOCKET and kind == socket.SCM_RIGHTS:
            fds.frombytes(payload[:len(payload) - len(payload) % fds.itemsize])
    report_fd = fds[0] if len(fds) == 1 else -1
    for extra in fds[1:]:
        os.close(extra)
    if report_fd < 0 or len(data) < 4:
        return None, report_fd
    size = struct.unpack("!I", data[:4])[0]
    if size > MAX_REQUEST:
        return None, report_fd
    body = bytearray(data[4:])
    while len(body) < size:
        chunk = conn.recv(min(1 << 20, size - len(body)))
        if not chunk:
            return None, report_fd
        body += chunk
    request = json.loads(body)
    return (request if _well_formed(request) else None), report_fd


def _well_formed(request: Any) -> bool:
    """{"args": [str, ...], "env": {str: str}, "umask": int, "limits": {"rlimits": [[int, int,
    int], ...], "nice": int}}"""
    if not isinstance(request, dict):
        return False
    args, env, limits = request.get("args"), request.get("env"), request.get("limits")
    return (isinstance(args, list) and all(isinstance(a, str) for a in args) and isinstance(env, dict)
            and all(isinstance(k, str) and isinstance(v, str) for k, v in env.items())
            and isinstance(request.get("umask"), int) and isinstance(limits, dict)
            and isinstance(limits.get("nice"), int) and isinstance(limits.get("rlimits"), list)
            and all(isinstance(r, list) and len(r) == 3 and all(type(n) is int for n in r)
                    for r in limits["rlimits"]))


def _become_supervisor(conn: socket.socket, report_fd: int, request: dict[str, Any],
                       supervisor: SupervisorModule, drop: tuple[int, ...]) -> None:
    """In the forked child: close the template's fds `drop`, detach, then run the supervisor
    for the request."""
    code = 1
    try:
        _close(drop)
        _detach(SUPERVISOR_NAME)
        code = _run(conn, report_fd, request, supervisor)
    except BaseException as exc:  # noqa: BLE001 - the child must never return into the template
        _complain(f"hermes-procs template child: {exc!r}")
    os._exit(code)


def _detach(name: bytes) -> None:
    """Fork again and go on in the grandchild, reparented away from the template, in a session
    of its own."""
    if os.fork():
        os._exit(0)
    _name(sys.modules["ctypes"], name)  # first: only the template leads a session as hp-template
    os.setsid()


def _run(conn: socket.socket, report_fd: int, request: dict[str, Any], supervisor: SupervisorModule) -> int:
    """Take the request's env, umask, limits and nice value, nothing of the template's fds, and
    run the supervisor."""
    _name(sys.modules["ctypes"], SUPERVISOR_NAME)
    try:
        _take_limits(request["limits"])
    except (OSError, ValueError):  # not allowed here: no acknowledgement, the caller starts it cold
        return 1
    os.dup2(report_fd, 1)
    os.dup2(os.open(os.devnull, os.O_RDONLY), 0)
    jobdir = request["args"][0]
    os.dup2(os.open(os.path.join(jobdir, "supervisor.log"), os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600), 2)
    conn.sendall(b"forked %d\n" % os.getpid())  # fails (and nothing starts) if the caller gave up
    os.closerange(3, 65536)  # the listener, the lock, this connection: nothing of the template
    os.chdir("/")
    os.umask(request["umask"] & 0o777)
    supervisor.JOB_ENV = request["env"]  # the template's own environment is empty
    supervisor.LAUNCH = "template"
    return supervisor.main(request["args"])


def _take_limits(limits: dict[str, Any]) -> None:
    """The caller's resource limits and nice value, where they differ from the template's (the
    registry that started it): a job gets its caller's, as when started cold. Raising a hard
    limit or lowering nice needs privileges: OSError or ValueError then."""
    import resource

    for which, soft, hard in limits["rlimits"]:
        if resource.getrlimit(which) != (soft, hard):
            resource.setrlimit(which, (soft, hard))
    if os.getpriority(os.PRIO_PROCESS, 0) != limits["nice"]:
        os.setpriority(os.PRIO_PROCESS, 0, limits["nice"])


def _complain(line: str) -> None:
    try:
        os.write(2, f"{line}\n".encode())
    except OSError:
        pass


if __name__ == "__main__":
    sys.path.append(os.path.dirname(os.path.abspath(__file__)))
    sys.exit(serve(sys.argv[1], int(sys.argv[2]), float(sys.argv[3]), sys.argv[4], sys.argv[5] == "reap",
                   *sys.argv[6:7]))
