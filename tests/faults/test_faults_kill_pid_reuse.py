"""Fault: the pid recorded for a job is recycled for a stranger (issue 8 class 1).

As root, /proc/sys/kernel/ns_last_pid hands a freed pid to the next fork, deterministically. The
stranger is a session leader with children, the worst case: its session id and process group
are the job's recorded pid. Killing, signalling or listing the leftovers of the job must not
touch it. Skipped where pids cannot be steered (not root, or no ns_last_pid).
"""

from __future__ import annotations

import ctypes
import json
import os
import signal
import subprocess

import pytest
from conftest import wait_until

from hermes_procs.core.supervisor.proctree import is_alive, start_ticks

NS_LAST_PID = "/proc/sys/kernel/ns_last_pid"
PR_SET_CHILD_SUBREAPER = 36

pytestmark = pytest.mark.skipif(os.geteuid() != 0 or not os.access(NS_LAST_PID, os.W_OK),
                                reason="recycling a pid needs root and a writable ns_last_pid")


def _children(pid: int) -> list[int]:
    try:
        with open(f"/proc/{pid}/task/{pid}/children") as fh:
            return [int(p) for p in fh.read().split()]
    except (FileNotFoundError, ProcessLookupError):
        return []


def _stranger_with_pid(pid: int, old_ticks: int) -> tuple[subprocess.Popen, dict[int, int]]:
    """An unrelated session leader with two children, started with pid `pid`; returns it and
    the identities (pid -> start ticks) of its tree."""
    for _ in range(500):  # other processes on the machine may fork in between: try again
        with open(NS_LAST_PID, "w") as fh:
            fh.write(str(pid - 1))
        proc = subprocess.Popen(["sh", "-c", "sleep 60 & sleep 60 & wait"], start_new_session=True)
        if proc.pid == pid and start_ticks(pid) != old_ticks:  # same tick: not told apart, retry
            wait_until(lambda: len(_children(pid)) == 2)
            return proc, {p: start_ticks(p) for p in [pid, *_children(pid)]}
        proc.kill()
        proc.wait()
    pytest.fail(f"could not recycle pid {pid}")


def _kill_stranger(stranger: subprocess.Popen) -> None:
    for child in _children(stranger.pid):
        os.kill(child, signal.SIGKILL)
    stranger.kill()
    stranger.wait()


def _assert_untouched(tree: dict[int, int]) -> None:
    assert all(is_alive(p, t) for p, t in tree.items()), "the stranger's tree was signalled"


@pytest.fixture
def subreaper():
    """Orphans come to this process (not to init, which may not reap) while the test runs."""
    libc = ctypes.CDLL(None, use_errno=True)
    libc.prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)
    yield
    libc.prctl(PR_SET_CHILD_SUBREAPER, 0, 0, 0, 0)


def test_lost_job_pid_recycled_for_a_session_leader(registry, subreaper):
    job = registry.spawn("sleep 60")
    sid, pid = job["session_id"], job["pid"]
    proc = json.loads((registry.job_dir(sid) / "proc.json").read_text())
    os.kill(proc["supervisor_pid"], signal.SIGKILL)  # the job is lost; its process runs on ...
    wait_until(lambda: registry.poll(sid).get("unsupervised"))
    os.kill(pid, signal.SIGKILL)  # ... then dies; it was re-parented to us: reap it, free the pid
    os.waitpid(pid, 0)
    stranger, tree = _stranger_with_pid(pid, proc["pid_start"])
    try:
        assert registry.poll(sid)["leftover_pids"] == []
        assert registry.signal(sid, "TERM")["status"] == "already_exited"
        result = registry.kill(sid, grace=0.5)
        assert result["status"] == "already_exited" and result["exit_code"] is None, result
        _assert_untouched(tree)
    finally:
        _kill_stranger(stranger)


def test_exited_root_pid_recycled_while_a_leftover_lives(registry):
    # the root exits, a leftover keeps the supervisor (its output) alive; the supervisor reaped
    # the root, so its pid is free: a stranger session gets it
    job = registry.spawn("setsid sleep 60 & echo $!")
    sid, pid = job["session_id"], job["pid"]
    left = wait_until(lambda: [int(w) for w in registry.read_log(sid)["output"].split() if w.isdigit()])[0]
    left_ticks = start_ticks(left)
    assert registry.wait(sid, timeout=10)["exit_code"] == 0
    proc = json.loads((registry.job_dir(sid) / "proc.json").read_text())
    stranger, tree = _stranger_with_pid(pid, proc["pid_start"])
    try:
        assert registry.poll(sid)["leftover_pids"] == [left]
        result = registry.kill(sid, grace=0.5)
        assert result["status"] == "already_exited", result
        assert not is_alive(left, left_ticks)
        _assert_untouched(tree)
    finally:
        _kill_stranger(stranger)
