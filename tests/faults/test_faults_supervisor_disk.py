"""Issue 8 class 5: a full disk never costs a job its supervisor, its exit code or its output
count. Runs on a small tmpfs home (root only)."""

from __future__ import annotations

import json
import os

from conftest import pid_alive, wait_until

from hermes_procs.core import ProcessRegistry

from .conftest import fill

FLOOD = "read x; head -c 3000000 /dev/zero | tr '\\0' a; echo; exit 3"


def _supervisor_pid(reg, sid) -> int:
    return json.loads((reg.job_dir(sid) / "proc.json").read_text())["supervisor_pid"]


def test_full_disk_output_is_dropped_and_counted_exit_is_kept(tmpfs):
    reg = ProcessRegistry(home=tmpfs / "home")
    job = reg.spawn(FLOOD)
    sid = job["session_id"]
    sup = _supervisor_pid(reg, sid)
    filler = fill(tmpfs)
    assert reg.close_stdin(sid)["status"] == "ok"  # `read` ends: the job floods the full disk

    done = reg.wait(sid, timeout=30)
    assert done["status"] == "exited" and done["exit_code"] == 3, done
    polled = reg.poll(sid)
    assert polled["status"] == "exited" and polled["exit_code"] == 3, polled
    assert polled["output_dropped"] > 2_000_000, polled
    assert pid_alive(sup), "the supervisor must outlive a full disk (it holds the exit)"
    assert not (reg.job_dir(sid) / "exit.json").exists()

    filler.unlink()  # room again: the supervisor stores the exit and leaves
    wait_until(lambda: (reg.job_dir(sid) / "exit.json").exists(), timeout=15)
    record = json.loads((reg.job_dir(sid) / "exit.json").read_text())
    assert record["exit_code"] == 3 and record["output_dropped"] == polled["output_dropped"]
    wait_until(lambda: not pid_alive(sup), timeout=15)
    assert reg.poll(sid)["output_dropped"] == record["output_dropped"]
    events = (tmpfs / "home" / "events.jsonl").read_text()
    assert '"exited"' in events and sid in events  # the event waited for room too


def test_full_disk_silent_job_exit_is_served_from_memory(tmpfs):
    reg = ProcessRegistry(home=tmpfs / "home")
    sid = reg.spawn("read x; exit 5")["session_id"]
    sup = _supervisor_pid(reg, sid)
    filler = fill(tmpfs)
    assert reg.submit(sid, "go")["status"] == "ok"  # its input history cannot be written either
    done = reg.wait(sid, timeout=30)
    assert done["status"] == "exited" and done["exit_code"] == 5, done
    assert pid_alive(sup)
    filler.unlink()
    wait_until(lambda: not pid_alive(sup), timeout=15)
    assert json.loads((reg.job_dir(sid) / "exit.json").read_text())["exit_code"] == 5


def test_failed_spawn_on_full_disk_leaves_nothing(tmpfs):
    reg = ProcessRegistry(home=tmpfs / "home")
    filler = fill(tmpfs)
    result = reg.spawn("echo hi")
    assert result["status"] == "error" and "space" in result["error"].lower(), result
    assert os.listdir(tmpfs / "home" / "jobs") == []
    filler.unlink()
    assert reg.spawn("true")["status"] == "running"
