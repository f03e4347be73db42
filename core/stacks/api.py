"""The stacks' client side: `up`, `down`, `restart`, `stacks`, as the registry, the CLI, the
agent tool and the dashboard call them. Each returns a JSON-able result and never raises:
``{"status": "error", "error": "<one line>"}`` for a bad file, an unknown stack or job.

    up      validate the file (nothing starts when it is wrong), write spec.json, start the
            stack's supervisor (core/stacks/daemon.py) and return; `wait`: until the stack is
            up, or something failed (then an error naming the job and why). Up again with a
            changed file: the supervisor applies it (`reloaded`: which jobs started,
            restarted, stopped)
    down    ask the supervisor to stop the jobs, dependents first, and wait until it has; with
            no supervisor running, stop them from here in the same order
    restart the whole stack (stopped in reverse order, started in order) or one job
"""

from __future__ import annotations

import functools
import os
import select
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from .core_api import BadNumber, IdError, one_line, open_nofollow, seconds, write_json_atomic
from .loader import load_stack, stack_path
from .model import STACK_NAME, StackError, StackSpec
from .runner import Run
from .stopping import stop_in_order
from .store import (
    list_names,
    post,
    prune_down,
    read_spec,
    read_state,
    stack_dir,
    start_lock,
    supervisor_alive,
    take_requests,
    write_state,
)

if TYPE_CHECKING:
    from .core_api import ProcessRegistry

R = TypeVar("R")
SETTLE = 1.0  # seconds a stack must stay up before `up --wait` says it is
SETTLING = ("waiting", "starting", "restarting")
BAD = ("failed", "blocked", "unready", "stopped")
MAX_UP_WAIT = 3600.0  # seconds `up --wait` waits at most (default 180)
REPORT_WITHIN = 60.0  # seconds a new stack supervisor has to say it runs


def _safe(function: Callable[..., R]) -> Callable[..., R | dict[str, Any]]:
    @functools.wraps(function)
    def wrapper(*args: Any, **kwargs: Any) -> R | dict[str, Any]:
        try:
            return function(*args, **kwargs)
        except (StackError, OSError) as exc:
            return {"status": "error", "error": one_line(str(exc))}
        except Exception as exc:  # noqa: BLE001 - the API's contract: never raise
            return {"status": "error", "error": one_line(f"{type(exc).__name__}: {exc}")}

    return wrapper


def _local(registry: ProcessRegistry) -> Path:
    if getattr(registry, "remote", False):
        raise StackError("stacks run on this machine only: up, down and restart take no --host (yet)")
    return Path(registry.home)


@_safe
def up(registry: ProcessRegistry, path: str | None = None, name: str | None = None, *, wait: bool = False,
       timeout: float | None = None, cwd: str | None = None) -> dict[str, Any]:
    """Validate the stack file and bring the stack up under its own supervisor (see the top)."""
    home = _local(registry)
    if timeout is not None:
        try:
            timeout = seconds(timeout, "timeout", maximum=MAX_UP_WAIT)
        except BadNumber as exc:
            raise StackError(str(exc)) from None
    spec = load_stack(path, name, cwd)
    folder, lock = start_lock(home, spec.name, create=True)
    with lock:
        _until_stopped(folder)
        if supervisor_alive(folder):
            running = StackSpec.from_dict(read_spec(folder))
            if running.source != spec.source:
                raise StackError(f"a stack named {spec.name!r} is already up from {running.source}; down it first "
                                 "or give another --name")
            if _same(running, spec):  # with `wait`, as for a new one: until it is up, or an error naming why not
                result = _wait(folder, timeout) if wait else status(folder)
                if result.get("status") != "error":
                    result["status"] = "already_up"
                return {**result, "warnings": spec.warnings}
            changes = _reload(folder, running, spec)
            if supervisor_alive(folder):
                result = _wait(folder, timeout) if wait else status(folder)
                return {**result, "reloaded": changes, "warnings": spec.warnings}
        else:
            changes = _orphans_to_file(registry, folder, spec)
            spec.warnings.extend(_name_taken_over(folder, spec))
        write_json_atomic(folder / "spec.json", spec.to_dict())
        take_requests(folder)  # left by a client of a supervisor that is gone: not for this one
        _start_supervisor(home, folder)
    result = _wait(folder, timeout) if wait else status(folder)
    return {**result, "warnings": spec.warnings, **({"reloaded": changes} if any(changes.values()) else {})}


def _name_taken_over(folder: Path, spec: StackSpec) -> list[str]:
    """A note when the stack's name was last brought up from another file (now down): `up` and
    `down` in that file's folder will find this one under the name."""
    try:
        old = StackSpec.from_dict(read_spec(folder))
    except StackError:
        return []
    if old.source == spec.source:
        return []
    return [f"stack {spec.name!r} was last brought up from {old.source}; the name now belongs to {spec.source} "
            "(give one of them another name: --name or `name =` in the file)"]


def _orphans_to_file(registry: ProcessRegistry, folder: Path, spec: StackSpec) -> dict[str, list[str]]:
    """Before a new supervisor takes over the jobs of one that died: the file is the same one
    (another file under the name is refused while jobs of the old one may run), and the jobs it
    removed or changed are stopped and forgotten, so that the new supervisor starts the changed
    ones anew and adopts only what the file still says. Returns which were which."""
    state = read_state(folder)
    if not state or state.get("state") in (None, "down"):
        return {}
    try:
        old = StackSpec.from_dict(read_spec(folder))
    except StackError:
        return {}
    if old.source != spec.source:
        raise StackError(f"a stack named {spec.name!r} was up from {old.source} and its jobs may run on (its "
                         "supervisor died): down it first or give another --name")
    changes = _changes(old, spec)
    gone = changes["restarted"] + changes["stopped"]
    jobs = state.get("jobs") or {}
    sessions = {n: str(jobs[n]["session_id"]) for n in gone if isinstance(jobs.get(n), dict)
                and jobs[n].get("session_id")}
    stop_in_order(registry, old, sessions, gone)
    write_state(folder, {**state, "jobs": {n: d for n, d in jobs.items() if n not in gone}})
    return changes


def _until_stopped(folder: Path, timeout: float = 120.0) -> None:
    """A `down` under way (the supervisor says `stopping`): wait for it to end, so what comes
    next starts the stack anew instead of talking to a supervisor that no longer listens."""
    deadline = time.monotonic() + timeout
    while _stopping(folder):
        if time.monotonic() > deadline:
            raise StackError(f"stack {folder.name} is still stopping after {timeout:g}s")
        time.sleep(0.05)


def _stopping(folder: Path) -> bool:
    """A `down` is under way: the supervisor runs and says `stopping`, or already `down` (its
    last write before it exits: a restart in that instant asked a supervisor on its way out)."""
    return (read_state(folder) or {}).get("state") in ("stopping", "down") and supervisor_alive(folder)


def _same(running: StackSpec, spec: StackSpec) -> bool:
    """The file says what the running stack was brought up with (warnings aside)."""
    return {**running.to_dict(), "warnings": []} == {**spec.to_dict(), "warnings": []}


def _reload(folder: Path, running: StackSpec, spec: StackSpec) -> dict[str, list[str]]:
    """`up` again after the file changed: the new spec.json, and the supervisor asked to apply
    it (new jobs start, changed ones restart, removed ones stop). Returns which were which."""
    changes = _changes(running, spec)
    write_json_atomic(folder / "spec.json", spec.to_dict())
    _ask(folder, {"op": "reload"})
    return changes


def _changes(old: StackSpec, new: StackSpec) -> dict[str, list[str]]:
    """Which jobs the new file starts, restarts (changed) and stops (removed)."""
    return {"started": [n for n in new.jobs if n not in old.jobs],
            "restarted": [n for n in new.jobs if n in old.jobs and new.jobs[n] != old.jobs[n]],
            "stopped": [n for n in old.jobs if n not in new.jobs]}


def _ask(folder: Path, request: dict[str, Any], timeout: float = 60.0) -> None:
    """Post a request and wait until the supervisor took it and wrote its state since."""
    before = time.time()
    post(folder, request)
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline and supervisor_alive(folder) and (
            os.listdir(folder / "requests") or (read_state(folder) or {}).get("updated_at", 0) < before):
        time.sleep(0.05)


def _start_supervisor(home: Path, folder: Path) -> int:
    """Start the stack's supervisor (detached) and return its pid once it has reported."""
    try:  # 0600, and never through a link planted in the folder
        log = open_nofollow(folder / "supervisor.log", os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_CLOEXEC)
    except OSError as exc:
        raise StackError(f"cannot write {folder / 'supervisor.log'}: {exc.strerror or exc}") from None
    try:
        proc = subprocess.Popen([sys.executable, "-m", "hermes_procs.core.stacks.daemon", str(home), folder.name],
                                stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=log,
                                start_new_session=True, close_fds=True)
    finally:
        os.close(log)
    assert proc.stdout is not None
    ready, _, _ = select.select([proc.stdout], [], [], REPORT_WITHIN)  # a hang never holds `up` for ever
    line = proc.stdout.readline() if ready else b""
    proc.stdout.close()
    if not ready:
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        proc.wait()
        raise StackError(f"the supervisor of stack {folder.name} did not report within {REPORT_WITHIN:g}s "
                         f"(see {folder / 'supervisor.log'})")
    proc.wait()  # the first process exits at once; the supervisor is its child, no one's zombie
    report = read_json_line(line)
    if "pid" not in report:
        raise StackError(f"the supervisor of stack {folder.name} did not start: "
                         f"{report.get('error') or 'see ' + str(folder / 'supervisor.log')}")
    return int(report["pid"])


def read_json_line(line: bytes) -> dict[str, Any]:
    import json

    try:
        data = json.loads(line)
    except ValueError:
        return {}
    return data if isinstance(data, dict) else {}


def _wait(folder: Path, timeout: float | None) -> dict[str, Any]:
    """Until the stack has been up for SETTLE seconds, a job failed (an error naming it and
    why) or `timeout` passes (an error naming the jobs still settling)."""
    deadline = time.monotonic() + (180.0 if timeout is None else timeout)
    up_since = None
    while True:
        result = status(folder)
        jobs = result.get("jobs", [])
        bad = [j for j in jobs if j["state"] in BAD]
        if bad:
            first = bad[0]
            message = first["message"].removeprefix(f"{first['state']}: ")  # "blocked: a ..." says it twice
            return {**result, "status": "error",
                    "error": f"stack {folder.name}: {first['name']} {first['state']}: {message}"}
        up_since = (up_since or time.monotonic()) if result["state"] == "up" else None
        if up_since is not None and time.monotonic() - up_since >= SETTLE:
            return result  # up, and not for a moment between two crashes of a job with no probe
        if time.monotonic() > deadline:
            settling = ", ".join(f"{j['name']} {j['state']}" for j in jobs if j["state"] in SETTLING)
            return {**result, "status": "error", "error": f"stack {folder.name} is not up yet: {settling}"}
        if result["state"] == "down":
            return {**result, "status": "error", "error": f"stack {folder.name} went down"}
        time.sleep(0.1)


@_safe
def down(registry: ProcessRegistry, stack: str | None = None, path: str | None = None,
         timeout: float = 120.0) -> dict[str, Any]:
    """Stop the stack's jobs, dependents first, and its supervisor."""
    home = _local(registry)
    name = stack if stack else _name_of_file(home, path)
    folder = stack_dir(home, name)
    if not supervisor_alive(folder):
        folder, lock = start_lock(home, name, create=False)
        with lock:  # no up starting a supervisor while this one stops the jobs itself
            if not supervisor_alive(folder):
                _down_here(registry, folder)
                _stop_strays(registry, folder.name)
                return {**status(folder), "status": "down"}
    post(folder, {"op": "down"})
    deadline = time.monotonic() + timeout
    while supervisor_alive(folder):
        if time.monotonic() > deadline:
            raise StackError(f"stack {folder.name}: its supervisor did not finish stopping in {timeout:g}s")
        time.sleep(0.05)
    _stop_strays(registry, folder.name)
    return {**status(folder), "status": "down"}


def _stop_strays(registry: ProcessRegistry, name: str) -> None:
    """Kill the stack's jobs that still run though its state does not name them: a supervisor
    killed between starting a job and writing that down (a later one does not know it)."""
    for job in registry.list():
        if isinstance(job, dict) and job.get("stack") == name and job.get("status") == "running":
            registry.kill(str(job["session_id"]))


def _down_here(registry: ProcessRegistry, folder: Path) -> None:
    """`down` with no supervisor running (it died): stop what the state says runs, in order."""
    spec = StackSpec.from_dict(read_spec(folder))
    state = read_state(folder)
    if state is None and (folder / "state.json").exists():  # then no job is known to be stopped
        raise StackError(f"stack {folder.name}: its state cannot be read: its jobs are left running "
                         f"(hermes-procs ls --stack {folder.name} lists them; kill them by id)")
    state = state or {}
    runs = {n: Run.from_dict(n, d) for n, d in (state.get("jobs") or {}).items() if n in spec.jobs}
    sessions = {n: r.session_id for n, r in runs.items() if r.session_id}
    stop_in_order(registry, spec, sessions)
    for run in runs.values():
        if run.state not in ("exited", "failed", "off"):
            run.state, run.message = "stopped", "stopped"
    write_state(folder, {**state, "state": "down", "supervisor": None, "updated_at": time.time(),
                         "jobs": {n: r.to_dict() for n, r in runs.items()}})


def _name_of_file(home: Path, path: str | None) -> str:
    """The stack brought up from `path` (None: the stack file of the current folder)."""
    try:
        spec_path = stack_path(path)  # as up read it: a folder, ~ and a relative path too
    except StackError:  # a file deleted or renamed since: its path as given still names the stack
        spec_path = os.path.abspath(os.path.expanduser(path or ""))
    names = []
    for name in list_names(home):
        try:
            if read_spec(stack_dir(home, name)).get("source") == spec_path:
                names.append(name)
        except StackError:
            continue
    up = [n for n in names if (read_state(stack_dir(home, n)) or {}).get("state") not in (None, "down")]
    names = up or names[:1]  # those down already need no stopping
    if len(names) > 1:  # up --name a, then up --name b: down -f stopped the first only
        raise StackError(f"{spec_path} was brought up as {', '.join(names)}: name the one to stop")
    if not names:
        raise StackError(f"no stack was brought up from {spec_path}")
    return names[0]


@_safe
def restart(registry: ProcessRegistry, stack: str, job: str | None = None) -> dict[str, Any]:
    """Restart the whole stack (or one job of it); a stack that is down comes up again, one
    whose supervisor died gets a new one, which takes over its jobs and restarts them."""
    home = _local(registry)
    folder = stack_dir(home, stack)
    spec = StackSpec.from_dict(read_spec(folder))
    if job is not None and job not in spec.jobs:
        raise StackError(f"stack {stack} has no job {job!r} (jobs: {', '.join(spec.jobs)})")
    if supervisor_alive(folder) and not _stopping(folder):
        _ask(folder, {"op": "restart", "job": job})
        if supervisor_alive(folder):
            return {**status(folder), "status": "ok"}
    folder, lock = start_lock(home, stack, create=False)  # down, or going down: start it again
    with lock:
        _until_stopped(folder)
        if not supervisor_alive(folder):
            take_requests(folder)  # left for a supervisor that is gone (a second down): not for this one
            crashed = status(folder)["state"] != "down"  # its jobs are taken over, then restarted
            if job is not None and not crashed:
                post_quietly(folder, {"op": "restart", "job": job})
            _start_supervisor(home, folder)
            if crashed:
                _ask(folder, {"op": "restart", "job": job})  # answered as a live supervisor's restart is
            return {**status(folder), "status": "ok"}
    _ask(folder, {"op": "restart", "job": job})  # another client started it meanwhile
    return {**status(folder), "status": "ok"}


def post_quietly(folder: Path, request: dict[str, Any]) -> None:
    """A request for the supervisor about to start (no one to wake yet)."""
    from .core_api import ensure_private_dir

    requests = ensure_private_dir(folder / "requests")
    write_json_atomic(requests / f"{time.time_ns():020d}-{os.getpid()}.json", request)


@_safe
def stacks(registry: ProcessRegistry, name: str | None = None) -> list[dict[str, Any]]:
    """Every stack of the home (or only `name`): its state and its jobs'."""
    home = _local(registry)
    names = [name] if name else list_names(home)
    return [status(stack_dir(home, n)) for n in names]


def prune(home: Path, too_old: float) -> list[str]:
    """The registry's prune: the stacks down since before `too_old` go (store.prune_down)."""
    return prune_down(home, too_old)


def job_id(home: Path, name: str) -> str:
    """The session id of `STACK/JOB`'s current run (the registry takes it wherever an id goes);
    IdError naming what is missing."""
    stack, _, job = name.partition("/")
    if not STACK_NAME.fullmatch(stack) or not job:
        shown = name if len(name) <= 60 and name.isprintable() else repr(name[:60])
        raise IdError("error", f"Invalid session id {shown}: expected proc_ + 12 hex digits, a prefix of at least "
                               "4, or STACK/JOB")
    try:
        state = read_state(stack_dir(home, stack)) or {}
    except StackError as exc:
        raise IdError("not_found", f"No process named {name}: {exc}") from None
    run = (state.get("jobs") or {}).get(job)
    if not isinstance(run, dict):
        jobs = ", ".join(state.get("jobs") or {})
        raise IdError("not_found", f"No process named {name}: stack {stack} has no job {job!r} (jobs: {jobs})")
    if not run.get("session_id"):
        raise IdError("not_found", f"No process named {name}: {job} has not started ({run.get('state')})")
    sid = str(run["session_id"])
    if not (home / "jobs" / sid).is_dir():
        raise IdError("not_found", f"No process named {name}: its last run, {sid}, was pruned "
                                   f"(restart {stack} {job} runs it again)")
    return sid


def status(folder: Path) -> dict[str, Any]:
    """A stack's state as its supervisor last wrote it, corrected when no supervisor runs."""
    state = read_state(folder) or {}
    alive = supervisor_alive(folder)
    jobs = [{"name": n, "state": d.get("state", "waiting"), "session_id": d.get("session_id"),
             "restarts": d.get("restarts", 0), "message": d.get("message", "")}
            for n, d in (state.get("jobs") or {}).items() if isinstance(d, dict)]
    jobs_dir = folder.parent.parent / "jobs"  # <home>/stacks/<name> -> <home>/jobs
    for job in jobs:
        if isinstance(job["session_id"], str) and not (jobs_dir / job["session_id"]).is_dir():
            job["message"] = "its last run was pruned"
    unreadable = not state and (folder / "state.json").exists()
    word = "unknown" if unreadable else str(state.get("state") or "down")
    result: dict[str, Any] = {"status": "ok", "stack": folder.name, "state": word, "supervised": alive,
                              "source": state.get("source"), "format": state.get("format"), "jobs": jobs,
                              "pid": (state.get("supervisor") or {}).get("pid") if alive else None}
    if unreadable:
        result["note"] = f"the state of stack {folder.name} cannot be read (hermes-procs ls --stack {folder.name})"
    elif not alive and word != "down":
        result["state"] = "degraded"
        result["note"] = _orphan_note(folder.name, state.get("source"))
    return result


def _orphan_note(name: str, source: object) -> str:
    """What to do about a stack whose supervisor died: `up` takes over, `restart` restarts."""
    import shlex

    again = f"hermes-procs up -f {shlex.quote(source)} --name {name}" if isinstance(source, str) else "up"
    return (f"the supervisor of stack {name} is not running: restarts and probes are paused "
            f"({again} takes over the running jobs; restart {name} restarts them)")
