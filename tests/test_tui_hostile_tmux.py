"""End to end: escapes in what a job controls (name, command, argv, cwd) never reach the terminal
from the real dashboard in tmux: the table, the detail title, the process tree (`p`), toasts and
desktop notifications show them as escapes.  tmux accepts OSC 52 here (`set-clipboard on`), so a
clipboard write would land in its buffers; every byte the dashboard wrote is captured with
`pipe-pane`.

Found: a job started with `exec -a $'\\e]52;c;<base64>\\e\\\\' sleep 60` filled the clipboard with
the attacker's command each time the tree was redrawn; a command's OSC 2 set the window title.
"""

from __future__ import annotations

import re
import shlex

import pytest
from conftest import wait_until
from test_hostile_text_cli import HOSTILE, NAME, PAYLOAD
from tmux import SESSION, dashboard_command

pytestmark = pytest.mark.timeout(90)

# what the dashboard may never write: a job's OSC (52 clipboard, 0/2 title) in 7 or 8 bits, a C1
# control (UTF-8 C2 80-9F), a bidi override or isolate; the dashboard's own sequences are ESC [ ...
# and the tmux passthrough of its notifications (ESC P tmux; ...)
FORBIDDEN = re.compile(rb"\x1b\]52|\x1b\][02];|\xc2[\x80-\x9f]|\xe2\x80[\xaa-\xae]|\xe2\x81[\xa6-\xa9]")


def test_dashboard_shows_a_jobs_escapes_and_never_sends_them(registry, home, tmp_path, tmux):
    cwd = tmp_path / "dir\x1b]2;cwd-title\x07"
    cwd.mkdir()
    registry.spawn("sleep 60 # " + "".join(HOSTILE), name="short\x1b]2;pwned-title\x07\x9b2J")
    argv = registry.spawn(f"exec -a $'\\e]52;c;{PAYLOAD}\\e\\\\' sleep 60", name="argv-job")["session_id"]
    wait_until(lambda: any("\x1b]52" in p["command"] for p in registry.tree(argv)["processes"]), timeout=10)
    out, go = tmp_path / "pane.out", tmp_path / "go"
    # the dashboard starts once tmux accepts clipboard writes and its output is captured
    tmux.start(f"while [ ! -e {shlex.quote(str(go))} ]; do sleep 0.05; done; "
               + dashboard_command(home, XDG_CONFIG_HOME=tmp_path / "config"))
    tmux("set-option", "-g", "set-clipboard", "on")
    tmux("pipe-pane", "-o", "-t", SESSION, f"cat >> {shlex.quote(str(out))}")
    go.touch()
    tmux.wait_screen(lambda t: "argv-job" in t and "short\\x1b]2;pwned-title" in t,
                     what="the escaped name in the table")
    tmux.keys("p")  # the newest job (argv-job, selected) and its processes
    tmux.wait_screen(lambda t: f"\\x1b]52;c;{PAYLOAD}\\x1b\\ 60" in t, what="the escaped argv in the tree")
    tmux.keys("Escape")
    # a job that fails while the dashboard watches: a toast and a desktop notification (OSC 9)
    registry.spawn("sleep 0.5; exit 3 # " + "".join(HOSTILE), name=NAME + "-fails", cwd=str(cwd))
    wait_until(lambda: out.exists() and b"\x1bPtmux;" in out.read_bytes(), timeout=30)
    tmux.wait_screen(lambda t: "evil\\x1b]52;c;" in t and "exited 3" in t, what="the failed job in the table")
    tmux.keys("Down", "Down")  # the hostile running job: its name and command in the detail title
    tmux.wait_screen(lambda t: "short\\x1b]2;pwned-title\\x07\\x9b2J  sleep 60 # \\x1b]52" in t,
                     what="the escaped name and command in the title")
    tmux.keys("q")
    tmux.wait_screen(lambda t: "argv-job" not in t, what="the app closing")
    written = out.read_bytes()
    assert b"argv-job" in written and len(written) > 10_000  # the capture holds the session
    assert b"evil\\x1b]52;c;" + PAYLOAD.encode() in written  # the toast and notification: escapes shown
    found = FORBIDDEN.findall(written)
    assert not found, f"{found[:5]} reached the terminal: {written[written.find(found[0]) - 80:][:200]!r}"
    assert tmux("list-buffers").stdout == ""  # no clipboard write was accepted
    title = tmux("display-message", "-p", "-t", SESSION, "#{pane_title}").stdout
    assert "pwned" not in title and "cwd-title" not in title, title
