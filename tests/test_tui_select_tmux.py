"""End to end in a real terminal (tmux): select lines of a job's log with the keyboard, copy
them, and find them in tmux's paste buffer, where the OSC 52 sequence the dashboard wrote to
the terminal put them (``set-clipboard on``: tmux turns OSC 52 into a buffer)."""

from __future__ import annotations

import shutil
import subprocess
import sys
import time
import uuid

import pytest
from conftest import wait_until

pytestmark = pytest.mark.skipif(shutil.which("tmux") is None, reason="tmux not installed")


class Tmux:
    def __init__(self) -> None:
        self.socket = f"hp-sel-{uuid.uuid4().hex[:8]}"

    def __call__(self, *args: str, check: bool = True) -> subprocess.CompletedProcess:
        return subprocess.run(["tmux", "-L", self.socket, *args], check=check,
                              capture_output=True, text=True, timeout=10)

    def screen(self) -> str:
        return self("capture-pane", "-p", "-t", "t").stdout

    def wait(self, text: str, timeout: float = 40.0) -> str:
        deadline = time.monotonic() + timeout
        while True:
            screen = self.screen()
            if text in screen:
                return screen
            if time.monotonic() > deadline:
                raise AssertionError(f"{text!r} not on screen:\n{screen}")
            time.sleep(0.1)


@pytest.fixture
def tmux():
    t = Tmux()
    yield t
    t("kill-server", check=False)


def test_select_and_copy_reaches_the_terminal_as_osc52(registry, home, tmux):
    sid = registry.spawn("for i in $(seq 1 40); do echo \"row $i\"; done; sleep 60", name="rows")["session_id"]
    wait_until(lambda: "row 40" in registry.read_log(sid)["output"], timeout=20)
    code = f"from hermes_procs.tui.app import run; run({str(home)!r})"
    tmux("-f", "/dev/null", "new-session", "-d", "-s", "t", "-x", "160", "-y", "30",
         "env", "-u", "DISPLAY", "-u", "WAYLAND_DISPLAY", "-u", "COLUMNS", "-u", "LINES",
         sys.executable, "-c", code)
    tmux("set-option", "-s", "set-clipboard", "on")
    tmux.wait("row 40")
    for _ in range(50):  # the focus moves on the app's next tick: v until the pane has it
        tmux("send-keys", "-t", "t", "l")
        time.sleep(0.3)
        tmux("send-keys", "-t", "t", "v")
        time.sleep(0.3)
        if "1 line selected" in tmux.screen():
            break
    tmux.wait("1 line selected")
    tmux("send-keys", "-t", "t", "Up", "Up")
    tmux.wait("3 lines selected")
    tmux("send-keys", "-t", "t", "y")
    tmux.wait("OSC 52")  # the toast says how it was copied

    def buffer() -> str:
        return tmux("show-buffer", check=False).stdout

    assert wait_until(lambda: buffer() == "row 38\nrow 39\nrow 40", timeout=20), repr(buffer())
