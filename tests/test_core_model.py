"""core.model: the one place a job's status is worded, signals are named and times parsed."""

from __future__ import annotations

import random
import time
from datetime import UTC, datetime

import pytest

from hermes_procs.core.registry.model import JobInfo, Outcome, Signal, Status, iso_time, parse_time, shell_exit_code


def job(**fields) -> JobInfo:
    return JobInfo.from_dict({"session_id": "proc_000000000001", **fields})


@pytest.mark.parametrize(("fields", "label", "phrase"), [
    ({"status": "running"}, "running", "exited"),
    ({"status": "exited", "completion_reason": "exited", "exit_code": 3}, "exited 3", "exited with code 3"),
    ({"status": "exited", "completion_reason": "killed", "exit_code": -15, "signal": "SIGTERM"},
     "killed", "killed (SIGTERM)"),
    ({"status": "exited", "completion_reason": "timed_out", "exit_code": -9, "signal": "SIGKILL"},
     "timed out", "timed out (SIGKILL)"),
    ({"status": "exited", "completion_reason": "lost"}, "lost", "lost (its supervisor vanished)"),
    ({"status": "corrupt", "error": "damaged"}, "corrupt", "exited"),
    ({"status": "killed", "completion_reason": "killed", "exit_code": -15}, "killed", "killed"),
    # a signal nobody sent through us ended the command: which one, not `exited -11`
    ({"status": "exited", "completion_reason": "exited", "exit_code": -11, "signal": "SIGSEGV"},
     "ended by SIGSEGV", "ended by SIGSEGV"),
    ({"status": "exited", "completion_reason": "exited", "exit_code": -2}, "ended by SIGINT", "ended by SIGINT"),
    ({"status": "exited", "completion_reason": "exited", "exit_code": -99}, "ended by signal 99", "ended by signal 99"),
    ({"status": "running", "stopped": True}, "stopped", "exited"),
    ({"status": "exited", "completion_reason": "exited", "exit_code": 0, "stopped": True}, "exited 0",
     "exited with code 0"),
])
def test_label_and_phrase(fields, label, phrase):
    info = job(**fields)
    assert info.label() == label
    assert info.ended_phrase() == phrase


def test_already_exited_sentence():
    info = job(status="already_exited", completion_reason="killed", exit_code=-15, signal="SIGTERM")
    assert info.already_exited() == "proc_000000000001 has already exited (killed, SIGTERM)"
    assert job(status="already_exited", exit_code=0).already_exited(verb="had") == \
        "proc_000000000001 had already exited (exit code 0)"
    assert job(status="already_exited", exit_code=-6).already_exited() == \
        "proc_000000000001 has already exited (ended by SIGABRT)"


def test_failed_and_state():
    assert not job(status="exited", completion_reason="exited", exit_code=0).failed
    assert job(status="exited", completion_reason="exited", exit_code=2).failed
    assert job(status="exited", completion_reason="lost").failed
    assert not job(status="running").failed
    assert job(status="running").state is Status.RUNNING
    assert job(status="not_found").state is None
    assert Outcome.parse("something-new") is Outcome.EXITED and Outcome.parse(None) is None


@pytest.mark.parametrize(("code", "shell"), [(0, 0), (3, 3), (-15, 143), (-9, 137), (256 + 4, 4), (None, 1), (True, 1)])
def test_shell_exit_code(code, shell):
    assert shell_exit_code(code) == shell


def test_parse_time():
    assert parse_time("1970-01-01T00:01:00+00:00") == 60.0
    assert parse_time("1970-01-01T00:01:00Z") == 60.0
    assert parse_time(12.5) == 12.5
    assert parse_time("yesterday", default=-1) == -1
    assert parse_time(None) == 0.0 and parse_time(True) == 0.0
    for number in (1e300, -1e300, float("nan"), float("inf"), 253402300800):  # no time: no crash later
        assert parse_time(number, default=-1) == -1
    assert parse_time(-62135596800) == -62135596800.0 and parse_time(253402300799) == 253402300799.0
    assert job(started_at="1970-01-01T00:00:10Z").started == 10.0


def test_times_without_datetime_agree_with_datetime():
    """iso_time and parse_time's own reading of its form (neither loads `datetime`) say what
    `datetime` says: on random instants from year 1 to 9999, and on texts it refuses."""
    rng = random.Random(26)
    for _ in range(20_000):
        epoch = rng.choice([rng.uniform(-62135596800, 253402300799), rng.uniform(0, 4e9)])
        text = iso_time(epoch)
        assert text == datetime.fromtimestamp(epoch, UTC).isoformat(timespec="seconds")
        assert parse_time(text) == datetime.fromisoformat(text).timestamp()
    for text in ["2026-02-29T00:00:00+00:00", "1900-02-29T00:00:00+00:00", "2026-04-31T00:00:00+00:00",
                 "2026-13-01T00:00:00+00:00", "2026-01-01T24:00:00+00:00", "2026-01-01T00:00:60+00:00",
                 "0000-01-01T00:00:00+00:00", "\u0662\u0660\u0662\u0666-01-01T00:00:00+00:00",
                 "+026-01-01T00:00:00+00:00"]:
        with pytest.raises(ValueError):
            datetime.fromisoformat(text)
        assert parse_time(text, default=-1.0) == -1.0, text
    assert parse_time("2000-02-29T23:59:59Z") == 951868799.0
    assert parse_time("2026-01-01t00:00:00+01:00") == 1767222000.0  # not its form: datetime reads it


def test_a_time_without_an_offset_follows_the_time_zone(monkeypatch):
    """parse_time's answers are cached; a local time's answer changes with the time zone."""
    try:
        monkeypatch.setenv("TZ", "UTC0")
        time.tzset()
        utc = parse_time("2026-01-01T00:00:00")
        monkeypatch.setenv("TZ", "JST-9")  # a POSIX zone: no tzdata needed
        time.tzset()
        assert utc - parse_time("2026-01-01T00:00:00") == 9 * 3600
        assert parse_time("2026-01-01T00:00:00Z") == utc
    finally:
        monkeypatch.undo()
        time.tzset()


@pytest.mark.parametrize("text", ["TERM", "term", "SIGTERM", " sigterm ", "15", 15])
def test_signal_parse(text):
    assert Signal.parse(text) == Signal("TERM", 15)
    assert Signal.parse(text).full_name == "SIGTERM"


@pytest.mark.parametrize("text", ["NOPE", "", "999", "SIGSEGV"])
def test_signal_parse_rejects(text):
    with pytest.raises(ValueError, match="signal"):
        Signal.parse(text)
    assert Signal.parse("SEGV", sendable_only=False).number == 11


def test_registry_signal_accepts_numbers_and_names(registry):
    sid = registry.spawn("sleep 30")["session_id"]
    try:
        assert registry.signal(sid, "18")["status"] == "ok"  # CONT, a no-op for sleep
        bad = registry.signal(sid, "SEGV")
        assert bad["status"] == "error" and "cannot be sent" in bad["error"]
    finally:
        registry.kill(sid, grace=0)
