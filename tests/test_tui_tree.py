"""The process tree view (`p`) with real jobs: live rows (who waits for input, states), a signal
or a confirmed kill of ONE process of the job, read-only dashboards, and the tree drawing."""

from __future__ import annotations

import shlex
import sys

import pytest
from conftest import pid_alive
from pilot import confirm, notes, select, settle, until

from hermes_procs.tui.app import HermesApp
from hermes_procs.tui.dialogs import SignalScreen
from hermes_procs.tui.proc_tree import KillProcessScreen, TreeScreen, tree_prefixes

pytestmark = [pytest.mark.anyio, pytest.mark.timeout(60)]
ASKS = f"sleep 100 & {shlex.quote(sys.executable)} -c 'input()'"


async def open_tree(pilot, app, sid) -> TreeScreen:
    """Select the job, press p, wait until its sleeper and its asking process are shown."""
    await select(pilot, app, sid, indexed=False)
    await pilot.press("p")
    await until(pilot, lambda: isinstance(app.screen, TreeScreen), what="tree open")
    screen = app.screen
    await until(pilot, lambda: screen.focused is not None and screen.focused.id == "tree-table", what="focus")
    await until(pilot, lambda: find(screen, "sleep 100") and waiting(screen), what="rows")
    return screen


def find(screen: TreeScreen, command: str) -> dict | None:
    return next((p for p in screen.processes if p["command"] == command), None)


def waiting(screen: TreeScreen) -> dict | None:
    return next((p for p in screen.processes if p["awaiting_input"]), None)


def table_text(screen: TreeScreen) -> str:
    table = screen.query_one("#tree-table")
    return "\n".join(" ".join(str(c) for c in table.get_row_at(i)) for i in range(table.row_count))


async def highlight(pilot, screen: TreeScreen, pid: int) -> None:
    index = [p["pid"] for p in screen.processes].index(pid)
    screen.query_one("#tree-table").move_cursor(row=index)
    await until(pilot, lambda: (screen.highlighted() or {}).get("pid") == pid, what="highlighted")


async def test_tree_shows_the_processes_live_and_who_waits_for_input(registry):
    sid = registry.spawn(ASKS, name="asker")["session_id"]
    app = HermesApp(registry, sample_interval=0.3)
    async with app.run_test(size=(120, 34)) as pilot:
        screen = await open_tree(pilot, app, sid)
        asking, sleeper = waiting(screen), find(screen, "sleep 100")
        text = table_text(screen)
        assert "input" in text and "├─ sleep 100" in text and "└─ " in text
        assert "waiting for input" in str(screen.query_one("#tree-summary").render())
        # live: a process stopped from outside shows as stopped without any key
        assert registry.signal_process(sid, sleeper["pid"], "STOP")["status"] == "ok"
        await until(pilot, lambda: find(screen, "sleep 100")["state"] == "T" and "stopped" in table_text(screen),
                    what="stopped shown")
        assert not find(screen, "sleep 100")["awaiting_input"] and asking["pid"] == waiting(screen)["pid"]
        await pilot.press("escape")
        await until(pilot, lambda: not isinstance(app.screen, TreeScreen), what="closed")


async def pick_signal(pilot, app, letter: str) -> str:
    """s on the highlighted process, then `letter` in the chooser; returns the chooser's hint."""
    await pilot.press("s")
    await until(pilot, lambda: isinstance(app.screen, SignalScreen), what="signal chooser")
    hint = " ".join(str(w.render()) for w in app.screen.query("Static"))
    await settle(pilot)
    await pilot.press(letter)
    return hint


async def test_signal_one_process_from_the_view(registry):
    sid = registry.spawn(ASKS)["session_id"]
    app = HermesApp(registry, sample_interval=0.3)
    async with app.run_test(size=(120, 34)) as pilot:
        screen = await open_tree(pilot, app, sid)
        sleeper = find(screen, "sleep 100")
        await highlight(pilot, screen, sleeper["pid"])
        for letter, state in (("s", "T"), ("c", "S")):  # STOP and CONT have letters too
            hint = await pick_signal(pilot, app, letter)
            assert "i/t/h/k/s/c pick" in hint, hint
            await until(pilot, lambda: find(screen, "sleep 100")["state"] == state,  # noqa: B023
                        what=f"{letter}: state {state}")
        await pick_signal(pilot, app, "t")  # TERM
        await until(pilot, lambda: find(screen, "sleep 100") is None, what="sleeper gone from the view")
        assert not pid_alive(sleeper["pid"]) and pid_alive(waiting(screen)["pid"])
        assert registry.poll(sid)["status"] == "running"
        assert "sent TERM to process" in notes(app)


async def test_kill_one_process_asks_first(registry):
    sid = registry.spawn(ASKS)["session_id"]
    app = HermesApp(registry, sample_interval=0.3)
    async with app.run_test(size=(120, 34)) as pilot:
        screen = await open_tree(pilot, app, sid)
        sleeper = find(screen, "sleep 100")
        await highlight(pilot, screen, sleeper["pid"])
        await pilot.press("k")
        await until(pilot, lambda: isinstance(app.screen, KillProcessScreen), what="confirmation")
        await until(pilot, lambda: app.screen.focused is not None, what="confirmation focused")
        await pilot.press("n")
        await until(pilot, lambda: app.screen is screen, what="back without killing")
        await until(pilot, lambda: screen.focused is not None and screen.focused.id == "tree-table", what="focus")
        assert pid_alive(sleeper["pid"])
        await pilot.press("k")
        await until(pilot, lambda: isinstance(app.screen, KillProcessScreen), what="confirmation again")
        await confirm(pilot)
        await until(pilot, lambda: find(screen, "sleep 100") is None, what="killed process gone from the view")
        assert not pid_alive(sleeper["pid"]) and registry.poll(sid)["status"] == "running"


async def test_a_read_only_dashboard_shows_the_tree_but_signals_nothing(registry):
    sid = registry.spawn(ASKS)["session_id"]
    app = HermesApp(registry, sample_interval=0.3, read_only=True)
    async with app.run_test(size=(120, 34)) as pilot:
        screen = await open_tree(pilot, app, sid)
        sleeper = find(screen, "sleep 100")
        await highlight(pilot, screen, sleeper["pid"])
        await pilot.press("k", "s")
        await until(pilot, lambda: "read-only" in notes(app),
                    what="refused")
        assert app.screen is screen and pid_alive(sleeper["pid"])
        assert "read-only" in app.registry.signal_process(sid, sleeper["pid"], "KILL")["error"]


async def test_p_without_a_job_says_so(registry):
    app = HermesApp(registry, sample_interval=0.3)
    async with app.run_test(size=(100, 30)) as pilot:
        await pilot.press("p")
        await until(pilot, lambda: "Select a job first" in notes(app), what="toast")
        assert not isinstance(app.screen, TreeScreen)


async def test_a_finished_job_shows_what_it_left_running(registry):
    sid = registry.spawn("sleep 60 & echo started")["session_id"]
    registry.wait(sid, timeout=10)
    app = HermesApp(registry, sample_interval=0.3)
    async with app.run_test(size=(120, 34)) as pilot:
        await select(pilot, app, sid, indexed=False)
        await pilot.press("p")
        await until(pilot, lambda: isinstance(app.screen, TreeScreen), what="tree open")
        screen = app.screen
        await until(pilot, lambda: find(screen, "sleep 60"), what="leftover shown")
        assert "leftovers" in str(screen.query_one("#tree-summary").render())


def test_tree_prefixes_draw_siblings_and_nesting():
    depths = [0, 1, 2, 2, 1, 2, 0]
    rows = [{"depth": d} for d in depths]
    assert tree_prefixes(rows) == ["", "├─ ", "│  ├─ ", "│  └─ ", "└─ ", "   └─ ", ""]
