"""Fault: the supervisor is stopped (SIGSTOP) or killed (SIGKILL) while requests are under way
(issue 8 classes 7 and 13). Callers hear what happened at once, a kill still kills (directly,
identity-checked), a request the caller gave up on is not carried out later, and nobody is told
an exit that nobody saw."""

from __future__ import annotations

import json
import os
import signal
import threading
import time

import pytest
from conftest import wait_until

from hermes_procs.core.registry import protocol


def _supervisor(registry, sid: str) -> int:
    return json.loads((registry.job_dir(sid) / "proc.json").read_text())["supervisor_pid"]


@pytest.fixture
def stopped(registry):
    """stop(sid) SIGSTOPs the job's supervisor; every one stopped is continued at the end."""
    done: list[int] = []

    def stop(sid: str) -> int:
        pid = _supervisor(registry, sid)
        os.kill(pid, signal.SIGSTOP)
        done.append(pid)
        wait_until(lambda: open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()[0] == "T")
        return pid

    yield stop
    for pid in done:
        try:
            os.kill(pid, signal.SIGCONT)
        except ProcessLookupError:
            pass


def _ready(registry, command: str) -> dict:
    job = registry.spawn(f"{command}")
    wait_until(lambda: "ready" in registry.read_log(job["session_id"])["output"])
    return job


def test_write_to_a_stopped_supervisor_says_so(registry, stopped):
    job = _ready(registry, "echo ready; cat")
    sid = job["session_id"]
    stopped(sid)
    result = registry.write(sid, "hello\n")
    assert result["status"] == "error", result
    assert result["error"] == f"the supervisor of {sid} does not answer (stopped?)"
    os.kill(_supervisor(registry, sid), signal.SIGCONT)
    assert registry.write(sid, "again\n")["status"] == "ok"
    wait_until(lambda: "again" in registry.read_log(sid)["output"])
    assert "hello" not in registry.read_log(sid)["output"]  # the refused write was never sent


def test_kill_with_a_stopped_supervisor_kills_directly(registry, stopped, alive):
    job = _ready(registry, "trap '' TERM; echo ready; while true; do sleep 0.05; done")
    sid = job["session_id"]
    sup = stopped(sid)
    result = registry.kill(sid, grace=0.2)
    assert result["status"] == "killed", result
    assert "does not answer (stopped?)" in result["note"]
    assert not alive(job["pid"])
    os.kill(sup, signal.SIGCONT)  # it now reaps the job and records what it saw
    done = registry.wait(sid, timeout=10)
    assert done["status"] == "exited" and done["exit_code"] == -signal.SIGKILL, done


def test_kill_request_read_after_the_caller_gave_up_is_refused(registry, alive):
    job = _ready(registry, "echo ready; sleep 60")
    reply = protocol.request(registry.job_dir(job["session_id"]),
                             {"op": "kill", "grace": 0, "expires": time.time() - 1}, timeout=30)
    assert reply["ok"] is False and "expired" in reply["error"], reply
    assert alive(job["pid"])


def test_supervisor_killed_during_wait(registry, alive):
    job = _ready(registry, "echo ready; sleep 60")
    sid = job["session_id"]
    results: list = []
    waiter = threading.Thread(target=lambda: results.append(registry.wait(sid, timeout=60)))
    waiter.start()
    os.kill(_supervisor(registry, sid), signal.SIGKILL)
    wait_until(lambda: registry.poll(sid).get("unsupervised"))
    assert not results, results  # the process runs on: wait goes on waiting for it
    os.kill(job["pid"], signal.SIGTERM)
    waiter.join(timeout=30)
    assert results and results[0]["status"] == "exited", results
    assert results[0]["completion_reason"] == "lost" and results[0]["exit_code"] is None


def test_supervisor_killed_during_kill(registry, alive):
    job = _ready(registry, "trap 'echo got-term' TERM; echo ready; while true; do sleep 0.05; done")
    sid = job["session_id"]
    results: list = []
    killer = threading.Thread(target=lambda: results.append(registry.kill(sid, grace=60)))
    killer.start()
    wait_until(lambda: "got-term" in registry.read_log(sid)["output"])  # the kill is under way
    os.kill(_supervisor(registry, sid), signal.SIGKILL)
    killer.join(timeout=30)
    # killed by the registry's own fallback, or already gone when the fallback looked (its
    # supervisor's death can end a pipe job first): never left running, never an exit code
    assert results and results[0]["status"] in ("killed", "already_exited"), results
    assert results[0]["exit_code"] is None and results[0]["completion_reason"] == "lost"
    assert not alive(job["pid"])
