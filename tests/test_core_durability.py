"""Jobs outlive whoever started them; a dead supervisor shows as lost; events are exactly-once."""

import json
import os
import signal
import subprocess
import sys
import textwrap
import threading
import time

from conftest import wait_until

from hermes_procs.core import ProcessRegistry
from hermes_procs.core.registry import lostjobs


def _python(code: str, home, **kwargs) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-c", textwrap.dedent(code), str(home)],
                            stdout=subprocess.PIPE, text=True, **kwargs)


def test_spawner_killed_then_controlled_from_another_process(home, alive):
    spawner = _python("""
        import sys, time
        from hermes_procs.core import ProcessRegistry
        job = ProcessRegistry(home=sys.argv[1]).spawn("cat", pty=True)
        print(job["session_id"], flush=True)
        time.sleep(60)
    """, home)
    sid = spawner.stdout.readline().strip()
    spawner.send_signal(signal.SIGKILL)
    spawner.wait()
    reg = ProcessRegistry(home=home)
    assert reg.poll(sid)["status"] == "running"
    with reg.stream(sid) as stream:
        assert reg.submit(sid, "still here")["status"] == "ok"
        seen = b""
        deadline = time.monotonic() + 5
        while b"still here" not in seen and time.monotonic() < deadline:
            seen += stream.read(0.5) or b""
        assert b"still here" in seen
    wait_until(lambda: "still here" in reg.read_log(sid)["output"])
    result = reg.kill(sid, grace=1)
    assert result["status"] == "killed"
    assert not alive(result_pid := reg.poll(sid)["pid"]), result_pid


def test_exit_while_no_registry_exists(home):
    spawner = _python("""
        import sys
        from hermes_procs.core import ProcessRegistry
        job = ProcessRegistry(home=sys.argv[1]).spawn("sleep 0.5; seq 1 3000; exit 7")
        print(job["session_id"])
    """, home)
    sid = spawner.communicate(timeout=10)[0].strip()
    assert spawner.returncode == 0
    exit_record = home / "jobs" / sid / "exit.json"  # it ends while no registry exists
    wait_until(exit_record.exists, timeout=30)
    reg = ProcessRegistry(home=home)
    done = reg.wait(sid, timeout=10)
    assert done["status"] == "exited" and done["exit_code"] == 7
    log = reg.read_log(sid, limit=5)
    assert log["total_lines"] == 3000 and log["output"].endswith("3000")


def test_supervisor_killed_job_runs_unsupervised_then_is_lost(registry, alive):
    # issue 8 class 7: never invent an exit; a job whose process runs on is running, unsupervised
    job = registry.spawn("sleep 60")
    sid, jobdir = job["session_id"], registry.job_dir(job["session_id"])
    proc = json.loads((jobdir / "proc.json").read_text())
    os.kill(proc["supervisor_pid"], signal.SIGKILL)
    wait_until(lambda: not alive(proc["supervisor_pid"]))
    polled = registry.poll(sid)
    assert polled["status"] == "running" and polled["unsupervised"] is True, polled
    assert registry.list()[0]["unsupervised"] is True
    assert registry.wait(sid, timeout=0.3)["status"] == "timeout"
    assert "unsupervised" in registry.write(sid, "x")["error"]
    killed = registry.kill(sid, grace=1)
    assert killed["status"] == "killed", killed
    assert killed["exit_code"] is None and killed["completion_reason"] == "lost"
    assert not (jobdir / "exit.json").exists()
    assert not alive(job["pid"])
    polled = registry.poll(sid)
    assert polled["status"] == "exited" and polled["completion_reason"] == "lost" and polled["exit_code"] is None


def test_kill_of_lost_job_writes_no_made_up_exit(registry, alive):
    # the job died (SIGKILL) while its supervisor was stopped, then the supervisor was killed
    job = registry.spawn("sleep 60")
    sid, jobdir = job["session_id"], registry.job_dir(job["session_id"])
    proc = json.loads((jobdir / "proc.json").read_text())
    os.kill(proc["supervisor_pid"], signal.SIGSTOP)
    os.kill(job["pid"], signal.SIGKILL)
    wait_until(lambda: not alive(job["pid"]))
    os.kill(proc["supervisor_pid"], signal.SIGKILL)
    wait_until(lambda: not alive(proc["supervisor_pid"]))
    result = registry.kill(sid, grace=0.5)
    assert result["status"] == "already_exited", result
    assert result["exit_code"] is None and result["completion_reason"] == "lost"
    assert not (jobdir / "exit.json").exists()
    assert registry.wait(sid, timeout=1)["completion_reason"] == "lost"


def test_a_lost_job_is_told_once_and_its_duration_stops(registry, alive):
    # its supervisor SIGKILLed: no exited or completion event was ever written (an agent told it
    # would be notified waited for ever) and its duration grew on with the clock
    started = time.monotonic()
    job = registry.spawn("echo hi; sleep 0.5; echo bye", notify_on_complete=True)
    sid, jobdir = job["session_id"], registry.job_dir(job["session_id"])
    proc = json.loads((jobdir / "proc.json").read_text())
    os.kill(proc["supervisor_pid"], signal.SIGKILL)
    wait_until(lambda: not alive(proc["supervisor_pid"]) and not alive(job["pid"]), timeout=10)
    polled = registry.poll(sid)
    assert polled["status"] == "exited" and polled["completion_reason"] == "lost" and polled["exit_code"] is None
    assert polled["uptime_seconds"] <= time.monotonic() - started + 0.1, polled  # when it was found ended
    registry.list()
    registry.poll(sid)  # later looks tell no one again
    ends = [e for e in registry.drain_events("lost-test", all_types=True) if e["session_id"] == sid]
    assert [(e["type"], e["completion_reason"]) for e in ends if e["type"] != "started"] == [
        ("exited", "lost"), ("completion", "lost")], ends
    assert not (jobdir / "exit.json").exists()  # still no exit made up
    time.sleep(0.3)
    assert registry.poll(sid)["uptime_seconds"] == polled["uptime_seconds"]  # no longer growing


def test_looks_that_find_a_job_lost_at_once_all_read_when_it_ended(home):
    # lost.json was created empty, then written: a look between the two read no end and the
    # job's duration went on growing for it (161 of 200 dirs with threads switching every 1 us)
    switch = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)
    try:
        for n in range(100):
            jobdir = home / "jobs" / f"proc_{n:012x}"
            jobdir.mkdir(parents=True)
            barrier, found = threading.Barrier(8), []

            def look(jobdir=jobdir, barrier=barrier, found=found) -> None:
                barrier.wait()
                found.append(lostjobs.note(jobdir, {"command": "sleep 1"}, {}))

            threads = [threading.Thread(target=look) for _ in range(8)]
            for thread in threads:
                thread.start()
            for thread in threads:
                thread.join()
            assert None not in found and len(set(found)) == 1, (jobdir.name, found)
            assert sorted(p.name for p in jobdir.iterdir()) == ["lost.json"]  # nothing left aside
    finally:
        sys.setswitchinterval(switch)
    lost = [json.loads(line) for line in (home / "events.jsonl").read_text().splitlines()]
    assert len([e for e in lost if e["type"] == "exited"]) == 100  # each told once


def test_notify_and_watch_events_exactly_once_across_processes(home):
    reg = ProcessRegistry(home=home)
    jobs = [reg.spawn(f"echo job{i}", notify_on_complete=True) for i in range(6)]
    for job in jobs:
        reg.wait(job["session_id"], timeout=10)
    drainer = """
        import json, sys, time
        from hermes_procs.core import ProcessRegistry
        reg = ProcessRegistry(home=sys.argv[1])
        got = []
        end = time.time() + 1.0
        while time.time() < end:
            got += reg.drain_events("shared")
        print(json.dumps(got))
    """
    procs = [_python(drainer, home) for _ in range(2)]
    results = [json.loads(p.communicate(timeout=20)[0]) for p in procs]
    seen = [e["session_id"] for r in results for e in r]
    assert sorted(seen) == sorted(j["session_id"] for j in jobs)
    assert all(e["type"] == "completion" and e["exit_code"] == 0 for r in results for e in r)
    assert reg.drain_events("shared") == []
    other = reg.drain_events("another")
    assert len(other) == 6 and "job" in other[0]["output"]


def test_watch_patterns_rate_limited(registry):
    job = registry.spawn("echo 'ERROR one'; echo fine; echo 'ERROR two'; sleep 0.3",
                         watch_patterns=["ERROR"])
    registry.wait(job["session_id"], timeout=10)
    events = registry.drain_events("w")
    assert len(events) == 1 and events[0]["type"] == "watch_match"
    assert events[0]["pattern"] == "ERROR" and "ERROR one" in events[0]["output"]


def test_drain_events_all_types(registry):
    job = registry.spawn("true")
    registry.wait(job["session_id"], timeout=10)
    kinds = [e["type"] for e in registry.drain_events("everything", all_types=True)]
    assert kinds == ["started", "exited"]
    assert registry.drain_events("bad/name")["status"] == "error"


def test_watch_limits_suppressed_count_and_stop(registry, monkeypatch):
    monkeypatch.setenv("HERMES_PROCS_WATCH_INTERVAL", "0.1")
    script = "for i in $(seq 1 12); do printf '\\033[31mFAIL %s\\033[0m\\n' $i; echo FAIL again; sleep 0.15; done"
    job = registry.spawn(script, watch_patterns=["FAIL"])
    registry.wait(job["session_id"], timeout=20)
    events = registry.drain_events("limits")
    matches = [e for e in events if not e.get("notice")]
    notices = [e for e in events if e.get("notice")]
    assert len(matches) == 8 and len(notices) == 1 and "stopped" in notices[0]["notice"]
    assert matches[0]["output"] == "FAIL 1"
    assert any(e.get("suppressed") for e in matches[1:])


def test_no_watch_events_after_exit(registry):
    job = registry.spawn("(sleep 0.5; echo LATE-ERROR) & echo start", watch_patterns=["LATE-ERROR"])
    registry.wait(job["session_id"], timeout=10)
    wait_until(lambda: "LATE-ERROR" in registry.read_log(job["session_id"])["output"])
    assert registry.drain_events("after-exit") == []


def test_only_new_consumer_starts_at_the_end_and_can_be_forgotten(registry, home):
    first = registry.spawn("true")
    registry.wait(first["session_id"], timeout=10)
    assert registry.drain_events("ui", all_types=True, only_new=True) == []
    second = registry.spawn("true")
    registry.wait(second["session_id"], timeout=10)
    seen = registry.drain_events("ui", all_types=True, only_new=True)
    assert {e["session_id"] for e in seen} == {second["session_id"]}
    assert registry.forget_consumer("ui")["status"] == "ok"
    assert not (home / "cursors" / "ui").exists()
