"""examples/agent_loop.py runs end to end (as a subprocess, in a temporary home) in seconds, and
the README's command for it works as written."""

import re
import shlex
import subprocess
import sys
import time
from pathlib import Path

import pytest

from hermes_procs.core import ProcessRegistry

ROOT = Path(__file__).resolve().parent.parent
EXAMPLE = ROOT / "examples" / "agent_loop.py"


def test_the_readme_commands_for_the_example_work_as_written(tmp_path):
    """From the checkout, as the README says (the venv `make run` / `make test` made)."""
    readme = (ROOT / "README.md").read_text()
    agent = re.search(r"`(\S+ examples/agent_loop\.py --home (\S+))`", readme)
    dashboard = re.search(r"`(\S+) --home (\S+)` in one terminal", readme)
    assert agent and dashboard, "the README names the example's commands"
    argv = shlex.split(agent.group(1).replace(agent.group(2), str(tmp_path / "home")))
    # a bare `python` / `hermes-procs` is not the one `make run` installed into
    assert argv[0].startswith(".venv/bin/") and dashboard.group(1).startswith(".venv/bin/"), argv
    if not (ROOT / argv[0]).exists():
        pytest.skip(f"{argv[0]} is made by `make run` / `make test`")
    assert (ROOT / dashboard.group(1)).exists(), dashboard.group(1)
    out = subprocess.run(argv, cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert out.returncode == 0 and "RESULT: ok" in out.stdout, out.stdout + out.stderr


def test_agent_loop_example(tmp_path):
    home = tmp_path / "home"
    start = time.monotonic()
    out = subprocess.run([sys.executable, str(EXAMPLE), "--home", str(home)], capture_output=True, text=True,
                         timeout=60)
    elapsed = time.monotonic() - start
    assert out.returncode == 0, out.stdout + out.stderr
    assert "RESULT: ok" in out.stdout
    assert "answering y" in out.stdout and '"action": "submit"' in out.stdout
    assert '"until": "input"' in out.stdout and "awaiting_input" in out.stdout and '"action": "screen"' in out.stdout
    assert '"action": "poll"' not in out.stdout  # no polling loop
    assert "host> event completion" in out.stdout and "host> event watch_match" in out.stdout
    assert elapsed < 20
    # the jobs are ordinary durable jobs in that home: what the dashboard shows
    jobs = {j["name"]: j for j in ProcessRegistry(home=home).list()}
    assert set(jobs) == {"build", "installer"}
    assert jobs["build"]["exit_code"] == 0 and jobs["installer"]["exit_code"] == 0
    reg = ProcessRegistry(home=home)
    assert "Installed widget 1.0." in reg.read_log(jobs["installer"]["session_id"])["output"]
    assert reg.inputs(jobs["installer"]["session_id"])[-1]["source"] == "agent"
