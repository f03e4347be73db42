"""Hostile homes: a home we did not create, a symlinked home, a home of another user, and
symlinks planted for events.jsonl, cursors and job folders. Nothing outside the home is written,
nothing that existed is chmodded, every refusal is one clear line."""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys

import pytest
from conftest import supervisor_gone, wait_until

from hermes_procs.core import ProcessRegistry
from hermes_procs.core.registry.paths import HomeError

root_only = pytest.mark.skipif(os.geteuid() != 0, reason="needs root (chown to another user)")
NOBODY = 65534


def _cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "hermes_procs", *args], capture_output=True, text=True, timeout=60)


def _mode(path) -> int:
    return stat.S_IMODE(os.lstat(path).st_mode)


def test_missing_home_is_created_private(tmp_path):
    home = tmp_path / "a" / "home"
    ProcessRegistry(home=home)
    assert _mode(home) == 0o700 and _mode(home / "jobs") == 0o700


def test_existing_own_home_is_used_as_is(tmp_path):
    home = tmp_path / "mine"
    home.mkdir(mode=0o755)
    os.chmod(home, 0o755)
    ProcessRegistry(home=home)
    assert _mode(home) == 0o755  # never chmod what we did not create


def test_world_writable_home_is_refused_and_untouched(tmp_path):
    shared = tmp_path / "shared"
    shared.mkdir()
    os.chmod(shared, 0o1777)
    with pytest.raises(HomeError, match="writable by group or others"):
        ProcessRegistry(home=shared)
    assert _mode(shared) == 0o1777 and not (shared / "jobs").exists()
    before = _mode("/tmp")
    out = _cli("--home", "/tmp", "ls")
    assert out.returncode == 1 and "Traceback" not in out.stderr
    assert len(out.stderr.strip().splitlines()) == 1 and "/tmp" in out.stderr
    assert _mode("/tmp") == before and not os.path.exists("/tmp/jobs")


def test_symlinked_home_is_refused(tmp_path):
    target = tmp_path / "real"
    target.mkdir()
    os.chmod(target, 0o750)
    link = tmp_path / "link"
    link.symlink_to(target)
    with pytest.raises(HomeError, match="symbolic link"):
        ProcessRegistry(home=link)
    assert _mode(target) == 0o750 and not (target / "jobs").exists()
    out = _cli("--home", str(link), "ls")
    assert out.returncode == 1 and "symbolic link" in out.stderr and "Traceback" not in out.stderr


@root_only
def test_home_of_another_user_is_refused(tmp_path):
    home = tmp_path / "theirs"
    home.mkdir(mode=0o700)
    os.chown(home, NOBODY, NOBODY)
    with pytest.raises(HomeError, match="owned by uid"):
        ProcessRegistry(home=home)
    assert _mode(home) == 0o700 and not (home / "jobs").exists()


@root_only
def test_jobs_folder_of_another_user_is_refused(tmp_path):
    home = tmp_path / "home"
    (home / "jobs").mkdir(parents=True, mode=0o700)
    os.chown(home / "jobs", NOBODY, NOBODY)
    with pytest.raises(HomeError, match="owned by uid"):
        ProcessRegistry(home=home)


def test_planted_events_and_cursor_links_write_nothing_outside(tmp_path):
    home = tmp_path / "home"
    reg = ProcessRegistry(home=home)
    outside = tmp_path / "outside.txt"
    outside.write_text("precious\n")
    os.chmod(outside, 0o644)
    (home / "events.jsonl").symlink_to(outside)
    job = reg.spawn("echo hi", notify_on_complete=True)
    assert job["status"] == "running"
    assert reg.wait(job["session_id"], timeout=30)["exit_code"] == 0  # the job survives the refused event
    drained = reg.drain_events("agent")
    assert drained["status"] == "error" and "symbolic link" in drained["error"]
    assert outside.read_text() == "precious\n" and _mode(outside) == 0o644

    (home / "events.jsonl").unlink()
    cursor_target = tmp_path / "cursor-target"
    cursor_target.write_text("keep\n")
    (home / "cursors").mkdir(exist_ok=True)
    (home / "cursors" / "victim").symlink_to(cursor_target)
    result = reg.drain_events("victim")
    assert result["status"] == "error" and "symbolic link" in result["error"]
    assert cursor_target.read_text() == "keep\n"


def test_symlinked_cursors_folder_is_refused(tmp_path):
    home = tmp_path / "home"
    reg = ProcessRegistry(home=home)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir(mode=0o700)
    (home / "cursors").symlink_to(elsewhere)
    result = reg.drain_events("agent")
    assert result["status"] == "error" and "symbolic link" in result["error"]
    assert list(elsewhere.iterdir()) == []


def test_symlinked_job_folder_is_never_followed(tmp_path):
    home = tmp_path / "home"
    reg = ProcessRegistry(home=home)
    real = reg.spawn("echo real")
    reg.wait(real["session_id"], timeout=30)
    supervisor_gone(reg, real["session_id"])
    outside = tmp_path / "outside-job"
    outside.mkdir()
    for name in ("meta.json", "proc.json"):
        (outside / name).write_text((reg.job_dir(real["session_id"]) / name).read_text())
    fake = "proc_" + "ab" * 6
    (home / "jobs" / fake).symlink_to(outside)
    before = sorted(p.name for p in outside.iterdir())

    assert fake not in [row["session_id"] for row in reg.list()]
    assert reg.poll(fake)["status"] == "not_found"
    assert reg.kill(fake)["status"] == "not_found"
    first = reg.prune(keep_days=0, keep_count=0)
    assert first["removed_links"] == [fake] and first["pruned_ids"] == [real["session_id"]]
    assert not os.path.lexists(home / "jobs" / fake)
    assert sorted(p.name for p in outside.iterdir()) == before  # the target is untouched
    second = reg.prune(keep_days=0, keep_count=0)
    assert second["pruned"] == 0 and second["removed_links"] == []


def test_planted_inputs_link_is_not_read(tmp_path):
    home = tmp_path / "home"
    reg = ProcessRegistry(home=home)
    job = reg.spawn("cat")
    secret = tmp_path / "secret"
    secret.write_text(json.dumps({"preview": "other file"}) + "\n")
    (reg.job_dir(job["session_id"]) / "inputs.jsonl").symlink_to(secret)
    try:
        result = reg.inputs(job["session_id"])
        assert isinstance(result, dict) and result["status"] == "error" and "symbolic link" in result["error"]
    finally:
        reg.kill(job["session_id"], grace=0.2)
    wait_until(lambda: reg.poll(job["session_id"])["status"] == "exited", 30)


def test_planted_index_link_is_neither_read_nor_written(tmp_path):
    home = tmp_path / "home"
    reg = ProcessRegistry(home=home)
    outside = tmp_path / "outside-index"
    outside.write_text("keep\n")
    (home / "index.jsonl").symlink_to(outside)
    job = reg.spawn("true")
    reg.wait(job["session_id"], timeout=30)
    supervisor_gone(reg, job["session_id"])
    assert [r["status"] for r in reg.list()] == ["exited"]
    assert outside.read_text() == "keep\n"


def test_planted_prune_stamp_link_is_replaced_not_followed(tmp_path):
    home = tmp_path / "home"
    ProcessRegistry(home=home)
    target = tmp_path / "not-yet-there"
    (home / ".last_prune").symlink_to(target)
    os.utime(home / ".last_prune", (0, 0), follow_symlinks=False)  # an old stamp: retention is due
    reg = ProcessRegistry(home=home)
    reg.spawn("true")  # the first spawn of a home applies retention and stamps the time
    assert not os.path.lexists(target)  # the link was replaced, nothing was created through it
    assert not os.path.islink(home / ".last_prune")


def test_agent_tool_reports_an_unsafe_home_as_an_error_dict(tmp_path, monkeypatch):
    from hermes_procs.core.agents import tool

    shared = tmp_path / "shared"
    shared.mkdir()
    os.chmod(shared, 0o777)
    monkeypatch.setenv("HERMES_PROCS_HOME", str(shared))
    monkeypatch.setattr(tool, "_default", None)
    result = tool.run_action({"action": "list"})
    assert result["status"] == "error" and "writable by group or others" in result["error"]
    assert "internal error" not in result["error"] and _mode(shared) == 0o777
