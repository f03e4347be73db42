"""End to end: rerun (`r`) in the real dashboard in tmux (send-keys / capture-pane) over real jobs."""

from __future__ import annotations

import pytest
from conftest import wait_until
from tmux import dashboard_command

from hermes_procs.tui.jobs_table import short_id

pytestmark = pytest.mark.timeout(90)


def reruns_of(registry, sid: str) -> list[str]:
    return [j["session_id"] for j in registry.list() if j.get("rerun_of") == sid]


def test_rerun_in_tmux(registry, home, alive, tmux):
    done = registry.spawn("echo first-run-output; exit 4", name="e2e-flaky")["session_id"]
    server = registry.spawn("sleep 120", name="e2e-server")["session_id"]
    server_pid = registry.poll(server)["pid"]
    wait_until(lambda: registry.poll(done)["status"] == "exited")
    tmux.start(dashboard_command(home))
    tmux.wait_screen(lambda t: "e2e-flaky" in t and "e2e-server" in t, what="the jobs")
    # the table has the focus from the start: move with the arrows, never through a box that
    # takes the focus (a key sent before the focus moved would be typed into it)
    # a finished job: r starts it again at once; the new job is selected and says what it reruns
    tmux.keys("Down")  # newest first: the server, then the finished job
    tmux.wait_screen(lambda t: f" {done}  e2e-flaky" in t, what="the finished job selected")
    tmux.keys("r")
    tmux.wait_screen(lambda t: f"rerun of {short_id(done)}" in t, what="the rerun's header")
    new = reruns_of(registry, done)
    assert len(new) == 1
    wait_until(lambda: registry.poll(new[0])["status"] == "exited")
    assert "first-run-output" in registry.read_log(new[0])["output"]
    assert "first-run-output" in registry.read_log(done)["output"]  # the old log stays
    # a running job: r asks first; y kills it and starts it again
    tmux.keys("Down")  # the rerun (newest, selected), then the server
    tmux.wait_screen(lambda t: f" {server}  e2e-server" in t, what="the server selected")
    tmux.keys("r")
    tmux.wait_screen(lambda t: "kill it and run it again?" in t, what="the rerun confirmation")
    tmux.confirm()
    tmux.wait_screen(lambda t: f"rerun of {short_id(server)}" in t, what="the second rerun's header",
                timeout=30)
    assert not alive(server_pid)
    assert registry.poll(server)["status"] == "exited"
    again = reruns_of(registry, server)
    assert len(again) == 1 and registry.poll(again[0])["status"] == "running"
    tmux.keys("q")
    tmux.wait_screen(lambda t: "e2e-server" not in t, what="the app closing")
    assert registry.poll(again[0])["status"] == "running", tmux.screen()
