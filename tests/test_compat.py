"""The Hermes-style adapter (HermesProcessRegistry) and the event stream iterator, with real jobs."""

import subprocess
import sys
import threading
import time

import pytest
from conftest import wait_until

from hermes_procs.core import ProcessRegistry
from hermes_procs.core.agents.compat import HermesProcessRegistry, ProcessSession
from hermes_procs.core.agents.events_stream import iter_events

pytestmark = pytest.mark.usefixtures("login_shell_home")  # the jobs run in a login shell

GHP = "ghp_" + "a1B2c3D4e5" * 4


def test_spawn_local_session_object(hermes, tmp_path):
    session = hermes.spawn_local("echo hi; sleep 0.2; exit 5", cwd=str(tmp_path), task_id="t1", session_key="chat-1")
    assert isinstance(session, ProcessSession)
    assert session.id.startswith("proc_") and isinstance(session.pid, int) and session.pid > 0
    assert session.command.startswith("echo hi") and session.cwd == str(tmp_path)
    assert session.task_id == "t1" and session.session_key == "chat-1" and session.notify_on_complete is False
    assert abs(session.started_at - time.time()) < 10
    assert session.exited is False and session.exit_code is None
    done = hermes.wait(session.id, timeout=10)
    assert done["status"] == "exited" and done["exit_code"] == 5
    assert session.exited is True and session.exit_code == 5 and session.completion_reason == "exited"
    # the raw tail, newline and all (Hermes' rolling buffer); `exit` in a login shell says "logout"
    assert session.output_buffer == "hi\nlogout\n"
    assert hermes.get(session.id) is session and hermes.get(session.id[:9]) is session  # same object
    assert hermes.get("proc_ffffffffffff") is None and hermes.get("../x") is None


def test_completion_queue_gets_own_jobs_once(hermes, registry):
    mine = hermes.spawn_local(f"echo TOKEN={GHP}; exit 2", notify_on_complete=True)
    foreign = registry.spawn("true", notify_on_complete=True)  # not this adapter's job
    event = hermes.completion_queue.get(timeout=10)
    assert event["type"] == "completion" and event["session_id"] == mine.id
    assert event["exit_code"] == 2 and GHP not in event["output"] and "ghp_...***" in event["output"]
    registry.wait(foreign["session_id"], timeout=10)
    time.sleep(0.6)
    assert hermes.completion_queue.empty()


def test_spawn_local_opt_out_and_extras(hermes):
    quiet = hermes.spawn_local("true", name="quiet")  # no completion unless asked (upstream default)
    hermes.wait(quiet.id, timeout=10)
    watched = hermes.spawn_local("echo READY; sleep 30", watch_patterns=["READY"])
    event = hermes.completion_queue.get(timeout=10)
    assert event["type"] == "watch_match" and event["session_id"] == watched.id
    assert hermes.get(quiet.id).name == "quiet" and watched.name == "hermes"  # the owner, by default
    with pytest.raises(TypeError):
        hermes.spawn_local("true", bogus=1)


def test_spawn_local_failure_raises(hermes):
    with pytest.raises(RuntimeError, match=r"at most \d+ bytes fit in one exec argument"):
        hermes.spawn_local("echo " + "x" * (1 << 20))
    with pytest.raises(RuntimeError, match="env_vars must be a dict"):
        hermes.spawn_local("true", env_vars=["A=1"])


def test_missing_cwd_runs_in_the_nearest_folder_as_hermes_does(hermes, tmp_path):
    session = hermes.spawn_local("pwd", cwd=str(tmp_path / "gone" / "deeper"))
    assert hermes.wait(session.id, timeout=10)["output"] == f"{tmp_path}\n"


def test_env_vars_and_pty(hermes):
    session = hermes.spawn_local('echo "v=$MY_VAR"; tty >/dev/null && echo on-a-tty', env_vars={"MY_VAR": 42},
                                 use_pty=True)
    hermes.wait(session.id, timeout=10)
    out = hermes.read_log(session.id)["output"]
    assert "v=42" in out and "on-a-tty" in out
    assert hermes.read_log(session.id, offset=0, limit=1)["output"] == "on-a-tty"  # offset 0: the tail
    assert hermes.read_log(session.id, offset=1, limit=1)["output"] == "on-a-tty"  # offset 1: from line 1


def test_stdin_methods(hermes):
    session = hermes.spawn_local("cat")
    assert hermes.write_stdin(session.id, "ab")["status"] == "ok"
    assert hermes.submit_stdin(session.id, "cd")["status"] == "ok"
    wait_until(lambda: "abcd" in hermes.poll(session.id)["output_preview"])
    assert hermes.close_stdin(session.id)["status"] == "ok"
    assert hermes.wait(session.id, timeout=10)["exit_code"] == 0
    assert hermes.write_stdin(session.id, "x")["status"] == "already_exited"


def test_active_and_kill(hermes, alive):
    a = hermes.spawn_local("sleep 30", task_id="t1", session_key="k1")
    b = hermes.spawn_local("sleep 30", task_id="t2", session_key="k2")
    assert hermes.has_active_processes() and hermes.has_active_processes("t1")
    assert not hermes.has_active_processes("t3")
    assert hermes.has_active_for_session("k2") and not hermes.has_active_for_session("k3")
    assert [s["session_id"] for s in hermes.list_sessions(task_id="t1")] == [a.id]
    killed = hermes.kill_process(a.id, grace=0.5)
    assert killed["status"] == "killed" and not alive(a.pid)
    assert not hermes.has_active_processes("t1") and hermes.has_active_processes("t2")
    assert hermes.kill_all(grace=0.5) == 1
    assert not hermes.has_active_processes() and not alive(b.pid)
    assert hermes.kill_all() == 0


def test_visible_to_plain_registry_and_other_process(hermes, home):
    session = hermes.spawn_local("sleep 30", task_id="agent")
    code = (f"from hermes_procs.core import ProcessRegistry; r = ProcessRegistry(home={str(home)!r}); "
            f"print(r.poll({session.id!r})['status'])")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=30)
    assert out.stdout.strip() == "running"
    assert ProcessRegistry(home=home).kill(session.id, grace=0.5)["status"] == "killed"


def test_named_consumer_is_durable(home):
    first = HermesProcessRegistry(home=home, consumer="agent-a")
    job = first.registry.spawn("exit 7", notify_on_complete=True)  # spawned by anyone
    event = first.completion_queue.get(timeout=10)
    assert event["session_id"] == job["session_id"] and event["exit_code"] == 7
    first.close()
    later = first.registry.spawn("exit 8", notify_on_complete=True)
    first.registry.wait(later["session_id"], timeout=10)
    second = HermesProcessRegistry(home=home, consumer="agent-a")  # "restarted agent"
    event = second.completion_queue.get(timeout=10)
    assert event["session_id"] == later["session_id"]  # delivered after the restart, not the old one again
    time.sleep(0.5)
    assert second.completion_queue.empty()
    second.close()


def test_redaction_off(home, monkeypatch):
    monkeypatch.setenv("HERMES_PROCS_REDACT", "0")
    with HermesProcessRegistry(home=home) as hermes:
        session = hermes.spawn_local(f"echo {GHP}")
        assert GHP in hermes.wait(session.id, timeout=10)["output"]
    with HermesProcessRegistry(home=home, redact=False) as hermes:
        monkeypatch.delenv("HERMES_PROCS_REDACT")
        assert GHP in hermes.read_log(session.id)["output"]


# ------------------------------------------------------------------------------------------
# the event stream (hermes_procs.core.agents.events_stream)
# ------------------------------------------------------------------------------------------

def test_iter_events_all_types_once_per_consumer(registry):
    job = registry.spawn(f"echo START {GHP}; exit 3", notify_on_complete=True, watch_patterns=["START"])
    registry.wait(job["session_id"], timeout=10)
    log = registry.home / "events.jsonl"  # read without consuming: the completion is written
    wait_until(lambda: f'"completion", "session_id": "{job["session_id"]}"' in log.read_text())
    events = list(iter_events(registry, "ui", follow=False))
    types = [e["type"] for e in events if e["session_id"] == job["session_id"]]
    assert "started" in types and "exited" in types and "completion" in types and "watch_match" in types
    assert GHP not in repr(events)
    assert list(iter_events(registry, "ui", follow=False)) == []  # exactly once for "ui"
    other = list(iter_events(registry, "other", follow=False, types=["completion"]))
    assert [e["type"] for e in other] == ["completion"] and other[0]["exit_code"] == 3


def test_iter_events_follow_streams_new_events(registry):
    seen = []
    stop = threading.Event()

    def consume():
        for event in iter_events(registry, "follower", follow=True, interval=0.05, stop=stop):
            seen.append(event)

    thread = threading.Thread(target=consume, daemon=True)
    thread.start()
    time.sleep(0.2)
    job = registry.spawn("sleep 0.2", notify_on_complete=True)
    wait_until(lambda: any(e["type"] == "completion" for e in seen), timeout=10)
    stop.set()
    thread.join(timeout=5)
    assert not thread.is_alive()
    kinds = [e["type"] for e in seen if e["session_id"] == job["session_id"]]
    assert kinds.index("started") < kinds.index("completion")


def test_iter_events_bad_consumer(registry):
    out = list(iter_events(registry, "../bad name", follow=True))
    assert len(out) == 1 and out[0]["status"] == "error"


def test_cli_events_follow_subprocess(home, registry):
    """`hermes-procs events --follow` (the CLI uses iter_events) streams until interrupted."""
    proc = subprocess.Popen([sys.executable, "-m", "hermes_procs", "events", "--follow", "--consumer", "cli-t",
                             "--home", str(home)], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        job = registry.spawn("exit 4", notify_on_complete=True)
        lines = []
        deadline = time.monotonic() + 15
        while time.monotonic() < deadline:
            lines.append(proc.stdout.readline())
            if '"completion"' in lines[-1]:
                break
        assert any(job["session_id"] in line and '"completion"' in line for line in lines)
    finally:
        proc.send_signal(2)  # Ctrl-C ends --follow quietly
        _, err = proc.communicate(timeout=10)
    assert proc.returncode == 0 and "Traceback" not in err
