"""The event log stays bounded (issue 19 item 9): `prune` compacts events.jsonl, removes the
cursors and checkpoints of crashed consumers, and `drain_events` pages, with each event still
delivered exactly once per consumer across processes while all of it happens at once.

Before: events.jsonl grew ~312 bytes per job for ever (120 MB: prune 6.7 s, a new consumer's
first drain 7.3 s returning 189,000 events at once), and a crashed adapter's cursor and
checkpoint stayed.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
import time

import pytest
from conftest import wait_until

from hermes_procs.core import ProcessRegistry

pytestmark = pytest.mark.timeout(180)

OLD = 1_600_000_000.0  # an old timestamp: these events are not recent


def old_events(home, count: int, start: int = 0) -> bytes:
    """`count` completion events of jobs long pruned, as supervisors write them."""
    lines = [json.dumps({"type": "completion", "session_id": f"proc_{i:012x}", "t": OLD + i, "command": "make",
                         "exit_code": 0, "completion_reason": "exited", "output": "x" * 200})
             for i in range(start, start + count)]
    return ("\n".join(lines) + "\n").encode()


def append_raw(home, data: bytes) -> None:
    with open(home / "events.jsonl", "ab") as fh:
        fh.write(data)


def drain_all(reg: ProcessRegistry, consumer: str, **kw) -> list[dict]:
    got = []
    while True:
        page = reg.drain_events(consumer, **kw)
        assert isinstance(page, list), page
        more = bool(page) and page[-1]["type"] == "more_events"
        got += page[:-1] if more else page
        if not more:
            return got


def test_drain_returns_pages_and_says_when_more_remain(registry, home):
    registry.drain_events("early")  # a cursor at the start
    append_raw(home, old_events(home, 2500))
    first = registry.drain_events("early")
    assert len(first) == 1001 and first[-1]["type"] == "more_events" and first[-1]["remaining_bytes"] > 0
    rest = drain_all(registry, "early")
    assert [e["session_id"] for e in first[:-1] + rest] == [f"proc_{i:012x}" for i in range(2500)]
    assert registry.drain_events("early") == []
    append_raw(home, b'{"type": "completion", "session_id": "proc_0')  # a line cut by a full disk
    assert registry.drain_events("early") == []  # is not "more": a pager would never end
    assert len(registry.drain_events("small", limit=10)) == 11
    assert "limit" in registry.drain_events("bad", limit=0)["error"]
    # the CLI's stream pages through all of it (each event once)
    res = subprocess.run([sys.executable, "-m", "hermes_procs", "--home", str(home), "events", "--consumer", "cli"],
                         capture_output=True, text=True, timeout=60)
    lines = res.stdout.splitlines()
    assert len(lines) == 2500 and "more_events" not in res.stdout


def test_prune_compacts_what_every_consumer_has_read(registry, home):
    reader = registry.drain_events("reader")  # a consumer that keeps up ...
    assert reader == []
    append_raw(home, old_events(home, 20_000))  # 6 MB of events of jobs long gone
    assert drain_all(registry, "reader") and registry.drain_events("laggard", limit=1)  # ... and one behind
    kept = [registry.spawn(f"echo kept{i}", notify_on_complete=True)["session_id"] for i in range(3)]
    for sid in kept:
        registry.wait(sid, timeout=20)
    wait_until(lambda: all(b'"type": "completion", "session_id": "' + sid.encode() in (home / "events.jsonl")
                           .read_bytes() for sid in kept), timeout=20)
    before = (home / "events.jsonl").stat().st_size
    laggard_next = registry.drain_events("laggard", limit=1)  # the laggard reads one more ...
    assert laggard_next[0]["session_id"] == f"proc_{1:012x}"
    pruned = registry.prune()
    # ... so the log keeps everything after it, byte for byte; the jobs' own events stay too
    assert pruned["events_dropped_bytes"] > 0 and (home / "events.jsonl").stat().st_size < before
    rest = drain_all(registry, "laggard")
    assert [e["session_id"] for e in rest][:2] == [f"proc_{2:012x}", f"proc_{3:012x}"]
    assert sorted(e["session_id"] for e in rest[-3:]) == sorted(kept) and len(rest) == 20_000 - 2 + 3
    assert drain_all(registry, "reader") == [e for e in rest if e["session_id"] in kept]
    # everyone has read everything: a new consumer finds only the events of the jobs still there
    assert registry.prune()["events_dropped_bytes"] > 0
    assert sorted(e["session_id"] for e in drain_all(registry, "newcomer")) == sorted(kept)
    assert (home / "events.jsonl").stat().st_size < 8192
    for consumer in ("reader", "laggard", "newcomer"):
        assert registry.drain_events(consumer) == []


def test_exactly_once_while_jobs_end_consumers_drain_and_prune_compacts(home):
    """Processes at once: one spawns 60 notify jobs, three drain (two share a consumer), one
    prunes (keep_count=0) in a loop; every consumer gets every completion exactly once."""
    reg = ProcessRegistry(home=home)
    for consumer in ("a", "shared"):
        reg.drain_events(consumer)
    append_raw(home, old_events(home, 3000))  # something to compact from the start
    prog = textwrap.dedent("""
        import json, sys, time
        from hermes_procs.core import ProcessRegistry
        reg = ProcessRegistry(home=sys.argv[1])
        role, stop = sys.argv[2], sys.argv[3]
        import os
        got, dropped = [], 0
        while True:
            done = os.path.exists(stop)
            if role == "prune":
                r = reg.prune(keep_count=0); dropped += r.get("events_dropped_bytes", 0)
                if r.get("status") != "ok": print(r, file=sys.stderr)
                time.sleep(0.05)
            else:
                page = reg.drain_events(role, limit=50)
                got += [e["session_id"] for e in page if e["type"] == "completion"]
            if done:
                break
        print(json.dumps({"got": got, "dropped": dropped}))
    """)
    stop = home.parent / "stop"
    procs = {name: subprocess.Popen([sys.executable, "-c", prog, str(home), role, str(stop)],
                                    stdout=subprocess.PIPE, text=True)
             for name, role in (("a", "a"), ("s1", "shared"), ("s2", "shared"), ("prune", "prune"))}
    spawned: list[str] = []
    log = home / "events.jsonl"

    def identity() -> tuple[int, bytes]:  # a compacted log is a new file (its inode may be reused)
        with open(log, "rb") as fh:
            return os.fstat(fh.fileno()).st_ino, fh.readline()

    files = [identity()]

    def old_left() -> bool:  # a second compaction has something to drop only while old events remain
        return b'"session_id": "proc_000000000' in log.read_bytes()

    deadline = time.monotonic() + 60
    while (len(spawned) < 60 or (len(files) < 3 and old_left())) and time.monotonic() < deadline:
        batch = [reg.spawn(f"echo {i}", notify_on_complete=True)["session_id"] for i in range(10)]
        for sid in batch:
            reg.wait(sid, timeout=20)
        spawned += batch
        if identity() != files[-1]:
            files.append(identity())
    stop.touch()
    out = {name: json.loads(p.communicate(timeout=60)[0]) for name, p in procs.items()}
    assert out["prune"]["dropped"] > 0  # it did compact while all this ran
    seen = {"a": out["a"]["got"], "shared": out["s1"]["got"] + out["s2"]["got"]}

    def complete() -> bool:  # a supervisor that met prune's lock writes its event a moment later
        for consumer, got in seen.items():
            got += [e["session_id"] for e in drain_all(reg, consumer) if e["type"] == "completion"]
        return all(len(got) >= 3000 + len(spawned) for got in seen.values())

    wait_until(complete, timeout=30)
    old = {f"proc_{i:012x}" for i in range(3000)}
    for got in seen.values():
        assert sorted(got) == sorted([*old, *spawned])  # each once: nothing lost, nothing twice


def test_prune_removes_cursors_and_checkpoints_of_crashed_consumers(registry, home):
    # a Hermes adapter and a dashboard consumer in processes that are then killed (-9)
    prog = textwrap.dedent("""
        import sys, time
        from hermes_procs.core.agents.compat import HermesProcessRegistry
        from hermes_procs.core import ProcessRegistry
        adapter = HermesProcessRegistry(home=sys.argv[1])
        session = adapter.spawn_local("sleep 30")
        import os
        ProcessRegistry(home=sys.argv[1]).drain_events(f"dashboard-{os.getpid()}", only_new=True)
        print(session.id, adapter.consumer, flush=True)
        time.sleep(60)
    """)
    proc = subprocess.Popen([sys.executable, "-c", prog, str(home)], stdout=subprocess.PIPE, text=True)
    sid, consumer = proc.stdout.readline().split()
    proc.kill()
    proc.wait(10)
    cursors = home / "cursors"
    checkpoints = list((home / "compat").glob("*.json"))
    assert (cursors / consumer).exists() and (cursors / f"dashboard-{proc.pid}").exists() and checkpoints
    registry.drain_events(f"dashboard-{os.getpid()}")  # a live one of this process: kept
    registry.drain_events("named")  # a named consumer: kept until unused for the retention period
    pruned = registry.prune()
    assert pruned["pruned_cursors"] == 2
    assert sorted(p.name for p in cursors.iterdir()) == sorted([f"dashboard-{os.getpid()}", "named"])
    assert list((home / "compat").glob("*.json")) == checkpoints  # its job still runs: recoverable
    registry.kill(sid, grace=0.2)
    assert registry.prune()["pruned_checkpoints"] == 1 and not list((home / "compat").glob("*.json"))


def test_a_drain_marks_its_cursor_as_used(registry, home):
    registry.drain_events("quiet")
    path = home / "cursors" / "quiet"
    week = time.time() - 8 * 86400
    os.utime(path, (week, week))
    assert registry.drain_events("quiet") == []  # nothing new, but the consumer is alive
    assert registry.prune()["pruned_cursors"] == 0 and path.exists()
    os.utime(path, (week, week))
    assert registry.prune()["pruned_cursors"] == 1 and not path.exists()


def test_prune_with_a_planted_event_log_link_prunes_and_says_why_it_did_not_compact(registry, home, tmp_path):
    registry.drain_events("x")
    target = tmp_path / "elsewhere"
    target.write_bytes(old_events(home, 10))
    (home / "events.jsonl").symlink_to(target)
    pruned = registry.prune()
    assert pruned["status"] == "ok" and "not compacted" in pruned["events_note"], pruned
    assert target.read_bytes() == old_events(home, 10) and (home / "events.jsonl").is_symlink()
