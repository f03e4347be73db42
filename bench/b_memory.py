"""Item 7: supervisor memory per running job, and registry list() time with many finished jobs.

RSS and PSS (shared pages split between the processes sharing them; the honest per-job cost)
of each supervisor of N idle jobs, against an idle `python -I -S` (the interpreter's floor).
list() with 200 and 2,000 finished jobs (folders cloned from real finished jobs): a new registry
against the same with the index of finished jobs removed (the cost before it existed); a warm one against the
least possible work: listdir + reading each job's meta/proc/exit JSON.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

from hermes_procs.core import ProcessRegistry
from hermes_procs.core.registry import listindex
from hermes_procs.core.registry.paths import new_session_id

from .common import Config, Row, cold_spawns, interleave, temp_home, warm_template


def _mem(pid: int) -> tuple[float, float]:
    rss = pss = 0.0
    with open(f"/proc/{pid}/smaps_rollup") as fh:
        for line in fh:
            if line.startswith("Rss:"):
                rss = int(line.split()[1]) / 1024
            elif line.startswith("Pss:"):
                pss = int(line.split()[1]) / 1024
    return rss, pss


def _idle_jobs(reg: ProcessRegistry, n: int) -> list[int]:
    """Spawn n idle jobs; the pids of their supervisors."""
    jobs = [reg.spawn("sleep 600") for _ in range(n)]
    bad = [j for j in jobs if j.get("status") != "running"]
    if bad:
        raise RuntimeError(f"spawn failed: {bad[0]}")
    return [json.loads((reg.job_dir(j["session_id"]) / "proc.json").read_text())["supervisor_pid"] for j in jobs]


def _end_jobs(reg: ProcessRegistry) -> None:
    for row in reg.list():
        if row.get("status") == "running":
            reg.kill(row["session_id"], grace=0.5)


def supervisor_memory(cfg: Config) -> list[Row]:
    """PSS of the supervisors of 10 and 300 idle jobs forked by the warm template, against 10
    started cold (a new interpreter each, as before the template), and an idle python."""
    rows = []
    with temp_home() as cold_home:
        cold_reg = ProcessRegistry(home=cold_home)
        with cold_spawns():
            cold = [_mem(p) for p in _settled(_idle_jobs(cold_reg, 10))]
        floor = [subprocess.Popen([sys.executable, "-I", "-S", "-c", "import time; time.sleep(600)"])
                 for _ in range(10)]
        time.sleep(1.0)
        f = [_mem(p.pid) for p in floor]
        for p in floor:
            p.kill()
            p.wait()
        _end_jobs(cold_reg)
    rows.append(Row("7 supervisor RSS per job, cold", "MB", [x[0] for x in cold], "idle python -I -S",
                    [x[0] for x in f], "< 15 MB", max(x[0] for x in cold) < 15, note="10 idle jobs"))
    for n in (10, 300):
        with temp_home() as home:
            reg = ProcessRegistry(home=home)
            warm_template(reg)
            warm = [_mem(p) for p in _settled(_idle_jobs(reg, n))]
            _end_jobs(reg)
        rows.append(Row(f"7 supervisor PSS per job, {n} jobs, template", "MB", [x[1] for x in warm],
                        "cold, 10 jobs", [x[1] for x in cold], "< 2 MB", _med([x[1] for x in warm]) < 2,
                        note="PSS splits pages shared with the template and the other supervisors"))
    return rows


def _settled(pids: list[int]) -> list[int]:
    time.sleep(1.0)  # let every supervisor reach its idle loop
    return pids


def thousand_jobs(cfg: Config) -> list[Row]:
    """1,000 concurrent idle jobs (bench-full): total supervisor PSS, the 1,000th spawn, list()."""
    if not cfg.full:
        return []
    n = 1000
    with temp_home() as home:
        reg = ProcessRegistry(home=home)
        warm_template(reg)
        pids = _idle_jobs(reg, n - 5)
        last, popen = [], []
        for _ in range(5):
            t0 = time.perf_counter()
            job = reg.spawn("sleep 600")
            last.append((time.perf_counter() - t0) * 1000)
            pids.append(json.loads((reg.job_dir(job["session_id"]) / "proc.json").read_text())["supervisor_pid"])
            t0 = time.perf_counter()
            p = subprocess.Popen(["sleep", "600"], start_new_session=True)
            popen.append((time.perf_counter() - t0) * 1000)
            p.kill()
            p.wait()
        time.sleep(1.0)
        total = sum(_mem(p)[1] for p in pids) / 1024
        # n running jobs, plus the finished one that started the template
        warm_reg = ProcessRegistry(home=home)
        warm_reg.list()
        cold, raw, warm = interleave(cfg.runs, lambda: _list(ProcessRegistry(home=home), n + 1),
                                     lambda: _raw_list(reg.jobs_dir), lambda: _list(warm_reg, n + 1))
        idle = _dashboard_idle(home, cfg.runs)
        _end_jobs(reg)
    return [
        Row("7 1,000 idle jobs: dashboard idle CPU", "% core", idle, "", [], "< 3 %", _med(idle) < 3,
            note="10 s windows (each holds one full re-read of every row), dashboard in tmux over the "
                 "1,000 running jobs"),
        Row("7 1,000 idle jobs: total supervisor PSS", "GB", [total], "", [], "< 2 GB", total < 2),
        Row("7 1,000 idle jobs: spawn of the 996th-1,000th", "ms", last, "subprocess.Popen", popen, "< 5 ms",
            _med(last) < 5),
        Row("7 1,000 idle jobs: list(), new registry", "ms", cold, "listdir + 3 json reads", raw, "< 100 ms",
            _med(cold) < 100),
        Row("7 1,000 idle jobs: list(), warm registry", "ms", warm, "listdir + 3 json reads", raw, "info", None,
            note="what the dashboard pays for each full re-read"),
    ]


def _dashboard_idle(home: Path, runs: int) -> list[float]:
    """% of a core the dashboard uses while it shows `home`'s jobs and nothing happens."""
    from .b_dashboard import _app, cpu_window

    tm, app = _app(home)
    try:
        time.sleep(2.0)  # the first samples of 1,000 jobs
        # the sampler reads the rows on screen every second and every row every 10 s
        return [cpu_window(app, 10.0) for _ in range(runs)]
    finally:
        tm.kill()


def _clone(src: Path, jobs_dir: Path, count: int) -> None:
    for _ in range(count):
        sid = new_session_id()
        dst = jobs_dir / sid
        shutil.copytree(src, dst, ignore=shutil.ignore_patterns("sock", "*.tmp"))
        meta = json.loads((dst / "meta.json").read_text())
        meta["session_id"] = sid
        (dst / "meta.json").write_text(json.dumps(meta))


def _raw_list(jobs_dir: Path) -> float:
    t0 = time.perf_counter()
    out = []
    for name in os.listdir(jobs_dir):
        d = jobs_dir / name
        rec = {}
        for f in ("meta.json", "proc.json", "exit.json"):
            try:
                with open(d / f) as fh:
                    rec[f] = json.load(fh)
            except FileNotFoundError:
                pass
        out.append(rec)
    return (time.perf_counter() - t0) * 1000


def _list(reg: ProcessRegistry, n: int) -> float:
    t0 = time.perf_counter()
    rows = reg.list()
    elapsed = (time.perf_counter() - t0) * 1000
    if not isinstance(rows, list) or len(rows) != n:
        raise RuntimeError(f"list returned {len(rows) if isinstance(rows, list) else rows}")
    return elapsed


def _list_unindexed(home: Path, n: int) -> float:
    (home / listindex.NAME).unlink(missing_ok=True)
    return _list(ProcessRegistry(home=home), n)


def _med(vals):
    import statistics

    return statistics.median(vals)


def list_time(cfg: Config) -> list[Row]:
    rows = []
    with temp_home() as home:
        reg = ProcessRegistry(home=home)
        seeds = [reg.spawn(f"seq 1 {k * 500}; echo done {k}") for k in (1, 2, 3)]
        for j in seeds:
            reg.wait(j["session_id"], timeout=30)
        have = 3
        for n in (200, 2000):
            for i in range(n - have):
                _clone(reg.job_dir(seeds[i % 3]["session_id"]), reg.jobs_dir, 1)
            have = n
            # cold: a new registry each time (what a CLI call or a new dashboard pays), reading
            # the index of finished jobs; against the same without the index (every job folder
            # read, as before the index existed; that list rebuilds it). warm: the same registry
            # again (what the dashboard's sampler pays every second)
            warm_reg = ProcessRegistry(home=home)
            warm_reg.list()
            cold, unindexed, warm, raw = interleave(  # the lambdas run within this iteration
                cfg.runs, lambda: _list(ProcessRegistry(home=home), n),  # noqa: B023
                lambda: _list_unindexed(home, n),  # noqa: B023
                lambda: _list(warm_reg, n), lambda: _raw_list(reg.jobs_dir))  # noqa: B023
            target = 60 if n == 2000 else None
            rows.append(Row(f"7 list() {n} finished jobs, new registry", "ms", cold, "same, no index", unindexed,
                            f"< {target} ms" if target else "info", _med(cold) < target if target else None))
            rows.append(Row(f"7 list() {n} finished jobs, warm registry", "ms", warm, "listdir + 3 json reads",
                            raw, "info", None))
    return rows


def run(cfg: Config) -> list[Row]:
    rows = []
    for part in (supervisor_memory, list_time, thousand_jobs):
        try:
            rows.extend(part(cfg))
        except Exception as exc:  # noqa: BLE001
            rows.append(Row(f"7 {part.__name__}", "", error=f"{type(exc).__name__}: {exc}"))
    return rows
