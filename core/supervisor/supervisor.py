"""The per-job supervisor: owns the job's PTY or pipes, writes its output and exit to disk.

Run as `python -I -S supervisor.py JOBDIR PTY ROWS COLS CWD [PATH] -- ARGV...` by the registry,
in its own session. It starts the job first (only os and fcntl are loaded by then, and
ptyprocess for a PTY job), prints `{"pid": N, ...}` or `{"error": "..."}` on stdout for
the registry, then serves the socket protocol of docs/internals.md until the job has exited and
its output is closed. Stdlib only, apart from ptyprocess for PTY jobs (pure Python, found in
PATH: the folder that holds it, given by the registry, which also ships it to remote hosts).
"""

from __future__ import annotations

import errno
import fcntl
import os
import sys

TYPE_CHECKING = False  # a type checker takes it as true; the supervisor does not load typing
if TYPE_CHECKING:
    from collections.abc import Mapping

PIPE_SIZE = 1 << 20
LAUNCH = "cold"  # "template" when forked by the home's warm template (core/supervisor/template.py)
# The job's environment when it is not this process's own (a supervisor forked by the template
# gets it with the request: rewriting os.environ there cost ~0.7 ms of every spawn)
JOB_ENV: dict[str, str] | None = None


class StartFailed(Exception):
    """The job could not be started (its exec or chdir failed); the message says why."""


def start_child(pty: bool, rows: int, cols: int, cwd: str, argv: list[str], umask: int) -> tuple[int, int, int]:
    """Fork and exec the job in its own session; return (pid, out_fd, in_fd).

    Raises OSError (no PTY, no fork) or StartFailed: a failed exec (or chdir) is reported back,
    so "cannot run X" is an error of the spawn, not output of a job that never ran."""
    env = os.environ if JOB_ENV is None else JOB_ENV
    exe = _which(argv[0], env.get("PATH", os.defpath), cwd)
    if pty:
        pid, master = _start_pty(rows, cols, cwd, [exe, *argv[1:]], umask, env)
        return pid, master, master
    out_r, out_w = os.pipe()
    in_r, in_w = os.pipe()
    try:
        fcntl.fcntl(out_w, 1031, PIPE_SIZE)  # F_SETPIPE_SZ: fewer, larger reads; the job blocks less
    except OSError:
        pass
    try:
        pid = _spawn_pipe_job((in_r, out_w, out_w), cwd, exe, argv, umask, env)
    except BaseException:
        for fd in (out_r, in_w):
            os.close(fd)
        raise
    finally:
        for fd in (in_r, out_w):
            os.close(fd)
    return pid, out_r, in_w


def _which(name: str, path: str, cwd: str) -> str:
    """The program `name` runs, looked up in the job's PATH as execvp would (a relative entry
    from the job's working directory); StartFailed when there is none."""
    if "/" in name:
        return name
    for folder in path.split(os.pathsep):
        candidate = os.path.join(cwd, folder or ".", name)
        if os.access(candidate, os.X_OK) and not os.path.isdir(candidate):
            return candidate
    raise StartFailed(f"cannot run {name}: No such file or directory")


def _spawn_pipe_job(fds: tuple[int, int, int], cwd: str, exe: str, argv: list[str], umask: int,
                    env: Mapping[str, str]) -> int:
    """posix_spawn (a vfork: no copy of the supervisor's memory, ~3x faster than fork + exec)
    the job in its own session with `fds` as its stdin/stdout/stderr and default signals. It has
    no chdir or umask: the supervisor takes the job's for the call (it has one thread). Every
    other fd of the supervisor is close-on-exec (Python's default; the template and the
    registry start it with none inherited). A failed exec is an error of this call."""
    here = os.open(".", os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    old_umask = os.umask(umask)
    try:
        try:
            os.chdir(cwd)
        except OSError as exc:
            raise StartFailed(f"cannot change to directory {cwd}: {exc.strerror}") from None
        try:
            return os.posix_spawn(exe, argv, env, setsid=True,
                                   file_actions=[(os.POSIX_SPAWN_DUP2, fd, target) for target, fd in enumerate(fds)],
                                   setsigdef=_job_default_signals())
        except OSError as exc:
            if exc.errno in (errno.EAGAIN, errno.ENOMEM):
                raise  # no process could be made: "cannot fork"
            raise StartFailed(f"cannot run {argv[0]}: {exc.strerror}") from None
    finally:
        os.umask(old_umask)
        os.fchdir(here)
        os.close(here)


def _start_pty(rows: int, cols: int, cwd: str, argv: list[str], umask: int,
               env: Mapping[str, str]) -> tuple[int, int]:
    """A PTY job through ptyprocess (its own session with the PTY as controlling terminal, the
    window size, exec failures reported back); returns (pid, master fd)."""
    try:
        from ptyprocess import PtyProcess
    except ImportError:
        raise StartFailed("cannot start a PTY job: the ptyprocess package is missing") from None

    def before_exec() -> None:
        os.umask(umask)
        _default_signals()
        try:
            os.chdir(cwd)
        except OSError as exc:  # ptyprocess sends the message of any exception raised here
            raise RuntimeError(f"cannot change to directory {cwd}: {exc.strerror}") from None

    try:
        job = PtyProcess.spawn(argv, env=dict(env), preexec_fn=before_exec, dimensions=(rows, cols))
    except RuntimeError as exc:
        raise StartFailed(str(exc)) from None
    except OSError as exc:
        if exc.strerror is not None:
            raise  # openpty or fork failed (OSError from the OS); the child's report has no strerror
        reason = os.strerror(exc.errno) if exc.errno else "No such file or directory"  # errno: exec's
        raise StartFailed(f"cannot run {argv[0]}: {reason}") from None
    master = os.dup(job.fd)  # ours now: the PtyProcess must neither close it nor kill the job
    job.closed = True  # (its __del__ and close() terminate the child)
    job.fileobj.close()
    return job.pid, master


def _job_default_signals() -> tuple[int, ...]:
    """What the supervisor (and Python) ignore or catch, which the job gets back at their defaults."""
    import signal

    return (signal.SIGPIPE, signal.SIGXFSZ, signal.SIGINT, signal.SIGTERM, signal.SIGCHLD)


def _default_signals() -> None:
    """In a forked child (a PTY job's preexec_fn): the signals of _job_default_signals to default."""
    import signal

    for sig in _job_default_signals():
        signal.signal(sig, signal.SIG_DFL)


def main(args: list[str]) -> int:
    jobdir, pty, rows, cols, cwd = args[0], args[1] == "1", int(args[2]), int(args[3]), args[4]
    end = args.index("--")
    argv = args[end + 1:]
    if end > 5 and args[5] not in sys.path:  # where ptyprocess is
        sys.path.append(args[5])
    umask = os.umask(0o077)  # everything the supervisor writes is private; the job gets the old umask
    _set_subreaper()
    try:
        pid, out_fd, in_fd = start_child(pty, rows, cols, cwd, argv, umask)
    except (OSError, ValueError, StartFailed) as exc:  # ValueError: an env the OS refuses (NUL, "=")
        _report('{"error": %s}' % _quote(_describe(exc)))
        return 1
    ticks = _start_ticks(pid)
    me = os.getpid()
    proc = ('{"pid": %d, "pid_start": %d, "supervisor_pid": %d, "supervisor_start": %d, '
            '"started_at": %r, "launch": "%s", "pidns": %d}' % (pid, ticks, me, _start_ticks(me), _now(), LAUNCH,
                                                                 pid_namespace()))
    try:
        _write_atomic(os.path.join(jobdir, "proc.json"), proc)
    except OSError as exc:  # e.g. the disk is full: a job nobody can find must not run on
        os.killpg(pid, 9)
        os.waitpid(pid, 0)
        _report('{"error": %s}' % _quote(f"cannot write proc.json: {exc.strerror}"))
        return 1
    _report(proc)
    from supervisor_loop import Supervisor  # loaded only after the job runs

    return Supervisor(jobdir, pid, ticks, out_fd, in_fd, pty).run()


def _set_subreaper() -> None:
    """Orphans of the job are re-parented to us, so the whole tree stays findable and reaped."""
    try:
        import ctypes

        ctypes.CDLL(None, use_errno=True).prctl(36, 1, 0, 0, 0)  # PR_SET_CHILD_SUBREAPER
    except (OSError, AttributeError):
        pass


def pid_namespace() -> int:
    """The inode of this process's pid namespace (0 where /proc does not say): a pid means
    something only to a reader in the same one."""
    try:
        return os.stat("/proc/self/ns/pid").st_ino
    except OSError:
        return 0


def _start_ticks(pid: int) -> int:
    with open(f"/proc/{pid}/stat", "rb") as fh:
        raw = fh.read()
    return int(raw[raw.rfind(b")") + 2:].split()[19])


def _now() -> float:
    import time

    return time.time()


def _describe(exc: BaseException) -> str:
    if isinstance(exc, BlockingIOError):
        return f"cannot fork: {exc.strerror} (too many processes?)"
    return exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)


def _quote(text: str) -> str:
    text = "".join(c if c >= " " else " " for c in text)
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


def _write_atomic(path: str, text: str) -> None:
    tmp = path + ".tmp"
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    try:
        data = text.encode()
        if os.write(fd, data) != len(data):
            raise OSError(28, "No space left on device")
    except OSError:
        os.close(fd)
        os.unlink(tmp)
        raise
    os.close(fd)
    os.rename(tmp, path)


def _report(line: str) -> None:
    """Tell the registry the outcome, then let go of its pipe (stdout) for good."""
    os.write(1, line.encode() + b"\n")
    devnull = os.open(os.devnull, os.O_RDWR)
    os.dup2(devnull, 0)
    os.dup2(devnull, 1)
    os.close(devnull)


if __name__ == "__main__":
    sys.path.append(os.path.dirname(os.path.abspath(__file__)))
    sys.exit(main(sys.argv[1:]))
