"""End to end: rerun (`r`) in the real dashboard in tmux (send-keys / capture-pane) over real jobs."""

from __future__ import annotations

import os
import shlex
import shutil
import sys

import pytest
from conftest import wait_until
from test_e2e_tmux import capture, keys, tmux, wait_screen

from hermes_procs.tui.jobs_table import short_id

pytestmark = [
    pytest.mark.timeout(90),
    pytest.mark.skipif(shutil.which("tmux") is None, reason="tmux is not installed"),
]


def reruns_of(registry, sid: str) -> list[str]:
    return [j["session_id"] for j in registry.list() if j.get("rerun_of") == sid]


def test_rerun_in_tmux(registry, home, alive):
    done = registry.spawn("echo first-run-output; exit 4", name="e2e-flaky")["session_id"]
    server = registry.spawn("sleep 120", name="e2e-server")["session_id"]
    server_pid = registry.poll(server)["pid"]
    wait_until(lambda: registry.poll(done)["status"] == "exited")
    name = f"hp-rerun-{os.getpid()}"
    cmd = (
        f"cd {shlex.quote(os.getcwd())} && HERMES_PROCS_HOME={shlex.quote(str(home))} "
        f"{shlex.quote(sys.executable)} -m hermes_procs --home {shlex.quote(str(home))}; sleep 5"
    )
    tmux("new-session", "-d", "-s", name, "-x", "120", "-y", "40", cmd)
    try:
        wait_screen(name, lambda t: "e2e-flaky" in t and "e2e-server" in t, what="the jobs")
        # the table has the focus from the start: move with the arrows, never through a box that
        # takes the focus (a key sent before the focus moved would be typed into it)
        # a finished job: r starts it again at once; the new job is selected and says what it reruns
        keys(name, "Down")  # newest first: the server, then the finished job
        wait_screen(name, lambda t: f" {done}  e2e-flaky" in t, what="the finished job selected")
        keys(name, "r")
        wait_screen(name, lambda t: f"rerun of {short_id(done)}" in t, what="the rerun's header")
        new = reruns_of(registry, done)
        assert len(new) == 1
        wait_until(lambda: registry.poll(new[0])["status"] == "exited")
        assert "first-run-output" in registry.read_log(new[0])["output"]
        assert "first-run-output" in registry.read_log(done)["output"]  # the old log stays
        # a running job: r asks first; y kills it and starts it again
        keys(name, "Down")  # the rerun (newest, selected), then the server
        wait_screen(name, lambda t: f" {server}  e2e-server" in t, what="the server selected")
        keys(name, "r")
        wait_screen(name, lambda t: "kill it and run it again?" in t, what="the rerun confirmation")
        keys(name, "y")
        wait_screen(name, lambda t: f"rerun of {short_id(server)}" in t, what="the second rerun's header",
                    timeout=30)
        assert not alive(server_pid)
        assert registry.poll(server)["status"] == "exited"
        again = reruns_of(registry, server)
        assert len(again) == 1 and registry.poll(again[0])["status"] == "running"
        keys(name, "q")
        wait_screen(name, lambda t: "e2e-server" not in t, what="the app closing")
        assert registry.poll(again[0])["status"] == "running", capture(name)
    finally:
        tmux("kill-session", "-t", name)
