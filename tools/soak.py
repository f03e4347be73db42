"""A bounded soak: churn of spawn/kill/wait/attach from several processes with random faults.

    python tools/soak.py [--minutes 2] [--workers 3] [--seed N] [--home DIR]    (make soak)

Worker processes start jobs that print a known number of bytes and exit with a known code
(pipes and PTYs, some long enough to be killed), wait for them, attach to them, kill some. A
fault injector meanwhile SIGKILLs a running job's supervisor now and then (that job is then
expected to be `lost`) and SIGSTOPs/SIGCONTs others (they must lose nothing). A long-lived
observer process keeps a registry open the whole time (list, poll, read_log, drain_events) and
its open fds and RSS are sampled once it is warm (10 s in) and at the end.

At the end every job is checked against what its worker expected, and the report says: jobs
lost (no exit record, not a supervisor the injector killed), exit codes lost (wrong or missing
exit code), bytes lost (fewer bytes in the log than printed), API errors, and the observer's fd
and RSS growth. It exits 1 when anything was lost. Not part of `make test`: it runs minutes.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import signal
import subprocess
import sys
import tempfile
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
    time.sleep(min(10.0, args.minutes * 6))  # the observer's baseline: warm (imports done, jobs listed)
    fds0, rss0 = _fds(obs.pid), _rss_kb(obs.pid)
    faults = inject_faults(home, deadline, rng)
    for proc in workers:
        proc.wait()
    fds1, rss1 = _fds(obs.pid), _rss_kb(obs.pid)
    obs.wait()
    report = check(home, journals, faults)
    report.update(seed=seed, minutes=args.minutes, workers=args.workers, home=str(home),
                  observer={"fds_start": fds0, "fds_end": fds1, "fd_growth": fds1 - fds0,
                            "rss_kb_start": rss0, "rss_kb_end": rss1, "rss_kb_growth": rss1 - rss0})
    print(json.dumps(report, indent=1))
    print(f"soak: {report['jobs']} jobs in {args.minutes:g} min ({args.workers} workers, seed {seed}); "
          f"{report['supervisors_kill9']} supervisors SIGKILLed, {report['stop_cont']} SIGSTOP/SIGCONT; "
          f"lost: {len(report['jobs_lost'])} jobs, {len(report['exit_codes_lost'])} exit codes, "
          f"{report['bytes_lost']} bytes; observer fds {fds0}->{fds1}, RSS {rss0}->{rss1} KiB; "
          f"API errors: {sum(report['api_errors'].values())}")
    lost = report["jobs_lost"] or report["exit_codes_lost"] or report["bytes_lost"]
    return 1 if lost else 0


if __name__ == "__main__":
    sys.exit(main())
