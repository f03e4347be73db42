"""Shared helpers: interleaved A/B runs, statistics, result rows, temporary homes.

Every figure is measured against a baseline taken in the same run, interleaved A B A B ...,
so load from other processes on the machine hits both sides alike. A row reports the median of
the runs with min and max, the baseline's median, their ratio, the target and whether it is met.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PY = sys.executable


@dataclass
class Config:
    full: bool = False
    runs: int = 5
    only: list[str] = field(default_factory=list)

    def size(self, quick, full):
        return full if self.full else quick


@dataclass
class Row:
    """One line of the table. `higher_better` says which way the ratio should go."""

    name: str
    unit: str
    values: list[float] = field(default_factory=list)
    base_name: str = ""
    base_values: list[float] = field(default_factory=list)
    target: str = ""  # human text, e.g. "< 30 ms" or ">= 0.9x"
    met: bool | None = None
    note: str = ""
    error: str = ""

    @property
    def value(self) -> float | None:
        return statistics.median(self.values) if self.values else None

    @property
    def base(self) -> float | None:
        return statistics.median(self.base_values) if self.base_values else None

    @property
    def ratio(self) -> float | None:
        if self.value is None or not self.base:
            return None
        return self.value / self.base

    def as_dict(self) -> dict:
        def stats(vals):
            if not vals:
                return None
            return {"median": statistics.median(vals), "min": min(vals), "max": max(vals), "n": len(vals),
                    "runs": vals}

        return {"name": self.name, "unit": self.unit, "value": stats(self.values),
                "baseline_name": self.base_name, "baseline": stats(self.base_values), "ratio": self.ratio,
                "target": self.target, "met": self.met, "note": self.note, "error": self.error}


def interleave(runs: int, *sides, warmup: int = 1, between=None) -> list[list[float]]:
    """Call each side (a no-arg function returning a number) in turn, A B C A B C ..., `runs` times.

    A warm-up round is run first and discarded. Returns one list of values per side. The order
    alternates each round (A B, then B A) so neither side always runs right after the other.
    """
    out = [[] for _ in sides]
    for i in range(warmup + runs):
        order = list(range(len(sides)))
        if i % 2:
            order.reverse()
        for k in order:
            value = sides[k]()
            if i >= warmup:
                out[k].append(value)
            if between:
                between()
    return out


@contextlib.contextmanager
def temp_home(prefix: str = "hpb"):
    """A fresh state home under /tmp (short path: socket paths stay under 108 bytes)."""
    path = tempfile.mkdtemp(prefix=prefix, dir="/tmp")
    try:
        yield Path(path)
    finally:
        kill_supervisors(Path(path))
        shutil.rmtree(path, ignore_errors=True)


def warm_template(reg) -> None:
    """Spawn once (cold: that starts the home's supervisor template) and wait until it serves."""
    from hermes_procs.core.supervisor import template

    job = reg.spawn("true")
    reg.wait(job["session_id"], timeout=30)
    if not wait_until(lambda: (reg.home / template.sock_name()).exists(), timeout=30, step=0.01):
        raise RuntimeError("the supervisor template did not start")


@contextlib.contextmanager
def cold_spawns():
    """Spawns inside start a new interpreter per supervisor (no template), as before it existed."""
    old = os.environ.get("HERMES_PROCS_TEMPLATE_IDLE")
    os.environ["HERMES_PROCS_TEMPLATE_IDLE"] = "0"
    try:
        yield
    finally:
        if old is None:
            del os.environ["HERMES_PROCS_TEMPLATE_IDLE"]
        else:
            os.environ["HERMES_PROCS_TEMPLATE_IDLE"] = old


def kill_supervisors(home: Path) -> None:
    """Best effort: end every supervisor (and its job) still running under a bench home; the
    home's warm template goes by itself once its socket is removed with the home."""
    import json
    import signal

    from hermes_procs.core.supervisor.proctree import is_alive

    jobs = home / "jobs"
    if not jobs.is_dir():
        return
    for d in jobs.iterdir():
        try:
            proc = json.loads((d / "proc.json").read_text())
        except (OSError, ValueError):
            continue
        if (d / "exit.json").exists():
            continue
        for pid, ticks in ((proc.get("pid"), proc.get("pid_start")),
                           (proc.get("supervisor_pid"), proc.get("supervisor_start"))):
            try:
                if pid and is_alive(pid, ticks):
                    os.killpg(pid, signal.SIGKILL) if pid == proc.get("pid") else os.kill(pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass


def cpu_ticks(pid: int) -> float:
    """utime + stime of one process in seconds (itself only, not its children)."""
    return proc_stat(pid)[1]


def proc_stat(pid: int) -> tuple[str, float]:
    """(state letter, own CPU seconds) of a process; a zombie keeps its final CPU times."""
    with open(f"/proc/{pid}/stat", "rb") as fh:
        raw = fh.read()
    fields = raw[raw.rfind(b")") + 2:].split()
    return fields[0].decode(), (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def machine_info() -> dict:
    model = ""
    try:
        for line in open("/proc/cpuinfo"):
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    try:
        load = [round(x, 2) for x in os.getloadavg()]
    except OSError:
        load = None
    info = {"cpu_model": model, "cores": os.cpu_count(), "python": sys.version.split()[0],
            "platform": sys.platform, "kernel": os.uname().release,
            "date": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), "loadavg_at_start": load}
    try:
        info["mem_total_mb"] = int(open("/proc/meminfo").readline().split()[1]) // 1024
    except (OSError, ValueError, IndexError):
        pass
    for tool, args in (("tmux", ["tmux", "-V"]), ("mprocs", ["mprocs", "--version"])):
        try:
            info[tool] = subprocess.run(args, capture_output=True, text=True, timeout=5).stdout.strip() or None
        except (OSError, subprocess.SubprocessError):
            info[tool] = None
    return info


def which(name: str) -> str | None:
    return shutil.which(name)


def wait_until(pred, timeout: float, step: float = 0.0005) -> bool:
    deadline = time.perf_counter() + timeout
    while time.perf_counter() < deadline:
        if pred():
            return True
        time.sleep(step)
    return pred()
