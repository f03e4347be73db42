"""The per-job supervisor: owns the job's PTY or pipes, writes its output and exit to disk.

Run as `python -I -S supervisor.py JOBDIR PTY ROWS COLS CWD -- ARGV...` by the registry, in its
own session. It starts the job first (only os, fcntl, termios and struct are loaded by then),
prints `{"pid": N, ...}` or `{"error": "..."}` on stdout for the registry, then serves the
socket protocol of docs/internals.md until the job has exited and its output is closed.
Stdlib only: it runs once per job.
"""

import os
import sys
import fcntl
import struct
import termios

PIPE_SIZE = 1 << 20


def start_child(pty: bool, rows: int, cols: int, cwd: str, argv: list, umask: int) -> tuple:
    """Fork and exec the job in its own session; return (pid, out_fd, in_fd) or raise OSError."""
    if pty:
        master, slave = os.openpty()
        fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", rows, cols, 0, 0))
        out_fd = in_fd = master
        child_fds = (slave, slave, slave)
    else:
        out_r, out_w = os.pipe()
        in_r, in_w = os.pipe()
        try:
            fcntl.fcntl(out_w, 1031, PIPE_SIZE)  # F_SETPIPE_SZ: fewer, larger reads; the job blocks less
        except OSError:
            pass
        out_fd, in_fd = out_r, in_w
        child_fds = (in_r, out_w, out_w)
    pid = os.fork()
    if pid == 0:
        os.umask(umask)
        _exec_child(pty, child_fds, cwd, argv)
    for fd in set(child_fds):
        os.close(fd)
    return pid, out_fd, in_fd


def _exec_child(pty: bool, fds: tuple, cwd: str, argv: list) -> None:
    """In the forked child: own session and terminal, default signals, then exec.

    The registry checked cwd and the shell beforehand; a failure here still reaches the job's
    output (its stderr) and ends it with status 127, as a shell would.
    """
    try:
        os.setsid()
        if pty:
            fcntl.ioctl(fds[0], termios.TIOCSCTTY, 0)
        for target, fd in enumerate(fds):
            os.dup2(fd, target)
        os.closerange(3, 65536)
        import signal
        for sig in (signal.SIGPIPE, signal.SIGXFSZ, signal.SIGINT, signal.SIGTERM, signal.SIGCHLD):
            signal.signal(sig, signal.SIG_DFL)
        os.chdir(cwd)
        os.execvp(argv[0], argv)
    except OSError as exc:
        what = f"cannot change to directory {cwd}" if exc.filename == cwd else f"cannot run {argv[0]}"
        os.write(2, f"hermes-procs: {what}: {exc.strerror}\n".encode())
    except BaseException as exc:  # noqa: BLE001 - the child must never return into the supervisor
        os.write(2, f"hermes-procs: {exc!r}\n".encode())
    os._exit(127)


def main(args: list) -> int:
    jobdir, pty, rows, cols, cwd = args[0], args[1] == "1", int(args[2]), int(args[3]), args[4]
    argv = args[args.index("--") + 1:]
    umask = os.umask(0o077)  # everything the supervisor writes is private; the job gets the old umask
    _set_subreaper()
    try:
        pid, out_fd, in_fd = start_child(pty, rows, cols, cwd, argv, umask)
    except OSError as exc:
        _report('{"error": %s}' % _quote(str(exc)))
        return 1
    ticks = _start_ticks(pid)
    me = os.getpid()
    proc = ('{"pid": %d, "pid_start": %d, "supervisor_pid": %d, "supervisor_start": %d, '
            '"started_at": %r}' % (pid, ticks, me, _start_ticks(me), _now()))
    _write_atomic(os.path.join(jobdir, "proc.json"), proc)
    _report(proc)
    from supervisor_loop import Supervisor  # noqa: E402 - loaded only after the job runs

    return Supervisor(jobdir, pid, ticks, out_fd, in_fd, pty).run()


def _set_subreaper() -> None:
    """Orphans of the job are re-parented to us, so the whole tree stays findable and reaped."""
    try:
        import ctypes

        ctypes.CDLL(None, use_errno=True).prctl(36, 1, 0, 0, 0)  # PR_SET_CHILD_SUBREAPER
    except (OSError, AttributeError):
        pass


def _start_ticks(pid: int) -> int:
    with open(f"/proc/{pid}/stat", "rb") as fh:
        raw = fh.read()
    return int(raw[raw.rfind(b")") + 2:].split()[19])


def _now() -> float:
    import time

    return time.time()


def _quote(text: str) -> str:
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"').replace("\n", " ") + '"'


def _write_atomic(path: str, text: str) -> None:
    tmp = path + ".tmp"
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    os.write(fd, text.encode())
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
