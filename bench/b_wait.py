"""Item 4: wait wake latency, from the job's exit to wait() returning.

The job is `sleep 600` (bash execs it, so the job's pid is the sleep). A thread blocks in
wait(); we SIGKILL the pid at t0 (the exit is immediate) and take the moment wait() returns.
Baseline: the same for a subprocess.Popen child and Popen.wait() in a thread.
"""

from __future__ import annotations

import os
import signal
import subprocess
import threading
import time

from hermes_procs.core import ProcessRegistry

from .common import Config, Row, cold_spawns, interleave, temp_home, warm_template

SETTLE = 0.1  # let the waiter connect and block before the exit


def _hermes(reg: ProcessRegistry, interrupt: bool) -> float:
    job = reg.spawn("sleep 600")
    if job.get("status") != "running":
        raise RuntimeError(f"spawn failed: {job}")
    done = {}

    def waiter():
        ev = threading.Event() if interrupt else None
        res = reg.wait(job["session_id"], timeout=30, interrupt=ev)
        done["t"] = time.perf_counter()
        done["res"] = res

    th = threading.Thread(target=waiter)
    th.start()
    time.sleep(SETTLE)
    t0 = time.perf_counter()
    os.kill(job["pid"], signal.SIGKILL)
    th.join(30)
    if done.get("res", {}).get("status") != "exited":
        raise RuntimeError(f"wait: {done.get('res')}")
    return (done["t"] - t0) * 1000


def _popen() -> float:
    proc = subprocess.Popen(["sleep", "600"], start_new_session=True)
    done = {}

    def waiter():
        proc.wait()
        done["t"] = time.perf_counter()

    th = threading.Thread(target=waiter)
    th.start()
    time.sleep(SETTLE)
    t0 = time.perf_counter()
    os.kill(proc.pid, signal.SIGKILL)
    th.join(30)
    return (done["t"] - t0) * 1000


def _quick_job(reg: ProcessRegistry) -> float:
    """spawn('true') then wait(): the job has exited (or is about to) when wait() starts."""
    job = reg.spawn("true")
    if job.get("status") != "running":
        raise RuntimeError(f"spawn failed: {job}")
    t0 = time.perf_counter()
    res = reg.wait(job["session_id"], timeout=30)
    if res.get("status") != "exited":
        raise RuntimeError(f"wait: {res}")
    return (time.perf_counter() - t0) * 1000


def _popen_quick() -> float:
    proc = subprocess.Popen(["true"])
    t0 = time.perf_counter()
    proc.wait()
    return (time.perf_counter() - t0) * 1000


def _any_of(reg: ProcessRegistry, others: list[str]) -> float:
    """wait_any over `others` (running) plus one more job; that one is killed at t0."""
    job = reg.spawn("sleep 600")
    done = {}

    def waiter():
        done["res"] = reg.wait_any([*others, job["session_id"]], timeout=30)
        done["t"] = time.perf_counter()

    th = threading.Thread(target=waiter)
    th.start()
    time.sleep(SETTLE)
    t0 = time.perf_counter()
    os.kill(job["pid"], signal.SIGKILL)
    th.join(30)
    if done.get("res", {}).get("session_id") != job["session_id"]:
        raise RuntimeError(f"wait_any: {done.get('res')}")
    return (done["t"] - t0) * 1000


def run(cfg: Config) -> list[Row]:
    with temp_home() as home:
        reg = ProcessRegistry(home=home)
        warm_template(reg)
        h, hi, p = interleave(cfg.runs, lambda: _hermes(reg, False), lambda: _hermes(reg, True), _popen)
        others = [reg.spawn("sleep 600")["session_id"] for _ in range(99)]
        many, one = interleave(cfg.runs, lambda: _any_of(reg, others), lambda: _hermes(reg, False))
        for sid in others:
            reg.kill(sid, grace=0.1)

        def cold():
            with cold_spawns():
                return _quick_job(reg)

        q, qc, qp = interleave(cfg.runs, lambda: _quick_job(reg), cold, _popen_quick)
    return [
        Row("4 wait() right after spawn of `true`", "ms", q, "Popen('true').wait()", qp, "< 5 ms", _med(q) < 5,
            note="template warm; the job exits while the supervisor starts"),
        Row("4 wait() right after spawn of `true`, cold", "ms", qc, "Popen('true').wait()", qp, "info", None,
            note="no template: a new interpreter per supervisor"),
        Row("4 wait wake latency", "ms", h, "Popen.wait()", p, "< 10 ms", _med(h) < 10),
        Row("4 wait wake latency, with interrupt", "ms", hi, "Popen.wait()", p, "< 10 ms", _med(hi) < 10,
            note="wait(interrupt=Event) re-checks the event every 50 ms"),
        Row("4 wait_any of 100 running jobs, one exits", "ms", many, "wait() of that one job", one, "< 100 ms",
            _med(many) < 100, note="woken by inotify on the home (the exit's event line), then 100 loads"),
    ]


def _med(vals):
    import statistics

    return statistics.median(vals)
