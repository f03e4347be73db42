"""Killing job trees: identity checks, TERM then KILL, setsid'ed descendants, leftovers, records."""

import json
import os
import signal
import subprocess
import time

from conftest import wait_until

from hermes_procs.core import proctree


def _pids_from_log(registry, sid, count):
    def ready():
        words = registry.read_log(sid)["output"].split()
        nums = [int(w) for w in words if w.isdigit()]
        return nums if len(nums) >= count else None
    return wait_until(ready)


def test_kill_running_job(registry, alive):
    job = registry.spawn("sleep 60")
    result = registry.kill(job["session_id"], grace=1)
    assert result["status"] == "killed" and result["completion_reason"] == "killed"
    assert result["exit_code"] == -signal.SIGTERM
    assert not alive(job["pid"])
    polled = registry.poll(job["session_id"])
    assert polled["status"] == "exited" and polled["completion_reason"] == "killed"


def test_term_ignoring_tree_gets_sigkill(registry, alive):
    job = registry.spawn("trap '' TERM; (trap '' TERM; sleep 60) & echo $!; while true; do sleep 0.05; done")
    (child,) = _pids_from_log(registry, job["session_id"], 1)
    start = time.monotonic()
    result = registry.kill(job["session_id"], grace=0.3)
    assert result["status"] == "killed" and result["exit_code"] == -signal.SIGKILL
    assert time.monotonic() - start < 5
    assert not alive(job["pid"]) and not alive(child)


def test_setsid_grandchild_is_killed(registry, alive):
    job = registry.spawn("setsid sleep 60 & echo $!; sleep 60")
    (escaped,) = _pids_from_log(registry, job["session_id"], 1)
    assert os.getsid(escaped) != os.getsid(job["pid"])
    assert registry.kill(job["session_id"], grace=1)["status"] == "killed"
    assert not alive(escaped)


def test_orphaned_setsid_descendant_is_killed(registry, alive):
    # the middle process exits at once, so the setsid'ed sleeper is orphaned (re-parented)
    job = registry.spawn("bash -c 'setsid sleep 60 & echo $!'; sleep 60")
    (escaped,) = _pids_from_log(registry, job["session_id"], 1)
    assert registry.kill(job["session_id"], grace=1)["status"] == "killed"
    assert not alive(escaped)


def test_leftovers_reported_and_killed(registry, alive):
    job = registry.spawn("sleep 60 & echo $!; echo started")
    (left,) = _pids_from_log(registry, job["session_id"], 1)
    done = registry.wait(job["session_id"], timeout=5)
    assert done["status"] == "exited" and done["exit_code"] == 0
    assert left in registry.poll(job["session_id"])["leftover_pids"]
    result = registry.kill(job["session_id"], grace=1)
    assert result["status"] == "already_exited" and result["exit_code"] == 0
    assert not alive(left)
    assert registry.poll(job["session_id"])["leftover_pids"] == []


def test_leftover_output_is_still_captured(registry):
    job = registry.spawn("(sleep 0.4; echo late) & echo early")
    assert registry.wait(job["session_id"], timeout=5)["status"] == "exited"
    wait_until(lambda: "late" in registry.read_log(job["session_id"])["output"])


def test_kill_record_is_not_overwritten(registry):
    job = registry.spawn("trap 'exit 143' TERM; while true; do sleep 0.05; done")
    time.sleep(0.2)
    result = registry.kill(job["session_id"], grace=2)
    assert result["status"] == "killed"
    record = json.loads((registry.job_dir(job["session_id"]) / "exit.json").read_text())
    assert record["completion_reason"] == "killed" and record["exit_code"] == 143
    assert registry.kill(job["session_id"])["status"] == "already_exited"


def test_recycled_pid_is_never_signalled(alive):
    victim = subprocess.Popen(["sleep", "30"])
    try:
        ticks = proctree.start_ticks(victim.pid)
        survivors = proctree.kill_tree(victim.pid, ticks + 1, grace=0.1)
        assert survivors == [] and alive(victim.pid)
        assert proctree.kill_tree(victim.pid, ticks, grace=1) == []
        victim.wait(timeout=5)
        assert victim.returncode == -signal.SIGTERM
    finally:
        victim.kill()
        victim.wait()


def test_lost_job_with_recycled_pid_is_not_signalled(registry, alive):
    job = registry.spawn("sleep 60")
    jobdir = registry.job_dir(job["session_id"])
    proc = json.loads((jobdir / "proc.json").read_text())
    os.kill(proc["supervisor_pid"], signal.SIGKILL)
    wait_until(lambda: registry.poll(job["session_id"]).get("completion_reason") == "lost")
    proc["pid_start"] += 1  # as if the pid now belonged to another process
    (jobdir / "proc.json").write_text(json.dumps(proc))
    registry.kill(job["session_id"], grace=0.2)
    assert alive(job["pid"])
    os.kill(job["pid"], signal.SIGKILL)


def test_signal_reaches_job(registry):
    job = registry.spawn("trap 'echo got-int' INT; while true; do sleep 0.05; done")
    time.sleep(0.2)
    assert registry.signal(job["session_id"], "INT")["status"] == "ok"
    wait_until(lambda: "got-int" in registry.read_log(job["session_id"])["output"])
    assert registry.signal(job["session_id"], "BOGUS")["status"] == "error"


def test_interactive_shell_in_pty_leaves_on_hangup(registry, alive):
    # bash in a terminal ignores SIGTERM; like a closed terminal, kill follows up with SIGHUP
    job = registry.spawn("bash --norc -i", pty=True)
    wait_until(lambda: registry.read_log(job["session_id"])["output"].strip())
    result = registry.kill(job["session_id"], grace=10)
    assert result["status"] == "killed" and result["exit_code"] == -signal.SIGHUP
    assert not alive(job["pid"])
