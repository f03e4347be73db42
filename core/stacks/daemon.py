"""The stack supervisor: one small detached process per running stack (``hp-stack``).

    python -m hermes_procs.core.stacks.daemon HOME NAME

`up` writes the stack's spec.json and starts this program; it forks once more (so it is no
client's child), holds the stack's supervisor.lock for its whole life, reports its pid on
stdout, and runs the stack until `down`: it starts each job when its dependencies allow
(registry.spawn, jobs named as in the file, carrying `stack` and `restarts`), steps readiness
probes, applies restart policies with doubling capped backoff, restarts jobs whose watched
files changed, answers requests (down, restart), and writes state.json at every change.
Every job stays an ordinary durable job under its own supervisor: this process dying only
pauses the stack's policies (a later `up` adopts the running jobs), and closing the dashboard,
the CLI or the agent changes nothing. SIGTERM is `down`; SIGINT and SIGHUP are ignored.
"""

from __future__ import annotations

import json
import os
import select
import signal
import sys
import threading
import time
from pathlib import Path
from typing import Any

from .core_api import HomeWatch, ProcessRegistry, one_line, start_ticks
from .filewatch import FileWatch
from .model import StackSpec
from .probes import ProbeRun
from .runner import GOOD, Run, after_exit, dependency_verdict
from .stopping import stop_in_order
from .store import Lock, read_spec, read_state, stack_dir, take_requests, write_state

IDLE = 2.0  # seconds between looks at the jobs when nothing wakes the loop
LIVE = ("starting", "ready", "unready")  # states in which a run's session runs


class StackSupervisor:
    """The loop of one stack (see the module docstring)."""

    def __init__(self, home: Path, name: str) -> None:
        self.folder = stack_dir(home, name)
        self.spec = StackSpec.from_dict(read_spec(self.folder))
        self.registry = ProcessRegistry(home=home, host="local")
        self.runs = {n: Run(n) for n in self.spec.jobs}
        self.probes: dict[str, ProbeRun] = {}
        self.watches = {n: FileWatch(self.spec.root, j.watch) for n, j in self.spec.jobs.items() if j.watch}
        self.changed: dict[str, tuple[float, list[str]]] = {}  # name -> (when files last changed, which)
        self.next_scan = 0.0
        self.ours: set[str] = set()  # sessions this supervisor killed (their end is no crash)
        self.stopping = False
        self.ever_up = False
        self.saved = ""
        self.wake_r, self.wake_w = os.pipe2(os.O_NONBLOCK | os.O_CLOEXEC)

    # ---- life --------------------------------------------------------------------------
    def prepare(self) -> None:
        """Before the starter hears from us: the signals a client sends handled (SIGUSR1's
        default would end the process: a `down` right after `up` left its jobs running), the
        previous supervisor's runs taken over and state.json written, so what the starter
        reads next is ours."""
        signal.signal(signal.SIGUSR1, lambda *_: None)  # a request: the wake-up fd does the rest
        signal.signal(signal.SIGTERM, self._terminate)
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        signal.signal(signal.SIGHUP, signal.SIG_IGN)
        signal.set_wakeup_fd(self.wake_w, warn_on_full_buffer=False)
        self.adopt()
        self.save()

    def run(self) -> int:
        with HomeWatch(self.registry.home) as watch:
            while not self.stopping:
                self.requests()
                if self.stopping:
                    break
                self.refresh()
                self.advance()
                self.save()
                self.sleep(watch)
        self.save()  # `stopping`, before the jobs are stopped: clients wait for the end of it
        self.down()
        return 0

    def _terminate(self, *_: Any) -> None:
        self.stopping = True

    def sleep(self, watch: HomeWatch) -> None:
        now, mono = time.time(), time.monotonic()
        waits = [IDLE]
        waits += [p.next_at - mono for p in self.probes.values()]
        waits += [r.next_start - now for r in self.runs.values() if r.state == "restarting"]
        if self.watches:
            waits.append(self.next_scan - mono)
        timeout = max(0.0, min(waits))
        fds = [self.wake_r] + ([watch.fd] if watch.fd is not None else [])
        try:
            ready, _, _ = select.select(fds, [], [], timeout)
        except InterruptedError:
            ready = []
        if self.wake_r in ready:
            try:
                while os.read(self.wake_r, 512):
                    pass
            except BlockingIOError:
                pass
        if watch.fd is not None and watch.fd in ready:
            watch.drain()

    def log(self, message: str) -> None:
        sys.stderr.write(f"{time.strftime('%H:%M:%S')} {self.spec.name}: {one_line(message)}\n")
        sys.stderr.flush()

    # ---- what the previous supervisor left ---------------------------------------------
    def adopt(self) -> None:
        """Take over the runs of a supervisor that died (state.json not `down`): running jobs
        are kept (probed again), the others go on from their recorded state."""
        previous = read_state(self.folder) or {}
        if previous.get("state") in (None, "down"):
            return
        for name, data in (previous.get("jobs") or {}).items():
            if name not in self.runs:
                continue
            run = self.runs[name] = Run.from_dict(name, data)
            if run.state in LIVE and run.session_id:
                self.log(f"{name}: adopted {run.session_id}")
                if run.state == "starting" and self.spec.jobs[name].ready:
                    self.probe(name)
            elif run.state == "restarting":
                run.next_start = min(run.next_start, time.time())

    # ---- requests ----------------------------------------------------------------------
    def requests(self) -> None:
        for request in take_requests(self.folder):
            op, job = request.get("op"), request.get("job")
            self.log(f"request: {op} {job or ''}")
            if op == "down":
                self.stopping = True
            elif op == "reload":
                self.reload()
            elif op == "restart" and job in self.runs:
                self.restart_job(str(job), "restarted on request", manual=True)
            elif op == "restart":
                self.restart_all()

    def restart_all(self) -> None:
        self.stop(list(self.runs))
        for run in self.runs.values():
            restarts = run.restarts + (1 if run.started else 0)
            run.reset()
            run.restarts = restarts
        self.ever_up = False

    def restart_job(self, name: str, why: str, manual: bool = False) -> None:
        run = self.runs[name]
        self.stop([name])
        if run.started:
            run.restarts += 1
        run.crashes = 0
        run.state, run.message, run.why = "waiting", why, why
        if manual:  # a restart by hand: the policy's max_restarts counts afresh
            run.extra["manual"] = True
            run.policy_restarts = 0
        self.log(f"{name}: {why}")

    def reload(self) -> None:
        """spec.json rewritten by `up` after the file changed: removed jobs stop, changed ones
        restart, new ones start when their dependencies allow; the others run on."""
        new = StackSpec.from_dict(read_spec(self.folder))
        gone = [n for n in self.spec.jobs if n not in new.jobs]
        changed = [n for n in new.jobs if n in self.spec.jobs and new.jobs[n] != self.spec.jobs[n]]
        self.stop(gone + changed)  # in the old stack's order
        for name in gone:
            self.runs.pop(name)
            self.changed.pop(name, None)
        self.spec = new
        self.runs = {n: self.runs.get(n) or Run(n) for n in new.jobs}
        for name in changed:
            run = self.runs[name]
            run.restarts += 1 if run.started else 0
            run.crashes = run.policy_restarts = 0
            run.state = "waiting"
            run.message = run.why = "restarted: its definition changed"
        self.watches = {n: FileWatch(new.root, j.watch) for n, j in new.jobs.items() if j.watch}
        self.ever_up = False
        self.log(f"reloaded: stopped {gone}, restarting {changed}")

    def stop(self, names: list[str]) -> None:
        sessions = {n: r.session_id for n, r in self.runs.items() if r.session_id and r.state in LIVE and n in names}
        self.ours.update(sessions.values())
        lock = threading.Lock()

        def stopped(name: str) -> None:  # going down, `stacks` shows each job stopped as it ends
            if not self.stopping:  # a reload or restart: the job starts again, not "stopped"
                return
            with lock:
                self.runs[name].state, self.runs[name].message = "stopped", "stopped"
                self.save()

        for name, result in stop_in_order(self.registry, self.spec, sessions, names, stopped).items():
            if result.get("status") == "error":
                self.log(f"{name}: could not stop {sessions[name]}: {result.get('error')}")
        for name in names:
            self.close_probe(name)
            if self.runs[name].state in LIVE or self.runs[name].state == "restarting":
                self.runs[name].state, self.runs[name].message = "stopped", "stopped"

    def down(self) -> None:
        self.log("down")
        self.stop(list(self.runs))
        for run in self.runs.values():
            if run.state in ("waiting", "blocked", "restarting"):
                run.state, run.message = "stopped", "stopped"
        self.save(final=True)

    # ---- the jobs ----------------------------------------------------------------------
    def refresh(self) -> None:
        """Notice runs that ended (and someone's rerun of a stopped job, which is adopted)."""
        live = {r.session_id: r for r in self.runs.values() if r.state in LIVE and r.session_id}
        if not live:
            return self.adopt_reruns()
        rows = self.registry.list(only=list(live))
        found = {row["session_id"]: row for row in rows} if isinstance(rows, list) else None
        if found is None:
            return None
        for sid, run in live.items():
            row = found.get(sid)
            if row is not None and row.get("status") == "running":
                continue
            self.close_probe(run.name)
            if sid in self.ours:
                continue
            code = row.get("exit_code") if row else None
            reason = (row.get("completion_reason") if row else None) or "lost"
            after_exit(self.spec.jobs[run.name], run, code, reason, time.time(), stack=self.spec.name)
            self.log(f"{run.name}: {run.message}")
        return self.adopt_reruns()

    def adopt_reruns(self) -> None:
        """A stopped job rerun from the dashboard or CLI (`restart ID`: same name and stack,
        rerun_of its session) becomes the job's run again."""
        stopped = {r.session_id: r for r in self.runs.values() if r.state == "stopped" and r.session_id}
        if not stopped:
            return
        rows = self.registry.list()
        for row in rows if isinstance(rows, list) else []:
            run = stopped.get(row.get("rerun_of") or "")
            if run is not None and row.get("stack") == self.spec.name and row.get("status") == "running":
                run.session_id, run.started, run.started_at = row["session_id"], True, time.time()
                run.restarts += 1
                if self.spec.jobs[run.name].ready:  # ready once its probe passes, as any start
                    run.state = "starting"
                    self.probe(run.name)
                else:
                    run.state, run.ready, run.message = "ready", True, "rerun by hand"
                self.log(f"{run.name}: adopted rerun {run.session_id}")

    def advance(self) -> None:
        now = time.time()
        for name in self.spec.order():
            run = self.runs[name]
            if run.state in ("waiting", "blocked", "off"):
                self.consider(name)
            elif run.state == "restarting" and run.next_start <= now:
                run.restarts += 1
                run.policy_restarts += 1
                self.start(name)
            elif run.state == "starting" and name in self.probes:
                self.step_probe(name)
        self.watch_files()

    def consider(self, name: str) -> None:
        """Start a waiting job whose dependencies allow it; block it when one cannot."""
        job, run = self.spec.jobs[name], self.runs[name]
        if not job.autostart and not run.extra.get("manual"):
            run.state, run.message = "off", "not started automatically (restart STACK JOB starts it)"
            return
        verdicts = [dependency_verdict(c, self.runs[d]) for d, c in job.depends_on.items()]
        failed = [v for v in verdicts if v not in (None, "wait")]
        if failed:
            message = f"blocked: {failed[0]}"
            if run.state != "blocked" or run.message != message:
                run.state, run.message = "blocked", message
                self.log(f"{name}: {message}")
        elif "wait" in verdicts:
            waits = [d for d, c in job.depends_on.items() if dependency_verdict(c, self.runs[d]) == "wait"]
            run.state, run.message = "waiting", f"waiting for {', '.join(waits)}"
        else:
            self.start(name)

    def start(self, name: str) -> None:
        job, run = self.spec.jobs[name], self.runs[name]
        port = job.ready.own_port() if job.ready else None  # the port guard
        result = self.registry.spawn(job.command, cwd=job.cwd, env=job.env, pty=job.pty, name=name, port=port,
                                     stack=self.spec.name, restarts=run.restarts, rerun_of=run.session_id)
        now = time.time()
        if result.get("status") != "running":
            after_exit(job, run, None, "start_failed", now, f"could not start: {result.get('error')}",
                       stack=self.spec.name)
            self.log(f"{name}: {run.message}")
            return
        run.session_id, run.started, run.started_at = result["session_id"], True, now
        run.message = run.why
        if job.ready:
            run.state = "starting"
            self.probe(name)
        else:
            run.state, run.ready = "ready", True
        self.log(f"{name}: started {run.session_id} (restarts {run.restarts})")

    def probe(self, name: str) -> None:
        job, run = self.spec.jobs[name], self.runs[name]
        assert job.ready is not None and run.session_id is not None
        self.close_probe(name)
        self.probes[name] = ProbeRun(job.ready, self.registry, run.session_id, job.cwd, job.env)
        run.message = f"waiting for {job.ready.describe()}"

    def step_probe(self, name: str) -> None:
        run, probe = self.runs[name], self.probes[name]
        verdict = probe.step()
        if verdict == "ready":
            run.state, run.ready, run.message = "ready", True, run.why
            self.log(f"{name}: ready ({probe.probe.describe()})")
        elif verdict == "timeout":
            run.state, run.message = "unready", probe.timeout_message()
            self.log(f"{name}: {run.message}")
        if verdict is not None:
            self.close_probe(name)

    def close_probe(self, name: str) -> None:
        probe = self.probes.pop(name, None)
        if probe is not None:
            probe.close()

    def watch_files(self) -> None:
        """Look at watched files every watch_interval; restart a job once its files have been
        quiet for `debounce` seconds after a change."""
        mono = time.monotonic()
        if not self.watches or mono < self.next_scan:
            return
        self.next_scan = mono + self.spec.watch_interval
        for name, watch in self.watches.items():
            changes = watch.changes()
            if changes:
                old = self.changed.get(name, (0.0, []))[1]
                self.changed[name] = (mono, sorted(set(old) | set(changes)))
            elif name in self.changed and mono - self.changed[name][0] >= self.spec.debounce:
                files = self.changed.pop(name)[1]
                if self.runs[name].started:
                    shown = ", ".join(files[:3]) + (f" and {len(files) - 3} more" if len(files) > 3 else "")
                    self.restart_job(name, f"restarted: {shown} changed")

    # ---- state.json --------------------------------------------------------------------
    def stack_state(self) -> str:
        states = [r.state for n, r in self.runs.items() if self.spec.jobs[n].autostart or r.started]
        if self.stopping:
            return "stopping"
        if all(s in GOOD for s in states):
            self.ever_up = True
            return "up"
        if any(s in ("failed", "blocked", "unready", "stopped") for s in states) or self.ever_up:
            return "degraded"
        return "starting"

    def save(self, final: bool = False) -> None:
        pid = os.getpid()
        state = {"name": self.spec.name, "state": "down" if final else self.stack_state(),
                 "source": self.spec.source, "format": self.spec.format,
                 "supervisor": None if final else {"pid": pid, "start_ticks": start_ticks(pid)},
                 "order": self.spec.order(), "jobs": {n: r.to_dict() for n, r in self.runs.items()}}
        text = json.dumps(state, sort_keys=True)
        if text != self.saved:
            self.saved = text
            write_state(self.folder, {**state, "updated_at": time.time()})


def main(argv: list[str]) -> int:
    """Detach (fork: the starter waits only for the first process), take the lock, report
    `{"pid": N}` (or `{"error": ...}`) on stdout, then run the stack."""
    home, name = Path(argv[0]), argv[1]
    if os.fork() > 0:
        os._exit(0)
    _name_process(b"hp-stack")
    os.chdir("/")
    try:
        lock = Lock(stack_dir(home, name) / "supervisor.lock", wait=False)
    except BlockingIOError:
        return _report({"error": "its supervisor is already running"})
    try:
        supervisor = StackSupervisor(home, name)
        supervisor.prepare()
    except Exception as exc:  # noqa: BLE001 - reported to the starter as one line
        return _report({"error": f"{type(exc).__name__}: {exc}"})
    _report({"pid": os.getpid()})
    try:
        return supervisor.run()
    finally:
        lock.close()


def _report(message: dict[str, Any]) -> int:
    os.write(1, (json.dumps(message) + "\n").encode())
    null = os.open(os.devnull, os.O_WRONLY)
    os.dup2(null, 1)
    os.close(null)
    return 1 if "error" in message else 0


def _name_process(name: bytes) -> None:
    """The name ps and top show (comm), as the job supervisors name themselves."""
    try:
        import ctypes

        ctypes.CDLL(None).prctl(15, ctypes.c_char_p(name), 0, 0, 0)  # PR_SET_NAME
    except (OSError, AttributeError):
        pass


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
