"""Items 1 and 2: output ingest through hermes-procs against the practical ceilings.

Pipe mode: spawn -> wait of a job printing N bytes, against (a) the same command writing straight
to a file and (b) a plain Python `os.read` 64 KiB loop appending to a file (the ceiling).
Also the supervisor's CPU seconds per 100 MB against the ceiling reader's own CPU.
PTY mode: the same with pty=True against a raw openpty reader, and inside tmux when installed.
"""

from __future__ import annotations

import os
import subprocess
import sys
import threading
import time
from pathlib import Path

from hermes_procs.core import ProcessRegistry

from .common import Config, Row, interleave, proc_stat, temp_home, warm_template, which

MB = 1 << 20
TEXT = "yes 'hermes-procs benchmark line: the quick brown fox jumps over the lazy dog 0123456789' | head -c {n}"
LONG = "yes \"$(head -c 4000 /dev/zero | tr '\\0' x)\" | head -c {n}"
WORKLOADS = (("text lines", TEXT), ("long lines", LONG))


class SupervisorCPU:
    """Samples a supervisor's own CPU time and bytes read every 2 ms until it exits; keeps the
    last CPU sample and the (time, bytes read) points for a steady-state rate."""

    def __init__(self, jobdir: Path) -> None:
        self.jobdir = jobdir
        self.pid: int | None = None
        self.last = 0.0
        self.points: list[tuple[float, int]] = []
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def _run(self) -> None:
        import json

        pid = None
        deadline = time.monotonic() + 5
        while pid is None and time.monotonic() < deadline:
            try:
                pid = json.loads((self.jobdir / "proc.json").read_text())["supervisor_pid"]
            except (OSError, ValueError, KeyError):
                time.sleep(0.001)
        self.pid = pid
        while pid:
            try:
                state, self.last = proc_stat(pid)
            except (OSError, ValueError, IndexError):
                return
            if state in "ZX":  # exited (not yet reaped: the registry reaps on its next spawn)
                return
            try:
                with open(f"/proc/{pid}/io", "rb") as fh:
                    rchar = int(fh.readline().split()[1])
                self.points.append((time.perf_counter(), rchar))
            except (OSError, ValueError, IndexError):
                pass
            time.sleep(0.002)

    def steady(self, n: int) -> float | None:
        """MB/s between 20 % and 80 % of the output read: the loop's rate without start/exit costs."""
        try:
            t20 = next(t for t, b in self.points if b >= 0.2 * n)
            t80 = next(t for t, b in self.points if b >= 0.8 * n)
        except StopIteration:
            return None
        return 0.6 * n / MB / (t80 - t20) if t80 > t20 else None

    def now(self) -> float:
        """The CPU so far (called as wait() returns: the output read and the exit recorded; the
        supervisor then counts the log's lines for readers, core/supervisor/linecounts.py `keep`)."""
        try:
            return proc_stat(self.pid)[1] if self.pid else self.last
        except (OSError, ValueError, IndexError):
            return self.last

    def result(self) -> float:
        """The CPU until the supervisor left."""
        self.thread.join(10)
        return self.last


def _hermes(reg: ProcessRegistry, cmd: str, n: int, pty: bool, cpu_out: list, check: list,
            steady: list | None = None, cpu_total: list | None = None) -> float:
    t0 = time.perf_counter()
    job = reg.spawn(cmd, pty=pty)
    if job.get("status") != "running":
        raise RuntimeError(f"spawn failed: {job}")
    sampler = SupervisorCPU(reg.job_dir(job["session_id"]))
    res = reg.wait(job["session_id"], timeout=170)
    elapsed = time.perf_counter() - t0
    if res.get("status") != "exited":
        raise RuntimeError(f"wait: {res.get('status')}")
    cpu_out.append(sampler.now())
    total = sampler.result()
    if cpu_total is not None:
        cpu_total.append(total)
    if steady is not None:
        steady.append(sampler.steady(n))
    size = sum(p.stat().st_size for p in reg.log_files(job["session_id"]))
    check.append(size)
    return n / MB / elapsed


def _direct(cmd: str, n: int, out: Path) -> float:
    t0 = time.perf_counter()
    subprocess.run(["bash", "-c", f"{cmd} > {out}"], check=True)
    elapsed = time.perf_counter() - t0
    out.unlink()
    return n / MB / elapsed


def _ceiling(cmd: str, n: int, out: Path, cpu_out: list, steady: list | None = None) -> float:
    """The practical ceiling: Popen + os.read 64 KiB + append to a file, in this process."""
    t0 = time.perf_counter()
    c0 = time.thread_time()
    proc = subprocess.Popen(["bash", "-c", cmd], stdout=subprocess.PIPE)
    fd = proc.stdout.fileno()
    log = os.open(out, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
    got, t20, t80 = 0, None, None
    while True:
        data = os.read(fd, 65536)
        if not data:
            break
        os.write(log, data)
        got += len(data)
        if t80 is None and got >= 0.2 * n:
            if t20 is None:
                t20 = time.perf_counter()
            if got >= 0.8 * n:
                t80 = time.perf_counter()
    proc.wait()
    if steady is not None:
        steady.append(0.6 * n / MB / (t80 - t20) if t20 and t80 and t80 > t20 else None)
    elapsed = time.perf_counter() - t0
    cpu_out.append(time.thread_time() - c0)
    os.close(log)
    proc.stdout.close()
    out.unlink()
    return n / MB / elapsed


SEPARATE = """
import os, subprocess, sys
p = subprocess.Popen(["bash", "-c", sys.argv[1]], stdout=subprocess.PIPE, start_new_session=True)
fd = p.stdout.fileno()
log = os.open(sys.argv[2], os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
while True:
    data = os.read(fd, 65536)
    if not data:
        break
    os.write(log, data)
p.wait()
"""


def _separate(cmd: str, n: int, out: Path) -> float:
    """The same loop in its own process and session, the job in another: the shape of a
    supervisor (interpreter start included) with none of its work."""
    t0 = time.perf_counter()
    subprocess.run([sys.executable, "-I", "-S", "-c", SEPARATE, cmd, str(out)], check=True, start_new_session=True)
    elapsed = time.perf_counter() - t0
    out.unlink()
    return n / MB / elapsed


def _raw_pty(cmd: str, n: int, out: Path, cpu_out: list) -> float:
    """A raw openpty reader: the job on the slave side, os.read 64 KiB of the master to a file."""
    t0 = time.perf_counter()
    c0 = time.thread_time()
    master, slave = os.openpty()
    proc = subprocess.Popen(["bash", "-c", cmd], stdin=slave, stdout=slave, stderr=slave, start_new_session=True)
    os.close(slave)
    log = os.open(out, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
    while True:
        try:
            data = os.read(master, 65536)
        except OSError:  # EIO: the slave side is closed
            break
        if not data:
            break
        os.write(log, data)
    proc.wait()
    elapsed = time.perf_counter() - t0
    cpu_out.append(time.thread_time() - c0)
    os.close(log)
    os.close(master)
    out.unlink()
    return n / MB / elapsed


def _tmux(cmd: str, n: int, idx: list) -> float:
    idx[0] += 1
    sock = f"hpbench{os.getpid()}_{idx[0]}"
    t0 = time.perf_counter()
    subprocess.run(["tmux", "-L", sock, "-f", "/dev/null", "new-session", "-d", "-x", "120", "-y", "40",
                    f"{cmd}; tmux -L {sock} wait-for -S done"], check=True)
    subprocess.run(["tmux", "-L", sock, "wait-for", "done"], check=True, timeout=170)
    elapsed = time.perf_counter() - t0
    subprocess.run(["tmux", "-L", sock, "kill-server"], capture_output=True)
    return n / MB / elapsed


def run_pipe(cfg: Config) -> list[Row]:
    n = cfg.size(200 * MB, 500 * MB)
    rows = []
    with temp_home() as home:
        reg = ProcessRegistry(home=home)
        warm_template(reg)
        out = home / "direct.out"
        for label, template in WORKLOADS:
            cmd = template.format(n=n)
            sup_cpu, ceil_cpu, sizes, hs, cs, totals = [], [], [], [], [], []
            # the lambdas run inside interleave(), within this iteration: B023 does not apply
            h, d, c, sep = interleave(cfg.runs, lambda: _hermes(reg, cmd, n, False, sup_cpu, sizes, hs,  # noqa: B023
                                                                totals),  # noqa: B023
                                      lambda: _direct(cmd, n, out),  # noqa: B023
                                      lambda: _ceiling(cmd, n, out, ceil_cpu, cs),  # noqa: B023
                                      lambda: _separate(cmd, n, out))  # noqa: B023
            note = f"{n // MB} MB; " + ("log complete" if all(s == n for s in sizes)
                                        else f"LOG SIZE MISMATCH {sorted(set(sizes))} != {n}")
            ratio_ok = _median(h) / _median(c) >= 0.95
            rows.append(Row(f"1 pipe ingest, {label}", "MB/s", h, "python os.read loop", c, ">= 0.95x", ratio_ok,
                            note=note))
            rows.append(Row(f"1 pipe ingest, {label} vs direct", "MB/s", h, "command > file", d, "info", None))
            rows.append(Row(f"1 pipe ingest, {label} vs separate loop", "MB/s", h, "same loop, own process+session",
                            sep, "info", None, note="the ceiling for any per-job reader process"))
            hs = [x for x in hs[-cfg.runs:] if x]
            cs = [x for x in cs[-cfg.runs:] if x]
            rows.append(Row(f"1 pipe ingest, {label}, steady 20-80 %", "MB/s", hs, "python loop, same span", cs,
                            "info", None, note="the read loop alone: without spawn, start and exit costs"))
            per100 = 100 * MB / n
            sup = [x * per100 for x in sup_cpu[-cfg.runs:]]
            ceil = [x * per100 for x in ceil_cpu[-cfg.runs:]]
            rows.append(Row(f"1 supervisor CPU per 100 MB, {label}", "cpu s", sup, "python loop CPU", ceil,
                            "<= 1.1x", _median(sup) <= 1.1 * _median(ceil) if ceil else None,
                            note="CPU ticks are 10 ms; the supervisor is forked by the warm template"))
            total = [x * per100 for x in totals[-cfg.runs:]]
            rows.append(Row(f"1 supervisor CPU per 100 MB, {label}, with the line count after the exit", "cpu s",
                            total, "python loop CPU", ceil, "info", None,
                            note="after the exit the supervisor counts the retained log's lines for readers"))
    return rows


def run_pty(cfg: Config) -> list[Row]:
    n = cfg.size(32 * MB, 200 * MB)
    cmd = TEXT.format(n=n)
    rows = []
    with temp_home() as home:
        reg = ProcessRegistry(home=home)
        warm_template(reg)
        out = home / "pty.out"
        sup_cpu, raw_cpu, sizes = [], [], []
        h, r = interleave(cfg.runs, lambda: _hermes(reg, cmd, n, True, sup_cpu, sizes),
                          lambda: _raw_pty(cmd, n, out, raw_cpu))
        rows.append(Row("2 PTY ingest, text lines", "MB/s", h, "raw openpty reader", r, ">= 0.95x",
                        _median(h) / _median(r) >= 0.95,
                        note=f"{n // MB} MB in (log holds CRLF: {_median(sizes) / MB:.1f} MB)"))
        per100 = 100 * MB / n
        sup = [x * per100 for x in sup_cpu[-cfg.runs:]]
        raw = [x * per100 for x in raw_cpu[-cfg.runs:]]
        rows.append(Row("2 supervisor CPU per 100 MB, PTY", "cpu s", sup, "raw reader CPU", raw, "<= 1.1x",
                        _median(sup) <= 1.1 * _median(raw) if raw else None,
                        note="includes the supervisor's interpreter start"))
        if which("tmux"):
            idx = [0]
            h2, t = interleave(cfg.runs, lambda: _hermes(reg, cmd, n, True, [], []), lambda: _tmux(cmd, n, idx))
            rows.append(Row("2 PTY ingest vs tmux", "MB/s", h2, "tmux (detached, to finish)", t, "info", None,
                            note=f"{n // MB} MB"))
        else:
            rows.append(Row("2 PTY ingest vs tmux", "MB/s", error="tmux not installed"))
    return rows


def _median(vals):
    import statistics

    return statistics.median(vals)
