"""`prune` removes the stacks that have been down for longer than retention (their folder in the
home), and nothing else: a stack that is up, one down since recently, one being started."""

from __future__ import annotations

import fcntl
import os
import shutil
import subprocess
import sys
import time

import pytest
from conftest import wait_until
from stacks_helpers import down_all, stack_file

from hermes_procs.core.stacks.store import stacks_dir

EIGHT_DAYS = 8 * 86400


@pytest.fixture
def stacks(registry):
    yield registry
    down_all(registry)


def _up(registry, tmp_path, name: str, wait: bool = False) -> None:
    path = stack_file(tmp_path / name, """
        [jobs.idle]
        command = "sleep 300"
        """)
    result = registry.up(path, wait=wait, timeout=30)
    assert result["status"] == "ok" and (result["state"] == "up" or not wait), result


def _age(home, name: str, seconds: float) -> None:
    """Make the stack's state look last written `seconds` ago."""
    then = time.time() - seconds
    os.utime(stacks_dir(home) / name / "state.json", (then, then))


def _names(registry) -> set[str]:
    rows = registry.stacks()
    assert isinstance(rows, list), rows
    return {row["stack"] for row in rows}


def test_prune_removes_only_the_stacks_down_for_longer_than_retention(stacks, home, tmp_path):
    for name in ("old", "recent", "starting"):
        _up(stacks, tmp_path, name)
    _up(stacks, tmp_path, "live", wait=True)
    for name in ("old", "recent", "starting"):
        assert stacks.down(name)["state"] == "down"
    for name in ("old", "live", "starting"):
        _age(home, name, EIGHT_DAYS)
    lock = os.open(stacks_dir(home) / "starting" / "start.lock", os.O_RDWR)
    fcntl.flock(lock, fcntl.LOCK_EX)  # an `up` of it under way
    try:
        done = subprocess.run([sys.executable, "-m", "hermes_procs", "--home", str(home), "prune"],
                              capture_output=True, text=True, timeout=60)
    finally:
        os.close(lock)
    assert done.returncode == 0 and done.stdout == "pruned 0 finished jobs, 1 stack long down (old)\n", done
    assert _names(stacks) == {"recent", "live", "starting"}
    assert stacks.stacks("live")[0]["state"] == "up"  # an old state.json of a stack that is up: kept

    result = stacks.prune(keep_days=0)
    assert result["status"] == "ok" and sorted(result["pruned_stacks"]) == ["recent", "starting"], result
    assert _names(stacks) == {"live"}
    assert stacks.prune(keep_days=0)["pruned_stacks"] == []


def test_an_up_waiting_while_prune_removes_the_folder_starts_it_anew(stacks, home, tmp_path):
    _up(stacks, tmp_path, "web")
    assert stacks.down("web")["state"] == "down"
    folder = stacks_dir(home) / "web"
    lock = os.open(folder / "start.lock", os.O_RDWR)
    fcntl.flock(lock, fcntl.LOCK_EX)  # as prune holds it while it removes the folder
    path = str(tmp_path / "web" / "hermes-procs.toml")
    up = subprocess.Popen([sys.executable, "-m", "hermes_procs", "--home", str(home), "up", "-f", path],
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        time.sleep(1.0)  # the up waits on start.lock
        shutil.rmtree(folder)
    finally:
        os.close(lock)
    out, err = up.communicate(timeout=60)
    assert up.returncode == 0 and out.startswith("stack web: "), (out, err)
    assert (folder / "spec.json").exists() and stacks.stacks("web")[0]["supervised"]


def test_a_stack_whose_state_cannot_be_read_is_kept(stacks, home, tmp_path):
    _up(stacks, tmp_path, "damaged")
    assert stacks.down("damaged")["state"] == "down"
    (stacks_dir(home) / "damaged" / "state.json").write_text("[]")
    _age(home, "damaged", EIGHT_DAYS)
    assert stacks.prune(keep_days=0)["pruned_stacks"] == []
    assert (stacks_dir(home) / "damaged").is_dir()


def test_a_planted_stacks_link_is_never_followed(registry, home, tmp_path):
    elsewhere = tmp_path / "elsewhere"
    (elsewhere / "photos").mkdir(parents=True)
    (elsewhere / "photos" / "a.jpg").write_text("precious")
    registry.list()  # the home exists
    os.symlink(elsewhere, stacks_dir(home))
    result = registry.prune(keep_days=0)
    assert result["status"] == "ok" and result["pruned_stacks"] == [], result
    assert (elsewhere / "photos" / "a.jpg").read_text() == "precious"
    assert sorted(os.listdir(elsewhere / "photos")) == ["a.jpg"]  # not even a lock file written there
    listed = registry.stacks()
    assert listed["status"] == "error" and "not a private folder of yours" in listed["error"], listed


def test_links_planted_in_a_stack_folder_are_never_followed(registry, home, tmp_path):
    # `down yy` with stacks/yy a link wrote its locks into the folder linked to; a planted
    # supervisor.log link had the supervisor append its log to the file linked to
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    victim = tmp_path / "victim"
    victim.write_text("precious\n")
    registry.list()
    stacks_dir(home, create=True)
    os.symlink(elsewhere, stacks_dir(home) / "yy")
    for answer in (registry.down("yy"), registry.restart_stack("yy")):
        assert answer["status"] == "error" and "is not a private folder of yours" in answer["error"], answer
    assert os.listdir(elsewhere) == []
    (stacks_dir(home) / "shared").mkdir(mode=0o700)
    (stacks_dir(home) / "shared").chmod(0o775)  # writable by others: not one of ours, left out
    assert registry.stacks() == []  # one odd folder does not make the whole listing an error
    (stacks_dir(home) / "zz").mkdir(mode=0o700)
    os.symlink(victim, stacks_dir(home) / "zz" / "supervisor.log")
    started = registry.up(stack_file(tmp_path / "zz", '[jobs.a]\ncommand = "sleep 60"\n'), name="zz")
    assert started["status"] == "error" and "supervisor.log is a symbolic link" in started["error"], started
    assert victim.read_text() == "precious\n"
    os.unlink(stacks_dir(home) / "zz" / "supervisor.log")
    try:
        assert registry.up(stack_file(tmp_path / "zz", '[jobs.a]\ncommand = "sleep 60"\n'), name="zz")["status"] == "ok"
        assert os.stat(stacks_dir(home) / "zz" / "supervisor.log").st_mode & 0o777 == 0o600
    finally:
        down_all(registry)



def test_a_stack_job_whose_run_was_pruned_says_so(stacks, home, tmp_path):
    _up(stacks, tmp_path, "kept", wait=True)
    sid = stacks.stacks("kept")[0]["jobs"][0]["session_id"]
    assert stacks.down("kept")["state"] == "down"
    # the run goes once its supervisor has finished (down does not wait for that); the stack,
    # down just now, stays
    wait_until(lambda: stacks.prune(keep_count=0)["pruned"] == 1, timeout=10)
    done = subprocess.run([sys.executable, "-m", "hermes_procs", "--home", str(home), "log", "kept/idle"],
                          capture_output=True, text=True, timeout=60)
    assert (done.returncode, done.stdout) == (1, "")
    assert done.stderr == (f"hermes-procs: error: No process named kept/idle: its last run, {sid}, was pruned "
                           "(restart kept idle runs it again)\n")
    assert stacks.stacks("kept")[0]["jobs"][0]["message"] == "its last run was pruned"
