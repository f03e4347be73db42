"""ProcessRegistry: the public Python API, a view over the state home.

Queries (list, poll, read_log) read job folders; live operations (write, submit, close_stdin,
resize, signal, kill, wait, stream) go to each job's supervisor socket. Every method returns a
JSON-able dict (or list of dicts) and never raises for bad input.
"""

from __future__ import annotations

import base64
import builtins
import functools
import math
import os
import select
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

from ..supervisor import proctree, reaper, stats, template, text, timeline
from ..supervisor.bounds import MAX_SECONDS, BadNumber, seconds, terminal_size, whole
from ..supervisor.bounds import setting as _setting
from . import events, listindex, logstore, processes, protocol, wait_until
from .envsafe import child_env, shell_argv
from .jobstate import CorruptJob, Job, load
from .model import Signal
from .paths import (
    IdError,
    ensure_private_dir,
    job_inodes,
    list_job_ids,
    new_session_id,
    open_nofollow,
    resolve_home,
    resolve_id,
    write_json_atomic,
    write_text_atomic,
)
from .screen import render as render_screen
from .screen import source as screen_source
from .search import Collector, search_log
from .userregex import PatternError, compile_user
from .watch import HomeWatch

if TYPE_CHECKING:
    from collections.abc import Callable, Collection
    from typing import ParamSpec, Protocol, TypeVar  # novermin (3.10: read by the type checker only)

    class Interrupt(Protocol):
        """What a wait's `interrupt` is: a threading.Event, or anything with is_set()."""

        def is_set(self) -> bool: ...

    P = ParamSpec("P")
    R = TypeVar("R")

SUPERVISOR = str(Path(template.__file__).with_name("supervisor.py"))  # the program: core/supervisor/
MAX_WRITE = 1 << 20
MAX_LOG_BYTES = 4 << 20
DEFAULT_MAX_WAIT = 180.0
PRUNE_EVERY = 3600.0
UNSUPERVISED = ("the supervisor of {job} is gone; its process runs on unsupervised (output is no longer "
                "recorded and input cannot reach it; kill, signal and wait still work)")


class BadInput(Exception):
    """Bad input from the caller: becomes {"status": "error", "error": message}."""


def _safe(method: Callable[P, R]) -> Callable[P, R | dict[str, Any]]:
    """Turn every failure into the contract's error dict instead of an exception (so a method
    returning a list returns a dict on failure)."""

    @functools.wraps(method)
    def wrapper(*args: P.args, **kwargs: P.kwargs) -> R | dict[str, Any]:
        try:
            return method(*args, **kwargs)
        except IdError as exc:
            status, error = exc.status, str(exc)
        except (BadInput, BadNumber, CorruptJob, PatternError, protocol.NewerSupervisor, events.CursorError) as exc:
            status, error = "error", str(exc)
        except Exception as exc:  # noqa: BLE001 - the contract: bad input never raises
            status, error = "error", f"{type(exc).__name__}: {exc}"
        return {"status": status, "error": text.one_line(error)}

    return wrapper


def _env_float(name: str, default: float, maximum: float = MAX_SECONDS) -> float:
    return _setting(os.environ.get(name), default, maximum)


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
    raw = os.environ.get("HERMES_PROCS_TEMPLATE_IDLE")
    try:
        if raw is not None and float(raw) == 0:
            return 0.0
    except ValueError:
        pass
    return _env_float("HERMES_PROCS_TEMPLATE_IDLE", template.DEFAULT_IDLE)


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


class ProcessRegistry:
    """Durable background jobs under a state home; docs/api.md describes every method."""

    remote = False

    def __new__(cls, home: str | os.PathLike[str] | None = None, host: str | None = None) -> ProcessRegistry:
        """`host` (or $HERMES_PROCS_HOST): the jobs of a remote host (core/remote/client.py);
        None, "" or "local": this machine."""
        host = os.environ.get("HERMES_PROCS_HOST") if host is None else host
        if cls is ProcessRegistry and host not in (None, "", "local"):
            from ..remote.client import RemoteRegistry

            # a stand-in, not a subclass: it answers every ProcessRegistry method (its __getattr__
            # forwards them to the host), so callers hold it as one
            return cast("ProcessRegistry", RemoteRegistry(host, home))
        return super().__new__(cls)

    def __init__(self, home: str | os.PathLike[str] | None = None, host: str | None = None) -> None:
        """Raises paths.HomeError (a ValueError, one clear line) for a home that is unsafe to use."""
        self.home = ensure_private_dir(resolve_home(home))
        self.jobs_dir = ensure_private_dir(self.home / "jobs")
        self._supervisors: list[subprocess.Popen[bytes]] = []
        self._index: dict[str, dict[str, Any]] = {}  # finished jobs' list rows (listindex.py)
        self._index_key: tuple[int, int, int] | None = None
        self._index_lines = 0
        self._lock = threading.Lock()
        self._cpu = stats.CpuMeter()
        self._process_rows = processes.ProcessRows()
        self._seen: dict[str, dict[str, Any]] = {}  # running jobs' write-once files and log tail (_list_row)

    # ---- lookup ------------------------------------------------------------------------
    def _job(self, session_id: str) -> Job:
        self._reap_supervisors()
        return load(self.jobs_dir / resolve_id(self.jobs_dir, session_id))

    def job_dir(self, session_id: str) -> Path:
        """The job's folder. Raises IdError for a bad or unknown id (see docs/api.md)."""
        return self.jobs_dir / resolve_id(self.jobs_dir, session_id)

    def log_files(self, session_id: str) -> list[Path]:
        """The job's retained output log segments, oldest first. Raises IdError for a bad id."""
        return logstore.segments(self.job_dir(session_id))

    # ---- spawn -------------------------------------------------------------------------
    @_safe
    def spawn(self, command: str, *, cwd: str | os.PathLike[str] | None = None, env: dict[str, str] | None = None,
              pty: bool = False, name: str | None = None, task_id: str = "", session_key: str = "",
              notify_on_complete: bool = False, watch_patterns: list[str] | None = None, rows: int = 30,
              cols: int = 120, max_runtime: float | None = None, quiet_after: float | None = None,
              rerun_of: str | None = None, shell: list[str] | None = None,
              environ: dict[str, str] | None = None, stack: str | None = None, restarts: int = 0) -> dict[str, Any]:
        """Start `command` as a durable job under its own supervisor (see docs/api.md for every argument;
        `quiet_after`: emit quiet events; `rerun_of`: set by restart). `shell`: the argv the command
        is appended to (default `bash -c` or $HERMES_PROCS_SHELL); `environ`: the job's whole
        environment, used as given (nothing filtered or added; `env` still applies on top) and
        not written to the job folder (the Hermes plugin passes the environment Hermes builds).
        `stack`, `restarts`: set by a stack's supervisor (core/stacks/), shown by list and poll.

        Returns `running` with session_id, pid, command, pty, cwd, name; `error` when it cannot start."""
        self._auto_prune()  # before the new job exists: a job that ends at once is never pruned by its own spawn
        meta = self._spawn_meta(command, cwd, env, pty, name, task_id, session_key, notify_on_complete,
                                watch_patterns, rows, cols, max_runtime, shell)
        meta.update(_rerun_meta(env, quiet_after, rerun_of), **_stack_meta(stack, restarts))
        jobdir = self.jobs_dir / meta["session_id"]
        argv = [sys.executable, "-I", "-S", SUPERVISOR, str(jobdir), "1" if pty else "0", str(rows), str(cols),
                meta["cwd"], *([template.pty_path()] if pty else []), "--", *meta["shell"], command]
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
        return {"status": "running", "session_id": meta["session_id"], "pid": report["pid"],
                "command": command, "pty": pty, "cwd": meta["cwd"], "name": meta["name"]}

    def _start_supervisor(self, meta: dict[str, Any], jobdir: Path, argv: list[str],
                          env: dict[str, str]) -> dict[str, Any]:
        """Create the job folder (it appears with its meta.json: staged under .new-ID, renamed)
        and start the supervisor; its report line: {"pid": ...} or {"error": ...}."""
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

    def _reap_supervisors(self, new: subprocess.Popen[bytes] | None = None) -> None:
        """Collect supervisors (and templates) started here that have finished (our children,
        which would stay zombies): one waitpid(WNOHANG) each, on every call that looks a job up."""
        if self._supervisors or new is not None:
            with self._lock:
                self._supervisors = [p for p in self._supervisors if p.poll() is None]
                if new is not None:
                    self._supervisors.append(new)

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

    # ---- queries -----------------------------------------------------------------------
    @_safe
    def poll(self, session_id: str) -> dict[str, Any]:
        """The job's status and the last 1000 characters of its output.

        Returns `running` or `exited` (then also exit_code, completion_reason, signal, leftover_pids)."""
        job = self._job(session_id)
        live = self._live_status(job)
        result = self._summary(job, preview_chars=1000)
        result["command"] = job.meta["command"]
        result["output_dropped"] = live.get("output_dropped", 0) if live else _output_dropped(job)
        if not job.running:
            result.update(_outcome_fields(job))
            result["leftover_pids"] = job.leftover_pids()
        elif job.unsupervised:
            result["note"] = UNSUPERVISED.format(job=job.session_id)
        return result

    def _live_status(self, job: Job) -> dict[str, Any] | None:
        """The supervisor's own view of a running job; it holds the exit in memory when the
        disk refused exit.json (the job then shows as exited). None when it does not answer."""
        if not job.running:
            return None
        try:
            reply = protocol.request(job.dir, {"op": "status"}, timeout=1.0)
        except (protocol.SupervisorGone, OSError, ValueError):
            return None
        if not reply.get("ok"):
            return None
        if isinstance(reply.get("exit"), dict):
            job.exit = reply["exit"]
        return reply

    def _summary(self, job: Job, preview_chars: int, seen: dict[str, Any] | None = None) -> dict[str, Any]:
        start, tail = self._tail(job, preview_chars * 4 + 4096, seen)
        result = {"status": job.status, "session_id": job.session_id, "command": job.meta["command"],
                  "name": job.meta.get("name", ""), "pid": job.pid, "pty": job.meta.get("pty", False),
                  "cwd": job.meta.get("cwd"), "started_at": job.started_iso(), "uptime_seconds": job.uptime(),
                  "output_preview": text.last_chars(tail, preview_chars), "output_bytes": start + len(tail),
                  "task_id": job.meta.get("task_id", ""), "session_key": job.meta.get("session_key", ""),
                  "rerun_of": job.meta.get("rerun_of"), "stack": job.meta.get("stack"),
                  "restarts": job.meta.get("restarts", 0), **self._figures(job)}
        if not job.running:
            result.update(_outcome_fields(job))
        elif job.unsupervised:
            result["unsupervised"] = True
        return result

    @staticmethod
    def _tail(job: Job, n: int, seen: dict[str, Any] | None) -> tuple[int, bytes]:
        """logstore.tail_span, or the one kept in `seen` while output.log has the same inode,
        size and mtime (it only grows; a rotation makes a new file)."""
        if seen is None:
            return logstore.tail_span(job.dir, n)
        try:
            st = os.stat(f"{job.dir}/{logstore.LOG_NAME}")
            key = (n, st.st_ino, st.st_size, st.st_mtime_ns)
            job.extra["log_stat"] = st  # QUIET needs it too
        except OSError:
            key = None
        kept: tuple[Any, tuple[int, bytes]] | None = seen.get("tail")
        if key is not None and kept is not None and kept[0] == key:
            return kept[1]
        span = logstore.tail_span(job.dir, n)
        seen["tail"] = (key, span)
        return span

    def _figures(self, job: Job) -> dict[str, Any]:
        """awaiting_input, quiet_seconds, cpu_percent, rss_bytes, process_count (core/supervisor/stats.py)."""
        proc = job.proc or {}
        return stats.job_figures(job.session_id, self._cpu, running=job.running, root=job.pid,
                                 supervisor_pid=proc.get("supervisor_pid") if job.supervisor_alive else None,
                                 started_at=job.started_at, log_path=f"{job.dir}/{logstore.LOG_NAME}",
                                 supervisor_stat=job.extra.get("supervisor_stat"), log_stat=job.extra.get("log_stat"))

    @_safe
    def read_log(self, session_id: str, offset: int | None = None, limit: int = 200,
                 since: float | str | None = None) -> dict[str, Any]:
        """Lines `offset` .. `offset+limit-1` of the job's output (None: the last `limit` lines).
        `since` (seconds ago, a duration like "5m", or an ISO time; not with `offset`): only
        the output that arrived since then (core/supervisor/timeline.py).

        Returns status, session_id, output, total_lines, showing."""
        if offset is not None:
            whole(offset, "offset", 0)
        whole(limit, "limit", 1)
        job = self._job(session_id)
        if since is None:
            return {"status": job.status, "session_id": job.session_id,
                    **logstore.read_lines(job.dir, offset, min(limit, 100_000))}
        if offset is not None:
            raise BadInput("give offset or since, not both")
        try:
            result = timeline.read_since(job.dir, since, min(limit, 100_000))
        except ValueError as exc:
            raise BadInput(str(exc)) from None
        return {"status": job.status, "session_id": job.session_id, **result}

    @_safe
    def log_bytes(self, session_id: str, start: int | None = None, end: int | None = None,
                  max_bytes: int = MAX_LOG_BYTES, times: bool = False) -> dict[str, Any]:
        """Raw output bytes between absolute offsets [start, end) (None: the current end),
        at most `max_bytes` of them (the last ones when `start` is None). `end` in the result
        is where the returned bytes stop, `total` the current end of the output. `times`: also
        the records of times.idx that date them, [[offset, epoch ms], ...] (core/supervisor/timeline.py)."""
        for value, what in ((start, "start"), (end, "end")):
            if value is not None and (isinstance(value, bool) or not isinstance(value, int) or value < 0):
                raise BadInput(f"{what} must be a byte offset >= 0, not {value!r}")
        if isinstance(max_bytes, bool) or not isinstance(max_bytes, int) or not 0 < max_bytes <= MAX_LOG_BYTES:
            raise BadInput(f"max_bytes must be a whole number from 1 to {MAX_LOG_BYTES}, not {max_bytes!r}")
        job = self._job(session_id)
        total = logstore.total_bytes(job.dir)
        stop = total if end is None else min(end, total)
        first = max(0, stop - max_bytes) if start is None else start
        stop = min(stop, first + max_bytes)
        data = logstore.read_bytes(job.dir, first, stop) if stop > first else b""
        result = {"status": job.status, "session_id": job.session_id, "start": stop - len(data), "end": stop,
                  "total": total, "data": data}
        if times:
            result["times"] = timeline.records_between(job.dir, stop - len(data), stop)
        return result

    @_safe
    def list(self, task_id: str | None = None, session_key: str | None = None,
             only: Collection[str] | None = None) -> list[dict[str, Any]]:
        """Every job, newest first, optionally only those filed under `task_id` / `session_key`,
        or only the jobs whose ids are in `only` (a collection of full ids: the dashboard
        re-reads the rows on screen; ids of jobs that are gone are left out).

        Returns a list of row dicts (a damaged job folder has status `corrupt` and an error)."""
        self._reap_supervisors()
        inodes = job_inodes(self.jobs_dir)
        ids = list(inodes)
        if only is not None and (isinstance(only, (str, bytes)) or not isinstance(only, Iterable)
                                 or not all(isinstance(i, str) for i in only)):
            raise BadInput("only must be a collection of job ids")
        finished = self._finished_rows()
        rows, new = [], []
        self._forget(set(ids))
        chosen = None if only is None else set(only)
        wanted = ids if chosen is None else [sid for sid in ids if sid in chosen]
        for session_id in wanted:
            row = finished.get(session_id)
            if row is None:
                row, done = self._list_row(session_id, inodes[session_id])
                if done:
                    new.append(row)
            if _filed_under(row, task_id, session_key):
                rows.append({**stats.IDLE, "rerun_of": None, "stack": None, "restarts": 0, **row})  # index rows written before these fields
        self._index_rows(finished, new, ids)
        rows.sort(key=lambda r: r.pop("_sort"), reverse=True)
        return rows

    def _forget(self, live: set[str]) -> None:
        """Drop what is kept per job (CPU samples, write-once files) for jobs that are gone."""
        self._cpu.forget(live)
        with self._lock:
            for sid in self._seen.keys() - live:
                del self._seen[sid]

    def _finished_rows(self) -> dict[str, dict[str, Any]]:
        """Rows of finished jobs from the index (listindex.py), re-read when the file changed."""
        try:
            st = os.stat(self.home / listindex.NAME)
            key = (st.st_ino, st.st_size, st.st_mtime_ns)
        except OSError:
            key = None
        with self._lock:
            if key is None or key != self._index_key:
                self._index, self._index_lines = listindex.read(self.home)
                self._index_key = key
            return self._index

    def _index_rows(self, finished: dict[str, dict[str, Any]], new: builtins.list[dict[str, Any]],
                    ids: builtins.list[str]) -> None:
        """Append the rows of jobs seen finished for the first time; compact a bloated index."""
        live = set(ids)
        with self._lock:
            for row in new:
                finished[row["session_id"]] = row
            if listindex.needs_compaction(self._index_lines + len(new), len(live)):
                listindex.rewrite(self.home, [r for sid, r in finished.items() if sid in live])
                self._index_key = None
            elif new:
                listindex.append(self.home, new)
                self._index_lines += len(new)

    def _list_row(self, session_id: str, ino: int) -> tuple[dict[str, Any], bool]:
        """One row of `list` read from the job folder, and whether the job is finished for good
        (exit recorded, supervisor gone: the row can no longer change).

        What cannot change is kept between calls (self._seen, per job folder inode) while the
        job runs: meta.json and proc.json (each written once), and the output preview while the
        log is unchanged. A finished job's row goes to the index instead (listindex.py). `ino`:
        the folder's inode number from the listing."""
        jobdir = self.jobs_dir / session_id
        try:
            with self._lock:
                seen = self._seen.get(session_id)
                if seen is None or seen["ino"] != ino:
                    seen = self._seen[session_id] = {"ino": ino}
            job = load(jobdir, seen)
        except (CorruptJob, OSError) as exc:
            return {"session_id": session_id, "status": "corrupt", "error": str(exc), "command": "", "name": "",
                    "pid": None, "pty": False, "cwd": None, "started_at": None, "uptime_seconds": 0,
                    "output_preview": "", "_sort": 0.0}, False
        row = self._summary(job, preview_chars=200, seen=seen)
        row["command"] = row["command"][:200]
        row["_sort"] = job.started_at
        done = job.exit is not None and not job.supervisor_alive
        if done:
            with self._lock:
                self._seen.pop(session_id, None)
        return row, done

    @_safe
    def get(self, session_id: str) -> dict[str, Any]:
        """The job's full record: what poll gives plus meta, proc, exit and dir."""
        job = self._job(session_id)
        return {**self._summary(job, 1000), "meta": job.meta, "proc": job.proc, "exit": job.outcome or None,
                "dir": str(job.dir)}

    @_safe
    def inputs(self, session_id: str, limit: int = 20) -> builtins.list[dict[str, Any]]:
        """The last `limit` inputs typed into the job, oldest first: {t, source, preview, bytes}."""
        limit = whole(limit, "limit", 0)
        path = self.job_dir(session_id) / "inputs.jsonl"
        try:
            with os.fdopen(open_nofollow(path, os.O_RDONLY), "rb") as fh:
                size = fh.seek(0, os.SEEK_END)
                fh.seek(max(0, size - (64 << 10)))
                lines = fh.read().splitlines()[1 if size > 64 << 10 else 0:]
        except FileNotFoundError:
            return []
        entries = [e for e in (events.parse_line(line) for line in lines) if e]
        return entries[-limit:] if limit else []

    # ---- waiting -----------------------------------------------------------------------
    @_safe
    def wait(self, session_id: str, timeout: float | None = None, interrupt: Interrupt | None = None,
             until: str = "exit") -> dict[str, Any]:
        """Block until the job ends, `timeout` seconds pass (clamped to HERMES_PROCS_MAX_WAIT),
        `interrupt` is set, or `until` holds (core/registry/wait_until.py: input, quiet:S, output:REGEX, port:N).

        Returns `exited` (outcome fields, output), `running` (the condition met), `timeout` (output,
        timeout_note) or `interrupted`; `reason` says which."""
        try:
            condition = wait_until.parse(until)
        except wait_until.UntilError as exc:
            raise BadInput(str(exc)) from None
        try:
            return self._wait(session_id, timeout, interrupt, condition)
        finally:
            if condition.pattern is not None:
                condition.pattern.close()  # its worker process, if it has one

    def _wait(self, session_id: str, timeout: float | None, interrupt: Interrupt | None,
              condition: wait_until.Until) -> dict[str, Any]:
        timeout, note = _wait_timeout(timeout)
        job = self._job(session_id)
        deadline = time.monotonic() + timeout
        met: dict[str, Any] = {}
        check = wait_until.checker(condition, job) if job.running else None
        while job.running:  # the supervisor may die while we wait: then wait for the process itself
            left, record = deadline - time.monotonic(), None
            if job.supervised and left > 0:
                outcome, record, met = self._wait_socket(job, left, interrupt, check)
            elif left > 0:
                outcome = _wait_process(job.root, left, interrupt)
            else:
                outcome = "timeout"
            if outcome != "exited":
                result = {"status": "running" if outcome == "met" else outcome, "session_id": job.session_id,
                          "reason": outcome, **met, "output": self._tail_text(job, 2000)}
                if outcome == "timeout":
                    result["timeout_note"] = note or f"still running after {timeout:g}s"
                return result
            job = load(job.dir)
            if job.exit is None and record is not None:  # not on disk (yet): the supervisor's word
                job.exit = record
        result = {"status": "exited", "session_id": job.session_id, "reason": "exited", **met,
                  **_outcome_fields(job), "output": self._tail_text(job, 2000)}
        if note:
            result["timeout_note"] = note
        return result

    @_safe
    def wait_any(self, session_ids: builtins.list[str] | tuple[str, ...], timeout: float | None = None,
                 interrupt: Interrupt | None = None) -> dict[str, Any]:
        """Block until the first of `session_ids` (a list of ids or unique prefixes) has ended,
        `timeout` seconds pass (clamped as for wait) or `interrupt` is set. Woken by inotify on the
        home (every exit appends to events.jsonl: core/registry/watch.py), with a 1 s look in any case (a
        job whose supervisor died ends without an event).

        Returns `exited` with that job's `session_id`, outcome fields and output, and `running`
        (the ids of the others still running); or `timeout` / `interrupted` with `running`."""
        ids = self._wait_any_ids(session_ids)
        timeout, note = _wait_timeout(timeout)
        deadline = time.monotonic() + timeout
        with HomeWatch(self.home) as watch:
            while True:
                jobs = [self._job(sid) for sid in ids]
                running = [job.session_id for job in jobs if job.running]
                done = next((job for job in jobs if not job.running), None)
                if done is not None:
                    result = {"status": "exited", "session_id": done.session_id, "reason": "exited",
                              **_outcome_fields(done), "output": self._tail_text(done, 2000), "running": running}
                    return {**result, "timeout_note": note} if note else result
                left = deadline - time.monotonic()
                if left <= 0:
                    return {"status": "timeout", "reason": "timeout", "running": running,
                            "timeout_note": note or f"all {len(running)} still running after {timeout:g}s"}
                if interrupt is not None and interrupt.is_set():
                    return {"status": "interrupted", "reason": "interrupted", "running": running}
                watch.wait(min(left, 0.2 if interrupt is not None else 1.0))

    def _wait_any_ids(self, session_ids: object) -> builtins.list[str]:
        """wait_any's ids, checked and resolved (prefixes to full ids), each once."""
        if isinstance(session_ids, (str, bytes)) or not isinstance(session_ids, (list, tuple)):
            raise BadInput("session_ids must be a list of job ids")
        if not 1 <= len(session_ids) <= 10_000:
            raise BadInput(f"session_ids must name 1 to 10000 jobs, not {len(session_ids)}")
        return list(dict.fromkeys(resolve_id(self.jobs_dir, sid) for sid in session_ids))

    def _wait_socket(self, job: Job, timeout: float, interrupt: Interrupt | None,
                     check: Callable[[], dict[str, Any] | None] | None = None,
                     ) -> tuple[str, dict[str, Any] | None, dict[str, Any]]:
        """(outcome, the supervisor's exit record or None, the fields of the condition met): outcome is
        "exited", "met" (the `until` check held), "timeout" or "interrupted"."""
        deadline = time.monotonic() + timeout
        try:
            sock = protocol.connect(job.dir, retry_for=2.0)
        except protocol.SupervisorGone:
            return "exited", None, {}
        step = wait_until.POLL_STEP if (interrupt or check) else None
        with sock:
            try:
                sock.sendall(b'{"op": "wait"}\n')
            except OSError:  # it died between connect and send: the caller looks again
                return "exited", None, {}
            while True:
                met = check() if check else None
                if met:
                    return "met", None, met
                left = deadline - time.monotonic()
                if left <= 0:
                    return "timeout", None, {}
                if interrupt is not None and interrupt.is_set():
                    return "interrupted", None, {}
                ready, _, _ = select.select([sock], [], [], min(left, step or left))
                if ready:  # output printed just before the exit may still hold the match
                    return "exited", _exit_of_reply(sock), (check() or {}) if check else {}

    def _tail_text(self, job: Job, chars: int) -> str:
        return text.last_chars(logstore.tail_bytes(job.dir, chars * 4 + 4096), chars)

    # ---- what the human sees: screen, search, restart ----------------------------------
    @_safe
    def screen(self, session_id: str, raw: bool = False) -> dict[str, Any]:
        """A PTY job's terminal screen as text (core/registry/screen.py); `raw`: instead of `lines`,
        `data`, the bytes that draw it (a remote host's answer: its client draws them)."""
        job = self._job(session_id)
        if not job.meta.get("pty"):
            raise BadInput(f"{job.session_id} runs on pipes, not in a terminal: screen needs a job started "
                           "with pty=True (read this one with read_log or search)")
        if raw:
            return {"status": job.status, "session_id": job.session_id,
                    **screen_source(job.dir, job.meta, job.pid if job.running else None)}
        try:
            shown = render_screen(job.dir, job.meta, job.pid if job.running else None)
        except ImportError:
            raise BadInput("screen needs the bittty package: pip install bittty") from None
        return {"status": job.status, "session_id": job.session_id, **shown}

    @_safe
    def search(self, session_id: str | None = None, pattern: str | None = None, context: int = 2, limit: int = 50,
               task_id: str | None = None) -> dict[str, Any]:
        """Regex over the whole retained log of one job, or of every job (of `task_id`) when
        `session_id` is None (core/registry/search.py). The pattern runs in RE2 or in a worker process with
        a deadline (core/registry/userregex.py); the answer holds at most MAX_ANSWER_CHARS characters of
        lines (`truncated` and a `note` say when it was capped)."""
        regex = compile_user(pattern)  # the worker process, if any, starts with the first match
        if isinstance(context, bool) or not isinstance(context, int) or not 0 <= context <= 100:
            raise BadInput(f"context must be a whole number of lines from 0 to 100, not {context!r}")
        if isinstance(limit, bool) or not isinstance(limit, int) or not 1 <= limit <= 10_000:
            raise BadInput(f"limit must be a whole number from 1 to 10000, not {limit!r}")
        if session_id in (None, ""):
            rows = self.list(task_id=task_id or None)
            if isinstance(rows, dict):
                return rows
            ids = [row["session_id"] for row in rows]
        else:
            ids = [resolve_id(self.jobs_dir, session_id)]
        out = Collector(limit)
        total = 0
        with regex:
            for sid in ids:
                total += search_log(self.jobs_dir / sid, regex, context, out, {"session_id": sid})
        result = {"status": "ok", "pattern": pattern, "matches": out.matches, "total": total}
        if session_id not in (None, ""):
            result["session_id"] = ids[0]
        if out.capped:
            result.update(truncated=True, note=out.note(total))
        return result

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
                          stack=meta.get("stack"), restarts=meta.get("restarts", 0) + 1 if meta.get("stack") else 0)

    # ---- stacks (core/stacks/: a project's jobs with dependencies, probes, restarts) -----
    def up(self, path: str | None = None, name: str | None = None, wait: bool = False,
           timeout: float | None = None) -> dict[str, Any]:
        """Bring a stack up from its file (None: the first stack file in the current folder)."""
        from ..stacks import api

        return api.up(self, path, name, wait=wait, timeout=timeout)

    def down(self, stack: str | None = None, path: str | None = None) -> dict[str, Any]:
        """Stop a stack's jobs, dependents first, and its supervisor."""
        from ..stacks import api

        return api.down(self, stack, path)

    def restart_stack(self, stack: str, job: str | None = None) -> dict[str, Any]:
        """Restart a whole stack in dependency order, or one job of it."""
        from ..stacks import api

        return api.restart(self, stack, job)

    def stacks(self, name: str | None = None) -> builtins.list[dict[str, Any]]:
        """Every stack of the home (or the one named) with its state and its jobs' states."""
        from ..stacks import api

        return api.stacks(self, name)

    # ---- live operations ---------------------------------------------------------------
    def _live(self, job: Job, message: dict[str, Any], timeout: float | None = 10.0) -> dict[str, Any]:
        if job.unsupervised:
            return {"ok": False, "error": UNSUPERVISED.format(job=job.session_id)}
        try:
            return protocol.request(job.dir, message, timeout=timeout, retry_for=2.0, supervisor=job.supervisor)
        except protocol.SupervisorGone:
            return {"ok": False, "exited": True, "error": "the process has exited"}
        except protocol.SupervisorStuck as exc:
            return {"ok": False, "stuck": True, "error": str(exc)}

    @_safe
    def write(self, session_id: str, data: str | bytes, source: str = "agent") -> dict[str, Any]:
        """Send `data` (str or bytes, at most 1 MiB) to the job's stdin as it is.

        Returns `ok` with bytes_written, `already_exited`, or `error` when stdin is closed."""
        return self._write(session_id, data, source, enter=False)

    @_safe
    def submit(self, session_id: str, data: str | bytes = "", source: str = "agent") -> dict[str, Any]:
        """As `write`, with Enter appended (\n; \r for a PTY job)."""
        return self._write(session_id, data, source, enter=True)

    def _write(self, session_id: str, data: object, source: object, enter: bool) -> dict[str, Any]:
        if isinstance(data, str):
            raw = data.encode()
        elif isinstance(data, (bytes, bytearray)):
            raw = bytes(data)
        else:
            raise BadInput(f"data must be a string, not {type(data).__name__}")
        if not isinstance(source, str) or not source or len(source) > 32:
            raise BadInput("source must be a short name such as 'agent', 'human' or 'cli'")
        job = self._job(session_id)
        if enter:
            raw += b"\r" if job.meta.get("pty") else b"\n"
        if len(raw) > MAX_WRITE:
            raise BadInput(f"data is {len(raw)} bytes; at most {MAX_WRITE} bytes can be written per call")
        if not job.running:
            return self._already_exited(job)
        reply = self._live(job, {"op": "write", "data": base64.b64encode(raw).decode(), "source": source})
        if reply.get("ok"):
            return {"status": "ok", "session_id": job.session_id, "bytes_written": reply["bytes_written"]}
        return self._live_error(job, reply)

    def _already_exited(self, job: Job) -> dict[str, Any]:
        return {"status": "already_exited", "session_id": job.session_id, **_outcome_fields(job)}

    def _live_error(self, job: Job, reply: dict[str, Any]) -> dict[str, Any]:
        if reply.get("exited"):
            return self._already_exited(load(job.dir))
        return {"status": "error", "session_id": job.session_id, "error": reply.get("error", "failed")}

    @_safe
    def close_stdin(self, session_id: str) -> dict[str, Any]:
        """End the job's input (EOF for a PTY job, the pipe closed otherwise). Returns `ok` or `already_exited`."""
        job = self._job(session_id)
        if not job.running:
            return self._already_exited(job)
        reply = self._live(job, {"op": "close_stdin"})
        return {"status": "ok", "session_id": job.session_id} if reply.get("ok") else self._live_error(job, reply)

    @_safe
    def resize(self, session_id: str, rows: int, cols: int) -> dict[str, Any]:
        """Set a PTY job's terminal size (1-9999 each). Returns `ok` with rows, cols, or `already_exited`."""
        terminal_size(rows, cols)
        job = self._job(session_id)
        if not job.running:
            return self._already_exited(job)
        reply = self._live(job, {"op": "resize", "rows": rows, "cols": cols})
        if reply.get("ok"):
            return {"status": "ok", "session_id": job.session_id, "rows": rows, "cols": cols}
        return self._live_error(job, reply)

    @_safe
    def signal(self, session_id: str, sig: str | int) -> dict[str, Any]:
        """Send one signal (INT, SIGINT, 2, ...; see model.SENDABLE_SIGNALS) to the job's process group.

        Returns `ok`, `already_exited`, or `error` for a signal that cannot be sent."""
        try:
            name = Signal.parse(sig).name
        except ValueError as exc:
            raise BadInput(str(exc)) from None
        job = self._job(session_id)
        if not job.running:
            return self._already_exited(job)
        root = job.root
        if job.unsupervised and root:  # no supervisor to ask: the root's process group, identity-checked
            for pid, ticks in proctree.group_members(*root).items():
                proctree.send(pid, ticks, getattr(signal, "SIG" + name))
            return {"status": "ok", "session_id": job.session_id}
        reply = self._live(job, {"op": "signal", "signal": name})
        return {"status": "ok", "session_id": job.session_id} if reply.get("ok") else self._live_error(job, reply)

    @_safe
    def tree(self, session_id: str) -> dict[str, Any]:
        """The job's processes (proctree's identity-checked rule), parents first: pid, ppid,
        start_ticks, depth, command, state, cpu_percent, rss_bytes, awaiting_input
        (core/registry/processes.py). Returns the job's status, session_id and `processes` (empty when
        none is left)."""
        job = self._job(session_id)
        rows = self._process_rows.rows(job.tree().scan(), processes.stdin_of(job.pid if job.running else None))
        return {"status": job.status, "session_id": job.session_id, "processes": rows}

    @_safe
    def signal_process(self, session_id: str, pid: int, sig: str | int,
                       start_ticks: int | None = None) -> dict[str, Any]:
        """Send one signal (as `signal` takes them) to ONE process of the job: `pid` must be a
        member of the job by proctree's rule (pid + start ticks checked; `start_ticks`, as
        `tree` showed it, pins the exact process). Returns `ok` with pid and signal, or `error`."""
        try:
            name = Signal.parse(sig).name
        except ValueError as exc:
            raise BadInput(str(exc)) from None
        whole(pid, "pid", 1)
        if start_ticks is not None:
            whole(start_ticks, "start_ticks", 0)
        job = self._job(session_id)
        error = processes.signal_member(job.tree().scan(), pid, getattr(signal, "SIG" + name), start_ticks)
        if error:
            raise BadInput(f"{job.session_id}: {error}")
        return {"status": "ok", "session_id": job.session_id, "pid": pid, "signal": name}

    @_safe
    def set_watch_patterns(self, session_id: str, patterns: builtins.list[str]) -> dict[str, Any]:
        """Replace a running job's watch_patterns from now on (output already scanned stays)."""
        _check_watch_patterns(patterns)
        job = self._job(session_id)
        if not job.running:
            return self._already_exited(job)
        reply = self._live(job, {"op": "watch", "patterns": patterns})
        if reply.get("ok"):
            return {"status": "ok", "session_id": job.session_id, "watch_patterns": reply["patterns"]}
        return self._live_error(job, reply)

    def stream(self, session_id: str, input: bool = False, source: str = "human") -> protocol.Stream:
        """A live attach from the current end of the output (`stream.offset`); older output is in
        the log files. Raises IdError or protocol.SupervisorGone (unlike the dict-returning methods)."""
        return protocol.Stream.open(self.job_dir(session_id), input=input, source=source)

    # ---- kill --------------------------------------------------------------------------
    @_safe
    def kill(self, session_id: str, grace: float | None = None) -> dict[str, Any]:
        """Kill the job's whole process tree: SIGTERM, then SIGKILL after `grace` seconds.

        Returns `killed` (outcome fields, output), `already_exited`, or `error` with survivors."""
        grace = _env_float("HERMES_PROCS_KILL_GRACE", 3.0) if grace is None else seconds(
            grace, "grace", allow_zero=True)
        try:
            job = self._job(session_id)
        except CorruptJob:  # damaged files never block a kill the supervisor can still do
            return self._kill_damaged(self.job_dir(session_id), grace)
        if not job.supervisor_alive:
            return self._kill_fallback(job, grace)
        timeout = grace + 30
        reply = self._live(job, {"op": "kill", "grace": grace, "expires": time.time() + timeout}, timeout=timeout)
        if not reply.get("ok") and reply.get("exited"):  # finished (or died) while we asked
            return self._kill_fallback(load(job.dir), grace)
        if reply.get("stuck"):  # stopped: kill the tree ourselves; it refuses the request later
            result = self._kill_fallback(job, grace, was_running=job.exit is None)
            result["note"] = (f"{reply['error']}: the job's processes were killed directly; its exit is "
                              "recorded when the supervisor runs again")
            return result
        if not reply.get("ok"):
            return {"status": "error", "session_id": job.session_id, "error": reply.get("error", "failed")}
        job = load(job.dir)
        return self._kill_result(job, reply.get("survivors", []),
                                 was_running=job.outcome.get("completion_reason") == "killed")

    def _kill_damaged(self, jobdir: Path, grace: float) -> dict[str, Any]:
        """Kill a job whose folder cannot be read, through its supervisor; the CorruptJob error
        stands when no supervisor answers."""
        try:
            reply = protocol.request(jobdir, {"op": "kill", "grace": grace}, timeout=grace + 30)
        except (protocol.SupervisorGone, OSError, ValueError):
            load(jobdir)  # raises the CorruptJob that says what is damaged
            raise
        if not reply.get("ok"):
            return {"status": "error", "session_id": jobdir.name, "error": reply.get("error", "kill failed")}
        survivors = reply.get("survivors") or []
        if survivors:
            return {"status": "error", "session_id": jobdir.name, "survivors": survivors,
                    "error": f"could not kill {len(survivors)} process(es) of the job: {survivors}"}
        record = reply.get("exit")
        if not isinstance(record, dict):
            record = {}
        return {"status": "killed", "session_id": jobdir.name, "exit_code": record.get("exit_code"),
                "completion_reason": record.get("completion_reason"), "signal": record.get("signal"),
                "output": text.last_chars(logstore.tail_bytes(jobdir, 12288), 2000)}

    def _kill_fallback(self, job: Job, grace: float, was_running: bool | None = None) -> dict[str, Any]:
        """Kill without the supervisor's help: a lost job's process (it may run on, unsupervised),
        an exited job's leftovers, the tree of a job whose supervisor is stopped. Only the job's
        own processes (proctree's rule) are signalled, and no exit record is written: only the
        supervisor, the job's parent, can know the exit code."""
        was_running = job.unsupervised if was_running is None else was_running
        survivors = proctree.kill_tree(job.tree(), grace) if job.proc else []
        return self._kill_result(load(job.dir), survivors, was_running)

    def _kill_result(self, job: Job, survivors: builtins.list[int], was_running: bool) -> dict[str, Any]:
        if survivors:
            return {"status": "error", "session_id": job.session_id, "survivors": survivors,
                    "error": f"could not kill {len(survivors)} process(es) of the job: {survivors}"}
        status = "killed" if was_running else "already_exited"
        result = {"status": status, "session_id": job.session_id, **_outcome_fields(job),
                  "output": self._tail_text(job, 2000)}
        if job.outcome.get("completion_reason") == "lost":
            result["note"] = "its supervisor was lost, so its exit code is unknown"
        return result

    # ---- events and retention ----------------------------------------------------------
    @_safe
    def drain_events(self, consumer: str = "default", all_types: bool = False,
                     only_new: bool = False, limit: int = events.DRAIN_LIMIT) -> builtins.list[dict[str, Any]]:
        """Events this consumer has not seen yet, oldest first, each exactly once, at most `limit`
        of them: when more remain the list ends with a `{"type": "more_events"}` entry (see
        docs/api.md)."""
        self._check_consumer(consumer)
        whole(limit, "limit", 1, 100_000)
        return events.drain(self.home, consumer, None if all_types else events.AGENT_TYPES, only_new, limit)

    @_safe
    def forget_consumer(self, consumer: str) -> dict[str, Any]:
        """Delete a consumer's cursor: its next drain starts over (or, with only_new, at the end)."""
        self._check_consumer(consumer)
        events.forget(self.home, consumer)
        return {"status": "ok"}

    @staticmethod
    def _check_consumer(consumer: object) -> None:
        if not events.valid_consumer(consumer):
            raise BadInput(events.CONSUMER_RULE)

    @_safe
    def prune(self, keep_days: float | None = None, keep_count: int | None = None) -> dict[str, Any]:
        """Delete finished jobs past retention (running jobs are kept).

        Returns `ok` with pruned, pruned_ids, kept_finished, pruned_cursors."""
        from .retention import prune

        return prune(self.jobs_dir, keep_days, keep_count)

    def _auto_prune(self) -> None:
        """Apply retention now and then: when an hour has passed since any registry on this
        home last did (one stat), or when jobs pile up past what retention keeps. A prune loads
        every job, so "pile up" means 20 (+10 %) more folders than the last prune left (its
        count is in .last_prune): with hundreds of jobs running, not on every spawn."""
        from .retention import keep_count

        stamp = self.home / ".last_prune"
        try:
            age = time.time() - os.lstat(stamp).st_mtime
        except FileNotFoundError:
            age = math.inf
        try:
            count = _folder_count(self.jobs_dir)
            if age > PRUNE_EVERY or (count > keep_count() + 20 and count > _pruned_left(stamp) * 1.1 + 20):
                write_text_atomic(stamp, str(count))  # replaces a planted link, never follows it
                self.prune()
                write_text_atomic(stamp, str(len(list_job_ids(self.jobs_dir))))
        except (OSError, ValueError):  # best effort: `prune` itself reports bad settings
            pass


def _filed_under(row: dict[str, Any], task_id: str | None, session_key: str | None) -> bool:
    """True when the row matches list()'s task_id / session_key filters (None: any)."""
    return ((task_id is None or row.get("task_id", "") == task_id)
            and (session_key is None or row.get("session_key", "") == session_key))


def _folder_count(jobs_dir: Path) -> int:
    """How many job folders there are, in one stat where the filesystem counts them: a
    directory's link count is 2 + its subdirectories (ext4, xfs, tmpfs, overlayfs; staging
    folders count too, which is close enough for a threshold). Listing 1,000 folders on every
    spawn took ~1 ms; where the count says nothing (btrfs: always 1), the listing."""
    links = os.stat(jobs_dir).st_nlink
    return links - 2 if links > 2 else len(list_job_ids(jobs_dir))


def _pruned_left(stamp: Path) -> int:
    """How many job folders the last automatic prune left (0 when unknown)."""
    try:
        with os.fdopen(open_nofollow(stamp, os.O_RDONLY), "rb") as fh:
            text = fh.read(20).decode("ascii", "replace")
    except OSError:
        return 0
    return int(text) if text.isdigit() else 0


# ---- spawn's argument checks (BadInput: one line) ---------------------------------------
def _check_command(command: object) -> None:
    if not isinstance(command, str) or not command.strip():
        raise BadInput("command must be a non-empty string")
    if "\0" in command:
        raise BadInput("command must not contain NUL characters")


def _check_labels(**labels: object) -> None:
    """name, task_id, session_key: text (or None)."""
    for what, value in labels.items():
        if value is not None and not isinstance(value, str):
            raise BadInput(f"{what} must be a string, not {type(value).__name__}")


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
        raise BadInput(f"Working directory does not exist: {cwd}")
    return cwd


def _check_env(env: object) -> None:
    if env is not None and not (isinstance(env, dict) and all(
            isinstance(k, str) and k and "=" not in k and "\0" not in k + str(v) for k, v in env.items())):
        raise BadInput("env must be a dict of variable names to values")


MAX_WATCH_PATTERNS = 64
MAX_WATCH_CHARS = 1000


def _check_watch_patterns(patterns: object) -> None:
    """Watch patterns are substrings (never regexes: the supervisor tests each output line with
    `in`); their number and length are bounded so a line costs the supervisor little."""
    if not (isinstance(patterns, list) and all(isinstance(p, str) and p for p in patterns)):
        raise BadInput("watch_patterns must be a list of non-empty strings")
    if len(patterns) > MAX_WATCH_PATTERNS or any(len(p) > MAX_WATCH_CHARS for p in patterns):
        raise BadInput(f"watch_patterns takes at most {MAX_WATCH_PATTERNS} strings of at most "
                       f"{MAX_WATCH_CHARS} characters each")


def _job_shell(command: str) -> list[str]:
    """The shell argv that runs `command` (without the command); the shell must exist."""
    shell = shell_argv(command)[:-1]
    if not shutil.which(shell[0]):
        raise BadInput(f"Shell not found: {shell[0]} (set HERMES_PROCS_SHELL to a shell that exists)")
    return shell


def _rerun_shell(meta: dict[str, Any]) -> list[str] | None:
    """The shell a job ran in, for its rerun; None (the default shell) when it is gone or odd."""
    shell = meta.get("shell")
    if isinstance(shell, list) and shell and all(isinstance(a, str) for a in shell) and shutil.which(shell[0]):
        return [str(a) for a in shell]
    return None


def _checked_shell(shell: object) -> list[str]:
    """A shell argv prefix given to spawn: strings without NUL, the program found."""
    if not (isinstance(shell, list) and shell and all(isinstance(a, str) and "\0" not in a for a in shell)):
        raise BadInput("shell must be a list of strings: the program and its arguments before the command")
    if not shutil.which(shell[0]):
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


def _wait_timeout(timeout: float | None) -> tuple[float, str | None]:
    """(seconds to wait, a note when `timeout` was clamped to HERMES_PROCS_MAX_WAIT); None waits
    the maximum. Raises BadNumber for a bad value."""
    maximum = _env_float("HERMES_PROCS_MAX_WAIT", DEFAULT_MAX_WAIT)
    if timeout is None:
        return maximum, None
    timeout = seconds(timeout, "timeout", maximum=math.inf)
    if timeout > maximum:
        return maximum, (f"timeout {timeout:g}s was clamped to the maximum of {maximum:g}s "
                         "(HERMES_PROCS_MAX_WAIT); call wait again to keep waiting")
    return timeout, None


def _outcome_fields(job: Job) -> dict[str, Any]:
    outcome = job.outcome
    return {"exit_code": outcome.get("exit_code"), "completion_reason": outcome.get("completion_reason"),
            "signal": outcome.get("signal")}


def _exit_of_reply(sock: socket.socket) -> dict[str, Any] | None:
    """The exit record in a `wait` reply; None when the supervisor closed or said no more."""
    try:
        sock.settimeout(2.0)
        reply = protocol.read_reply(sock)
    except (protocol.SupervisorGone, OSError, ValueError):
        return None
    record = reply.get("exit")
    return record if isinstance(record, dict) else None


def _output_dropped(job: Job) -> int:
    """Output bytes the supervisor could not store (disk full): from the exit record, else
    from logstate.json."""
    value = (job.exit or {}).get("output_dropped")
    if value is None:
        value = logstore.output_dropped(job.dir)
    return value if isinstance(value, int) and not isinstance(value, bool) else 0


def _os_error(exc: OSError) -> str:
    if isinstance(exc, BlockingIOError):
        return f"cannot fork: {exc.strerror} (too many processes?)"
    return f"{exc.strerror or exc}" + (f": {exc.filename}" if exc.filename else "")


def _short_command(command: str) -> str:
    return repr(command) if len(command) <= 200 else repr(command[:200]) + f"... ({len(command)} characters)"


def _wait_process(root: tuple[int, int] | None, timeout: float, interrupt: Interrupt | None) -> str:
    """Wait for an unsupervised job's process to end: "exited", "timeout" or "interrupted"."""
    deadline = time.monotonic() + timeout
    try:
        fd = os.pidfd_open(root[0]) if root else None
    except OSError:  # gone already, or no pidfd here: look now and then instead
        fd = None
    try:
        while root and proctree.is_alive(*root):
            left = deadline - time.monotonic()
            if left <= 0:
                return "timeout"
            if interrupt is not None and interrupt.is_set():
                return "interrupted"
            select.select([fd] if fd is not None else [], [], [], min(left, 0.05))
        return "exited"
    finally:
        if fd is not None:
            os.close(fd)


def _parse_report(line: bytes) -> dict[str, Any]:
    import json

    try:
        report = json.loads(line)
        if isinstance(report, dict) and ("pid" in report or "error" in report):
            return report
    except ValueError:
        pass
    return {"error": "the supervisor did not start (see supervisor.log in the job folder)"}
