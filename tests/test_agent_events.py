"""The supervisor's awaiting_input and quiet events: produced with no client running, once per
episode / quiet stretch, exactly once per consumer."""

from conftest import wait_until


def _events(registry, consumer, sid, kind):
    return [e for e in registry.drain_events(consumer, all_types=True) if e["session_id"] == sid and e["type"] == kind]


def test_awaiting_input_once_per_prompt(registry):
    sid = registry.spawn("printf 'name? '; read a; printf 'age? '; read b; echo done")["session_id"]
    seen = []
    wait_until(lambda: seen.extend(_events(registry, "c1", sid, "awaiting_input")) or seen, timeout=10)
    assert len(seen) == 1 and seen[0]["output"].endswith("name? ")
    registry.submit(sid, "ann")
    wait_until(lambda: seen.extend(_events(registry, "c1", sid, "awaiting_input")) or len(seen) == 2, timeout=10)
    assert seen[1]["output"].endswith("age? ")
    registry.submit(sid, "7")
    registry.wait(sid, timeout=20)
    assert _events(registry, "c1", sid, "awaiting_input") == []  # nothing twice
    assert len(_events(registry, "c2", sid, "awaiting_input")) == 2  # another consumer gets both


def test_quiet_after_once_per_stretch(registry):
    sid = registry.spawn("echo a; read x; echo b; sleep 60", quiet_after=0.6)["session_id"]
    quiet = []
    wait_until(lambda: quiet.extend(_events(registry, "q", sid, "quiet")) or quiet, timeout=10)
    assert quiet[0]["quiet_seconds"] >= 0.6
    registry.submit(sid, "go")
    wait_until(lambda: quiet.extend(_events(registry, "q", sid, "quiet")) or len(quiet) == 2, timeout=10)
    assert quiet[1]["output"].endswith("b\n")


def test_no_quiet_event_without_quiet_after_and_bad_quiet_after(registry):
    sid = registry.spawn("printf 'ok? '; read x")["session_id"]
    wait_until(lambda: _events(registry, "n", sid, "awaiting_input"), timeout=10)
    assert _events(registry, "n2", sid, "quiet") == []
    assert "quiet_after" in registry.spawn("true", quiet_after=-1)["error"]
    assert "quiet_after" in registry.spawn("true", quiet_after="soon")["error"]
