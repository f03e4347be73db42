"""Bad input and damaged state: clear one-line errors, nothing touched outside the home."""

import json

import pytest
from conftest import supervisor_gone

BAD_IDS = ["../x", "/etc/passwd", "proc_../../etc", "proc_\0abc", "", "   ", None, 12.5, "proc_XYZ",
           "abc", "proc_0123456789abcdef", "..", "proc_0123456789ab/../x"]


@pytest.mark.parametrize("bad", BAD_IDS)
def test_bad_ids_are_errors(registry, home, bad):
    before = sorted(p.name for p in home.rglob("*"))
    for method in (registry.poll, registry.read_log, registry.kill, registry.close_stdin):
        result = method(bad)
        assert result["status"] in ("error", "not_found"), (method, result)
        assert "\n" not in result["error"]
    assert registry.write(bad, "x")["status"] in ("error", "not_found")
    assert sorted(p.name for p in home.rglob("*")) == before


def test_unknown_id_is_not_found(registry):
    result = registry.poll("proc_0123456789ab")
    assert result == {"status": "not_found", "error": "No process with ID proc_0123456789ab"}


def test_integer_prefix_is_accepted(registry):
    assert registry.poll(1234)["status"] == "not_found"


def test_bad_spawn_arguments(registry, tmp_path):
    assert "does not exist" in registry.spawn("true", cwd=str(tmp_path / "nope"))["error"]
    for kwargs in ({"rows": -1}, {"cols": 0}, {"rows": "a"}, {"env": {"A=B": "x"}}, {"env": "x"},
                   {"watch_patterns": "ERROR"}):
        assert registry.spawn("true", **kwargs)["status"] == "error", kwargs
    for command in ("", "   ", None, 42, "a\0b"):
        assert registry.spawn(command)["status"] == "error"
    # a 2 MB name was taken, and the job it named read as corrupt (meta.json past a reader's cap)
    for label in ("name", "task_id", "session_key"):
        refused = registry.spawn("sleep 60", **{label: "N" * 1001})
        assert refused == {"status": "error", "error": f"{label} must be at most 1000 characters, not 1001"}
    too_tall = registry.spawn("true", pty=True, rows=1001)["error"]
    assert too_tall == "rows must be a whole number from 1 to 1000, not 1001"
    huge = registry.spawn("true", cwd="/" + "x" * 100_000)["error"]  # an error quoting a huge value is cut
    assert len(huge) < 2100 and huge.endswith(" more characters]"), huge[-80:]
    assert registry.list() == []


def test_bad_sizes_and_huge_writes(registry):
    job = registry.spawn("cat", pty=True)
    sid = job["session_id"]
    assert registry.resize(sid, -3, 80)["status"] == "error"
    assert registry.resize(sid, 24, 0)["status"] == "error"
    result = registry.write(sid, "x" * (2 << 20))
    assert result["status"] == "error" and "at most" in result["error"]
    assert registry.write(sid, 123)["status"] == "error"
    assert registry.read_log(sid, offset=-1)["status"] == "error"
    assert registry.read_log(sid, limit=0)["status"] == "error"
    assert registry.poll(sid)["status"] == "running"


def test_pipe_job_cannot_resize(registry):
    job = registry.spawn("sleep 5")
    assert registry.resize(job["session_id"], 24, 80)["status"] == "error"


def test_corrupt_folders_do_not_break_listing(registry, home):
    good = registry.spawn("echo fine")
    registry.wait(good["session_id"], timeout=10)
    supervisor_gone(registry, good["session_id"])
    bad_json = home / "jobs" / "proc_aaaaaaaaaaaa"
    bad_json.mkdir()
    (bad_json / "meta.json").write_text("{not json")
    missing = home / "jobs" / "proc_bbbbbbbbbbbb"
    missing.mkdir()
    (home / "jobs" / "stray-file").write_text("x")
    rows = {r["session_id"]: r for r in registry.list()}
    assert rows[good["session_id"]]["status"] == "exited"
    assert rows["proc_aaaaaaaaaaaa"]["status"] == "corrupt" and "meta.json" in rows["proc_aaaaaaaaaaaa"]["error"]
    assert rows["proc_bbbbbbbbbbbb"]["status"] == "corrupt"
    assert registry.poll("proc_aaaaaaaaaaaa")["status"] == "error"
    assert registry.prune(keep_count=0)["pruned"] == 1
    assert bad_json.exists()


@pytest.mark.parametrize("value", [1e300, -1e20, float("nan"), "abc", [1], True, 5e11])
def test_a_time_that_is_not_one_breaks_no_listing(registry, value):
    """A start or exit time in a job's records that is no time (a damaged or hand-edited
    file): that job shows when its folder was made, and list, poll and prune go on."""
    jobs = [registry.spawn("true")["session_id"] for _ in range(2)]
    for sid in jobs:
        registry.wait(sid, timeout=10)
        supervisor_gone(registry, sid)
    damaged = registry.job_dir(jobs[0])
    for name, key in (("proc.json", "started_at"), ("exit.json", "ended_at")):
        record = json.loads((damaged / name).read_text())
        record[key] = value
        (damaged / name).write_text(json.dumps(record))
    rows = {r["session_id"]: r for r in registry.list()}
    assert set(jobs) <= set(rows)
    assert rows[jobs[0]]["started_at"][:10] == rows[jobs[1]]["started_at"][:10]  # the same day
    assert registry.poll(jobs[0])["status"] == "exited"
    assert registry.prune(keep_count=0)["pruned"] == 2


def test_truncated_exit_record(registry):
    job = registry.spawn("true")
    registry.wait(job["session_id"], timeout=10)
    (registry.job_dir(job["session_id"]) / "exit.json").write_text('{"exit_co')
    assert registry.poll(job["session_id"])["status"] == "error"
    assert any(r["status"] == "corrupt" for r in registry.list())


def test_binary_and_split_utf8_output(registry):
    job = registry.spawn(r"printf '\xc3'; sleep 0.2; printf '\xa9t\xe9\xff\n'; head -c 20000 /dev/urandom")
    registry.wait(job["session_id"], timeout=10)
    first = registry.read_log(job["session_id"], offset=0, limit=1)["output"]
    assert first.startswith("ét\ufffd\ufffd")
    assert registry.poll(job["session_id"])["status"] == "exited"


def test_huge_line_without_newline_stays_bounded(registry):
    job = registry.spawn("head -c 50000000 /dev/zero | tr '\\0' 'a'")
    registry.wait(job["session_id"], timeout=60)
    polled = registry.poll(job["session_id"])
    assert len(polled["output_preview"]) <= 1000
    log = registry.read_log(job["session_id"])
    assert log["total_lines"] == 1 and len(log["output"]) < 100_000 and "truncated" in log["output"]


def test_log_cap_keeps_newest(registry, monkeypatch):
    monkeypatch.setenv("HERMES_PROCS_LOG_CAP", str(256 << 10))
    job = registry.spawn("seq 1 200000")
    registry.wait(job["session_id"], timeout=30)
    jobdir = registry.job_dir(job["session_id"])
    kept = sum(p.stat().st_size for p in jobdir.glob("output.log*"))
    assert kept <= 256 << 10
    log = registry.read_log(job["session_id"], limit=3)
    assert log["output"].splitlines() == ["199998", "199999", "200000"]
    assert log["dropped_bytes"] > 0 and "dropped" in log["showing"]


def test_a_job_being_spawned_is_never_listed_as_corrupt(registry):
    import threading

    done = threading.Event()

    def spawner():
        for _ in range(15):
            registry.spawn("true")
        done.set()

    threading.Thread(target=spawner).start()
    seen = set()
    while not done.is_set():
        seen.update(row["status"] for row in registry.list())
    assert "corrupt" not in seen and len(registry.list()) == 15


def test_retention_limits_are_checked_and_endless_ones_keep_everything(registry, monkeypatch):
    done = registry.spawn("true")["session_id"]
    registry.wait(done, timeout=10)
    supervisor_gone(registry, done)  # prune takes a finished job only once its supervisor has left
    for bad in (-1, float("nan"), "7", [1], True):
        result = registry.prune(keep_days=bad)
        assert result["status"] == "error" and result["error"].startswith("keep_days must be a number >= 0"), result
    assert registry.prune(keep_count=-2)["error"].startswith("keep_count must be a number >= 0")
    assert registry.prune(keep_days=float("inf"), keep_count=10**400)["pruned"] == 0  # was OverflowError
    monkeypatch.setenv("HERMES_PROCS_KEEP_COUNT", "inf")
    second = registry.spawn("true")  # its spawn runs auto-prune with the endless setting
    assert registry.wait(second["session_id"], timeout=10)["status"] == "exited"
    supervisor_gone(registry, second["session_id"])  # prune takes jobs whose supervisor has left
    assert registry.prune(keep_count=0)["pruned"] == 2
