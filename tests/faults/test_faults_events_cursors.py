"""Events never vanish: a replaced events.jsonl is read from its start, a damaged cursor is
reported (not replayed), consumer names are checked everywhere, and retention keeps jobs whose
completion events a known consumer has not drained."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time

import pytest

from hermes_procs.core import ProcessRegistry
from hermes_procs.core.registry import events


def _write_events(home, sessions, kind="completion"):
    with open(home / "events.jsonl", "a") as fh:
        for sid in sessions:
            fh.write(json.dumps({"type": kind, "session_id": sid, "t": time.time()}) + "\n")


def test_rotated_log_that_grew_past_the_cursor_is_read_from_its_start(tmp_path):
    home = tmp_path / "home"
    reg = ProcessRegistry(home=home)
    _write_events(home, [f"old{i}" for i in range(3)])
    assert [e["session_id"] for e in reg.drain_events("agent")] == ["old0", "old1", "old2"]
    os.rename(home / "events.jsonl", home / "events.jsonl.1")  # rotation
    _write_events(home, [f"new{i}" for i in range(10)])  # grows past the old cursor
    assert [e["session_id"] for e in reg.drain_events("agent")] == [f"new{i}" for i in range(10)]
    assert reg.drain_events("agent") == []


def test_deleted_and_recreated_log_is_read_from_its_start(tmp_path):
    home = tmp_path / "home"
    reg = ProcessRegistry(home=home)
    _write_events(home, ["a", "b"])
    reg.drain_events("agent")
    (home / "events.jsonl").unlink()  # the inode number may well be reused
    _write_events(home, ["c", "d", "e", "f", "g"])
    assert [e["session_id"] for e in reg.drain_events("agent")] == ["c", "d", "e", "f", "g"]


@pytest.mark.parametrize("garbage", [b"not a number", b"\x00\xff\x00", b"2 x y z", b"-5"])
def test_corrupt_cursor_is_reported_and_reset_to_the_end(tmp_path, garbage):
    home = tmp_path / "home"
    reg = ProcessRegistry(home=home)
    _write_events(home, ["a", "b", "c"])
    reg.drain_events("agent")
    _write_events(home, ["d"])
    (home / "cursors" / "agent").write_bytes(garbage)
    first = reg.drain_events("agent")
    assert [e["type"] for e in first] == ["cursor_reset"]  # no replay of a, b, c, d
    assert first[0]["missed_events_at_most"] == 4 and first[0]["consumer"] == "agent"
    assert reg.drain_events("agent") == []
    _write_events(home, ["e"])
    assert [e["session_id"] for e in reg.drain_events("agent")] == ["e"]


def test_legacy_offset_cursor_keeps_its_place(tmp_path):
    home = tmp_path / "home"
    reg = ProcessRegistry(home=home)
    _write_events(home, ["a", "b"])
    size = (home / "events.jsonl").stat().st_size
    (home / "cursors").mkdir(mode=0o700)
    (home / "cursors" / "old").write_bytes(str(size).encode().ljust(20))
    _write_events(home, ["c"])
    assert [e["session_id"] for e in reg.drain_events("old")] == ["c"]


@pytest.mark.parametrize("name", ["..", ".", ".hidden", "a/b", "", "x" * 65, "a b", None, 3])
def test_bad_consumer_names_are_clear_errors(tmp_path, name):
    reg = ProcessRegistry(home=tmp_path / "home")
    for result in (reg.drain_events(name), reg.forget_consumer(name)):
        assert result["status"] == "error" and "consumer must be" in result["error"]
    with pytest.raises(ValueError, match="consumer must be"):
        events.drain(tmp_path / "home", name)


def test_cli_events_with_dotdot_consumer(tmp_path):
    out = subprocess.run([sys.executable, "-m", "hermes_procs", "--home", str(tmp_path / "h"), "events",
                          "--consumer", ".."], capture_output=True, text=True, timeout=60)
    assert out.returncode == 1 and "Traceback" not in out.stderr
    assert out.stderr.strip().count("\n") == 0 and "consumer must be" in out.stderr


def _finished_job(reg, command="true", notify=True):
    job = reg.spawn(command, notify_on_complete=notify)
    reg.wait(job["session_id"], timeout=30)
    from conftest import supervisor_gone

    supervisor_gone(reg, job["session_id"])
    return job["session_id"]


def test_prune_keeps_jobs_with_undelivered_completions(tmp_path):
    home = tmp_path / "home"
    reg = ProcessRegistry(home=home)
    reg.drain_events("agent")  # a known consumer, at the start
    ids = [_finished_job(reg) for _ in range(3)]
    result = reg.prune(keep_count=0)
    assert result["pruned"] == 0 and result["kept_undelivered"] == 3
    assert sorted(e["session_id"] for e in reg.drain_events("agent")) == sorted(ids)
    result = reg.prune(keep_count=0)
    assert sorted(result["pruned_ids"]) == sorted(ids)


def test_prune_by_age_ignores_undelivered(tmp_path):
    home = tmp_path / "home"
    reg = ProcessRegistry(home=home)
    reg.drain_events("agent")
    sid = _finished_job(reg)
    assert reg.prune(keep_days=0)["pruned_ids"] == [sid]


def _not_a_file(path, kind):
    if kind == "directory":
        path.mkdir()
    else:
        os.mkfifo(path)


@pytest.mark.parametrize("kind", ["directory", "fifo"])
def test_a_cursor_that_is_not_a_file_is_one_clear_error_and_never_blocks(tmp_path, kind):
    # A directory in its place was a dressed-up "IsADirectoryError: [Errno 21] ..." from every
    # call, and made prune fail; a FIFO hung prune for good (issue 19 item 12).
    home = tmp_path / "home"
    reg = ProcessRegistry(home=home)
    reg.drain_events("agent")
    sid = _finished_job(reg)
    _not_a_file(home / "cursors" / "odd", kind)
    for result in (reg.drain_events("odd"), reg.forget_consumer("odd")):
        assert result["status"] == "error", result
        error = result["error"]
        assert "odd" in error and "not a regular file" in error and "Errno" not in error, error
    out = subprocess.run([sys.executable, "-m", "hermes_procs", "--home", str(home), "events", "--consumer", "odd"],
                         capture_output=True, text=True, timeout=30)
    assert out.returncode == 1 and out.stderr.count("\n") == 1 and "not a regular file" in out.stderr, out.stderr
    assert reg.drain_events("agent")[0]["session_id"] == sid  # the other consumers are unaffected
    os.utime(home / "cursors" / "odd", (0, 0))  # old: prune would remove a cursor file
    pruned = subprocess.run([sys.executable, "-c", "import sys; from hermes_procs.core import ProcessRegistry; "
                             "print(ProcessRegistry(home=sys.argv[1]).prune(keep_count=0))", str(home)],
                            capture_output=True, text=True, timeout=30)
    assert pruned.returncode == 0 and f"'pruned_ids': ['{sid}']" in pruned.stdout, pruned
    assert (home / "cursors" / "odd").exists()  # not ours to delete
