"""Leases (issue 23 item 4): `spawn(lease=PID)` ties a job to a real owner process; when the owner
ends, the job's supervisor kills the job's whole tree within about 2 s (completion_reason
`killed`) with no client running; `pin` keeps the job, `unpin` lets it end with its owner again."""

from __future__ import annotations

import json
import os
import subprocess
import time

import pytest
from clirun import cli
from conftest import pid_alive, wait_until


@pytest.fixture
def owner():
    """A real lease owner, a process the test ends when it likes."""
    proc = subprocess.Popen(["sleep", "60"])
    yield proc
    proc.kill()
    proc.wait()


def end(proc: subprocess.Popen) -> float:
    """End the owner (reaped: no zombie left standing for it); when it ended."""
    proc.kill()
    proc.wait()
    return time.monotonic()


def exit_record(registry, sid: str) -> dict:
    """The job's exit.json, read from disk (no client asks its supervisor)."""
    path = registry.job_dir(sid) / "exit.json"
    wait_until(path.exists, timeout=5)
    return json.loads(path.read_text())


def test_the_job_tree_ends_with_its_owner(registry, owner):
    started = registry.spawn("sleep 60 & sleep 60 & wait", lease=owner.pid)
    sid = started["session_id"]
    wait_until(lambda: registry.poll(sid)["process_count"] == 3)
    members = [row["pid"] for row in registry.tree(sid)["processes"]]
    assert registry.poll(sid)["lease"] == {"pid": owner.pid, "pinned": False, "owner_alive": True}
    ended = end(owner)
    record = exit_record(registry, sid)  # the supervisor alone: nobody waits on it
    took = time.monotonic() - ended
    assert record["completion_reason"] == "killed" and took < 2.5, (record, took)
    assert record["killed_by"] == "lease"  # what ended it, for whoever looks later
    wait_until(lambda: not any(pid_alive(pid) for pid in members), timeout=2)
    assert registry.poll(sid)["lease"] == {"pid": owner.pid, "pinned": False, "owner_alive": False}
    assert registry.poll(sid)["killed_by"] == "lease"


def test_what_killed_a_job_is_recorded(registry, home):
    killed = registry.spawn("sleep 60")["session_id"]
    registry.kill(killed, grace=0.2)
    timed = registry.spawn("sleep 60", max_runtime=0.3)["session_id"]
    done = registry.spawn("true")["session_id"]
    assert registry.wait(timed, timeout=10)["completion_reason"] == "timed_out"
    assert registry.wait(done, timeout=10)["completion_reason"] == "exited"
    assert registry.poll(killed)["killed_by"] == "kill"
    assert registry.poll(timed)["killed_by"] == "max_runtime"
    assert "killed_by" not in registry.poll(done)  # it ended by itself
    planted = registry.job_dir(done) / "exit.json"  # a word the job wrote itself is not repeated
    planted.write_text(json.dumps({**json.loads(planted.read_text()), "killed_by": "\x1b]52;c;QQ==\x07"}))
    assert "killed_by" not in registry.poll(done)


def test_an_owner_ended_but_not_reaped_counts_as_ended(registry, owner):
    sid = registry.spawn("sleep 60", lease=owner.pid)["session_id"]
    owner.kill()  # a zombie until its parent (this test) reaps it
    wait_until(lambda: open(f"/proc/{owner.pid}/stat").read().rsplit(")", 1)[1].split()[0] == "Z")
    assert exit_record(registry, sid)["completion_reason"] == "killed"


def test_a_pinned_job_outlives_its_owner_and_unpin_ends_it(registry, owner, home):
    sid = registry.spawn("sleep 60", lease=owner.pid)["session_id"]
    pinned = registry.pin(sid)
    assert (pinned["status"], pinned["lease"]["pinned"]) == ("ok", True)
    end(owner)
    assert registry.wait(sid, timeout=0.6)["status"] == "timeout"  # still running: kept
    assert registry.poll(sid)["lease"] == {"pid": owner.pid, "pinned": True, "owner_alive": False}
    out = cli(home, "unpin", sid)
    assert out.returncode == 0  # it said "it ends with its owner" of an owner already gone
    assert out.stdout == f"unpinned {sid}: its owner (pid {owner.pid}) has ended, so it is being stopped\n"
    got = registry.wait(sid, timeout=5)  # the owner is gone: it ends at once
    assert (got["status"], got["completion_reason"]) == ("exited", "killed")
    assert cli(home, "pin", sid).returncode == 1  # already exited


def test_cli_run_lease_and_pin(registry, owner, home):
    out = cli(home, "run", "--lease", str(owner.pid), "--", "sleep", "60")
    sid = out.stdout.strip()
    assert out.returncode == 0 and registry.poll(sid)["lease"]["pid"] == owner.pid
    assert f"{sid}  running (leased)" in cli(home, "ls").stdout  # the dashboard's L
    pinned = cli(home, "pin", sid)
    assert pinned.stdout == f"pinned {sid}: it stays when its owner (pid {owner.pid}) ends\n"
    assert "leased to pid" in cli(home, "poll", sid).stdout and ", pinned" in cli(home, "poll", sid).stdout
    kept = json.loads(cli(home, "poll", "--json", sid).stdout)
    assert kept["lease"]["pinned"] is True
    assert f"{sid}  running (kept)" in cli(home, "ls").stdout  # the dashboard's K
    cli(home, "unpin", sid)
    end(owner)
    assert registry.wait(sid, timeout=5)["completion_reason"] == "killed"
    shown = cli(home, "poll", sid).stdout
    assert f"leased to pid {owner.pid} (ended): it was killed when its owner ended" in shown, shown
    assert "(leased)" not in cli(home, "ls").stdout  # an ended job's lease decides nothing


def test_pin_needs_a_lease(registry, home):
    sid = registry.spawn("sleep 60")["session_id"]
    got = registry.pin(sid)
    assert got["status"] == "error" and got["error"] == (f"{sid} has no lease, so there is nothing to pin: it runs "
                                                         "until it ends or is killed")
    assert registry.unpin(sid)["status"] == "error"
    assert registry.poll(sid)["lease"] is None


@pytest.mark.parametrize("lease", [999_999_999, 0, -5, "1", True, 1.5])
def test_bad_leases_get_one_line_and_create_nothing(registry, lease):
    got = registry.spawn("sleep 1", lease=lease)
    assert got["status"] == "error" and "\n" not in got["error"] and got["error"].startswith("lease")
    assert os.listdir(registry.jobs_dir) == []


def test_a_lease_on_an_ended_process_is_refused(registry, owner):
    end(owner)
    got = registry.spawn("sleep 1", lease=owner.pid)
    assert got["error"].startswith(f"lease: no running process has pid {owner.pid}")


def test_restart_keeps_a_live_lease_and_drops_an_ended_one(registry, owner):
    sid = registry.spawn("sleep 60", lease=owner.pid)["session_id"]
    again = registry.restart(sid)["session_id"]
    assert registry.poll(again)["lease"]["pid"] == owner.pid
    registry.pin(again)
    end(owner)
    third = registry.restart(again)["session_id"]  # its owner has ended: it reruns unleased
    assert registry.poll(third)["lease"] is None


def test_cli_bad_values_get_one_line_and_create_nothing(registry, home):
    for args in (["run", "--lease", "999999999"], ["exec", "--lease", "0"], ["run", "--port", "0"],
                 ["exec", "--port", "70000"], ["exec", "--yield-ms", "-1"], ["run", "--reuse"]):
        out = cli(home, *args, "--", "true")
        assert out.returncode == 1 and out.stdout == "", (args, out)
        assert out.stderr.startswith("hermes-procs: error: ") and out.stderr.count("\n") == 1, (args, out.stderr)
    assert not registry.jobs_dir.exists() or os.listdir(registry.jobs_dir) == []


def test_an_owner_that_ends_while_the_job_starts(registry):
    """The owner ends around the time the supervisor begins to watch it: the job still ends."""
    for delay in ("0", "0.01", "0.05"):
        owner = subprocess.Popen(["sleep", delay])
        got = registry.spawn("sleep 60", lease=owner.pid)
        owner.wait()
        if got["status"] == "error":  # it had ended before the spawn looked: refused, fine
            assert got["error"].startswith("lease: no running process")
            continue
        assert exit_record(registry, got["session_id"])["completion_reason"] == "killed"
