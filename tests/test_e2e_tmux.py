"""End to end: the real dashboard in tmux (send-keys / capture-pane) over real jobs."""

from __future__ import annotations

import sys

import pytest
from tmux import dashboard_command

pytestmark = pytest.mark.timeout(60)


def search(tmux, name: str, hidden: str) -> None:
    """Show only the jobs matching `name` (/, the name, Enter), once `hidden` has left the screen."""
    tmux.keys("/")
    # the search box must have the focus before the text: keys sent earlier reach the table
    tmux.wait_screen(lambda t: "search jobs by" in t, what="the search box")
    tmux.keys("-l", name)
    tmux.keys("Enter")
    tmux.wait_screen(lambda t: hidden not in t, what=f"{name} alone")


def test_dashboard_in_tmux(registry, home, alive, tmux):
    repl = registry.spawn(f"{sys.executable} -q -i", pty=True, name="e2e-repl")["session_id"]
    pipe = registry.spawn("cat", name="e2e-pipe")["session_id"]
    victim = registry.spawn("sleep 120", name="e2e-victim")["session_id"]
    victim_pid = registry.poll(victim)["pid"]
    tmux.start(dashboard_command(home))
    tmux.wait_screen(lambda t: "e2e-victim" in t and "e2e-repl" in t, what="the jobs")
    # type into the PTY job through the terminal pane and see the echo
    search(tmux, "e2e-repl", hidden="e2e-victim")
    tmux.keys("Enter")  # Enter on a PTY job opens its terminal pane
    tmux.wait_screen(lambda t: "Terminal:" in t and ">>>" in t, what="the terminal pane")
    tmux.keys("-l", "6*7")
    tmux.keys("Enter")
    tmux.wait_screen(lambda t: "42" in t.split(">>> 6*7", 1)[-1], what="the REPL's answer")
    tmux.keys("C-]")
    tmux.wait_screen(lambda t: "Terminal:" not in t, what="leaving the pane")
    # type into a pipe job with the input bar
    tmux.keys("Escape")  # clear the search
    tmux.wait_screen(lambda t: "e2e-victim" in t, what="every job again")
    search(tmux, "e2e-pipe", hidden="e2e-victim")
    tmux.keys("Enter")  # Enter on a pipe job focuses the input bar
    # focused, the footer keeps only the keys that work there (no table keys such as Kill)
    tmux.wait_screen(lambda t: "k Kill" not in t, what="the input bar focused")
    tmux.keys("-l", "hello from tmux")
    tmux.keys("Enter")
    tmux.wait_screen(lambda t: "human 'hello from tmux" in t, what="the input history")
    assert "hello from tmux" in registry.read_log(pipe)["output"]
    # kill a job
    tmux.keys("Escape")
    tmux.keys("Escape")
    tmux.wait_screen(lambda t: "e2e-repl" in t and "k Kill" in t, what="the table again")
    search(tmux, "e2e-victim", hidden="e2e-repl")
    tmux.wait_screen(lambda t: "k Kill" in t, what="the table's keys")
    tmux.keys("k")
    tmux.wait_screen(lambda t: "Kill this job?" in t, what="the kill confirmation")
    tmux.confirm()
    tmux.wait_screen(lambda t: "killed" in t, what="the killed status")
    assert registry.poll(victim)["completion_reason"] == "killed"
    assert not alive(victim_pid)
    # quitting leaves the other jobs running
    tmux.keys("q")
    tmux.wait_screen(lambda t: "e2e-repl" not in t, what="the app closing")
    assert registry.poll(repl)["status"] == "running"
    assert registry.poll(pipe)["status"] == "running"


def test_a_row_that_changes_is_redrawn_alone(registry, home, alive, tmux):
    """A job's cells that change (its status, when it ends) are redrawn on the terminal without
    a redraw of the whole table (tui/jobs_table.py `_set_cell`), also when the job is not the
    selected one and nothing else on screen moves."""
    waiting = registry.spawn("read line", name="e2e-waits")["session_id"]
    registry.spawn("sleep 120", name="e2e-newest")  # selected: the table starts on the newest
    tmux.start(dashboard_command(home))
    tmux.wait_screen(lambda t: "e2e-newest" in t and "e2e-waits" in t, what="the jobs")

    def row(screen: str) -> str:
        return next((line for line in screen.splitlines() if "e2e-waits" in line), "")

    tmux.wait_screen(lambda t: "running" in row(t), what="the waiting job running")
    registry.submit(waiting, "go")
    tmux.wait_screen(lambda t: "exited 0" in row(t), timeout=10, what="its row showing the exit")
