"""Sample jobs for ``hermes-procs demo`` and the screenshots: one of each kind the dashboard
shows.  Commands use only bash, coreutils and the running Python.

The samples are filed under the task ``demo``.  ``demo`` starts each one that has no job yet
that runs or ended by itself (so running it again adds no rows); ``demo --stop`` kills the
ones that run (the REPL and the ping run until then), after which ``demo`` starts them anew."""

from __future__ import annotations

import shlex
import sys
from pathlib import Path
from typing import Any

from hermes_procs.core.registry.interface import Registry

PY = shlex.quote(sys.executable or "python3")

_BUILD = r"""
printf '\033[1m==> building hermes-demo\033[0m (12 targets)\n'
for t in core/paths core/text core/logstore core/registry cli/commands tui/app \
         tui/log_pane tui/jobs_table tui/sampler tui/terminal docs/dashboard release; do
  for p in $(seq 0 10 100); do
    n=$((p/5)); bar=$(printf '%*s' $n '' | tr ' ' '#')
    printf '\r\033[36m  CC\033[0m %-18s [\033[32m%-20s\033[0m] %3d%%' "$t" "$bar" $p
    sleep 0.05
  done
  printf '\n'
  case $t in cli/commands) printf '\033[33mwarning:\033[0m unused import in %s.py\n' "$t";; esac
done
printf '\033[1;32m✔ build finished\033[0m in 7.1s\n'
"""

_ASK = r"""
echo 'This will reset the staging database (42 tables).'
printf 'Continue? [y/N] '
read answer
case "$answer" in y|Y) echo 'resetting… done';; *) echo 'aborted';; esac
"""

_TICKER = r"""
i=0
echo 'PING 127.0.0.1 (127.0.0.1) 56(84) bytes of data.'
while true; do
  i=$((i+1))
  printf '64 bytes from 127.0.0.1: icmp_seq=%d ttl=64 time=0.0%02d ms\n' $i $((RANDOM % 90 + 10))
  sleep 1
done
"""

_TESTS = r"""
printf '\033[1m============ test session starts ============\033[0m\n'
echo 'collected 6 items'
for t in test_spawn test_poll test_read_log test_write test_kill; do
  printf 'tests/test_core.py::%s \033[32mPASSED\033[0m\n' $t; sleep 0.3
done
printf 'tests/test_core.py::test_wait_timeout \033[31mFAILED\033[0m\n'
printf '\033[31mE   AssertionError: expected "timeout", got "exited"\033[0m\n'
printf '\033[31m======= 1 failed, 5 passed in 1.84s =======\033[0m\n'
exit 1
"""

SCRIPTS = {"build.sh": _BUILD, "reset-staging.sh": _ASK, "ping.sh": _TICKER, "run-tests.sh": _TESTS}

DEMO_JOBS: list[dict[str, Any]] = [
    {"name": "build", "command": "bash build.sh --release", "pty": False, "notify_on_complete": True},
    {"name": "python REPL", "command": f"{PY} -q -i", "pty": True},
    {"name": "reset staging", "command": "bash reset-staging.sh", "pty": False},
    {"name": "ping", "command": "bash ping.sh 127.0.0.1", "pty": False, "watch_patterns": ["icmp_seq=30 "]},
    {"name": "tests", "command": "bash run-tests.sh -q", "pty": False, "notify_on_complete": True},
]


def demo_dir(registry: Registry) -> Path:
    """``<home>/demo``: the sample scripts, written (again) on every start."""
    path = Path(registry.home) / "demo"
    path.mkdir(mode=0o700, parents=True, exist_ok=True)
    for name, body in SCRIPTS.items():
        (path / name).write_text(body.lstrip())
    return path


DEMO_TASK = "demo"  # the task_id the samples are filed under


def _samples(registry: Registry) -> list[dict[str, Any]]:
    """The home's sample jobs (list() rows), newest first."""
    try:
        rows = registry.list(task_id=DEMO_TASK)
    except Exception:
        return []
    return [row for row in rows if isinstance(row, dict)] if isinstance(rows, list) else []


def start_demo(registry: Registry, jobs: list[dict[str, Any]] | None = None) -> list[dict]:
    """Start each sample job that has no job yet that runs or ended by itself (a killed or timed
    out one does not count: ``demo --stop``); return the spawn results."""
    jobs = DEMO_JOBS if jobs is None else jobs
    kept = {row.get("name") for row in _samples(registry)
            if row.get("status") == "running" or row.get("completion_reason") not in ("killed", "timed_out")}
    cwd = str(demo_dir(registry))
    results = []
    for spec in jobs:
        if spec["name"] in kept:
            continue
        kwargs = {"cwd": cwd, "task_id": DEMO_TASK, **{k: v for k, v in spec.items() if k != "command"}}
        results.append(registry.spawn(spec["command"], **kwargs))
    return results


def stop_demo(registry: Registry, grace: float | None = None) -> list[dict]:
    """Kill the sample jobs that still run; return the kill results."""
    kwargs = {} if grace is None else {"grace": grace}
    return [registry.kill(row["session_id"], **kwargs) for row in _samples(registry)
            if row.get("status") == "running"]


def kill_running(registry: Registry, grace: float = 0.2) -> None:
    """Kill every job of `registry` that still runs (the end of a run in a temporary home:
    the screenshots, the dashboard benchmark)."""
    jobs = registry.list()
    for job in jobs if isinstance(jobs, list) else []:
        if job.get("status") == "running":
            registry.kill(job["session_id"], grace=grace)
