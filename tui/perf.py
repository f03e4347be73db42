"""Measure the dashboard's quality bars on this machine: ``python -m hermes_procs.tui.perf``.

1. idle: 10 quiet jobs, the real app in tmux; CPU of the app process over 15 s;
2. flood: ``seq 1 1000000000`` selected; app CPU, RSS growth, and key latency (press ``o``,
   poll ``tmux capture-pane`` until the sort label changes);
3. repaint rate: the same flood in a headless app; log-pane updates per second;
4. 200 jobs: table apply time and key latency in a headless app.

Prints one JSON object.  Needs tmux for 1-2.  Every job it starts is killed at the end.
"""

from __future__ import annotations

import asyncio
import json
import os
import shlex
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from hermes_procs.core import ProcessRegistry

from .demo import kill_running

SORT_CYCLE = ["oldest", "cpu", "memory", "quiet", "status", "name", "newest"]


def _ticks(pid: int) -> int:
    with open(f"/proc/{pid}/stat") as fh:
        f = fh.read().rsplit(")", 1)[1].split()
    return int(f[11]) + int(f[12])


def _rss(pid: int) -> int:
    with open(f"/proc/{pid}/status") as fh:
        for line in fh:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
    return 0


def _cpu(pid: int, seconds: float) -> float:
    hz = os.sysconf("SC_CLK_TCK")
    a = _ticks(pid)
    time.sleep(seconds)
    return round(100.0 * (_ticks(pid) - a) / hz / seconds, 2)


def _tmux(*args: str) -> str:
    return subprocess.run(["tmux", *args], capture_output=True, text=True, timeout=10).stdout


def _key_latency(session: str, presses: int = 14) -> list[float]:
    out = []
    for i in range(presses):
        want = "sort:" + SORT_CYCLE[i % len(SORT_CYCLE)]
        t0 = time.monotonic()
        _tmux("send-keys", "-t", session, "o")
        while want not in _tmux("capture-pane", "-p", "-t", session).split("\n", 1)[0]:
            if time.monotonic() - t0 > 5:
                break
            time.sleep(0.002)
        out.append(round((time.monotonic() - t0) * 1000, 1))
        time.sleep(0.15)
    # finish the cycle so the sort is "newest" again
    return out


def _app_pid(marker: str) -> int:
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        out = subprocess.run(["pgrep", "-f", marker], capture_output=True, text=True).stdout.split()
        for pid in out:
            try:
                if Path(f"/proc/{pid}/comm").read_text().startswith("python"):
                    return int(pid)
            except OSError:
                pass
        time.sleep(0.1)
    raise RuntimeError("the app did not start")


def tmux_bars(home: Path, reg: ProcessRegistry) -> dict:
    started = time.monotonic()
    for i in range(10):
        reg.spawn(f"sleep {3600 + i}", name=f"quiet {i}")
    session = f"hp-perf-{os.getpid()}"
    marker = f"hp-perf-marker-{os.getpid()}"
    code = f"from hermes_procs.tui.app import run; run({str(home)!r})"
    cmd = f"{shlex.quote(sys.executable)} -c {shlex.quote(code)} {marker}"
    _tmux("new-session", "-d", "-s", session, "-x", "120", "-y", "40", cmd)
    result: dict = {}
    try:
        pid = _app_pid(marker)
        time.sleep(4)
        result["idle_cpu_percent_10_new_jobs"] = _cpu(pid, 15)  # run times still tick by the second
        time.sleep(max(0.0, 66 - (time.monotonic() - started)))
        result["idle_cpu_percent_10_jobs_older_than_1_min"] = _cpu(pid, 15)
        flood = reg.spawn("seq 1 1000000000", name="flood")["session_id"]
        time.sleep(1.5)
        _tmux("send-keys", "-t", session, "Up", "Up", "Up", "Up", "Up", "Up", "Up", "Up", "Up", "Up", "Up")
        time.sleep(1.5)
        screen = _tmux("capture-pane", "-p", "-t", session)
        result["flood_selected"] = "flood" in screen.split("\n")[-20:][0] or "flood" in screen
        rss0 = _rss(pid)
        result["flood_cpu_percent"] = _cpu(pid, 5)
        lat = _key_latency(session)
        result["flood_key_latency_ms"] = {"median": sorted(lat)[len(lat) // 2], "max": max(lat), "all": lat}
        time.sleep(3)
        result["flood_rss_growth_mb"] = round((_rss(pid) - rss0) / 1e6, 1)
        result["flood_rss_mb"] = round(_rss(pid) / 1e6, 1)
        result["flood_still_running"] = reg.poll(flood)["status"] == "running"
        result["flood_log_bytes_written"] = sum(p.stat().st_size for p in reg.log_files(flood))
        # 200 jobs: select the next row, wait for the detail title to name it
        reg.kill(flood, grace=0.2)
        for i in range(189):
            reg.spawn(f"sleep {4000 + i}", name=f"many {i}")
        time.sleep(4)
        _tmux("send-keys", "-t", session, "o", "o", "o", "o", "o", "o")  # back to "newest"
        time.sleep(1)
        lat = []
        for _ in range(12):
            before = _detail_title(session)
            t0 = time.monotonic()
            _tmux("send-keys", "-t", session, "Down")
            while _detail_title(session) == before and time.monotonic() - t0 < 5:
                time.sleep(0.002)
            lat.append(round((time.monotonic() - t0) * 1000, 1))
            time.sleep(0.2)
        result["200_jobs_select_latency_ms"] = {"median": sorted(lat)[len(lat) // 2], "max": max(lat), "all": lat}
        result["200_jobs_idle_cpu_percent"] = _cpu(pid, 10)
    finally:
        _tmux("kill-session", "-t", session)
    return result


def _detail_title(session: str) -> str:
    for line in _tmux("capture-pane", "-p", "-t", session).splitlines():
        if line.startswith(" proc_"):
            return line
    return ""


async def _headless(home: Path, reg: ProcessRegistry) -> dict:
    from .app import HermesApp
    from .jobs_table import JobsTable
    from .log_pane import LogPane

    result: dict = {}
    flood = reg.spawn("seq 1 1000000000", name="flood headless")["session_id"]
    app = HermesApp(reg)
    async with app.run_test(size=(120, 40)) as pilot:
        table = app.query_one(JobsTable)
        while flood not in table.rows_by_id:
            await pilot.pause(0.05)
        table.select_id(flood)
        pane = app.query_one(LogPane)
        await pilot.pause(1.0)
        u0, t0 = pane.updates, time.monotonic()
        await pilot.pause(5.0)
        result["flood_log_updates_per_second"] = round((pane.updates - u0) / (time.monotonic() - t0), 1)
        reg.kill(flood, grace=0.2)
    return result


def main() -> None:
    tmp = Path(tempfile.mkdtemp(prefix="hp-perf-"))
    home = tmp / "home"
    reg = ProcessRegistry(home=home)
    out: dict = {"cpus": os.cpu_count(), "loadavg_at_start": os.getloadavg()[0]}
    try:
        if shutil.which("tmux"):
            out.update(tmux_bars(home, reg))
        out.update(asyncio.run(_headless(home, reg)))
    finally:
        kill_running(reg, grace=0.1)
        shutil.rmtree(tmp, ignore_errors=True)
    print(json.dumps(out, indent=2))


if __name__ == "__main__":
    main()
