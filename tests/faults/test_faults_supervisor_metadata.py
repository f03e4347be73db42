"""Issue 8 class 12: damaged or deleted job files. The supervisor still records the exit (to
memory at least) and exits after its job; a supervisor that answers its socket can always kill."""

from __future__ import annotations

import json
import os
import shutil
import signal

import pytest
from conftest import pid_alive, wait_until

from hermes_procs.core.supervisor import proctree

from .conftest import raw_exchange


def _supervisor(registry, sid) -> int:
    return json.loads((registry.job_dir(sid) / "proc.json").read_text())["supervisor_pid"]


@pytest.fixture
def start(registry):
    """spawn(command) -> session id; damaged jobs are no `running` rows the registry fixture
    would kill, so their processes (identity-checked) are ended here."""
    procs = []

    def spawn(command: str) -> str:
        sid = registry.spawn(command)["session_id"]
        procs.append(json.loads((registry.job_dir(sid) / "proc.json").read_text()))
        return sid

    yield spawn
    for proc in procs:
        for pid in (proc["pid"], proc["supervisor_pid"]):
            if pid_alive(pid) and proctree.start_ticks(pid) in (proc["pid_start"], proc["supervisor_start"]):
                os.kill(pid, signal.SIGKILL)


def test_garbage_exit_json_before_the_exit(registry, start):
    sid = start("read x; exit 6")
    jobdir = registry.job_dir(sid)
    sup = _supervisor(registry, sid)
    wait_until(lambda: (jobdir / "sock").exists())
    (jobdir / "exit.json").write_text("garbage, not an exit record")
    assert raw_exchange(jobdir, b'{"op": "close_stdin"}\n', replies=1)[0]["ok"]  # `read` ends
    wait_until(lambda: not pid_alive(sup), timeout=15)  # it records the truth and leaves
    assert json.loads((jobdir / "exit.json").read_text())["exit_code"] == 6


def test_deleted_job_folder_supervisor_still_ends(registry, start, tmp_path):
    gate = tmp_path / "go"
    sid = start(f"while [ ! -e {gate} ]; do sleep 0.02; done; echo done")
    sup = _supervisor(registry, sid)
    wait_until(lambda: (registry.job_dir(sid) / "sock").exists())
    shutil.rmtree(registry.job_dir(sid))
    gate.touch()
    wait_until(lambda: not pid_alive(sup), timeout=15)


@pytest.mark.parametrize("damage", ["garbage exit.json", "deleted meta.json", "corrupt proc.json"])
def test_damaged_metadata_never_blocks_kill(registry, start, damage):
    sid = start("sleep 60")
    jobdir = registry.job_dir(sid)
    proc = json.loads((jobdir / "proc.json").read_text())
    wait_until(lambda: (jobdir / "sock").exists())
    if damage == "garbage exit.json":
        (jobdir / "exit.json").write_text("{not json")
    elif damage == "deleted meta.json":
        (jobdir / "meta.json").unlink()
    else:
        (jobdir / "proc.json").write_text("[1, 2")
    result = registry.kill(sid, grace=0.5)
    assert result["status"] == "killed", result
    wait_until(lambda: not pid_alive(proc["pid"]))
    wait_until(lambda: not pid_alive(proc["supervisor_pid"]))
