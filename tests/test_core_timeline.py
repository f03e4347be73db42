"""When output arrived: the supervisor's times.idx (core/supervisor/timeline.py), read_log(since=), the
CLI's `log --since` and the agent tool's `since`, over real jobs that print, sleep and print."""

from __future__ import annotations

import itertools
import subprocess
import sys
import time
from datetime import UTC, datetime

import pytest
from conftest import wait_until

from hermes_procs.core.agents.tool import run_action
from hermes_procs.core.registry.logstore import dropped_bytes
from hermes_procs.core.supervisor import timeline

# prints, waits for the test's go-file, sleeps past the index's 100 ms step, prints again
EARLY_LATE = ("for i in 1 2 3; do echo early $i; done; while [ ! -e go ]; do sleep 0.02; done; "
              "sleep 0.3; echo late 1; echo late 2")


def _early_then_late(registry, tmp_path, pty: bool = False) -> tuple[str, float]:
    """A finished job whose 'late' lines arrived after the returned epoch time, 'early' ones before."""
    sid = registry.spawn(EARLY_LATE, cwd=str(tmp_path), pty=pty)["session_id"]
    wait_until(lambda: "early 3" in registry.read_log(sid)["output"])
    middle = time.time()
    (tmp_path / "go").touch()
    assert registry.wait(sid, timeout=30)["status"] == "exited"
    return sid, middle


def _iso(when: float) -> str:
    return datetime.fromtimestamp(when, UTC).isoformat()


def test_since_returns_only_the_output_that_came_later(registry, tmp_path):
    sid, middle = _early_then_late(registry, tmp_path)
    log = registry.read_log(sid, since=_iso(middle))
    assert log["output"].splitlines() == ["late 1", "late 2"]
    assert log["total_lines"] == 5 and "output since" in log["showing"] and log["since"].endswith("Z")
    everything = registry.read_log(sid, since="1h")
    assert everything["output"].splitlines()[0] == "early 1" and len(everything["output"].splitlines()) == 5
    # seconds ago, as a number and as a string: the cutoff lies between the two parts
    ago = time.time() - middle
    assert registry.read_log(sid, since=ago)["output"].endswith("late 2")
    # limit keeps the newest lines of that part
    assert registry.read_log(sid, since=_iso(middle), limit=1)["output"] == "late 2"


def test_since_in_a_pty_job_and_after_everything(registry, tmp_path):
    sid, middle = _early_then_late(registry, tmp_path, pty=True)
    assert registry.read_log(sid, since=_iso(middle))["output"].splitlines() == ["late 1", "late 2"]
    none = registry.read_log(sid, since=0)
    assert none["output"] == "" and none["showing"].startswith("no output since") and none["total_lines"] == 5


def test_times_are_monotonic_sparse_and_date_each_line(registry, tmp_path):
    sid, middle = _early_then_late(registry, tmp_path)
    jobdir = registry.job_dir(sid)
    with timeline.TimeIndex(jobdir) as times:
        entries = times.entries(0, len(times))
        assert len(entries) >= 2 and entries[0][0] == 0
        offsets = [o for o, _ in entries]
        stamps = [t for _, t in entries]
        assert offsets == sorted(set(offsets)) and stamps == sorted(stamps)
        assert all(b - a >= timeline.EVERY - 0.002 for a, b in itertools.pairwise(stamps))
        early = (jobdir / "output.log").read_bytes().index(b"late 1")
        assert times.time_at(0) <= middle < times.time_at(early)
        assert times.times_at([0, early]) == [times.time_at(0), times.time_at(early)]
        assert times.offset_at(middle) == early and times.offset_at(time.time() + 60) is None


def test_a_flood_writes_at_most_one_record_per_100_ms(registry):
    sid = registry.spawn("for i in 1 2 3 4 5 6; do seq 1 20000; sleep 0.05; done")["session_id"]
    assert registry.wait(sid, timeout=60)["status"] == "exited"
    with timeline.TimeIndex(registry.job_dir(sid)) as times:
        entries = times.entries(0, len(times))
    span = entries[-1][1] - entries[0][1]
    assert 2 <= len(entries) <= span / timeline.EVERY + 1.01


def test_the_index_survives_rotation_and_is_pruned_with_the_log(registry, tmp_path, monkeypatch):
    monkeypatch.setenv("HERMES_PROCS_LOG_CAP", str(64 << 10))
    script = ("for r in $(seq 1 30); do seq -f \"round $r line %g\" 1 200; sleep 0.12; done; "
              "while [ ! -e go ]; do sleep 0.02; done; sleep 0.3; echo the end")
    sid = registry.spawn(script, cwd=str(tmp_path))["session_id"]
    jobdir = registry.job_dir(sid)
    wait_until(lambda: "round 30 line 200" in registry.read_log(sid, limit=1)["output"], timeout=60)
    middle = time.time()
    (tmp_path / "go").touch()
    assert registry.wait(sid, timeout=30)["status"] == "exited"
    dropped = dropped_bytes(jobdir)
    assert dropped > 0
    with timeline.TimeIndex(jobdir) as times:
        entries = times.entries(0, len(times))
    # pruned: only the record that dates the first retained byte is older than it
    assert entries[0][0] <= dropped < entries[1][0]
    assert len(entries) < 30
    assert registry.read_log(sid, since=_iso(middle))["output"] == "the end"
    assert "round 30 line 200" in registry.read_log(sid, since="1h", limit=2)["output"]


@pytest.mark.parametrize("value, ago", [(30, 30), (2.5, 2.5), ("45", 45), ("90s", 90), ("5m", 300),
                                        ("1h30m", 5400), ("2d", 172800), ("250ms", 0.25), (" 1h 5m ", 3900)])
def test_parse_since_durations(value, ago):
    assert timeline.parse_since(value, now=10_000_000.0) == pytest.approx(10_000_000.0 - ago)


def test_parse_since_iso_times():
    assert timeline.parse_since("2026-11-26T06:30:00Z") == datetime(2026, 11, 26, 6, 30, tzinfo=UTC).timestamp()
    assert timeline.parse_since("2026-11-26T07:30:00+01:00") == timeline.parse_since("2026-11-26T06:30:00Z")
    assert timeline.parse_since("2026-11-26T06:30:00") == datetime(2026, 11, 26, 6, 30).timestamp()


@pytest.mark.parametrize("value", [67768042405446364, 10**400, 1e299, "99999999999999d"])
def test_since_before_1970_means_all_of_it(registry, value):
    sid = registry.spawn("echo hi")["session_id"]
    registry.wait(sid, timeout=10)
    result = registry.read_log(sid, since=value)  # was OSError EOVERFLOW / OverflowError
    assert result["output"] == "hi" and result["since"] == "1970-01-01T00:00:00Z", result


@pytest.mark.parametrize("value", [-1, "-5m", "5 minutes", "yesterday", "", True, None, [1], float("nan"), "12:00"])
def test_bad_since_is_one_clear_line(registry, value):
    sid = registry.spawn("echo hi")["session_id"]
    registry.wait(sid, timeout=10)
    result = registry.read_log(sid, since=value) if value is not None else {"status": "error", "error": "since"}
    assert result["status"] == "error" and "since" in result["error"] and "\n" not in result["error"]


def test_since_and_offset_together_is_an_error(registry):
    sid = registry.spawn("echo hi")["session_id"]
    registry.wait(sid, timeout=10)
    result = registry.read_log(sid, offset=0, since="5m")
    assert result == {"status": "error", "error": "give offset or since, not both"}


def test_a_job_without_an_index_says_so(registry):
    sid = registry.spawn("echo hi")["session_id"]
    registry.wait(sid, timeout=10)
    (registry.job_dir(sid) / timeline.TIMES_NAME).unlink()
    result = registry.read_log(sid, since="5m")
    assert result["status"] == "error" and "no output times" in result["error"]
    assert registry.read_log(sid)["output"] == "hi"  # the rest of read_log does not care


def test_cli_log_since(registry, tmp_path, home):
    sid, middle = _early_then_late(registry, tmp_path)
    cli = [sys.executable, "-m", "hermes_procs", "--home", str(home), "log", sid]
    out = subprocess.run([*cli, "--since", _iso(middle)], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0 and out.stdout.splitlines() == ["late 1", "late 2"]
    bad = subprocess.run([*cli, "--since", "soon"], capture_output=True, text=True, timeout=60)
    assert bad.returncode == 1 and len(bad.stderr.strip().splitlines()) == 1 and "since" in bad.stderr
    both = subprocess.run([*cli, "--since", "5m", "--follow"], capture_output=True, text=True, timeout=60)
    assert both.returncode == 1 and "--since" in both.stderr


def test_agent_tool_log_since(registry, tmp_path, home):
    sid, middle = _early_then_late(registry, tmp_path)
    args = {"action": "log", "session_id": sid, "since": _iso(middle)}
    result = run_action(args, registry=registry)
    assert result["output"].splitlines() == ["late 1", "late 2"]
    bad = run_action({**args, "since": "later"}, registry=registry)
    assert bad["status"] == "error" and "since" in bad["error"]
