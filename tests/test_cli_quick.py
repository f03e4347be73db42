"""The CLI's fast path (cli/quick.py): `ls`, `poll`, `log`, `wait` and `search` answered without typer
say exactly what typer's commands say, and any line that is not a plain form goes to typer."""

from __future__ import annotations

import contextlib
import io
import os
import re
import subprocess
import sys
import time

import pytest

from hermes_procs.cli import main as cli_main
from hermes_procs.cli import quick
from hermes_procs.core import ProcessRegistry


def _both(home, argv: list[str]) -> tuple[tuple[int, str, str], tuple[int, str, str]]:
    """(fast path, typer) answers of one line in this process: exit status, stdout, stderr."""
    answers = []
    for run in (quick.answer, cli_main._run):
        out, err = io.StringIO(), io.StringIO()
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            code = cli_main._guarded(lambda run=run: run(["--home", str(home), *argv]))
        answers.append((code, out.getvalue(), err.getvalue()))
    return answers[0], answers[1]


@pytest.fixture
def jobs(home):
    reg = ProcessRegistry(home=home)
    done = reg.spawn("printf 'one\\ntwo\\nthree\\n'; exit 3", name="quick-done")["session_id"]
    reg.wait(done, timeout=30)
    running = reg.spawn("echo up; sleep 60", name="quick-running", task_id="T1")["session_id"]
    deadline = time.monotonic() + 10
    while "up" not in reg.poll(running)["output_preview"] and time.monotonic() < deadline:
        time.sleep(0.02)  # both answers then show its output
    yield done, running
    reg.kill(running, grace=0.2)


LINES = [
    ["ls"],
    ["list"],
    ["ls", "--json"],
    ["--json", "ls"],
    ["ls", "-a"],
    ["ls", "--all", "--task", "T1"],
    ["ls", "--task=T1", "--json"],
    ["ls", "--stack", "nope"],
    ["ls", "--session-key", "k"],
    ["poll", "{done}"],
    ["poll", "{done}", "--json"],
    ["poll", "--json", "{done}"],
    ["poll", "{running}"],
    ["poll", "nope"],
    ["--json", "poll", "nope"],
    ["poll", "proc_000000000000"],
    ["log", "{done}"],
    ["log", "{done}", "--limit", "1"],
    ["log", "{done}", "-n", "2"],
    ["log", "{done}", "--lines=1"],
    ["log", "{done}", "--offset=1", "--limit=1", "--json"],
    ["log", "{done}", "--since", "1h"],
    ["log", "{done}", "--since", "yesterday"],
    ["log", "nope"],
    ["wait", "{done}"],
    ["wait", "{done}", "--json"],
    ["wait", "{done}", "--exit-code"],
    ["wait", "{done}", "{running}"],
    ["wait", "{running}", "--timeout", "0.2"],
    ["wait", "{running}", "--timeout=0.2", "--json"],
    ["wait", "{running}", "--timeout=-1"],
    ["wait", "{running}", "--until", "quiet:0.1", "--timeout", "5"],
    ["wait", "{done}", "{running}", "--until", "input"],
    ["wait", "{running}", "--until", "bogus"],
    ["wait", "{done}", "--timeout", "1e3"],
    ["wait", "{done}", "--timeout", "+.5"],
    ["log", "{done}", "--limit", "+2"],
    ["search", "{done}", "two"],
    ["search", "{done}", "t[wh]", "-C", "0"],
    ["search", "two"],
    ["search", "up", "--json"],
    ["search", "{done}", "e", "--context=1", "--limit", "1"],
    ["search", "--task", "T1", "up"],
    ["search", "{done}", "("],
    ["search", "a", "b", "c"],
    ["search", "nope", "x"],
]


@pytest.mark.parametrize("line", LINES, ids=" ".join)
def test_the_fast_path_says_what_typer_says(home, jobs, line):
    done, running = jobs
    argv = [word.format(done=done, running=running) for word in line]
    fast, typer = _both(home, argv)
    assert fast[0] is not None, "the fast path should answer this line"
    assert _steady(fast) == _steady(typer)


# what moves on between the two answers: a running job's uptime, CPU, memory, quiet time
_MOVING = re.compile(r'\b\d+(\.\d+)?s\b|"(uptime_seconds|cpu_percent|rss_bytes|quiet_seconds|process_count)": [^,}]+')


def _steady(answer: tuple[int | None, str, str]) -> tuple[int | None, str, str]:
    code, out, err = answer
    return code, _MOVING.sub("~", out), _MOVING.sub("~", err)


@pytest.mark.parametrize("line", [
    ["poll"], ["poll", "a", "b"], ["poll", "x", "--bogus"], ["poll", "--help"], ["-h"], ["--version"],
    ["log", "x", "-f"], ["log", "x", "--limit", "many"], ["log", "x", "--limit"], ["log", "x", "--limit", "-1"],
    ["wait", "x", "--timeout", "-1"],
    ["ls", "-ax"], ["ls", "--json=1"], ["ls", "extra"], ["wait"], ["wait", "x", "--timeout", "soon"],
    ["log", "x", "--limit", "\u0663"], ["log", "x", "--limit", "1_000"], ["log", "x", "--limit= 5"],
    ["wait", "x", "--timeout", "\u0663"], ["wait", "x", "--timeout", "nan"], ["search", "x", "-C", "\uff11"],
    ["search", "x", "-C=1"], ["search", "x", "-C1"], ["search"], ["search", "x", "--", "-v"],
    ["poll", "--", "x"], ["poll", "-"], ["run", "--", "true"], ["--host", "ssh://nobody@127.0.0.1:1"], [],
])
def test_every_other_line_goes_to_typer(line):
    with pytest.raises(quick._NotMine):
        quick.parse(line)


def test_hot_queries_start_without_typer_or_the_spawn_code(home, jobs):
    """Real processes: the modules a query loads (python -X importtime)."""
    done, _ = jobs
    for line in (["ls"], ["poll", done, "--json"], ["log", done], ["wait", done], ["search", done, "two"]):
        proc = subprocess.run([sys.executable, "-X", "importtime", "-m", "hermes_procs", *line], capture_output=True,
                              text=True, timeout=30, env=dict(os.environ, HERMES_PROCS_HOME=str(home)))
        assert proc.returncode == 0, proc.stderr
        modules = {row.split("|")[-1].strip() for row in proc.stderr.splitlines() if "|" in row}
        for heavy in ("typer", "click", "rich", "textual", "dataclasses", "hermes_procs.core.registry.redact",
                      "hermes_procs.core.supervisor.template", "subprocess", "socket", "shutil", "base64",
                      "datetime", "threading", "shlex", "weakref", "hermes_procs.core.registry.screen"):
            assert not any(m == heavy or m.startswith(heavy + ".") for m in modules), (line, heavy)
        assert ("hermes_procs.core.registry.search" in modules) == (line[0] == "search"), line
    proc = subprocess.run([sys.executable, "-X", "importtime", "-m", "hermes_procs", "poll", done, "--bogus"],
                          capture_output=True, text=True, timeout=30, env=dict(os.environ, HERMES_PROCS_HOME=str(home)))
    modules = {row.split("|")[-1].strip() for row in proc.stderr.splitlines() if "|" in row}
    assert proc.returncode == 1 and "typer" in modules
    assert "hermes-procs: error: No such option: --bogus" in proc.stderr
