"""Sample jobs for `hermes-procs demo` / `make run`: a little of everything the dashboard
shows (a PTY REPL, a ticking log, a progress bar redrawn with \\r and colours, a prompt that
waits for an answer, a job that fails, one that succeeds).

`start_demo_jobs(registry)` is idempotent: a sample whose name is already running is not
started again.  Commands use only bash and the running Python.
"""

from __future__ import annotations

import shlex
import sys

PY = shlex.quote(sys.executable or "python3")

DEMO_JOBS: list[dict] = [
    {
        "name": "demo: python REPL",
        "command": f"{PY} -q -i",
        "pty": True,
    },
    {
        "name": "demo: ticker",
        "command": "for i in $(seq 1 100000); do echo \"tick $i $(date +%T)\"; sleep 1; done",
        "pty": False,
        "watch_patterns": ["tick 30 "],
    },
    {
        "name": "demo: build with progress",
        "command": (
            "for i in $(seq 0 5 100); do printf '\\r\\033[36mbuilding\\033[0m [%-20s] %3d%%' "
            "\"$(printf '#%.0s' $(seq 1 $((i/5))))\" $i; sleep 0.3; done; "
            "printf '\\n\\033[32mbuild ok\\033[0m\\n'"
        ),
        "pty": True,
        "notify_on_complete": True,
    },
    {
        "name": "demo: asks a question",
        "command": "read -p 'Deploy to staging? [y/N] ' a; echo \"answer: ${a:-N}\"; sleep 600",
        "pty": True,
    },
    {
        "name": "demo: failing tests",
        "command": "echo 'collected 3 items'; sleep 1; echo 'test_ok PASSED'; "
        "echo 'test_bad FAILED' >&2; exit 1",
        "pty": False,
        "notify_on_complete": True,
    },
    {
        "name": "demo: quick job",
        "command": "echo hello from hermes-procs; uname -a",
        "pty": False,
    },
]


def start_demo_jobs(registry, jobs: list[dict] | None = None) -> list[dict]:
    """Start the sample jobs not already running (by name); return the spawn results."""
    jobs = DEMO_JOBS if jobs is None else jobs
    try:
        current = registry.list()
    except Exception:
        current = []
    running = {
        j.get("name")
        for j in (current if isinstance(current, list) else [])
        if isinstance(j, dict) and j.get("status") == "running"
    }
    results = []
    for spec in jobs:
        if spec["name"] in running:
            continue
        kwargs = {k: v for k, v in spec.items() if k != "command"}
        results.append(registry.spawn(spec["command"], **kwargs))
    return results
