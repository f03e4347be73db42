"""Search and the event log (issue 19 items 4 and 9; issue 26 item 1 builds on the first rows).

* `registry.search` over a 64 MB log (500 MB with --full), a literal, a regex and a word on
  every line (the first 50 returned, every one counted), against `grep -cE` over the same
  bytes: throughput in MB/s (higher is better). The pattern runs in RE2
  (core/registry/userregex.py, core/registry/linefind.py); the issue 26 target is >= 0.5x grep.
  The same for a log of coloured terminal output (escape sequences on every line: searched as
  its text) and for a PTY job's log (a test runner's coloured lines, ``\r\n``), each by a first
  search (no notes of its clean blocks yet: core/registry/colournotes.py) and by a search after
  one; for the whole `hermes-procs search` process and for the dashboard's `&` filter
  (tui/log_filter.py).
* `prune` of a home whose events.jsonl holds 120 MB of events every consumer has read (30 MB
  quick), and the first drain of a new consumer afterwards, against `wc -l` of the same file.
"""

from __future__ import annotations

import json
import os
import shlex
import shutil
import subprocess
import time

from hermes_procs.core import ProcessRegistry
from hermes_procs.core.registry.colournotes import NOTES_FILE
from hermes_procs.core.registry.userregex import compile_user

from .common import PY, Config, Row, interleave, temp_home

LINE = b"2024-05-01 12:00:00 INFO worker-3 handled request id=12345 in 12 ms from 10.0.0.7\n"


COLOURED = b"\x1b[2m2024-05-01 12:00:00\x1b[0m \x1b[32mINFO\x1b[0m worker-3 handled request id=12345 in 12 ms\n"
# a test runner in a terminal: colours, a mark that is not ASCII, an erase to the line's end
TERMINAL = ("\x1b[32m\u2713\x1b[0m tests/test_api.py::test_request[id=12345] \x1b[2mPASSED\x1b[0m in 12 ms"
            "\x1b[K\n").encode()


def _log_job(reg: ProcessRegistry, size: int, line: bytes = LINE, pty: bool = False) -> tuple[str, str]:
    """A finished job whose log is `size` bytes of `line` (one ERROR near the end); `pty`: written
    to a terminal (its line ends are \r\n in the log)."""
    count = size // len(line)
    script = (f"import sys; w = sys.stdout.buffer.write; block = {line!r} * 10000; "
              f"[w(block) for _ in range({count} // 10000)]; w(b'ERROR disk full id=99991' + bytes([10]))")
    os.environ["HERMES_PROCS_LOG_CAP"] = str(size * 4)  # all of it in output.log (a segment is half the cap)
    try:
        sid = reg.spawn(f"python3 -c {shlex.quote(script)}", pty=pty)["session_id"]
    finally:
        del os.environ["HERMES_PROCS_LOG_CAP"]
    if reg.wait(sid, timeout=600).get("exit_code") != 0 or os.path.getsize(reg.job_dir(sid) / "output.log") < size // 2:
        raise RuntimeError(f"the log job did not write its log: {reg.read_log(sid)}"[:200])
    return sid, str(reg.job_dir(sid) / "output.log")


def _mb_per_s(size: int, fn) -> float:
    t0 = time.perf_counter()
    fn()
    return size / (time.perf_counter() - t0) / 1e6


def _grep(grep: str, pattern: str, log: str) -> None:
    subprocess.run([grep, "-cE", pattern, log], capture_output=True)


def _versus_grep(cfg: Config, name: str, size: int, pattern: str, log: str, ours) -> Row:
    """A row: `ours()` over the log against `grep -cE pattern` over the same file, in MB/s."""
    grep = shutil.which("grep") or "grep"
    got, base = interleave(cfg.runs, lambda: _mb_per_s(size, ours),
                           lambda: _mb_per_s(size, lambda: _grep(grep, pattern, log)))
    ratio = sorted(got)[len(got) // 2] / sorted(base)[len(base) // 2]
    return Row(f"{name} ({pattern})", "MB/s", got, "grep -cE, same file", base, ">= 0.5x (issue 26)", ratio >= 0.5)


def _first_search(reg: ProcessRegistry, sid: str, notes) -> None:
    """A search of a log no search has read: its clean coloured blocks not noted yet
    (core/registry/colournotes.py)."""
    notes.unlink(missing_ok=True)
    reg.search(sid, "ERROR", context=2)


def _cli_search(home, sid: str, pattern: str) -> None:
    subprocess.run([PY, "-m", "hermes_procs", "--home", str(home), "search", sid, pattern], capture_output=True,
                   check=True)


def _dashboard_filter(reg: ProcessRegistry, sid: str, pattern: str) -> None:
    from hermes_procs.tui.log_filter import filter_log

    done = []
    filter_log(reg.job_dir(sid), compile_user(pattern), 2, lambda p: done.append(p.done) if p.done else None,
               lambda: False)
    if not done:
        raise RuntimeError("the filter did not finish")


def run(cfg: Config) -> list[Row]:
    rows = []
    size = cfg.size(64, 500) << 20
    mb = size >> 20
    with temp_home() as home:
        reg = ProcessRegistry(home=home)
        sid, log = _log_job(reg, size)
        cases = (("a literal", "ERROR"), ("a regex", r"id=9999[0-9]"), ("a word on every line", "worker-3"))
        for name, pattern in cases:
            rows.append(_versus_grep(cfg, f"search {mb} MB for {name}", size, pattern, log,
                                     lambda p=pattern: reg.search(sid, p, context=2)))
        rows.append(_versus_grep(cfg, f"hermes-procs search, {mb} MB, whole process", size, "ERROR", log,
                                 lambda: _cli_search(home, sid, "ERROR")))
        rows.append(_versus_grep(cfg, f"dashboard & filter, {mb} MB", size, "ERROR", log,
                                 lambda: _dashboard_filter(reg, sid, "ERROR")))
        for kind, line, pty in (("coloured output", COLOURED, False),
                                ("a PTY job's output (colours, UTF-8, \\r\\n)", TERMINAL, True)):
            sid, log = _log_job(reg, size, line, pty=pty)
            notes = reg.job_dir(sid) / NOTES_FILE
            rows.append(_versus_grep(cfg, f"search {mb} MB of {kind} for a literal, first search", size, "ERROR",
                                     log, lambda s=sid, n=notes: _first_search(reg, s, n)))
            rows.append(_versus_grep(cfg, f"search {mb} MB of {kind} for a literal, searched before", size,
                                     "ERROR", log, lambda s=sid: reg.search(s, "ERROR", context=2)))
    rows += _events(cfg)
    return rows


def _old_events(count: int) -> bytes:
    """`count` completion events of jobs long pruned, as supervisors write them."""
    return "".join(json.dumps({"type": "completion", "session_id": f"proc_{i:012x}", "t": 1.6e9 + i,
                               "command": "make", "exit_code": 0, "completion_reason": "exited",
                               "output": "x" * 200}) + "\n" for i in range(count)).encode()


def _events(cfg: Config) -> list[Row]:
    mb = cfg.size(30, 120)
    chunk = _old_events(10_000)
    prunes, drains, counts = [], [], []
    for _ in range(cfg.runs):
        with temp_home() as home:
            reg = ProcessRegistry(home=home)
            path = home / "events.jsonl"
            with open(path, "ab") as fh:
                for _ in range((mb << 20) // len(chunk) + 1):
                    fh.write(chunk)
            reg.drain_events("reader", only_new=True)  # a consumer that has read all of it
            t0 = time.perf_counter()
            subprocess.run(["wc", "-l", str(path)], capture_output=True)
            counts.append((time.perf_counter() - t0) * 1000)
            t0 = time.perf_counter()
            reg.prune()
            prunes.append((time.perf_counter() - t0) * 1000)
            t0 = time.perf_counter()
            reg.drain_events("newcomer")
            drains.append((time.perf_counter() - t0) * 1000)
    return [
        Row(f"prune of a {mb} MB event log every consumer has read", "ms", prunes, "wc -l of the same file",
            counts, "", None, note="before: 6.7 s for 120 MB, and the log stayed"),
        Row("a new consumer's first drain after that prune", "ms", drains, "", [], "< 100 ms",
            sorted(drains)[len(drains) // 2] < 100, note="before: 7.3 s and 189,000 events at once"),
    ]
