"""Item 6: the dashboard, run for real in a detached tmux session (120x40), measured from outside.

CPU comes from psutil (the app process only, % of one core); keypress-to-paint latency is
`tmux send-keys` then polling `tmux capture-pane` until the change shows (so every figure
includes tmux's own parse and the capture; the tmux-pane baseline measures that floor).
Floods are paused with SIGSTOP/SIGCONT so the sides take turns: A B A B, same load.

(a) idle CPU with 10 quiet jobs, against mprocs with the same 10 (when installed);
(b) CPU and keypress-to-paint while the selected job floods (`seq`), against mprocs and tmux;
(c) the app's memory after 200 MB of output from the selected job, against before;
(d) selecting a job with a 500 MB log until its last line shows, against `less -n +G`;
(e) 200 finished jobs: idle CPU and time for a new job to show up in the table.
"""

from __future__ import annotations

import os
import shutil
import signal
import statistics
import subprocess
import tempfile
import time
from pathlib import Path

import psutil

from hermes_procs.core import ProcessRegistry

from .common import PY, ROOT, Config, Row, temp_home, warm_template

FLOOD = "seq 1 100000000000"
MB = 1 << 20


class Tmux:
    """A private tmux server (its own socket) holding one session."""

    n = 0

    def __init__(self, command: str, cwd: str | None = None, env: dict | None = None) -> None:
        Tmux.n += 1
        self.sock = f"hpb{os.getpid()}_{Tmux.n}"
        self.target = "s"
        full_env = {**os.environ, **(env or {})}
        subprocess.run(["tmux", "-L", self.sock, "-f", "/dev/null", "new-session", "-d", "-s", "s", "-x", "120",
                        "-y", "40", ";", "set-option", "-g", "remain-on-exit", "on", ";", "respawn-pane", "-k",
                        "-t", "s", command], check=True, cwd=cwd, env=full_env)

    def tmux(self, *args, check=True) -> str:
        return subprocess.run(["tmux", "-L", self.sock, *args], capture_output=True, text=True,
                              check=check).stdout

    def capture(self, pane: str | None = None) -> list[str]:
        return self.tmux("capture-pane", "-p", "-t", pane or self.target).split("\n")

    def keys(self, *keys: str, pane: str | None = None) -> None:
        self.tmux("send-keys", "-t", pane or self.target, *keys)

    def pane_pid(self, pane: str | None = None) -> int:
        return int(self.tmux("display-message", "-p", "-t", pane or self.target, "#{pane_pid}").strip())

    def server_pid(self) -> int:
        return int(self.tmux("display-message", "-p", "#{pid}").strip())

    def kill(self) -> None:
        self.tmux("kill-server", check=False)


def _app_proc(pane_pid: int, name: str) -> psutil.Process:
    """The process in the pane whose command line contains `name` (the pane's shell may exec it)."""
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        try:
            root = psutil.Process(pane_pid)
            for p in [root, *root.children(recursive=True)]:  # the real program, not a shell or node wrapper
                if p.name() in ("sh", "bash", "dash", "node"):
                    continue
                if name in p.name() or name in " ".join(p.cmdline()[1:3]):
                    return p
        except psutil.Error:
            pass
        time.sleep(0.05)
    raise RuntimeError(f"no process matching {name!r} under pane pid {pane_pid}")


def _cpu(proc: psutil.Process) -> float:
    t = proc.cpu_times()
    return t.user + t.system


def cpu_window(proc: psutil.Process, seconds: float) -> float:
    """% of one core used by `proc` (itself only) over the next `seconds`."""
    c0, t0 = _cpu(proc), time.monotonic()
    time.sleep(seconds)
    return 100 * (_cpu(proc) - c0) / (time.monotonic() - t0)


def wait_screen(tm: Tmux, pred, timeout: float = 10.0, pane: str | None = None) -> float:
    """Seconds until pred(screen lines) is true, polling capture-pane; raises on timeout."""
    t0 = time.perf_counter()
    while True:
        if pred(tm.capture(pane)):
            return time.perf_counter() - t0
        if time.perf_counter() - t0 > timeout:
            dead = tm.tmux("display-message", "-p", "-t", pane or tm.target, "#{pane_dead}", check=False).strip()
            tail = " / ".join(line.strip() for line in tm.capture(pane) if line.strip())[-300:]
            what = "the program in the pane exited" if dead == "1" else "the screen did not show the change"
            raise RuntimeError(f"{what} within {timeout:.0f} s; screen: {tail}")
        time.sleep(0.002)


def _sort_of(lines: list[str]) -> str:
    head = lines[0] if lines else ""
    i = head.find("sort:")
    return head[i:].split()[0] if i >= 0 else ""


def key_to_paint(tm: Tmux) -> float:
    """Press `o` (cycle the sort) and time until the top bar shows the new sort (ms)."""
    before = _sort_of(tm.capture())
    t0 = time.perf_counter()
    tm.keys("o")
    wait_screen(tm, lambda lines: _sort_of(lines) not in ("", before), timeout=10)
    return (time.perf_counter() - t0) * 1000


def sort_newest(tm: Tmux) -> None:
    """Cycle the sort back to newest first (the latency probes cycle it)."""
    for _ in range(12):
        if _sort_of(tm.capture()) == "sort:newest":
            return
        key_to_paint(tm)


def cat_echo(tm: Tmux, pane: str, k: list) -> float:
    """Type one letter into a `cat` pane and time until it shows (ms): the tmux floor."""
    k[0] += 1
    word = f"k{k[0]}x"
    t0 = time.perf_counter()
    tm.keys("-l", word, pane=pane)
    wait_screen(tm, lambda lines: any(word in line for line in lines), pane=pane)
    return (time.perf_counter() - t0) * 1000


def _app(home: Path) -> tuple[Tmux, psutil.Process]:
    tm = Tmux(f"{PY} -m hermes_procs --home {home}", cwd=str(ROOT))
    proc = _app_proc(tm.pane_pid(), "hermes_procs")
    wait_screen(tm, lambda lines: "sort:" in (lines[0] if lines else ""), timeout=20)
    time.sleep(1.5)  # first sample, first paint
    return tm, proc


def _mprocs(commands: list[str], workdir: str) -> tuple[Tmux, psutil.Process]:
    cmd = "mprocs " + " ".join(f"'{c}'" for c in commands)
    tm = Tmux(cmd, cwd=workdir)
    proc = _app_proc(tm.pane_pid(), "mprocs")
    time.sleep(1.5)
    return tm, proc


def _stop(pids, sig) -> None:
    for pid in pids:
        try:
            os.kill(pid, sig)
        except ProcessLookupError:
            pass


def _descendants_named(proc: psutil.Process, name: str) -> list[int]:
    out = []
    for p in proc.children(recursive=True):
        try:
            if p.name() == name:
                out.append(p.pid)
        except psutil.Error:
            pass
    return out


def _med(vals):
    return statistics.median(vals)


# ---- (a) idle, (b) flood, (c) memory ------------------------------------------------------------
def idle_flood_memory(cfg: Config) -> list[Row]:
    rows = []
    have_mprocs = shutil.which("mprocs") is not None
    window = 2.0 if cfg.full else 1.0
    runs = cfg.runs
    work = tempfile.mkdtemp(prefix="hpbm", dir="/tmp")
    tms = []
    try:
        with temp_home() as home:
            reg = ProcessRegistry(home=home)
            for i in range(10):
                reg.spawn("sleep 3600", name=f"quiet{i}")
            tm, app = _app(home)
            tms.append(tm)
            mp = None
            if have_mprocs:
                mtm, mp = _mprocs(["sleep 3600"] * 10, work)
                tms.append(mtm)
            # (a) idle: alternate windows while both sit idle
            a_h, a_m = [], []
            for _ in range(runs):  # idle figures are small: 2 s windows (CPU ticks are 10 ms)
                a_h.append(cpu_window(app, 2 * window))
                if mp:
                    a_m.append(cpu_window(mp, 2 * window))
            l_idle = [key_to_paint(tm) for _ in range(runs)]
            sort_newest(tm)
            rss_before = app.memory_info().rss / MB
            rows.append(Row("6a dashboard idle CPU, 10 quiet jobs", "% core", a_h,
                            "mprocs, 10 quiet" if mp else "", a_m, "< 2 %", _med(a_h) < 2,
                            note="" if mp else "mprocs not installed"))

            # (b) flood: the newest job (selected: the table starts on the top row, newest first)
            flood = reg.spawn(FLOOD, name="flood")
            fpid = flood["pid"]
            wait_screen(tm, lambda lines: any("flood" in line for line in lines[:6]), timeout=15)
            for _ in range(12):  # to the top row: the flood job (newest first)
                tm.keys("Up")
            time.sleep(1.0)
            title = [line for line in tm.capture() if line.strip().startswith("proc_")]
            selected = bool(title) and flood["session_id"] in title[0]
            # the same flood in mprocs (a second mprocs: flood selected first) and in a tmux pane
            mflood = mftm = None
            if have_mprocs:
                mftm, mflood = _mprocs([FLOOD, "sleep 3600"], work)
                tms.append(mftm)
                mseq = _descendants_named(mflood, "seq")
                _stop(mseq, signal.SIGSTOP)
            ttm = Tmux(FLOOD)
            tms.append(ttm)
            ttm.tmux("split-window", "-h", "-t", "s", "cat")
            time.sleep(0.3)
            panes = ttm.tmux("list-panes", "-t", "s", "-F", "#{pane_id} #{pane_pid}").split()
            cat_pane = panes[2]
            tseq = _descendants_named(psutil.Process(int(panes[1])), "seq") or [int(panes[1])]
            tserver = psutil.Process(ttm.server_pid())
            _stop(tseq, signal.SIGSTOP)
            b_h, b_m, b_t, l_h, l_t = [], [], [], [], []
            k = [0]
            for _ in range(runs):
                # hermes
                _stop([fpid], signal.SIGCONT)
                time.sleep(0.3)
                b_h.append(cpu_window(app, window))
                l_h.append(key_to_paint(tm))
                _stop([fpid], signal.SIGSTOP)
                # mprocs
                if mflood:
                    _stop(mseq, signal.SIGCONT)
                    time.sleep(0.3)
                    b_m.append(cpu_window(mflood, window))
                    _stop(mseq, signal.SIGSTOP)
                # tmux
                _stop(tseq, signal.SIGCONT)
                time.sleep(0.3)
                b_t.append(cpu_window(tserver, window))
                l_t.append(cat_echo(ttm, cat_pane, k))
                _stop(tseq, signal.SIGSTOP)
            _stop([fpid], signal.SIGCONT)
            note = "flood job selected" if selected else "WARNING: flood job not confirmed selected"
            rows.append(Row("6b dashboard CPU, selected job floods", "% core", b_h,
                            "mprocs, same flood" if mflood else "", b_m, "< 50 %", _med(b_h) < 50, note=note))
            rows.append(Row("6b dashboard CPU vs tmux server, flood", "% core", b_h, "tmux server", b_t, "info",
                            None))
            rows.append(Row("6b keypress-to-paint, idle (10 quiet jobs)", "ms", l_idle, "tmux pane echo (floor)", l_t,
                            "info", None, note="Textual's own key-to-frame time"))
            rows.append(Row("6b keypress-to-paint during flood", "ms", l_h, "tmux pane echo (floor)", l_t,
                            "< 100 ms", _med(l_h) < 100,
                            note="send-keys 'o' until the top bar changes; capture-pane polled every 2 ms"))
            # (c) memory after >= 200 MB of output from the selected job
            # RSS now (the pane has shown the flood for a while) and again after 200 MB more (full:
            # 1 GB more): memory must not grow with output, so the second must match the first
            deadline = time.monotonic() + (90 if cfg.full else 30)
            produced, marks = _produced(reg, flood["session_id"]), {}
            more = (1024 if cfg.full else 200) * MB
            for goal in (produced, produced + more):
                while time.monotonic() < deadline:
                    try:
                        produced = _produced(reg, flood["session_id"])
                    except OSError:
                        produced = 0
                    if produced >= goal:
                        break
                    time.sleep(0.25)
                samples = []
                for _ in range(5):
                    samples.append(app.memory_info().rss / MB)
                    time.sleep(0.2)
                marks[goal] = (produced, samples)
            reg.kill(flood["session_id"], grace=0.5)
            (p1, r1), (p2, r2) = marks.values()
            rows.append(Row(f"6c dashboard RSS after {(p2 - p1) // MB} MB more output", "MB", r2,
                            "RSS before those MB", r1, "<= 1.05x", _med(r2) <= 1.05 * _med(r1),
                            note=f"{p1 // MB} -> {p2 // MB} MB produced; RSS before any flood: {rss_before:.1f} MB"))
    finally:
        for t in tms:
            t.kill()
        shutil.rmtree(work, ignore_errors=True)
    return rows


def _produced(reg: ProcessRegistry, sid: str) -> int:
    jobdir = reg.job_dir(sid)
    total = sum(p.stat().st_size for p in reg.log_files(sid))
    try:
        import json

        total += json.loads((jobdir / "logstate.json").read_text()).get("dropped_bytes", 0)
    except (OSError, ValueError):
        pass
    return total


# ---- (d) a 500 MB log ---------------------------------------------------------------------------
def big_log(cfg: Config) -> list[Row]:
    size = 500 * MB
    tms = []
    old_cap = os.environ.get("HERMES_PROCS_LOG_CAP")
    try:
        with temp_home() as home:
            reg = ProcessRegistry(home=home)
            os.environ["HERMES_PROCS_LOG_CAP"] = str(4 * size)  # keep all 500 MB in one log
            lines = size // 9  # seq's numbers up to 58 M: mostly 8 digits + newline
            big = reg.spawn(f"seq 1 {lines}; echo THE-END-MARKER", name="biglog")
            if old_cap is None:
                os.environ.pop("HERMES_PROCS_LOG_CAP", None)
            else:
                os.environ["HERMES_PROCS_LOG_CAP"] = old_cap
            reg.wait(big["session_id"], timeout=170)
            log = reg.log_files(big["session_id"])[-1]
            actual = sum(p.stat().st_size for p in reg.log_files(big["session_id"]))
            small = reg.spawn("echo small job; sleep 3600", name="small")
            tm, app = _app(home)
            tms.append(tm)
            ltm = Tmux(f"less -n {log}")
            tms.append(ltm)
            time.sleep(0.5)
            marker = "THE-END-MARKER"

            def hermes_open():
                tm.keys("Up")  # the small job (newest, top row) ...
                wait_screen(tm, lambda s: not any(x.strip() == marker for x in s), timeout=20)
                time.sleep(0.3)
                t0 = time.perf_counter()
                tm.keys("Down")  # ... then the big one: its log opens at the end (following)
                wait_screen(tm, lambda s: any(x.strip() == marker for x in s), timeout=30)
                return (time.perf_counter() - t0) * 1000

            def less_end():
                ltm.keys("g")
                wait_screen(ltm, lambda s: not any(x.strip() == marker for x in s), timeout=20)
                t0 = time.perf_counter()
                ltm.keys("G")
                wait_screen(ltm, lambda s: any(x.strip() == marker for x in s), timeout=30)
                return (time.perf_counter() - t0) * 1000

            from .common import interleave

            h, b = interleave(cfg.runs, hermes_open, less_end)
            rss = app.memory_info().rss / MB
            cpu_after = cpu_window(app, 1.0)
            reg.kill(small["session_id"], grace=0.5)
            return [Row("6d select a 500 MB log, see its last line", "ms", h, "less -n: G", b, "< 1000 ms",
                        _med(h) < 1000,
                        note=f"{actual // MB} MB log; app RSS after: {rss:.0f} MB, CPU {cpu_after:.0f} % just after")]
    finally:
        for t in tms:
            t.kill()


# ---- (e) 200 jobs -------------------------------------------------------------------------------
def many_jobs(cfg: Config) -> list[Row]:
    from .b_memory import _clone
    from .common import interleave

    tms = []
    try:
        with temp_home() as home10, temp_home() as home200:
            regs = {}
            for home, n in ((home10, 10), (home200, 200)):
                reg = regs[n] = ProcessRegistry(home=home)
                seed = reg.spawn("seq 1 100; echo done", name="seed")
                reg.wait(seed["session_id"], timeout=30)
                for _ in range(n - 1):
                    _clone(reg.job_dir(seed["session_id"]), reg.jobs_dir, 1)
            apps = {}
            for n, home in ((10, home10), (200, home200)):
                tm, app = _app(home)
                tms.append(tm)
                apps[n] = (tm, app)
            window = 2.0 if cfg.full else 1.0
            c200, c10 = interleave(cfg.runs, lambda: cpu_window(apps[200][1], 2 * window),
                                   lambda: cpu_window(apps[10][1], 2 * window), warmup=0)
            k = [0]

            def appear(n):
                k[0] += 1
                name = f"newjob{k[0]}x"
                tm = apps[n][0]
                t0 = time.perf_counter()
                regs[n].spawn("true", name=name)
                wait_screen(tm, lambda s: any(name in x for x in s), timeout=15)
                return (time.perf_counter() - t0) * 1000

            def exits(n):
                k[0] += 1
                name = f"exitjob{k[0]}x"
                tm = apps[n][0]
                job = regs[n].spawn("read line", name=name)
                wait_screen(tm, lambda s: any(name in x and "running" in x for x in s), timeout=15)
                t0 = time.perf_counter()
                regs[n].submit(job["session_id"], "go")
                wait_screen(tm, lambda s: any(name in x and "exited" in x for x in s), timeout=15)
                return (time.perf_counter() - t0) * 1000

            warm_template(regs[200])
            warm_template(regs[10])
            a200, a10 = interleave(cfg.runs, lambda: appear(200), lambda: appear(10), warmup=0)
            e200, e10 = interleave(cfg.runs, lambda: exits(200), lambda: exits(10), warmup=0)
            return [
                Row("6e dashboard idle CPU, 200 finished jobs", "% core", c200, "same app, 10 jobs", c10, "< 2 %",
                    _med(c200) < 2),
                Row("6e new job shows in the table, 200 jobs", "ms", a200, "same app, 10 jobs", a10, "< 100 ms",
                    _med(a200) < 100, note="from spawn() in another process to its row on screen"),
                Row("6e job exit shows in the table, 200 jobs", "ms", e200, "same app, 10 jobs", e10, "< 100 ms",
                    _med(e200) < 100, note="from the write that ends the job to 'exited' in its row"),
            ]
    finally:
        for t in tms:
            t.kill()


def run(cfg: Config) -> list[Row]:
    rows = []
    if not shutil.which("tmux"):
        return [Row("6 dashboard", "", error="tmux not installed: the dashboard benchmarks need it")]
    try:
        import textual  # noqa: F401
    except ImportError:
        return [Row("6 dashboard", "", error="textual not installed (pip install '.[tui]')")]
    for part in (idle_flood_memory, big_log, many_jobs):
        try:
            rows.extend(part(cfg))
        except Exception as exc:  # noqa: BLE001 - report, never fail
            rows.append(Row(f"6 {part.__name__}", "", error=f"{type(exc).__name__}: {exc}"))
    return rows
