"""Hermes adapter scope: an adapter owns the jobs it started (and re-adopts them after a restart);
kill_all / list_sessions / has_active_* never reach the human's jobs. Real jobs and processes."""

import subprocess
import sys
import textwrap
import time

import pytest
from conftest import wait_until

from hermes_procs.core.agents.compat import HermesProcessRegistry

pytestmark = pytest.mark.usefixtures("login_shell_home")  # the jobs run in a login shell


def test_kill_all_and_queries_leave_the_humans_jobs_alone(hermes, registry, alive):
    human = registry.spawn("sleep 30", task_id="t1", session_key="k1")  # the human's dev server
    mine = hermes.spawn_local("sleep 30", task_id="t1", session_key="k1")
    assert [s["session_id"] for s in hermes.list_sessions()] == [mine.id]
    assert [s["session_id"] for s in hermes.list_sessions(task_id="t1")] == [mine.id]
    assert hermes.has_active_processes("t1") and hermes.has_active_for_session("k1") and hermes.count_running() == 1
    assert hermes.kill_all(grace=0.2) == 1
    assert not alive(mine.pid) and alive(human["pid"])
    assert registry.poll(human["session_id"])["status"] == "running"
    assert not hermes.has_active_processes("t1") and not hermes.has_active_for_session("k1")
    assert not hermes.has_any_active()
    assert {r["session_id"] for r in registry.list()} == {human["session_id"], mine.id}  # plain registry: all
    # explicit ids still work on any job of the home (the human can hand one to the agent)
    assert hermes.poll(human["session_id"])["status"] == "running"


def test_two_adapters_do_not_see_each_others_jobs(home):
    with HermesProcessRegistry(home=home) as a, HermesProcessRegistry(home=home) as b:
        ja = a.spawn_local("sleep 30")
        jb = b.spawn_local("sleep 30")
        assert [s["session_id"] for s in a.list_sessions()] == [ja.id]
        assert a.kill_all(grace=0.2) == 1 and b.has_any_active()
        assert b.kill_all(grace=0.2) == 1
        assert jb.exited


def test_list_sessions_is_a_union_and_empty_means_all(hermes):
    own = hermes.spawn_local("sleep 30", task_id="t_now", session_key="gw1")
    forgotten = hermes.spawn_local("sleep 30", task_id="t_old", session_key="gw1")
    other = hermes.spawn_local("sleep 30", task_id="t_x", session_key="gw_other")
    assert {r["session_id"] for r in hermes.list_sessions(task_id="t_now")} == {own.id}
    both = {r["session_id"]: r for r in hermes.list_sessions(task_id="t_now", session_key="gw1")}
    assert set(both) == {own.id, forgotten.id}
    assert both[forgotten.id]["session_scoped"] is True and "session_scoped" not in both[own.id]
    everything = {own.id, forgotten.id, other.id}
    assert {r["session_id"] for r in hermes.list_sessions(task_id="")} == everything
    assert {r["session_id"] for r in hermes.list_sessions()} == everything
    row = both[own.id]
    assert set(row) == {"session_id", "command", "cwd", "pid", "started_at", "uptime_seconds", "status",
                        "output_preview"}  # Hermes' keys
    assert row["status"] == "running" and isinstance(row["uptime_seconds"], int)
    assert time.strptime(row["started_at"], "%Y-%m-%dT%H:%M:%S")  # upstream's local-time format
    hermes.kill_process(own.id, grace=0.2)
    rows = hermes.list_sessions()
    assert [r["status"] for r in rows] == ["running", "running", "exited"]  # running first, as Hermes lists
    assert rows[-1]["session_id"] == own.id and rows[-1]["exit_code"] == -15


def test_has_active_for_session_ignores_jobs_older_than_max_age(hermes):
    hermes.spawn_local("sleep 30", session_key="gw")
    assert hermes.has_active_for_session("gw", max_active_age=3600)
    time.sleep(0.3)
    assert not hermes.has_active_for_session("gw", max_active_age=0.2)
    assert hermes.has_active_for_session("gw")


def test_persist_on_release_survives_lifecycle_sweeps_only(hermes):
    keep = hermes.spawn_local("sleep 30", task_id="t", persist_on_release=True)
    temp = hermes.spawn_local("sleep 30", task_id="t")
    assert hermes.kill_all("t", grace=0.2) == 1  # the default source "kill_all" is a lifecycle sweep
    assert temp.exited and not keep.exited
    assert hermes.kill_all("t", grace=0.2, source="cli./stop") == 1  # a deliberate stop reaches it
    assert keep.exited


def test_kill_started_since_spares_the_baseline(hermes):
    old = hermes.spawn_local("sleep 30", task_id="turn")
    baseline = hermes.snapshot_running_ids("turn")
    new = hermes.spawn_local("sleep 30", task_id="turn")
    assert baseline == frozenset({old.id})
    assert hermes.kill_started_since("turn", baseline, source="gateway_turn_timeout") == 1
    assert new.exited and not old.exited
    assert hermes.is_completion_consumed(new.id)  # an abandoned turn's output is consumed


AGENT = textwrap.dedent("""
    import sys
    from hermes_procs.core.agents.compat import HermesProcessRegistry
    reg = HermesProcessRegistry(home=sys.argv[1])
    s = reg.spawn_local("sleep 30", task_id="t1", session_key="chat-9")
    s.notify_on_complete = True
    s.watcher_platform, s.watcher_chat_id, s.watcher_interval = "telegram", "42", 30
    done = reg.spawn_local("true")
    reg.wait(done.id, timeout=10)
    print(s.id, flush=True)
    # the agent process ends here without killing its job (a gateway restart)
""")


def test_a_secret_passed_on_purpose_is_masked_for_the_agent(hermes):
    # without Hermes installed, _HERMES_FORCE_NAME is how a secret reaches a job: it was not masked
    session = hermes.spawn_local("echo pw=$MY_DB_PASSWORD", env_vars={"_HERMES_FORCE_MY_DB_PASSWORD": "pw-Forced99x"})
    assert hermes.wait(session.id, timeout=10)["output"].strip() == "pw=***"


def test_a_secret_stays_masked_after_an_agent_restart(home, login_shell_home, monkeypatch):
    # the values to mask were learnt only at spawn: after a restart the job taken back showed the
    # password it printed in the clear
    monkeypatch.setenv("MY_DB_PASSWORD", "pw-Zq8xLm3Rt")
    agent = AGENT.replace('"sleep 30", task_id', '"echo pw=$MY_DB_PASSWORD; sleep 30", '
                          'env_vars={"_HERMES_FORCE_MY_DB_PASSWORD": "pw-Zq8xLm3Rt"}, task_id')
    out = subprocess.run([sys.executable, "-c", agent, str(home)], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    job_id = out.stdout.strip()
    with HermesProcessRegistry(home=home) as hermes:
        assert hermes.recover_from_checkpoint() == 1
        log = wait_until(lambda: (got := hermes.read_log(job_id)["output"]) and "pw=" in got and got)
        assert "pw-Zq8xLm3Rt" not in log and "pw=***" in log, repr(log)
        hermes.kill_all(grace=0.2)


def test_a_job_that_ended_while_the_agent_was_down_is_still_notified(home, registry):
    # stock Hermes (and this adapter before) said nothing: the agent was told it would be notified
    agent = AGENT.replace('"sleep 30", task_id', '"sleep 0.3; echo finished", task_id')
    out = subprocess.run([sys.executable, "-c", agent, str(home)], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    job_id = out.stdout.strip()
    assert registry.wait(job_id, timeout=10)["status"] == "exited"  # it ended with no agent running
    with HermesProcessRegistry(home=home) as hermes:
        assert hermes.recover_from_checkpoint() == 0  # nothing running was taken over
        (event, _), = wait_until(lambda: hermes.drain_notifications(), timeout=10)
        assert event["session_id"] == job_id and event["exit_code"] == 0 and "finished" in event["output"]
        assert event["session_key"] == "chat-9"
        time.sleep(0.5)

def test_a_job_lost_while_the_agent_was_down_is_told_once(home, registry, alive):
    # the restarted adapter learnt its end twice: from the lost events the look wrote and from
    # its watch of a job that was not running when taken back
    import json
    import os
    import signal

    agent = AGENT.replace('"sleep 30", task_id', '"echo started; sleep 1", task_id')
    out = subprocess.run([sys.executable, "-c", agent, str(home)], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    job_id = out.stdout.strip()
    proc = json.loads((registry.job_dir(job_id) / "proc.json").read_text())
    os.kill(proc["supervisor_pid"], signal.SIGKILL)
    wait_until(lambda: not alive(proc["supervisor_pid"]) and not alive(proc["pid"]), timeout=10)  # then it ends
    with HermesProcessRegistry(home=home) as hermes:
        hermes.recover_from_checkpoint()
        (event, text), = wait_until(lambda: hermes.drain_notifications(), timeout=10)
        assert event["session_id"] == job_id and event["completion_reason"] == "lost", text
        hermes._notes._lost_look = 0
        time.sleep(0.5)
        hermes.pump()
        assert hermes.drain_notifications() == []  # once
        hermes.kill_all(grace=0.2)

        assert hermes.drain_notifications() == []  # once


def test_a_completion_delivered_before_a_restart_is_not_told_again(home, registry):
    # the agent is told, then crashes (os._exit: no atexit hook writes its checkpoint again)
    delivered = ("import time\ngot, deadline = [], time.monotonic() + 10\n"
                 "while not got and time.monotonic() < deadline:\n    got = reg.drain_notifications()\n"
                 "    time.sleep(0.05)\nprint(s.id, len(got), flush=True)\nimport os\nos._exit(0)")
    agent = AGENT.replace('"sleep 30", task_id', '"sleep 0.2", task_id').replace("print(s.id, flush=True)", delivered)
    out = subprocess.run([sys.executable, "-c", agent, str(home)], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0 and out.stdout.split()[1] == "1", (out.stdout, out.stderr)  # told before the end
    with HermesProcessRegistry(home=home) as hermes:
        hermes.recover_from_checkpoint()
        time.sleep(0.3)
        hermes.pump()
        assert hermes.drain_notifications() == []  # the agent before the restart had it


def test_recover_from_checkpoint_after_an_agent_restart(home, registry, alive):
    human = registry.spawn("sleep 30")
    out = subprocess.run([sys.executable, "-c", AGENT, str(home)], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    job_id = out.stdout.strip()
    assert registry.poll(job_id)["status"] == "running"
    with HermesProcessRegistry(home=home) as alive_other:  # a live adapter's jobs are not adopted
        alive_other.spawn_local("sleep 30")
        with HermesProcessRegistry(home=home) as hermes:
            assert hermes.list_sessions() == [] and hermes.kill_all() == 0  # nothing owned before recovery
            assert hermes.recover_from_checkpoint() == 1
            assert hermes.recover_from_checkpoint() == 0  # the dead agent's checkpoint was consumed
            assert [r["session_id"] for r in hermes.list_sessions()] == [job_id]
            session = hermes.get(job_id)
            assert session.detached and session.notify_on_complete and session.task_id == "t1"
            assert session.watcher_platform == "telegram" and session.session_key == "chat-9"
            assert hermes.poll(job_id)["detached"] is True
            assert hermes.pending_watchers == [{  # for the gateway's watcher, which routes the result
                "session_id": job_id, "check_interval": 30, "session_key": "chat-9", "platform": "telegram",
                "chat_id": "42", "user_id": "", "user_name": "", "thread_id": "", "message_id": "",
                "notify_on_complete": True}]
            assert hermes.kill_all(grace=0.2) == 1
            notes = wait_until(lambda: hermes.drain_notifications(), timeout=10)
            event, text = notes[0]
            assert event["session_id"] == job_id and event["session_key"] == "chat-9"
            assert "terminated by kill_all" in text
        alive_other.kill_all(grace=0.2)
    assert alive(human["pid"])


def test_subagent_handoff_and_owner_queries(hermes):
    job = hermes.spawn_local("read go; echo built", task_id="sa-1", notify_on_complete=True)
    assert [s.id for s in hermes.running_owned_by("sa-1")] == [job.id]
    assert hermes.transfer_ownership(job.id, from_owner="other", to_owner="parent", to_task_id="p",
                                     to_session_key="chat") is None
    moved = hermes.transfer_ownership(job.id, from_owner="sa-1", to_owner="parent", to_task_id="p",
                                      to_session_key="chat", note="the build")
    assert moved is job and job.owner_task_id == "parent" and hermes.running_owned_by("sa-1") == []
    assert hermes.is_session_waiting(job.id)
    hermes.submit_stdin(job.id, "")
    result = hermes.wait_for_pending_completions("parent", timeout=20)
    assert result["timed_out"] == [] and result["completed"] == result["waited"] and job.exited
    assert not hermes.is_session_waiting(job.id)
    assert [s.id for s in hermes.unread_completions_owned_by("parent")] == [job.id]
    (event, text), = wait_until(lambda: hermes.drain_notifications(session_key="chat"), timeout=10)
    assert event["session_key"] == "chat" and event["handoff_note"] == "the build"
    assert "Handed off to you by a subagent before it finished. Purpose: the build" in text


def test_is_session_waiting_releases_on_a_watch_match(hermes):
    job = hermes.spawn_local("echo READY; sleep 30", watch_patterns=["READY"])
    wait_until(lambda: not hermes.is_session_waiting(job.id), timeout=10)
    assert not job.exited and not hermes.is_session_waiting("proc_ffffffffffff")


def test_a_job_its_lease_ended_says_so_to_the_agent(hermes, registry):
    owner = subprocess.Popen(["sleep", "60"])
    sid = registry.spawn("sleep 60", lease=owner.pid)["session_id"]  # handed to the agent by id
    owner.kill()
    owner.wait()
    assert registry.wait(sid, timeout=10)["completion_reason"] == "killed"
    got = hermes.poll(sid)
    assert (got["completion_reason"], got["termination_source"]) == ("killed", "lease"), got
