"""End to end in a real terminal (tmux): keys sent in one burst, as a paste or a fast typist
sends them (``send-keys -l`` writes them in one go), go where the focus went, and typed text
never answers a destructive confirmation (tui/keyroute.py)."""

from __future__ import annotations

import time

import pytest
from conftest import wait_until
from tmux import dashboard_command

pytestmark = pytest.mark.timeout(90)


def open_dashboard(tmux, home, *names: str, width: int = 120, height: int = 40) -> None:
    tmux.start(dashboard_command(home), width=width, height=height)
    tmux.wait_screen(lambda t: all(n in t for n in names), what=f"the jobs {names}")


def test_keys_typed_right_after_i_go_to_the_input_bar(registry, home, alive, tmux):
    sid = registry.spawn("cat", name="burst-cat")["session_id"]
    pid = registry.poll(sid)["pid"]
    open_dashboard(tmux, home, "burst-cat")
    tmux.keys("-l", "ikyoto")  # i focuses the input bar; k would ask to kill, y confirm
    tmux.wait("› kyoto")
    tmux.keys("Enter")
    wait_until(lambda: "kyoto" in registry.read_log(sid)["output"], timeout=20)
    assert alive(pid) and registry.poll(sid)["status"] == "running"
    assert "Kill this job?" not in tmux.screen()


def test_typed_text_never_answers_the_kill_confirmation(registry, home, alive, tmux):
    sid = registry.spawn("sleep 300", name="burst-sleep")["session_id"]
    pid = registry.poll(sid)["pid"]
    open_dashboard(tmux, home, "burst-sleep")
    # typed into the table by mistake: k opens the confirmation, the rest of the text (with
    # its newline) came before the dialog was on screen and must not answer it
    tmux.keys("-l", "kyoto yes\r")
    tmux.wait("Kill this job?")
    time.sleep(1.0)
    assert "Kill this job?" in tmux.screen()
    assert alive(pid) and registry.poll(sid)["status"] == "running"
    for key in ("y", "Y"):  # a letter never confirms
        tmux.keys(key)
    time.sleep(0.5)
    assert alive(pid) and "Kill this job?" in tmux.screen()
    tmux.keys("Enter")  # once the dialog has been on screen, Enter on its Kill button kills
    wait_until(lambda: registry.poll(sid)["status"] == "exited", timeout=20)
    assert registry.poll(sid)["completion_reason"] == "killed"


def test_keys_typed_while_the_dashboard_starts_are_not_lost(registry, home, tmux):
    registry.spawn("sleep 300", name="early-alpha")
    registry.spawn("sleep 301", name="early-beta")
    tmux.start(dashboard_command(home), width=120, height=40)
    tmux.keys("-l", "/beta")  # before the dashboard is up: / opens the job search, the rest is typed in it
    tmux.wait_screen(lambda t: "search:beta" in t and "early-beta" in t and "early-alpha" not in t,
                     what="the search typed while the dashboard started")


def test_an_action_right_after_an_arrow_works_on_the_row_the_arrow_reached(registry, home, tmux):
    older = registry.spawn("sleep 300", name="burst-older")["session_id"]
    registry.spawn("sleep 301", name="burst-newer")  # newest first: the first row
    open_dashboard(tmux, home, "burst-older", "burst-newer")
    tmux.keys("Down", "k")  # one burst
    screen = tmux.wait("Kill this job?")
    assert "burst-older" in screen.split("Kill this job?", 1)[1] and older in screen, screen
    tmux.keys("Escape")


def test_three_quick_ups_in_the_find_box_move_three_matches(registry, home, tmux):
    registry.spawn("for i in $(seq 1 30); do echo \"line $i\"; done; for x in A B C D; do echo needle-$x; echo filler; "
                   "done; sleep 300", name="finder")
    open_dashboard(tmux, home, "finder", "needle-D")
    tmux.keys("-l", "\x06needle")  # Ctrl-F opens the find box, the text goes into it
    tmux.keys("Enter")
    tmux.wait("match at line 37")  # following the tail, find looks up from the bottom: needle-D
    tmux.keys("Up", "Up", "Up")  # one burst
    tmux.wait("match at line 31")  # needle-A


def test_a_quick_filter_with_context_in_one_burst(registry, home, tmux):
    registry.spawn("for i in $(seq 1 60); do [ $i = 31 ] && echo \"disk warn${i}ing\"; echo \"row $i\"; done; "
                   "sleep 300", name="filtered")
    open_dashboard(tmux, home, "filtered", "row 60", height=60)
    tmux.keys("&warn", "Tab", "10", "Enter")  # one burst: the regex, Tab, the context, Enter
    tmux.wait_screen(lambda t: "row 21" in t and "row 40" in t and "row 20" not in t and "row 41" not in t,
                     what="10 lines of context on each side of the match")
