"""Fault: a job whose processes re-fork every millisecond (issue 8 class 15).

Each process forks a child and exits, so by the time a kill has listed the tree and signalled
it, a new pid has taken over. The kill must freeze the tree (SIGSTOP until it stops growing) and
then SIGKILL it. Every process of the bomb holds the write end of a FIFO the test reads: the
test sees end-of-file exactly when none of them is left, however fast the pids change.
Every live bomb process also appends to a heartbeat file each millisecond: with the job's
supervisor frozen, a kill that missed one is seen as a heartbeat that goes on.
"""

from __future__ import annotations

import json
import os
import signal
import sys
import time

import pytest
from conftest import wait_until

BOMB = """
import os, signal, sys, time
fifo = os.open(sys.argv[1], os.O_WRONLY)
beat = os.open(sys.argv[1] + ".beat", os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
if sys.argv[2] == "ignore-term":
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
print("ready", flush=True)
while time.time() < float(sys.argv[3]):
    time.sleep(0.001)
    os.write(beat, b".")
    if os.fork():
        os._exit(0)
"""
LIFETIME = 60.0  # the bomb ends itself after this long even if every kill failed: never a leak


@pytest.fixture
def bomb(registry, tmp_path):
    """Start a re-forking job; returns (session id, read end of its FIFO)."""
    fifo = tmp_path / "alive.fifo"
    os.mkfifo(fifo)
    reader = os.open(fifo, os.O_RDONLY | os.O_NONBLOCK)

    def start(mode: str) -> str:
        script = tmp_path / "bomb.py"
        script.write_text(BOMB)
        job = registry.spawn(f"{sys.executable} {script} {fifo} {mode} {time.time() + LIFETIME}")
        wait_until(lambda: "ready" in registry.read_log(job["session_id"])["output"], timeout=30)
        assert not _all_gone(reader)
        return job["session_id"]

    yield start, reader
    os.close(reader)


def _all_gone(reader: int) -> bool:
    """True when no process holds the FIFO's write end any more (end of file)."""
    try:
        return os.read(reader, 4096) == b""
    except BlockingIOError:
        return False


def test_reforking_job_is_killed(registry, bomb):
    start, reader = bomb
    sid = start("plain")
    result = registry.kill(sid, grace=0.5)
    assert result["status"] in ("killed", "already_exited"), result
    wait_until(lambda: _all_gone(reader), timeout=10)
    assert registry.poll(sid)["leftover_pids"] == []


def test_reforking_job_ignoring_term_is_killed(registry, bomb):
    start, reader = bomb
    sid = start("ignore-term")
    result = registry.kill(sid, grace=0.2)
    assert result["status"] in ("killed", "already_exited"), result
    wait_until(lambda: _all_gone(reader), timeout=10)


def test_reforking_job_is_killed_while_its_supervisor_is_stopped(registry, bomb, tmp_path):
    # the supervisor cannot answer: the registry kills the recorded tree itself
    start, reader = bomb
    sid = start("ignore-term")
    proc = json.loads((registry.job_dir(sid) / "proc.json").read_text())
    supervisor, session = proc["supervisor_pid"], proc["pid"]
    os.kill(supervisor, signal.SIGSTOP)
    try:
        result = registry.kill(sid, grace=0.2)
        assert result["status"] in ("killed", "already_exited"), result
        assert "does not answer" in result.get("note", ""), result
        beat = tmp_path / "alive.fifo.beat"
        wait_until(lambda: _stays(beat, 0.3), timeout=10)  # not one bomb process still runs
        assert _running_in_session(session) == []
        wait_until(lambda: _all_gone(reader), timeout=10)  # none is left stopped either
    finally:
        os.kill(supervisor, signal.SIGCONT)


def _stays(beat, seconds: float) -> bool:
    """True when the heartbeat file does not grow for `seconds` (no bomb process runs)."""
    size = beat.stat().st_size
    time.sleep(seconds)
    return beat.stat().st_size == size


def _running_in_session(session: int) -> list[int]:
    """Processes of the session that are not zombies (a frozen reaper cannot reap the dead)."""
    found = []
    for name in os.listdir("/proc"):
        try:
            with open(f"/proc/{name}/stat") as fh:
                fields = fh.read().rsplit(")", 1)[1].split()
        except (OSError, IndexError):
            continue
        if int(fields[3]) == session and fields[0] not in ("Z", "X"):
            found.append(int(name))
    return found
