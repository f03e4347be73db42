"""End to end in a real terminal (tmux): select lines of a job's log with the keyboard, copy
them, and find them in tmux's paste buffer, where the OSC 52 sequence the dashboard wrote to
the terminal put them (``set-clipboard on``: tmux turns OSC 52 into a buffer)."""

from __future__ import annotations

import sys
import time

from conftest import wait_until


def test_select_and_copy_reaches_the_terminal_as_osc52(registry, home, tmux):
    sid = registry.spawn("for i in $(seq 1 40); do echo \"row $i\"; done; sleep 60", name="rows")["session_id"]
    wait_until(lambda: "row 40" in registry.read_log(sid)["output"], timeout=20)
    code = f"from hermes_procs.tui.app import run; run({str(home)!r})"
    tmux.start(["env", "-u", "DISPLAY", "-u", "WAYLAND_DISPLAY", "-u", "COLUMNS", "-u", "LINES",
                sys.executable, "-c", code], width=160, height=30)
    tmux("set-option", "-s", "set-clipboard", "on")
    tmux.wait("row 40")
    for _ in range(50):  # the focus moves on the app's next tick: v until the pane has it
        tmux.keys("l")
        time.sleep(0.3)
        tmux.keys("v")
        time.sleep(0.3)
        if "1 line selected" in tmux.screen():
            break
    tmux.wait("1 line selected")
    tmux.keys("Up", "Up")
    tmux.wait("3 lines selected")
    tmux.keys("y")
    tmux.wait("OSC 52")  # the toast says how it was copied

    def buffer() -> str:
        return tmux("show-buffer", check=False).stdout

    assert wait_until(lambda: buffer() == "row 38\nrow 39\nrow 40", timeout=20), repr(buffer())
