"""End to end: the real dashboard in tmux rings the bell and sends OSC 9 (wrapped for tmux
passthrough) when a job starts waiting for input or fails; the bytes are captured with
`tmux pipe-pane` (what the dashboard wrote to its terminal)."""

from __future__ import annotations

import shlex
import sys

import pytest
from conftest import wait_until
from tmux import SESSION, dashboard_command

pytestmark = pytest.mark.timeout(60)


def passthrough(message: str) -> bytes:
    return b"\x1bPtmux;\x1b\x1b]9;hermes-procs: " + message.encode() + b"\x07\x1b\\"


def test_bell_and_osc9_reach_the_terminal(registry, home, tmp_path, tmux):
    out = tmp_path / "pane.out"
    registry.spawn("sleep 60", name="e2e-marker")  # on screen: the first sample has been taken
    tmux.start(dashboard_command(home, XDG_CONFIG_HOME=tmp_path / "config"))
    tmux("pipe-pane", "-o", "-t", SESSION, f"cat >> {shlex.quote(str(out))}")
    tmux.wait_screen(lambda t: "e2e-marker" in t, what="the first sample")
    failing = registry.spawn("sleep 0.5; exit 7", name="e2e-failing")["session_id"]
    asker = registry.spawn(f"{sys.executable} -c \"input('Continue? ')\"", name="e2e-asker")["session_id"]
    tmux.wait_screen(lambda t: "exited 7" in t and "waiting for input" in t, what="both events")
    wait_until(lambda: out.exists() and passthrough("e2e-failing: exited 7") in out.read_bytes(), 15)
    wait_until(lambda: passthrough("e2e-asker is waiting for input: Continue?") in out.read_bytes(), 15)
    assert out.read_bytes().count(b"\x07\x1bPtmux;") == 2  # each with the bell first
    assert registry.poll(asker)["status"] == "running" and failing
    tmux.keys("q")
    tmux.wait_screen(lambda t: "e2e-marker" not in t, what="the app closing")
