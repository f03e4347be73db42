"""examples/agent_loop.py runs end to end (as a subprocess, in a temporary home) in seconds."""

import subprocess
import sys
import time
from pathlib import Path

from hermes_procs.core import ProcessRegistry

EXAMPLE = Path(__file__).resolve().parent.parent / "examples" / "agent_loop.py"


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
