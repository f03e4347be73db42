"""Starting jobs: `spawn` (every argument checked, then the supervisor started through the
home's warm template or as a new interpreter; with `reuse` or `port`, what the job claims looked
for first, under the home's spawn lock) and `restart` (the same job again).

What starts a supervisor (the template's client, subprocess, shutil) is imported by the first
spawn, not with the registry: a CLI query never pays for it (issue 26, a CLI that starts like git)."""

from __future__ import annotations

import contextlib
import fcntl
import os
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from ..supervisor import proctree, reaper
from ..supervisor.bounds import MAX_SECONDS, seconds, terminal_size, whole
from . import leases, portguard
from .base import BadInput, _env_float, _safe
from .envnumbers import env_number
from .envsafe import child_env, shell_argv
from .housekeeping import Housekeeping
from .paths import new_session_id, open_nofollow, write_json_atomic

SUPERVISOR = str(Path(reaper.__file__).with_name("supervisor.py"))  # the program: core/supervisor/
MAX_WATCH_PATTERNS = 64
MAX_WATCH_CHARS = 1000
SPAWN_LOCK = "spawn.lock"  # held while a spawn with reuse or port looks for its claim and starts


class Spawning(Housekeeping):  # a spawn prunes now and then
    """spawn and restart."""

    # ---- spawn -------------------------------------------------------------------------
    @_safe
    def spawn(self, command: str, *, cwd: str | os.PathLike[str] | None = None, env: dict[str, str] | None = None,
              pty: bool = False, name: str | None = None, task_id: str = "", session_key: str = "",
              notify_on_complete: bool = False, watch_patterns: list[str] | None = None, rows: int = 30,
              cols: int = 120, max_runtime: float | None = None, quiet_after: float | None = None,
              rerun_of: str | None = None, shell: list[str] | None = None,
              environ: dict[str, str] | None = None, reuse: bool = False, port: int | None = None,
              lease: int | None = None, stack: str | None = None,
              restarts: int = 0) -> dict[str, Any]:
        """Start `command` as a durable job under its own supervisor (see docs/api.md for every argument;
        `quiet_after`: emit quiet events; `rerun_of`: set by restart). `shell`: the argv the command
        is appended to (default `bash -c` or $HERMES_PROCS_SHELL); `environ`: the job's whole
        environment, used as given (nothing filtered or added; `env` still applies on top) and
        not written to the job folder (the Hermes plugin passes the environment Hermes builds).
        `reuse`: a running job of the same `name` is returned (`reused: true`) instead;
        `port`: refused when TCP port `port` is in use (portguard.py), recorded for wait(until="port");
        `lease`: the job's tree is killed when process `lease` ends (leases.py), unless pinned.
        `stack`, `restarts`: set by a stack's supervisor (core/stacks/), shown by list and poll.

        Returns `running` with session_id, pid, command, pty, cwd, name; `error` when it cannot start."""
        self._auto_prune()  # before the new job exists: a job that ends at once is never pruned by its own spawn
        meta = self._spawn_meta(command, cwd, env, pty, name, task_id, session_key, notify_on_complete,
                                watch_patterns, rows, cols, max_runtime, shell)
        meta.update(_rerun_meta(env, quiet_after, rerun_of), **_claims(reuse, port, lease, name),
                    **_stack_meta(stack, restarts))
        if not reuse and port is None:
            return self._start_job(meta, env, environ)
        with _home_lock(self.home / SPAWN_LOCK):  # no second job of the name, or on the port, meanwhile
            rows_now = self.list()
            found = _running_named(rows_now if isinstance(rows_now, list) else [], meta["name"]) if reuse else None
            if found is not None:
                return {"status": "running", "session_id": found["session_id"], "pid": found["pid"],
                        "command": found["command"], "pty": found["pty"], "cwd": found["cwd"],
                        "name": found["name"], "port": found.get("port"), "reused": True}
            who = None if port is None else portguard.holder(rows_now if isinstance(rows_now, list) else [], port)
            if who is not None:
                raise BadInput(f"port {port} is in use by {who}; nothing was started")
            result = self._start_job(meta, env, environ)
        return {**result, "reused": False} if reuse and result["status"] == "running" else result

    def _start_job(self, meta: dict[str, Any], env: dict[str, str] | None,
                   environ: dict[str, str] | None) -> dict[str, Any]:
        """Start the job `meta` describes (checked): its folder, its supervisor; spawn's result."""
        import shutil

        from ..supervisor import template

        command, pty, jobdir = meta["command"], meta["pty"], self.jobs_dir / meta["session_id"]
        argv = [sys.executable, "-I", "-S", SUPERVISOR, str(jobdir), "1" if pty else "0", str(meta["rows"]),
                str(meta["cols"]), meta["cwd"], *([template.pty_path()] if pty else []), "--", *meta["shell"],
                command]
        job_env = child_env(env, pty) if environ is None else _given_environ(environ, env)
        _exec_limits(argv, job_env)
        report: dict[str, Any] = {"error": "interrupted"}
        try:
            report = self._start_supervisor(meta, jobdir, argv, job_env)
        except OSError as exc:
            report = {"error": _os_error(exc)}
        finally:  # whatever happened, a job folder without a running job is not left behind
            if "error" in report:
                shutil.rmtree(jobdir, ignore_errors=True)
        if "error" in report:
            return {"status": "error", "error": f"Cannot start {_short_command(command)}: {report['error']}"}
        result = {"status": "running", "session_id": meta["session_id"], "pid": report["pid"],
                  "command": command, "pty": pty, "cwd": meta["cwd"], "name": meta["name"]}
        return {**result, "port": meta["port"]} if meta.get("port") else result

    def _start_supervisor(self, meta: dict[str, Any], jobdir: Path, argv: list[str],
                          env: dict[str, str]) -> dict[str, Any]:
        """Create the job folder (it appears with its meta.json: staged under .new-ID, renamed)
        and start the supervisor; its report line: {"pid": ...} or {"error": ...}."""
        import shutil

        staging = self.jobs_dir / f".new-{meta['session_id']}"
        try:
            staging.mkdir(mode=0o700)
            write_json_atomic(staging / "meta.json", meta)
            os.rename(staging, jobdir)
        finally:
            shutil.rmtree(staging, ignore_errors=True)  # gone after the rename; left on a failure
        return _parse_report(self._run_supervisor(jobdir, argv, env))

    def _run_supervisor(self, jobdir: Path, argv: list[str], env: dict[str, str]) -> bytes:
        """Start the job's supervisor and return its report line: forked by the home's warm
        template (core/supervisor/template.py) when one runs, else `argv` as a new interpreter (and a
        template is started for the next spawns)."""
        import subprocess

        from ..supervisor import template

        idle = template_idle()
        if idle:
            args = argv[argv.index(SUPERVISOR) + 1:]
            line = template.spawn(self.home, args, env, _umask())
            if line is None and reaper.needed():  # pid 1 would leave a cold supervisor's exit a zombie
                started, line = template.start_and_spawn(self.home, idle, self.home / "template.log", args, env,
                                                         _umask())
                if started is not None:
                    self._reap_supervisors(started)
            if line is not None:
                return line
        with open(open_nofollow(jobdir / "supervisor.log", os.O_WRONLY | os.O_CREAT | os.O_APPEND), "ab") as errlog:
            sup = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=errlog,
                                   env=env, start_new_session=True, close_fds=True)
        assert sup.stdout is not None  # stdout=PIPE
        line = sup.stdout.readline()
        sup.stdout.close()
        self._reap_supervisors(sup)
        if idle:
            started = template.start(self.home, idle, self.home / "template.log")
            if started is not None:
                self._reap_supervisors(started)
        return line

    def _spawn_meta(self, command: str, cwd: str | os.PathLike[str] | None, env: dict[str, str] | None, pty: bool,
                    name: str | None, task_id: str, session_key: str, notify: bool, watch: list[str] | None,
                    rows: int, cols: int, max_runtime: float | None, shell: list[str] | None) -> dict[str, Any]:
        """The new job's meta.json, every argument checked (BadInput: one line on the first bad one)."""
        _check_command(command)
        cwd = _checked_cwd(cwd)
        _check_env(env)
        _check_labels(name=name, task_id=task_id, session_key=session_key)
        _check_flags(pty=pty, notify_on_complete=notify)
        terminal_size(rows, cols)
        if watch is not None:
            _check_watch_patterns(watch)
        if max_runtime is not None:
            max_runtime = seconds(max_runtime, "max_runtime")
        shell = _job_shell(command) if shell is None else _checked_shell(shell)
        return {"session_id": new_session_id(), "command": command, "cwd": cwd, "pty": bool(pty),
                "name": name or "", "task_id": task_id or "",
                "session_key": session_key or "", "notify_on_complete": bool(notify),
                "watch_patterns": list(watch or []), "rows": rows, "cols": cols,
                "max_runtime": max_runtime, "created_at": time.time(), "shell": shell,
                "log_cap": int(_env_float("HERMES_PROCS_LOG_CAP", 64 << 20, 1 << 50)),
                "kill_grace": _env_float("HERMES_PROCS_KILL_GRACE", 3.0),
                "watch_interval": _env_float("HERMES_PROCS_WATCH_INTERVAL", 15.0, 86400.0)}

    @_safe
    def restart(self, session_id: str) -> dict[str, Any]:
        """The same command, cwd, env, PTY and options again as a new job with `rerun_of` set;
        the old job (killed first if it still runs) keeps its log."""
        job = self._job(session_id)
        if job.running or job.leftover_pids():
            killed = self.kill(job.session_id)
            if killed.get("status") == "error":
                return {"status": "error", "session_id": job.session_id,
                        "error": f"could not stop {job.session_id} to restart it: {killed.get('error')}"}
        meta = job.meta
        return self.spawn(meta["command"], cwd=meta.get("cwd"), env=meta.get("env"), pty=bool(meta.get("pty")),
                          name=meta.get("name") or None, task_id=meta.get("task_id", ""),
                          session_key=meta.get("session_key", ""),
                          notify_on_complete=bool(meta.get("notify_on_complete")),
                          watch_patterns=meta.get("watch_patterns") or None, rows=meta.get("rows", 30),
                          cols=meta.get("cols", 120), max_runtime=meta.get("max_runtime"),
                          quiet_after=meta.get("quiet_after"), rerun_of=job.session_id, shell=_rerun_shell(meta),
                          port=meta.get("port"), lease=_live_lease(meta), stack=meta.get("stack"),
                          restarts=meta.get("restarts", 0) + 1 if meta.get("stack") else 0)


def _claims(reuse: object, port: object, lease: object, name: str | None) -> dict[str, Any]:
    """What a job claims besides its command, checked: meta's `port` and `lease` (absent when not
    given); `reuse` needs a name to look for."""
    _check_flags(reuse=reuse)
    if reuse and not name:
        raise BadInput("reuse needs a name: the running job of that name is returned instead of a new one")
    claims: dict[str, Any] = {}
    if port is not None:
        claims["port"] = portguard.checked_port(port)
    if lease is not None:
        claims["lease"] = leases.owner(lease)
    return claims


def _running_named(rows: list[dict[str, Any]], name: str) -> dict[str, Any] | None:
    """The newest running job named `name` among list() rows, not a stack's: its name is
    `STACK/NAME` (two stacks may each have a `web`, neither of them the caller's)."""
    return next((row for row in rows if row.get("status") == "running" and row.get("name") == name
                 and not row.get("stack")), None)


@contextlib.contextmanager
def _home_lock(path: Path) -> Iterator[None]:
    """An exclusive flock on `path` (created 0600, never through a link) while the block runs."""
    fd = open_nofollow(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)


def _live_lease(meta: dict[str, Any]) -> int | None:
    """The lease owner's pid for a rerun when it still runs (the same process); else None: a
    job whose owner has ended reruns without a lease."""
    lease = meta.get("lease")
    try:
        pid, ticks = int(lease["pid"]), int(lease["start_ticks"])  # type: ignore[index]
    except (KeyError, TypeError, ValueError):
        return None
    return pid if proctree.is_alive(pid, ticks) else None


def _exec_limits(argv: list[str], env: dict[str, str]) -> None:
    """What execve(2) would refuse with E2BIG, said before anything is created: one argument or
    variable longer than MAX_ARG_STRLEN, or all of them together over ARG_MAX."""
    longest = 32 * os.sysconf("SC_PAGE_SIZE") - 1  # MAX_ARG_STRLEN, less the NUL
    command = argv[-1].encode(errors="surrogateescape")
    if len(command) > longest:
        raise BadInput(f"command is {len(command)} bytes; at most {longest} bytes fit in one exec argument "
                       "(put a long script in a file and run that)")
    total = 0
    for key, value in env.items():
        size = len(key.encode(errors="surrogateescape")) + 1 + len(value.encode(errors="surrogateescape"))
        if size > longest:
            raise BadInput(f"environment variable {key} is {size} bytes; at most {longest} bytes fit in one "
                           "variable")
        total += size + 1 + 8
    total += sum(len(a.encode(errors="surrogateescape")) + 1 + 8 for a in argv)
    limit = os.sysconf("SC_ARG_MAX") - 4096
    if total > limit:
        raise BadInput(f"command and environment are {total} bytes together; at most {limit} bytes can be "
                       "passed to a new program")


def template_idle() -> float:
    """HERMES_PROCS_TEMPLATE_IDLE: seconds the home's supervisor template waits for work; 0: none."""
    from ..supervisor import template

    return env_number("HERMES_PROCS_TEMPLATE_IDLE", template.DEFAULT_IDLE, 0.0, MAX_SECONDS, lowest_ok=True)


def _umask() -> int:
    """This process's umask (the job gets it), read without changing it."""
    try:
        with open("/proc/self/status") as fh:
            for line in fh:
                if line.startswith("Umask:"):
                    return int(line.split()[1], 8)
    except (OSError, ValueError):
        pass
    mask = os.umask(0o077)
    os.umask(mask)
    return mask


def _check_command(command: object) -> None:
    if not isinstance(command, str) or not command.strip():
        raise BadInput("command must be a non-empty string")
    if "\0" in command:
        raise BadInput("command must not contain NUL characters")


MAX_LABEL = 1000  # characters of a name, task_id or session_key (each is in every list() row)


def _check_labels(**labels: object) -> None:
    """name, task_id, session_key: text (or None), at most MAX_LABEL characters."""
    for what, value in labels.items():
        if value is not None and not isinstance(value, str):
            raise BadInput(f"{what} must be a string, not {type(value).__name__}")
        if isinstance(value, str) and len(value) > MAX_LABEL:
            raise BadInput(f"{what} must be at most {MAX_LABEL} characters, not {len(value)}")
        if isinstance(value, str) and "\0" in value:
            raise BadInput(f"{what} must not contain NUL characters")


def _check_flags(**flags: object) -> None:
    """pty, notify_on_complete: true or false (1 and 0 too)."""
    for what, value in flags.items():
        if not (isinstance(value, int) and value in (0, 1)):  # bool is an int
            raise BadInput(f"{what} must be true or false, not {str(value)[:40]!r}")


def _checked_cwd(cwd: object) -> str:
    """The job's working directory as an absolute path (None or "": the current one); it must exist."""
    cwd = os.getcwd() if cwd in (None, "") else cwd
    if not isinstance(cwd, (str, os.PathLike)) or "\0" in str(cwd):
        raise BadInput(f"cwd must be a path, not {cwd!r}")
    cwd = os.path.abspath(os.path.expanduser(str(cwd)))
    if not os.path.isdir(cwd):
        why = "is not a directory" if os.path.lexists(cwd) else "does not exist"
        raise BadInput(f"Working directory {why}: {cwd}")
    return cwd


def _check_env(env: object) -> None:
    if env is not None and not (isinstance(env, dict) and all(
            isinstance(k, str) and k and "=" not in k and "\0" not in k + str(v) for k, v in env.items())):
        raise BadInput("env must be a dict of variable names to values")


def _check_watch_patterns(patterns: object) -> None:
    """Watch patterns are substrings (never regexes: the supervisor tests each output line with
    `in`); their number and length are bounded so a line costs the supervisor little."""
    if not (isinstance(patterns, list) and all(isinstance(p, str) and p for p in patterns)):
        raise BadInput("watch_patterns must be a list of non-empty strings")
    if len(patterns) > MAX_WATCH_PATTERNS or any(len(p) > MAX_WATCH_CHARS for p in patterns):
        raise BadInput(f"watch_patterns takes at most {MAX_WATCH_PATTERNS} strings of at most "
                       f"{MAX_WATCH_CHARS} characters each")


def _found(program: str) -> bool:
    """Whether `program` is a path or a name on PATH that can be run."""
    import shutil

    return shutil.which(program) is not None


def _job_shell(command: str) -> list[str]:
    """The shell argv that runs `command` (without the command); the shell must exist."""
    shell = shell_argv(command)[:-1]
    if not _found(shell[0]):
        raise BadInput(f"Shell not found: {shell[0]} (set HERMES_PROCS_SHELL to a shell that exists)")
    return shell


def _rerun_shell(meta: dict[str, Any]) -> list[str] | None:
    """The shell a job ran in, for its rerun; None (the default shell) when it is gone or odd."""
    shell = meta.get("shell")
    if isinstance(shell, list) and shell and all(isinstance(a, str) for a in shell) and _found(shell[0]):
        return [str(a) for a in shell]
    return None


def _checked_shell(shell: object) -> list[str]:
    """A shell argv prefix given to spawn: strings without NUL, the program found."""
    if not (isinstance(shell, list) and shell and all(isinstance(a, str) and "\0" not in a for a in shell)):
        raise BadInput("shell must be a list of strings: the program and its arguments before the command")
    if not _found(shell[0]):
        raise BadInput(f"Shell not found: {shell[0]}")
    return list(shell)


def _given_environ(environ: object, env: dict[str, str] | None) -> dict[str, str]:
    """The job's whole environment as the caller gave it, with `env` on top."""
    _check_env(environ)
    assert isinstance(environ, dict)  # _check_env
    return {**{k: str(v) for k, v in environ.items()}, **{k: str(v) for k, v in (env or {}).items()}}


def _rerun_meta(env: dict[str, str] | None, quiet_after: float | None, rerun_of: str | None) -> dict[str, Any]:
    """Meta that restart() and the supervisor's quiet event need: the env given at spawn (the
    rest of the environment is the caller's, as at the first start), quiet_after, rerun_of."""
    return {"env": {k: str(v) for k, v in (env or {}).items()},
            "quiet_after": None if quiet_after is None else seconds(quiet_after, "quiet_after"),
            "rerun_of": str(rerun_of) if rerun_of else None}


def _stack_meta(stack: object, restarts: object) -> dict[str, Any]:
    """`stack` (a name) and `restarts` (a count) of a stack's job, checked."""
    if stack is not None and not (isinstance(stack, str) and 0 < len(stack) <= 64):
        raise BadInput("stack must be a stack name (1-64 characters)")
    return {"stack": stack or None, "restarts": whole(restarts, "restarts", 0)}


def _os_error(exc: OSError) -> str:
    if isinstance(exc, BlockingIOError):
        return f"cannot fork: {exc.strerror} (too many processes?)"
    return f"{exc.strerror or exc}" + (f": {exc.filename}" if exc.filename else "")


def _short_command(command: str) -> str:
    return repr(command) if len(command) <= 200 else repr(command[:200]) + f"... ({len(command)} characters)"


def _parse_report(line: bytes) -> dict[str, Any]:
    import json

    try:
        report = json.loads(line)
        if isinstance(report, dict) and ("pid" in report or "error" in report):
            return report
    except ValueError:
        pass
    return {"error": "the supervisor did not start (see supervisor.log in the job folder)"}
