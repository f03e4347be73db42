"""End to end: the real dashboard in tmux (send-keys / capture-pane) over real jobs."""

from __future__ import annotations

import os
import shlex
import shutil
import subprocess
import sys
import time

import pytest

pytestmark = [
    pytest.mark.timeout(60),
    pytest.mark.skipif(shutil.which("tmux") is None, reason="tmux is not installed"),
]


def tmux(*args: str) -> str:
    return subprocess.run(["tmux", *args], capture_output=True, text=True, timeout=10).stdout


def capture(name: str) -> str:
    return tmux("capture-pane", "-p", "-t", name)


def wait_screen(name: str, predicate, timeout: float = 30.0, what: str = "") -> str:
    deadline = time.monotonic() + timeout
    while True:
        text = capture(name)
        if predicate(text):
            return text
        if time.monotonic() > deadline:
            raise AssertionError(f"screen never showed {what}:\n{text}")
        time.sleep(0.1)


def keys(name: str, *k: str) -> None:
    tmux("send-keys", "-t", name, *k)
    time.sleep(0.15)


def test_dashboard_in_tmux(registry, home, alive):
    repl = registry.spawn(f"{sys.executable} -q -i", pty=True, name="e2e-repl")["session_id"]
    pipe = registry.spawn("cat", name="e2e-pipe")["session_id"]
    victim = registry.spawn("sleep 120", name="e2e-victim")["session_id"]
    victim_pid = registry.poll(victim)["pid"]
    name = f"hp-e2e-{os.getpid()}"
    cmd = (
        f"cd {shlex.quote(os.getcwd())} && HERMES_PROCS_HOME={shlex.quote(str(home))} "
        f"{shlex.quote(sys.executable)} -m hermes_procs --home {shlex.quote(str(home))}; sleep 5"
    )
    tmux("new-session", "-d", "-s", name, "-x", "120", "-y", "40", cmd)
    try:
        wait_screen(name, lambda t: "e2e-victim" in t and "e2e-repl" in t, what="the jobs")
        # type into the PTY job through the terminal pane and see the echo
        keys(name, "/")
        # the search box must have the focus before the text: keys sent earlier reach the table
        wait_screen(name, lambda t: "search jobs by" in t, what="the search box")
        keys(name, "-l", "e2e-repl")
        keys(name, "Enter")
        wait_screen(name, lambda t: "e2e-victim" not in t, what="the search result")
        keys(name, "Enter")  # Enter on a PTY job opens its terminal pane
        wait_screen(name, lambda t: "Terminal:" in t and ">>>" in t, what="the terminal pane")
        keys(name, "-l", "6*7")
        keys(name, "Enter")
        wait_screen(name, lambda t: "42" in t.split(">>> 6*7", 1)[-1], what="the REPL's answer")
        keys(name, "C-]")
        wait_screen(name, lambda t: "Terminal:" not in t, what="leaving the pane")
        # type into a pipe job with the input bar
        keys(name, "Escape")  # clear the search
        wait_screen(name, lambda t: "e2e-victim" in t, what="every job again")
        keys(name, "/")
        wait_screen(name, lambda t: "search jobs by" in t, what="the search box")
        keys(name, "-l", "e2e-pipe")
        keys(name, "Enter")
        wait_screen(name, lambda t: "e2e-victim" not in t, what="the pipe job alone")
        keys(name, "Enter")  # Enter on a pipe job focuses the input bar
        # focused, the footer keeps only the keys that work there (no table keys such as Kill)
        wait_screen(name, lambda t: "k Kill" not in t, what="the input bar focused")
        keys(name, "-l", "hello from tmux")
        keys(name, "Enter")
        wait_screen(name, lambda t: "human 'hello from tmux" in t, what="the input history")
        assert "hello from tmux" in registry.read_log(pipe)["output"]
        # kill a job
        keys(name, "Escape")
        keys(name, "Escape")
        wait_screen(name, lambda t: "e2e-repl" in t and "k Kill" in t, what="the table again")
        keys(name, "/")
        wait_screen(name, lambda t: "search jobs by" in t, what="the search box")
        keys(name, "-l", "e2e-victim")
        keys(name, "Enter")
        wait_screen(name, lambda t: "e2e-repl" not in t and "k Kill" in t, what="the victim alone")
        keys(name, "k")
        wait_screen(name, lambda t: "Kill this job?" in t, what="the kill confirmation")
        keys(name, "y")
        wait_screen(name, lambda t: "killed" in t, what="the killed status")
        assert registry.poll(victim)["completion_reason"] == "killed"
        assert not alive(victim_pid)
        # quitting leaves the other jobs running
        keys(name, "q")
        wait_screen(name, lambda t: "e2e-repl" not in t, what="the app closing")
        assert registry.poll(repl)["status"] == "running"
        assert registry.poll(pipe)["status"] == "running"
    finally:
        tmux("kill-session", "-t", name)
