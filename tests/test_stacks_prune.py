"""`prune` removes the stacks that have been down for longer than retention (their folder in the
home), and nothing else: a stack that is up, one down since recently, one being started."""

from __future__ import annotations

import fcntl
import os
import subprocess
import sys
import time

import pytest
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
