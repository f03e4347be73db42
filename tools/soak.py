"""A bounded soak: churn of spawn/kill/wait/attach from several processes with random faults.

    python tools/soak.py [--minutes 2] [--workers 3] [--seed N] [--home DIR]    (make soak)

Worker processes start jobs that print a known number of bytes and exit with a known code
(pipes and PTYs, some long enough to be killed), wait for them, attach to them, kill some. A
fault injector meanwhile SIGKILLs a running job's supervisor now and then (that job is then
expected to be `lost`) and SIGSTOPs/SIGCONTs others (they must lose nothing). A long-lived
observer process keeps a registry open the whole time (list, poll, read_log, drain_events), and
so do the real long-lived clients: the MCP server (`hermes-procs mcp`, sent process_list /
process_poll / process_log calls over stdio) and the dashboard (`hermes-procs`, in a PTY, sent
arrow keys, `o` and `f`). Their open fds and RSS are sampled once warm (10 s in) and at the end.

At the end every job is checked against what its worker expected, and the report says: jobs
lost (no exit record, not a supervisor the injector killed), exit codes lost (wrong or missing
exit code), bytes lost (fewer bytes in the log than printed), API errors, MCP calls that failed
or got no answer within 10 s, and the fd and RSS growth of the observer, the MCP server and the
dashboard. It exits 1 when anything was lost, an MCP call went unanswered or a long-lived client
died. Not part of `make test`: it runs minutes.
"""

from __future__ import annotations

import argparse
import fcntl
import json
import os
import random
import select
import signal
import struct
import subprocess
import sys
import tempfile
import termios
import threading
import time
from pathlib import Path

HERE = Path(__file__).resolve()


# ---------------------------------------------------------------------------------------------
# worker: one process churning jobs; every expectation goes to its journal (JSON lines)
# ---------------------------------------------------------------------------------------------
def worker(home: str, journal: str, deadline: float, seed: int) -> None:
    from hermes_procs.core import ProcessRegistry

    rng = random.Random(seed)
    reg = ProcessRegistry(home=home)
    mine: list[str] = []
    with open(journal, "a", buffering=1) as out:
        def note(**entry) -> None:
            out.write(json.dumps(entry) + "\n")

        while time.time() < deadline:
            op = rng.choices(("spawn", "wait", "attach", "kill", "poll"), (5, 3, 2, 1, 2))[0]
            if op == "spawn" or not mine:
                nbytes, code = rng.choice((0, 1, 100, 4096, 70_000, 300_000)), rng.randrange(0, 5)
                pty = rng.random() < 0.3
                sleep = rng.choice((0, 0, 0.05, 0.3, 2, 8))
                command = f"sleep {sleep}; head -c {nbytes} /dev/zero | tr '\\0' x; exit {code}"
                result = reg.spawn(command, pty=pty)
                if result.get("status") != "running":
                    note(kind="error", op="spawn", error=result.get("error"))
                    continue
                mine.append(result["session_id"])
                note(kind="job", sid=result["session_id"], bytes=nbytes, code=code, pty=pty)
            elif op == "wait":
                result = reg.wait(rng.choice(mine), timeout=rng.choice((0.1, 1, 3)))
                if result.get("status") not in ("exited", "timeout"):
                    note(kind="error", op="wait", error=result.get("error") or result.get("status"))
            elif op == "attach":
                try:
                    stream = reg.stream(rng.choice(mine))
                    try:
                        stream.read(timeout=0.2)
                    finally:
                        stream.close()
                except Exception as exc:  # noqa: BLE001 - a finished job has no socket: fine
                    if "exited" not in str(exc).lower() and "gone" not in type(exc).__name__.lower():
                        note(kind="error", op="attach", error=f"{type(exc).__name__}: {exc}")
            elif op == "kill":
                sid = rng.choice(mine)
                note(kind="kill", sid=sid)  # before: a kill that lands counts even if the reply is lost
                result = reg.kill(sid, grace=rng.choice((0, 0.2, 1)))
                if result.get("status") not in ("killed", "already_exited"):
                    note(kind="error", op="kill", error=result.get("error") or result.get("status"))
            else:
                reg.poll(rng.choice(mine))


# ---------------------------------------------------------------------------------------------
# observer: one long-lived registry (like the dashboard or the MCP server)
# ---------------------------------------------------------------------------------------------
def observer(home: str, deadline: float) -> None:
    from hermes_procs.core import ProcessRegistry

    reg = ProcessRegistry(home=home)
    rng = random.Random(7)
    while time.time() < deadline + 5:
        rows = reg.list()
        if isinstance(rows, list) and rows:
            sid = rng.choice(rows)["session_id"]
            reg.poll(sid)
            reg.read_log(sid, limit=50)
        reg.drain_events("soak-observer", all_types=True)
        time.sleep(0.1)


# ---------------------------------------------------------------------------------------------
# the real long-lived clients: the MCP server over stdio, the dashboard in a PTY
# ---------------------------------------------------------------------------------------------
class McpClient:
    """`hermes-procs mcp` on pipes, driven by a thread: list, then poll and log a random job,
    every 0.2 s until `stop` is set. Counts calls, error results and calls with no answer."""

    def __init__(self, home: Path, env: dict[str, str]) -> None:
        self.proc = subprocess.Popen([sys.executable, "-m", "hermes_procs", "--home", str(home), "mcp"],
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                                     env=env)
        self.calls, self.unanswered, self.failures = 0, 0, []
        self.stop = threading.Event()
        self._id = 0
        self._buf = b""
        self.thread = threading.Thread(target=self._run, daemon=True)

    def _request(self, method: str, params: dict | None = None, notify: bool = False) -> dict | None:
        message = {"jsonrpc": "2.0", "method": method, **({"params": params} if params is not None else {})}
        if not notify:
            self._id += 1
            message["id"] = self._id
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self.proc.stdin.write(json.dumps(message).encode() + b"\n")
        self.proc.stdin.flush()
        if notify:
            return None
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            while b"\n" in self._buf:
                line, self._buf = self._buf.split(b"\n", 1)
                reply = json.loads(line)
                if reply.get("id") == self._id:
                    return reply
            ready, _, _ = select.select([self.proc.stdout], [], [], max(0.0, deadline - time.monotonic()))
            if ready:
                chunk = os.read(self.proc.stdout.fileno(), 65536)
                if not chunk:
                    break
                self._buf += chunk
        self.unanswered += 1
        return None

    def _call(self, tool: str, arguments: dict) -> dict:
        self.calls += 1
        reply = self._request("tools/call", {"name": tool, "arguments": arguments}) or {}
        if "error" in reply:
            self.failures.append(f"{tool}: {str(reply['error'])[:100]}")
        return reply.get("result", {}).get("structuredContent") or {}

    def _run(self) -> None:
        rng = random.Random(11)
        try:
            self._request("initialize", {"protocolVersion": "2025-06-18", "capabilities": {},
                                         "clientInfo": {"name": "soak", "version": "0"}})
            self._request("notifications/initialized", notify=True)
            while not self.stop.wait(0.2):
                rows = self._call("process_list", {}).get("processes") or []
                if rows:
                    sid = rng.choice(rows)["session_id"]
                    self._call("process_poll", {"session_id": sid})
                    self._call("process_log", {"session_id": sid, "limit": 50})
        except (OSError, ValueError) as exc:
            self.failures.append(f"client: {exc}")

    def close(self) -> None:
        self.stop.set()
        self.thread.join(15)
        self.proc.terminate()
        self.proc.wait(10)


class Dashboard:
    """`hermes-procs` in a 40x140 PTY; a thread drains its screen output and presses harmless keys
    (arrows, `o` sort, `f` filter) every 0.5 s."""

    KEYS = (b"\x1b[B", b"\x1b[B", b"\x1b[A", b"o", b"f")

    def __init__(self, home: Path, env: dict[str, str]) -> None:
        self.master, slave = os.openpty()
        fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 40, 140, 0, 0))
        self.proc = subprocess.Popen([sys.executable, "-m", "hermes_procs", "--home", str(home)],
                                     stdin=slave, stdout=slave, stderr=slave, start_new_session=True,
                                     env={**env, "TERM": "xterm-256color"})
        os.close(slave)
        self.stop = threading.Event()
        self.shown = 0  # bytes of screen output so far
        self.thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        rng = random.Random(13)
        next_key = time.monotonic() + 5  # let it start
        while not self.stop.is_set():
            ready, _, _ = select.select([self.master], [], [], 0.1)
            try:
                if ready:
                    chunk = os.read(self.master, 65536)
                    if not chunk:
                        return
                    self.shown += len(chunk)
                if time.monotonic() >= next_key:
                    os.write(self.master, rng.choice(self.KEYS))
                    next_key = time.monotonic() + 0.5
            except OSError:
                return  # the dashboard is gone (the report says so)

    def close(self) -> None:
        self.stop.set()
        self.thread.join(5)
        try:
            os.write(self.master, b"q")
            self.proc.wait(10)
        except (OSError, subprocess.TimeoutExpired):
            self.proc.kill()
            self.proc.wait()
        os.close(self.master)


# ---------------------------------------------------------------------------------------------
# parent: start everything, inject faults, check the outcome
# ---------------------------------------------------------------------------------------------
def _fds(pid: int) -> int:
    try:
        return len(os.listdir(f"/proc/{pid}/fd"))
    except OSError:
        return -1


def _rss_kb(pid: int) -> int:
    try:
        with open(f"/proc/{pid}/status") as fh:
            for line in fh:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1])
    except OSError:
        pass
    return -1


def _running_supervisors(home: Path) -> list[tuple[str, int]]:
    found = []
    for jobdir in (home / "jobs").glob("proc_*"):
        if (jobdir / "exit.json").exists():
            continue
        try:
            proc = json.loads((jobdir / "proc.json").read_text())
            found.append((jobdir.name, int(proc["supervisor_pid"])))
        except (OSError, ValueError, KeyError):
            pass
    return found


def inject_faults(home: Path, deadline: float, rng: random.Random) -> dict:
    faults = {"kill9_supervisor": [], "stop_cont": 0}
    while time.time() < deadline:
        time.sleep(rng.uniform(0.5, 2.0))
        running = _running_supervisors(home)
        if not running:
            continue
        sid, pid = rng.choice(running)
        try:
            if rng.random() < 0.3:
                faults["kill9_supervisor"].append(sid)  # recorded first: this job may be lost
                os.kill(pid, signal.SIGKILL)
            else:
                os.kill(pid, signal.SIGSTOP)
                time.sleep(rng.uniform(0.2, 1.5))
                os.kill(pid, signal.SIGCONT)
                faults["stop_cont"] += 1
        except ProcessLookupError:
            pass
    return faults


def check(home: Path, journals: list[Path], faults: dict) -> dict:
    from hermes_procs.core import ProcessRegistry

    reg = ProcessRegistry(home=home)
    jobs, killed, errors = {}, set(), {}
    for journal in journals:
        for line in journal.read_text().splitlines():
            entry = json.loads(line)
            if entry["kind"] == "job":
                jobs[entry["sid"]] = entry
            elif entry["kind"] == "kill":
                killed.add(entry["sid"])
            else:
                key = f"{entry['op']}: {str(entry.get('error'))[:80]}"
                errors[key] = errors.get(key, 0) + 1
    for sid in jobs:  # whatever still runs is ended now (and counts as killed)
        if reg.poll(sid).get("status") == "running":
            killed.add(sid)
            reg.kill(sid, grace=0.2)
    injected = set(faults["kill9_supervisor"])
    report = {"jobs": len(jobs), "killed": len(killed & set(jobs)), "supervisors_kill9": len(injected),
              "stop_cont": faults["stop_cont"], "jobs_lost": [], "exit_codes_lost": [], "bytes_lost": 0,
              "jobs_short_of_bytes": [], "api_errors": errors}
    for sid, want in jobs.items():
        result = reg.poll(sid)
        reason, code = result.get("completion_reason"), result.get("exit_code")
        if sid in injected:
            continue  # its supervisor was SIGKILLed on purpose: lost is the truth
        if result.get("status") in ("not_found",) or reason == "lost" or (reason is None and code is None):
            report["jobs_lost"].append(sid)
            continue
        if sid in killed:
            continue  # exit code and bytes depend on when the kill landed
        if code != want["code"]:
            report["exit_codes_lost"].append({"sid": sid, "want": want["code"], "got": code, "reason": reason})
        size = sum(p.stat().st_size for p in reg.log_files(sid) if p.exists())
        if size < want["bytes"]:
            report["bytes_lost"] += want["bytes"] - size
            report["jobs_short_of_bytes"].append(sid)
    return report


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--minutes", type=float, default=2.0)
    parser.add_argument("--workers", type=int, default=3)
    parser.add_argument("--seed", type=int, default=None)
    parser.add_argument("--home", default=None, help="state home (default: a new temporary one)")
    parser.add_argument("--worker", nargs=3, metavar=("JOURNAL", "DEADLINE", "SEED"), help=argparse.SUPPRESS)
    parser.add_argument("--observer", metavar="DEADLINE", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        worker(args.home, args.worker[0], float(args.worker[1]), int(args.worker[2]))
        return 0
    if args.observer:
        observer(args.home, float(args.observer))
        return 0

    seed = args.seed if args.seed is not None else random.randrange(1 << 30)
    rng = random.Random(seed)
    scratch = Path(tempfile.mkdtemp(prefix="hermes-soak-"))
    home = Path(args.home) if args.home else scratch / "home"
    env = {**os.environ, "HERMES_PROCS_KEEP_COUNT": "1000000", "HERMES_PROCS_KEEP_DAYS": "365"}
    deadline = time.time() + args.minutes * 60
    me = [sys.executable, str(HERE), "--home", str(home)]
    obs = subprocess.Popen([*me, "--observer", str(deadline)], env=env)
    journals = [scratch / f"worker{i}.jsonl" for i in range(args.workers)]
    workers = [subprocess.Popen([*me, "--worker", str(j), str(deadline), str(seed + i)], env=env)
               for i, j in enumerate(journals)]
    mcp, dashboard = McpClient(home, env), Dashboard(home, env)
    mcp.thread.start()
    dashboard.thread.start()
    clients = {"observer": obs, "mcp_server": mcp.proc, "dashboard": dashboard.proc}
    time.sleep(min(10.0, args.minutes * 6))  # the baselines: warm (imports done, jobs listed) ...
    warm = time.monotonic() + 30
    while (mcp.calls < 3 or dashboard.shown < 4096) and time.monotonic() < warm:
        time.sleep(0.2)  # ... and answering: three MCP calls made, the dashboard drawn
    start = {name: (_fds(p.pid), _rss_kb(p.pid)) for name, p in clients.items()}
    faults = inject_faults(home, deadline, rng)
    for proc in workers:
        proc.wait()
    end = {name: (_fds(p.pid), _rss_kb(p.pid)) for name, p in clients.items()}
    died = [name for name, p in clients.items() if p.poll() is not None and name != "observer"]
    mcp.close()
    dashboard.close()
    obs.wait()
    report = check(home, journals, faults)
    report.update(seed=seed, minutes=args.minutes, workers=args.workers, home=str(home), clients_died=died,
                  mcp={"calls": mcp.calls, "unanswered": mcp.unanswered, "failures": mcp.failures[:10]},
                  long_lived={name: {"fds_start": start[name][0], "fds_end": end[name][0],
                                     "fd_growth": end[name][0] - start[name][0], "rss_kb_start": start[name][1],
                                     "rss_kb_end": end[name][1], "rss_kb_growth": end[name][1] - start[name][1]}
                              for name in clients})
    print(json.dumps(report, indent=1))
    growth = "; ".join(f"{name} fds {start[name][0]}->{end[name][0]}, RSS {start[name][1]}->{end[name][1]} KiB"
                       for name in clients)
    print(f"soak: {report['jobs']} jobs in {args.minutes:g} min ({args.workers} workers, seed {seed}); "
          f"{report['supervisors_kill9']} supervisors SIGKILLed, {report['stop_cont']} SIGSTOP/SIGCONT; "
          f"lost: {len(report['jobs_lost'])} jobs, {len(report['exit_codes_lost'])} exit codes, "
          f"{report['bytes_lost']} bytes; API errors: {sum(report['api_errors'].values())}; "
          f"MCP calls {mcp.calls} ({mcp.unanswered} unanswered, {len(mcp.failures)} failed); {growth}"
          + (f"; DIED: {', '.join(died)}" if died else ""))
    lost = report["jobs_lost"] or report["exit_codes_lost"] or report["bytes_lost"]
    return 1 if lost or mcp.unanswered or mcp.failures or died else 0


if __name__ == "__main__":
    sys.exit(main())
