"""End to end in a real terminal (tmux): the pane in a running app, then the full-screen
attach (App.suspend + raw proxy), Ctrl-] back to the app, and the leave chord."""

from __future__ import annotations

import sys
import textwrap
import time

import pytest

pytest.importorskip("bittty")

APP = textwrap.dedent("""
    import sys
    from textual import on
    from textual.app import App
    from textual.widgets import Static
    from hermes_procs.core import ProcessRegistry
    from hermes_procs.tui.fullattach import full_attach
    from hermes_procs.tui.terminal import TerminalPane

    class Demo(App):
        def __init__(self, reg, sid):
            super().__init__()
            self.reg, self.sid = reg, sid
        def compose(self):
            yield Static("ready", id="hdr")
            yield TerminalPane(self.reg, self.sid)
        def on_mount(self):
            self.query_one(TerminalPane).focus()
        @on(TerminalPane.FullAttach)
        def full(self, event):
            rc = full_attach(self, self.reg, event.session_id)
            self.query_one("#hdr").update(f"full attach returned {rc}")
        @on(TerminalPane.Leave)
        def leave(self, event):
            self.query_one("#hdr").update("left the pane")
            self.set_focus(None)

    Demo(ProcessRegistry(home=sys.argv[1]), sys.argv[2]).run()
""")


def test_pane_full_attach_and_back(registry, home, tmp_path, tmux):
    sid = registry.spawn(f"{sys.executable} -q -i", pty=True)["session_id"]
    app = tmp_path / "demo_app.py"
    app.write_text(APP)
    # COLUMNS/LINES in the environment would override the real size for Textual.
    tmux.start(f"env -u COLUMNS -u LINES {sys.executable} {app} {home} {sid}", width=90, height=26)
    tmux.wait(">>>")
    tmux.keys("print(6*7)", "Enter")
    tmux.wait("42")
    tmux.keys("C-t")  # full-screen attach
    tmux.wait("detach with Ctrl-]")
    tmux.keys("import os; os.get_terminal_size()", "Enter")
    tmux.wait("columns=90, lines=26")  # the whole terminal is the job's
    tmux.keys("C-]")
    tmux.wait("full attach returned 0")
    time.sleep(1.0)  # the app re-measures itself after resuming; the pane re-sizes the job
    tmux.keys("os.get_terminal_size()", "Enter")
    tmux.wait("columns=90, lines=25")  # back to the pane's size (below the header line)
    tmux.keys("C-]")
    tmux.wait("left the pane")
    assert registry.poll(sid)["status"] == "running"
