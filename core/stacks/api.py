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
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from .core_api import IdError, one_line, write_json_atomic
from .loader import load_stack
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
        write_json_atomic(folder / "spec.json", spec.to_dict())
        take_requests(folder)  # left by a client of a supervisor that is gone: not for this one
        _start_supervisor(home, folder)
    result = _wait(folder, timeout) if wait else status(folder)
    return {**result, "warnings": spec.warnings}


def _until_stopped(folder: Path, timeout: float = 120.0) -> None:
    """A `down` under way (the supervisor says `stopping`): wait for it to end, so what comes
    next starts the stack anew instead of talking to a supervisor that no longer listens."""
    deadline = time.monotonic() + timeout
    while _stopping(folder):
        if time.monotonic() > deadline:
            raise StackError(f"stack {folder.name} is still stopping after {timeout:g}s")
        time.sleep(0.05)


def _stopping(folder: Path) -> bool:
    """A `down` is under way: the supervisor runs and says `stopping`."""
    return (read_state(folder) or {}).get("state") == "stopping" and supervisor_alive(folder)


def _same(running: StackSpec, spec: StackSpec) -> bool:
    """The file says what the running stack was brought up with (warnings aside)."""
    return {**running.to_dict(), "warnings": []} == {**spec.to_dict(), "warnings": []}


def _reload(folder: Path, running: StackSpec, spec: StackSpec) -> dict[str, list[str]]:
    """`up` again after the file changed: the new spec.json, and the supervisor asked to apply
    it (new jobs start, changed ones restart, removed ones stop). Returns which were which."""
    changes = {"started": [n for n in spec.jobs if n not in running.jobs],
               "restarted": [n for n in spec.jobs if n in running.jobs and spec.jobs[n] != running.jobs[n]],
               "stopped": [n for n in running.jobs if n not in spec.jobs]}
    write_json_atomic(folder / "spec.json", spec.to_dict())
    _ask(folder, {"op": "reload"})
    return changes


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
    with open(folder / "supervisor.log", "ab") as log:
        proc = subprocess.Popen([sys.executable, "-m", "hermes_procs.core.stacks.daemon", str(home), folder.name],
                                stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=log,
                                start_new_session=True, close_fds=True)
    assert proc.stdout is not None
    line = proc.stdout.readline()
    proc.stdout.close()
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
            return {**result, "status": "error",
                    "error": f"stack {folder.name}: {first['name']} {first['state']}: {first['message']}"}
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
                return {**status(folder), "status": "down"}
    post(folder, {"op": "down"})
    deadline = time.monotonic() + timeout
    while supervisor_alive(folder):
        if time.monotonic() > deadline:
            raise StackError(f"stack {folder.name}: its supervisor did not finish stopping in {timeout:g}s")
        time.sleep(0.05)
    return {**status(folder), "status": "down"}


def _down_here(registry: ProcessRegistry, folder: Path) -> None:
    """`down` with no supervisor running (it died): stop what the state says runs, in order."""
    spec = StackSpec.from_dict(read_spec(folder))
    state = read_state(folder) or {}
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
    spec_path = os.path.abspath(path) if path else None
    if spec_path is None:
        from .loader import find_file

        spec_path = find_file(os.getcwd())
    for name in list_names(home):
        try:
            if read_spec(stack_dir(home, name)).get("source") == spec_path:
                return name
        except StackError:
            continue
    raise StackError(f"no stack was brought up from {spec_path}")


@_safe
def restart(registry: ProcessRegistry, stack: str, job: str | None = None) -> dict[str, Any]:
    """Restart the whole stack (or one job of it); a stack that is down comes up again."""
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
            if job is not None:
                post_quietly(folder, {"op": "restart", "job": job})
            _start_supervisor(home, folder)
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
    return str(run["session_id"])


def status(folder: Path) -> dict[str, Any]:
    """A stack's state as its supervisor last wrote it, corrected when no supervisor runs."""
    state = read_state(folder) or {}
    alive = supervisor_alive(folder)
    jobs = [{"name": n, "state": d.get("state", "waiting"), "session_id": d.get("session_id"),
             "restarts": d.get("restarts", 0), "message": d.get("message", "")}
            for n, d in (state.get("jobs") or {}).items() if isinstance(d, dict)]
    word = str(state.get("state") or "down")
    result: dict[str, Any] = {"status": "ok", "stack": folder.name, "state": word, "supervised": alive,
                              "source": state.get("source"), "format": state.get("format"), "jobs": jobs,
                              "pid": (state.get("supervisor") or {}).get("pid") if alive else None}
    if not alive and word != "down":
        result["state"] = "degraded"
        result["note"] = (f"the supervisor of stack {folder.name} is not running: restarts and probes are paused "
                          f"(hermes-procs restart {folder.name} takes over the running jobs)")
    return result
