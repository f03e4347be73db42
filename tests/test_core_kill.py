"""Killing job trees: identity checks, TERM then KILL, setsid'ed descendants, leftovers, records."""

import json
import os
import signal
import subprocess
import time

from conftest import wait_until

from hermes_procs.core.supervisor import proctree


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
    # the root ignores HUP too: one that ignores TERM only gets HUP at once (an interactive shell leaves on it)
    job = registry.spawn("trap '' TERM HUP; (trap '' TERM; sleep 60) & echo $!; while true; do sleep 0.05; done")
    (child,) = _pids_from_log(registry, job["session_id"], 1)
    start = time.monotonic()
    result = registry.kill(job["session_id"], grace=0.3)
    assert result["status"] == "killed" and result["exit_code"] == -signal.SIGKILL
    assert time.monotonic() - start < 5
    assert not alive(job["pid"]) and not alive(child)


def test_setsid_grandchild_is_killed(registry, alive):
    job = registry.spawn("setsid sleep 60 & echo $!; sleep 60")
    (escaped,) = _pids_from_log(registry, job["session_id"], 1)
    wait_until(lambda: os.getsid(escaped) != os.getsid(job["pid"]))  # $! is printed before setsid runs
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
    job = registry.spawn("trap 'exit 143' TERM; echo ready; while true; do sleep 0.05; done")
    wait_until(lambda: "ready" in registry.read_log(job["session_id"])["output"])  # the trap is set
    result = registry.kill(job["session_id"], grace=2)
    assert result["status"] == "killed"
    record = json.loads((registry.job_dir(job["session_id"]) / "exit.json").read_text())
    assert record["completion_reason"] == "killed" and record["exit_code"] == 143
    assert registry.kill(job["session_id"])["status"] == "already_exited"


def test_recycled_pid_is_never_signalled(alive):
    victim = subprocess.Popen(["sleep", "30"])
    try:
        ticks = proctree.start_ticks(victim.pid)
        survivors = proctree.kill_tree(proctree.Tree({victim.pid: ticks + 1}), grace=0.1)
        assert survivors == [] and alive(victim.pid)
        assert proctree.kill_tree(proctree.Tree({victim.pid: ticks}), grace=1) == []
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
    wait_until(lambda: registry.poll(job["session_id"]).get("unsupervised"))
    proc["pid_start"] += 1  # as if the pid now belonged to another process
    (jobdir / "proc.json").write_text(json.dumps(proc))
    assert registry.poll(job["session_id"])["completion_reason"] == "lost"
    assert registry.kill(job["session_id"], grace=0.2)["status"] == "already_exited"
    assert alive(job["pid"])
    os.kill(job["pid"], signal.SIGKILL)


def test_signal_reaches_job(registry):
    job = registry.spawn("trap 'echo got-int' INT; echo ready; while true; do sleep 0.05; done")
    wait_until(lambda: "ready" in registry.read_log(job["session_id"])["output"])  # the trap is set
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


def _supervisor(registry, sid) -> int:
    return json.loads((registry.job_dir(sid) / "proc.json").read_text())["supervisor_pid"]


def test_nohup_pattern_is_killed(registry, alive):
    # issue 8 class 15: stdio closed, so the supervisor finishes while the sleeper lives on
    job = registry.spawn("( exec >/dev/null 2>&1 </dev/null; exec sleep 60 ) & echo $!")
    sid = job["session_id"]
    (left,) = _pids_from_log(registry, sid, 1)
    registry.wait(sid, timeout=10)
    sup = _supervisor(registry, sid)
    wait_until(lambda: not alive(sup))
    assert left in registry.poll(sid)["leftover_pids"]
    result = registry.kill(sid, grace=1)
    assert result["status"] == "already_exited" and result["exit_code"] == 0
    assert not alive(left)


def test_setsid_child_with_closed_stdio_is_a_leftover(registry, alive):
    job = registry.spawn("( exec >/dev/null 2>&1 </dev/null; exec setsid sleep 60 ) & echo $!")
    sid = job["session_id"]
    (left,) = _pids_from_log(registry, sid, 1)
    registry.wait(sid, timeout=10)
    sup = _supervisor(registry, sid)
    wait_until(lambda: not alive(sup))
    assert registry.poll(sid)["leftover_pids"] == [left]
    assert registry.kill(sid, grace=1)["status"] == "already_exited"
    assert not alive(left)
    assert registry.poll(sid)["leftover_pids"] == []


def _term_ignoring_job(registry):
    job = registry.spawn("trap 'echo got-term' TERM; echo ready; while true; do sleep 0.05; done")
    wait_until(lambda: "ready" in registry.read_log(job["session_id"])["output"])
    return job


def test_shorter_kill_shortens_the_kill_in_progress(registry, alive):
    # issue 8 class 11: a kill(grace=3600) under way must not hold up a later kill(grace=0)
    import threading

    job = _term_ignoring_job(registry)
    sid = job["session_id"]
    first: list = []
    thread = threading.Thread(target=lambda: first.append(registry.kill(sid, grace=3600)))
    thread.start()
    wait_until(lambda: "got-term" in registry.read_log(sid)["output"])  # the long kill is under way
    second = registry.kill(sid, grace=0)
    thread.join(timeout=60)
    assert second["status"] == "killed" and second["exit_code"] == -signal.SIGKILL, second
    assert first and first[0]["status"] == "killed", first
    assert not alive(job["pid"])


def test_kill_grace_must_be_finite(registry, alive):
    from hermes_procs.core.registry import protocol

    job = _term_ignoring_job(registry)
    sid = job["session_id"]
    reply = protocol.request(registry.job_dir(sid), {"op": "kill", "grace": float("inf")}, timeout=30)
    assert reply["ok"] is False, reply  # a clear refusal, not a kill that never ends
    for bad in (float("inf"), float("nan"), -1, 1e300, "3"):
        result = registry.kill(sid, grace=bad)
        assert result["status"] == "error" and "grace" in result["error"], result
    assert alive(job["pid"])
    assert registry.kill(sid, grace=0)["status"] == "killed"


def test_finished_supervisors_are_reaped(registry):
    # issue 8 class 17: a finished supervisor is not left a zombie of the spawning process
    job = registry.spawn("true")
    sid = job["session_id"]
    registry.wait(sid, timeout=10)
    sup = _supervisor(registry, sid)
    wait_until(lambda: _state(sup) in (None, "Z"))
    wait_until(lambda: registry.poll(sid) and _state(sup) is None)


def _state(pid: int) -> str | None:
    try:
        with open(f"/proc/{pid}/stat") as fh:
            return fh.read().rsplit(")", 1)[1].split()[0]
    except (FileNotFoundError, ProcessLookupError):
        return None


def test_a_stopped_job_gets_its_term_and_cleans_up(registry):
    """A stopped process acts on TERM only once it runs again: kill sends CONT after TERM (as
    systemd does), so the job's handler runs at once rather than being SIGKILLed after the grace."""
    sid = registry.spawn("trap 'echo cleanup; exit 0' TERM; while :; do sleep 0.1; done")["session_id"]
    wait_until(lambda: registry.poll(sid)["process_count"] >= 1)
    assert registry.signal(sid, "STOP")["status"] == "ok"
    started = time.monotonic()
    got = registry.kill(sid, grace=5)
    took = time.monotonic() - started
    assert took < 2.5 and got.get("signal") != "SIGKILL", (got, took)
    wait_until(lambda: "cleanup" in registry.read_log(sid)["output"], timeout=5)
