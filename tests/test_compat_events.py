"""Hermes adapter events: settings made on the session after spawn, watch patterns on prompts,
routing fields, drain_notifications ownership, consumed completions. Real jobs throughout."""

import logging
import os
import time

import pytest
from conftest import wait_until

from hermes_procs.core.agents.compat import HermesProcessRegistry, format_process_notification

pytestmark = pytest.mark.usefixtures("login_shell_home")  # the jobs run in a login shell


def drained(hermes, **kwargs):
    return wait_until(lambda: hermes.drain_notifications(**kwargs), timeout=10)


def queued(hermes, count):
    wait_until(lambda: hermes.pump() >= 0 and hermes.completion_queue.qsize() == count, timeout=10)


def test_no_completion_unless_asked(hermes):
    quiet = hermes.spawn_local("exit 1")
    hermes.wait(quiet.id, timeout=10)
    assert hermes.pump() == 0 and hermes.drain_notifications() == []


def test_attributes_set_after_spawn_take_effect(hermes):
    session = hermes.spawn_local("read line; echo done $line; exit 4", task_id="t1", session_key="chat-1")
    session.notify_on_complete = True
    session.watcher_platform, session.watcher_chat_id, session.watcher_thread_id = "telegram", "-100", "7"
    session.watcher_user_id, session.watcher_user_name, session.watcher_message_id = "u1", "ann", "m9"
    hermes.submit_stdin(session.id, "ok")
    (event, text), = drained(hermes)
    assert set(event) == {"type", "session_id", "session_key", "command", "exit_code", "completion_reason",
                          "termination_source", "output", "started_at"}  # Hermes' completion event
    assert event["type"] == "completion" and event["exit_code"] == 4 and event["completion_reason"] == "exited"
    assert event["session_key"] == "chat-1" and event["command"] == session.command
    assert event["termination_source"] == ""
    assert "done ok" in event["output"] and isinstance(event["started_at"], float)
    assert text.startswith(f"[IMPORTANT: Background process {session.id} exited (exit code 4).")
    assert "Command: read line" in text and "done ok" in text


def test_a_job_whose_supervisor_was_killed_is_still_notified(hermes):
    # no supervisor, no completion event: the agent, told it would be notified, waited for ever
    import json
    import signal

    session = hermes.spawn_local("echo hi; sleep 0.3", notify_on_complete=True)
    proc = json.loads((hermes.registry.job_dir(session.id) / "proc.json").read_text())
    os.kill(proc["supervisor_pid"], signal.SIGKILL)
    (event, text), = drained(hermes)
    assert event["type"] == "completion" and event["completion_reason"] == "lost" and event["exit_code"] is None
    assert text.startswith(f"[IMPORTANT: Background process {session.id} was lost (its supervisor disappeared) "
                           "(exit code unknown)")
    hermes._notes._lost_look = 0  # the next pump looks again at once
    hermes.pump()
    assert hermes.drain_notifications() == []  # once


def test_notify_can_be_turned_off_after_spawn(hermes):
    session = hermes.spawn_local("sleep 0.3", notify_on_complete=True)
    session.notify_on_complete = False
    hermes.wait(session.id, timeout=10)
    assert hermes.drain_notifications() == []


def test_watch_patterns_set_after_spawn_match_a_prompt_without_newline(hermes):
    session = hermes.spawn_local("printf 'Proceed? [y/N] '; read answer; echo got $answer", session_key="s")
    session.watcher_platform, session.watcher_chat_id = "telegram", "-100"
    session.watch_patterns = ["Proceed?"]  # the prompt is already waiting: it matches now
    (event, text), = drained(hermes)
    assert (event["platform"], event["chat_id"], event["message_id"]) == ("telegram", "-100", "")  # routing
    assert event["type"] == "watch_match" and event["pattern"] == "Proceed?"
    assert event["output"] == "Proceed? [y/N] " and event["session_key"] == "s" and event["command"]
    assert 'matched watch pattern "Proceed?"' in text
    hermes.submit_stdin(session.id, "y")
    hermes.wait(session.id, timeout=10)
    assert hermes.drain_notifications() == []  # the rest of that line does not match it again
    assert hermes.list_sessions()[0]["watch_hit"] is True


def test_prompt_arriving_later_matches_while_it_waits(hermes):
    session = hermes.spawn_local("sleep 0.3; printf 'Overwrite file? [y/N] '; read x", watch_patterns=["[y/N]"])
    (event, _), = drained(hermes)
    assert event["session_id"] == session.id and event["output"].startswith("Overwrite file?")


def test_watch_disabled_after_the_lifetime_cap_promotes_notify(home, monkeypatch):
    monkeypatch.setenv("HERMES_PROCS_WATCH_INTERVAL", "1e-9")  # never rate-limited, even in one chunk
    with HermesProcessRegistry(home=home) as hermes:
        session = hermes.spawn_local("for i in $(seq 12); do echo HIT $i; sleep 0.02; done; exit 3",
                                     watch_patterns=["HIT"])
        wait_until(lambda: session.exited, timeout=10)  # not wait(): the agent would have the result
        notes = wait_until(lambda: [n for n in hermes.drain_notifications()], timeout=10)
        notes += hermes.drain_notifications()
        kinds = [e["type"] for e, _ in notes]
        assert kinds.count("watch_match") == 8 and kinds.count("watch_disabled") == 1
        assert kinds[-1] == "completion"  # promoted: exactly one completion when it exits
        disabled = notes[kinds.index("watch_disabled")]
        assert "notify_on_complete" in disabled[1] and disabled[1].startswith("[IMPORTANT: Watch patterns disabled")
        assert session.notify_on_complete is True


def test_drain_notifications_routes_by_session_key_and_owns_event(hermes):
    a = hermes.spawn_local("exit 0", session_key="chat-a", notify_on_complete=True)
    b = hermes.spawn_local("exit 0", session_key="chat-b", notify_on_complete=True)
    wait_until(lambda: a.exited and b.exited, timeout=10)
    queued(hermes, 2)
    assert [e["session_id"] for e, _ in hermes.drain_notifications(session_key="chat-a")] == [a.id]
    assert hermes.completion_queue.qsize() == 1  # chat-b's event went back for its owner

    def broken(_event):
        raise RuntimeError("ownership check exploded")

    assert hermes.drain_notifications(session_key="chat-b", owns_event=broken) == []  # fails closed
    assert [e["session_id"] for e, _ in hermes.drain_notifications(owns_event=lambda e: True)] == [b.id]


def test_drain_notifications_async_delegation_needs_proof(hermes):
    for key in ("k1", "k2"):
        hermes.completion_queue.put({"type": "async_delegation", "delegation_id": f"d-{key}", "session_key": key,
                                     "status": "completed", "summary": f"done {key}"})
    first = hermes.drain_notifications(session_key="k1")
    assert [e["delegation_id"] for e, _ in first] == ["d-k1"] and "done k1" in first[0][1]
    assert [e["delegation_id"] for e, _ in hermes.drain_notifications(session_key="k2")] == ["d-k2"]


def test_consumed_and_poll_observed_completions(hermes):
    """Hermes 0.19.0's rules: wait, kill and a read of the log's end consume a completion (it is
    not notified again); poll only hides it from the CLI's drain, not from the gateway's."""
    killed = hermes.spawn_local("sleep 30", notify_on_complete=True, session_key="s")
    assert not hermes.is_completion_consumed(killed.id)
    result = hermes.kill_process(killed.id, grace=0.2)
    assert result["status"] == "killed" and result["termination_source"] == "process.kill"
    assert hermes.is_completion_consumed(killed.id)  # the kill result carried the output
    waited = hermes.spawn_local("exit 0", notify_on_complete=True, session_key="s")
    hermes.wait(waited.id, timeout=10)
    assert hermes.is_completion_consumed(waited.id)  # wait: the agent has it, also for a notify job
    polled = hermes.spawn_local("exit 0", notify_on_complete=True, session_key="s")
    wait_until(lambda: polled.exited, timeout=10)
    assert hermes.poll(polled.id)["status"] == "exited"
    assert not hermes.is_completion_consumed(polled.id)  # poll is read-only
    queued(hermes, 3)
    assert hermes.drain_notifications(session_key="other") == [] and hermes.completion_queue.qsize() == 3
    taken = hermes.drain_notifications(session_key="s", skip_poll_observed=False)  # the gateway's view
    assert [e["session_id"] for e, _ in taken] == [polled.id]  # the killed and waited ones were consumed
    seen = hermes.spawn_local("exit 0", notify_on_complete=True)
    wait_until(lambda: seen.exited, timeout=10)
    hermes.poll(seen.id)
    queued(hermes, 1)
    assert hermes.drain_notifications() == []  # the CLI's view: it saw the exit inline via poll


def test_read_log_consumes_only_when_it_reached_the_end(hermes):
    session = hermes.spawn_local("seq 10")
    wait_until(lambda: session.exited, timeout=10)
    hermes.read_log(session.id, offset=1, limit=3)
    assert not hermes.is_completion_consumed(session.id)
    hermes.read_log(session.id, offset=5, limit=50)
    assert hermes.is_completion_consumed(session.id)
    tail = hermes.spawn_local("seq 10")
    wait_until(lambda: tail.exited, timeout=10)
    hermes.read_log(tail.id, limit=3)  # offset 0: the tail, which is the end
    assert hermes.is_completion_consumed(tail.id)
    running = hermes.spawn_local("seq 3; sleep 30")
    wait_until(lambda: "3" in running.output_buffer)
    hermes.read_log(running.id, offset=0)
    assert not hermes.is_completion_consumed(running.id)  # it had not ended: nothing to consume


def test_first_drain_does_not_replay_history(home, registry):
    for _ in range(3):
        job = registry.spawn("exit 0", notify_on_complete=True, watch_patterns=["x"])
        registry.wait(job["session_id"], timeout=10)
    # wait() answers from the exit record; the supervisor appends the event a moment later
    # (under load: after the consumer below began at the log's end, which it then read)
    log = home / "events.jsonl"
    deadline = time.monotonic() + 10
    while log.read_bytes().count(b'"type": "completion"') < 3 and time.monotonic() < deadline:
        time.sleep(0.02)
    with HermesProcessRegistry(home=home, consumer="fresh-agent") as hermes:
        assert hermes.pump() == 0 and hermes.completion_queue.empty()
        later = registry.spawn("exit 5", notify_on_complete=True)  # a named consumer passes others' events
        event = hermes.completion_queue.get(timeout=10)
        assert event["session_id"] == later["session_id"]


def test_pump_reports_a_failure_once(hermes, caplog):
    cursor = hermes.registry.home / "cursors" / hermes.consumer
    cursor.unlink()
    cursor.mkdir()  # the cursor can no longer be opened
    try:
        with caplog.at_level(logging.WARNING, logger="hermes_procs.core.agents.compat"):
            assert hermes.pump() == 0 and hermes.pump() == 0
        warnings = [r for r in caplog.records if "event log" in r.getMessage()]
        assert len(warnings) == 1
    finally:
        os.rmdir(cursor)


def test_format_process_notification_kinds():
    done = {"type": "completion", "session_id": "proc_1", "command": "make", "exit_code": 0, "output": "ok"}
    assert format_process_notification(done) == (
        "[IMPORTANT: Background process proc_1 completed normally (exit code 0).\nCommand: make\nOutput:\nok]")
    killed = {**done, "exit_code": -15, "completion_reason": "killed", "termination_source": "kill_all"}
    assert "terminated by kill_all (exit code -15, SIGTERM)" in format_process_notification(killed)
    watch = {"type": "watch_match", "session_id": "proc_1", "command": "srv", "pattern": "ERR", "output": "ERR x",
             "suppressed": 2}
    assert "(2 earlier matches were suppressed by rate limit)" in format_process_notification(watch)
    assert format_process_notification({"type": "watch_disabled", "message": "stop"}) == "[IMPORTANT: stop]"
    assert format_process_notification({"type": "started"}) is None


def test_registry_set_watch_patterns(registry):
    job = registry.spawn("read go; echo LATER-MATCH; sleep 30")
    assert registry.set_watch_patterns(job["session_id"], ["LATER"])["watch_patterns"] == ["LATER"]
    registry.submit(job["session_id"], "")  # the line is printed only after the patterns are set
    assert registry.set_watch_patterns(job["session_id"], "LATER")["status"] == "error"
    assert registry.set_watch_patterns(job["session_id"], [""])["status"] == "error"
    from hermes_procs.core.registry import protocol

    raw = protocol.request(registry.job_dir(job["session_id"]), {"op": "watch", "patterns": "LATER"})
    assert raw["ok"] is False and "list" in raw["error"]  # a raw socket client gets a clear no
    events = wait_until(lambda: [e for e in registry.drain_events("t") if e["type"] == "watch_match"], timeout=10)
    assert events[0]["output"] == "LATER-MATCH"
    registry.kill(job["session_id"], grace=0.2)
    assert registry.set_watch_patterns(job["session_id"], ["x"])["status"] == "already_exited"
