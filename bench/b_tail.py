"""The tail of a big log (issue 26 item 2): `read_log` of the last 200 lines of a 64 MB log
(500 MB with --full), and `read_log(since="1s")`, each the first call in a new process (the
registry's import not counted), against `tail -n 200` of the same file as a whole process.

Two states of the log: as its supervisor left it (nobody has read it; the supervisor counted its
line ends in lines.idx after the exit, as it does when its job is quiet) and without lines.idx
(the reader counts the line ends once: a pass over the log, the bound for output printed
without a pause since the supervisor last counted).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import time

from hermes_procs.core import ProcessRegistry

from .b_search import _log_job
from .common import PY, Config, Row, interleave, temp_home

FIRST_CALL = """import sys, time
from hermes_procs.core import ProcessRegistry
reg = ProcessRegistry(home=sys.argv[1])
t0 = time.perf_counter()
got = reg.read_log(sys.argv[2], limit=200, **({"since": "1h"} if sys.argv[3] == "since" else {}))
took = time.perf_counter() - t0
assert got["status"] in ("exited", "running") and got["output"], got
print(took * 1000)
"""


def _first_call(home, sid: str, how: str) -> float:
    out = subprocess.run([PY, "-c", FIRST_CALL, str(home), sid, how], capture_output=True, text=True,
                         check=True)
    return float(out.stdout)


def _tail(log: str) -> float:
    t0 = time.perf_counter()
    subprocess.run([shutil.which("tail") or "tail", "-n", "200", log], capture_output=True, check=True)
    return (time.perf_counter() - t0) * 1000


def _supervisor_done(reg: ProcessRegistry, sid: str) -> None:
    """Wait until the job's supervisor has left (after the exit it counts the log's lines)."""
    pid = json.loads((reg.job_dir(sid) / "proc.json").read_text())["supervisor_pid"]
    deadline = time.monotonic() + 60
    while os.path.exists(f"/proc/{pid}") and time.monotonic() < deadline:
        time.sleep(0.01)


def run(cfg: Config) -> list[Row]:
    size = cfg.size(64, 500) << 20
    rows = []
    with temp_home() as home:
        reg = ProcessRegistry(home=home)
        sid, log = _log_job(reg, size)
        _supervisor_done(reg, sid)
        idx = reg.job_dir(sid) / "lines.idx"
        kept = idx.read_bytes() if idx.exists() else b""
        for how, name in (("tail", "last 200 lines"), ("since", "since='1h', last 200 lines")):
            ours, base = interleave(cfg.runs, lambda h=how: _first_call(home, sid, h), lambda: _tail(log))
            med = sorted(ours)[len(ours) // 2]
            rows.append(Row(f"read_log {name} of a {size >> 20} MB log, first call in a new process", "ms",
                            ours, "tail -n 200 (whole process)", base, "< 10 ms (issue 26)", med < 10,
                            note="nobody had read the log: its supervisor counted its lines (lines.idx)"
                            if kept else "lines.idx missing: the supervisor did not count"))

        def never_counted() -> float:
            idx.unlink(missing_ok=True)
            return _first_call(home, sid, "tail")

        uncounted, base0 = interleave(cfg.runs, never_counted, lambda: _tail(log))
        rows.append(Row(f"read_log tail 200 of a {size >> 20} MB log without lines.idx", "ms", uncounted,
                        "tail -n 200 (whole process)", base0, "info", None,
                        note="a pass over the log: what a reader pays for output its supervisor did not count "
                        "(a job printing without a pause since the last count)"))
    return rows
