"""Cost of the live figures in poll/list (awaiting_input, quiet_seconds, cpu_percent, rss_bytes,
process_count, ports: core/supervisor/stats.py), for 1 running job (poll), a job listening on a
port (poll) and 100 running jobs (list).

Each job is `sleep 600`. Baseline: the same call on a registry whose figures are switched off
(they return the idle constants), so the difference is what the /proc reads cost.
"""

from __future__ import annotations

import statistics
import time

from hermes_procs.core import ProcessRegistry
from hermes_procs.core.supervisor import stats

from .common import Config, Row, interleave, temp_home


def _per_call(fn, calls: int) -> float:
    t0 = time.perf_counter()
    for _ in range(calls):
        fn()
    return (time.perf_counter() - t0) / calls * 1000


def _spawn(reg: ProcessRegistry) -> str:
    job = reg.spawn("sleep 600")
    if job.get("status") != "running":
        raise RuntimeError(f"spawn failed: {job}")
    return job["session_id"]


def _serve(reg: ProcessRegistry) -> str:
    """A job listening on a TCP port (its `ports` ask the kernel for the listening sockets)."""
    job = reg.spawn("exec python3 -c 'import socket, time; s = socket.socket(); s.bind((\"127.0.0.1\", 0)); "
                    "s.listen(); print(\"up\", flush=True); time.sleep(600)'")
    got = reg.wait(job["session_id"], timeout=10, until="output:up")
    if got.get("reason") != "matched" or not reg.poll(job["session_id"])["ports"]:
        raise RuntimeError(f"the server did not listen: {got}")
    return job["session_id"]


def run(cfg: Config) -> list[Row]:
    with temp_home() as home:
        reg = ProcessRegistry(home=home)
        plain = ProcessRegistry(home=home)
        plain._figures = lambda job: dict(stats.IDLE)  # the baseline: no /proc reads
        one = _spawn(reg)
        p, pb = interleave(cfg.runs, lambda: _per_call(lambda: reg.poll(one), 50),
                           lambda: _per_call(lambda: plain.poll(one), 50))
        server = _serve(reg)
        s, sb = interleave(cfg.runs, lambda: _per_call(lambda: reg.poll(server), 50),
                           lambda: _per_call(lambda: plain.poll(server), 50))
        reg.kill(server, grace=0.2)
        for _ in range(99):
            _spawn(reg)
        if sum(1 for j in reg.list() if j["status"] == "running") != 100:
            raise RuntimeError("not all 100 jobs are running")
        lst, lb = interleave(cfg.runs, lambda: _per_call(reg.list, 3), lambda: _per_call(plain.list, 3))
    return [
        Row("poll() of 1 running job, with the live figures", "ms", p, "poll() without them", pb, "< 5 ms",
            statistics.median(p) < 5),
        Row("poll() of a job listening on a port, with the live figures and its ports", "ms", s, "poll() without them",
            sb, "< 5 ms", statistics.median(s) < 5, note="listening sockets from netlink sock_diag"),
        Row("list() of 100 running jobs, with the live figures", "ms", lst, "list() without them", lb, "< 100 ms",
            statistics.median(lst) < 100, note="one /proc tree walk per job; CPU % from tick deltas"),
    ]
