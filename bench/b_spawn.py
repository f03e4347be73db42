"""Item 3: spawn() to pid known and to first output seen, against subprocess.Popen of the same
command: through the home's warm supervisor template (a fork) and cold (a new interpreter per
supervisor, HERMES_PROCS_TEMPLATE_IDLE=0), interleaved. Also the pieces of a cold supervisor's
start, each against `python -I -S -c pass`."""

from __future__ import annotations

import os
import subprocess
import sys
import time

from hermes_procs.core import ProcessRegistry
from hermes_procs.core.registry.envsafe import shell_argv

from .common import Config, Row, cold_spawns, interleave, temp_home, warm_template

CMD = "echo ready"


def _hermes(reg: ProcessRegistry, pid_ms: list, out_ms: list, pty: bool = False) -> float:
    t0 = time.perf_counter()
    job = reg.spawn(CMD, pty=pty)
    t1 = time.perf_counter()
    if job.get("status") != "running":
        raise RuntimeError(f"spawn failed: {job}")
    log = reg.job_dir(job["session_id"]) / "output.log"
    while True:  # first output on disk: what every client (agent, CLI, dashboard) can see
        try:
            if os.stat(log).st_size:
                break
        except FileNotFoundError:
            pass
        if time.perf_counter() - t0 > 10:
            raise RuntimeError("no output within 10 s")
        time.sleep(0.0002)
    t2 = time.perf_counter()
    reg.wait(job["session_id"], timeout=10)
    pid_ms.append((t1 - t0) * 1000)
    out_ms.append((t2 - t0) * 1000)
    return pid_ms[-1]


def _popen(argv: list, pid_ms: list, out_ms: list) -> float:
    t0 = time.perf_counter()
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, start_new_session=True)
    t1 = time.perf_counter()
    os.read(proc.stdout.fileno(), 4096)
    t2 = time.perf_counter()
    proc.wait()
    proc.stdout.close()
    pid_ms.append((t1 - t0) * 1000)
    out_ms.append((t2 - t0) * 1000)
    return pid_ms[-1]


def _ptyprocess(argv: list, pid_ms: list) -> float:
    """The floor of a PTY spawn: ptyprocess in this process (what the supervisor calls)."""
    from ptyprocess import PtyProcess

    t0 = time.perf_counter()
    job = PtyProcess.spawn(argv)
    pid_ms.append((time.perf_counter() - t0) * 1000)
    job.read(4096)
    job.wait()
    job.close()
    return pid_ms[-1]


def _py(code: str) -> float:
    t0 = time.perf_counter()
    subprocess.run([sys.executable, "-I", "-S", "-c", code], check=True)
    return (time.perf_counter() - t0) * 1000


def run(cfg: Config) -> list[Row]:
    runs = cfg.runs * (4 if cfg.full else 2)  # cheap: more runs for steadier medians
    argv = shell_argv(CMD)
    rows = []
    with temp_home() as home:
        reg = ProcessRegistry(home=home)
        warm_template(reg)
        hp, ho, cp, co, pp, po = [], [], [], [], [], []

        def cold():
            with cold_spawns():
                return _hermes(reg, cp, co)

        interleave(runs, lambda: _hermes(reg, hp, ho), cold, lambda: _popen(argv, pp, po))
        n = runs
        hp, ho, cp, co, pp, po = hp[-n:], ho[-n:], cp[-n:], co[-n:], pp[-n:], po[-n:]
        rows.append(Row("3 spawn to pid known, template warm", "ms", hp, "subprocess.Popen", pp, "< 3 ms",
                        _med(hp) < 3, note=f"{n} runs of {CMD!r}"))
        rows.append(Row("3 spawn to pid known, cold", "ms", cp, "subprocess.Popen", pp, "< 30 ms", _med(cp) < 30,
                        note="no template (HERMES_PROCS_TEMPLATE_IDLE=0): a new interpreter per supervisor"))
        rows.append(Row("3 spawn to first output, template warm", "ms", ho, "Popen + first read", po, "< 6 ms",
                        _med(ho) < 6))
        rows.append(Row("3 spawn to first output, cold", "ms", co, "Popen + first read", po, "info", None))
    rows += _pty_rows(runs, argv)
    bare, ctypes_, sup_imports = interleave(
        runs, lambda: _py("pass"), lambda: _py("import ctypes; ctypes.CDLL(None).prctl(36, 1, 0, 0, 0)"),
        lambda: _py("import os, sys, fcntl, struct, termios"))
    rows.append(Row("3 python -I -S start", "ms", bare, "", [], "info", None,
                    note="the floor of a Python supervisor"))
    rows.append(Row("3 ... + ctypes prctl(SUBREAPER)", "ms", ctypes_, "python -I -S -c pass", bare, "info", None))
    rows.append(Row("3 ... + os/fcntl/struct/termios", "ms", sup_imports, "python -I -S -c pass", bare, "info", None))
    return rows


def _pty_rows(runs: int, argv: list) -> list[Row]:
    """PTY jobs (started by the supervisor with ptyprocess) against ptyprocess called directly."""
    with temp_home() as home:
        reg = ProcessRegistry(home=home)
        warm_template(reg)
        warm, cold_, floor, out = [], [], [], []

        def cold():
            with cold_spawns():
                return _hermes(reg, cold_, out, pty=True)

        interleave(runs, lambda: _hermes(reg, warm, out, pty=True), cold, lambda: _ptyprocess(argv, floor))
    return [Row("3 PTY spawn to pid known, template warm", "ms", warm[-runs:], "PtyProcess.spawn", floor[-runs:],
                "info", None, note="the supervisor starts PTY jobs with ptyprocess"),
            Row("3 PTY spawn to pid known, cold", "ms", cold_[-runs:], "PtyProcess.spawn", floor[-runs:], "info", None)]


def _med(vals):
    import statistics

    return statistics.median(vals)
