"""Pilot tests: selecting and copying lines of the log pane, saving the whole log."""

from __future__ import annotations

import os

import pytest
from pilot import until

from hermes_procs.tui.app import HermesApp
from hermes_procs.tui.dialogs import SaveLogScreen
from hermes_procs.tui.jobs_table import JobsTable
from hermes_procs.tui.log_export import file_name
from hermes_procs.tui.log_pane import LogPane

pytestmark = [pytest.mark.anyio, pytest.mark.timeout(40)]


@pytest.fixture(autouse=True)
def _no_desktop(monkeypatch):
    """No system clipboard here: copies go out as OSC 52 (App.clipboard records them)."""
    for name in ("DISPLAY", "WAYLAND_DISPLAY"):
        monkeypatch.delenv(name, raising=False)


async def open_log(pilot, app, registry, command: str) -> tuple[str, LogPane]:
    sid = registry.spawn(command, name="lines")["session_id"]
    table = app.query_one(JobsTable)
    await until(pilot, lambda: sid in table.rows_by_id, what="listed")
    table.select_id(sid)
    pane = app.query_one(LogPane)
    await until(pilot, lambda: pane.reader is not None and pane.reader.index is not None
                and not pane._tail_mode and pane.total >= 50, what="log indexed")
    pane.focus()
    await until(pilot, lambda: app.focused is pane)
    return sid, pane


async def test_keyboard_selection_copies_plain_lines(registry):
    app = HermesApp(registry, sample_interval=0.2)
    async with app.run_test(size=(100, 30)) as pilot:
        _, pane = await open_log(pilot, app, registry,
                                 "for i in $(seq 1 50); do printf '\\033[31mline %s\\033[0m\\n' $i; done; sleep 30")
        await pilot.press("v")
        assert pane.selection() == (49, 49)  # the last line shown
        await pilot.press("up", "up")
        assert pane.selection() == (47, 49)
        await pilot.press("y")
        await until(pilot, lambda: app.clipboard == "line 48\nline 49\nline 50", what="copied")
        assert pane.selection() is None
        # PgUp extends by a page; Esc cancels without copying
        await pilot.press("v", "pageup")
        first, last = pane.selection()
        assert last == 49 and first < 49 - 5
        await pilot.press("escape")
        assert pane.selection() is None


async def test_mouse_drag_selects_and_copies(registry):
    app = HermesApp(registry, sample_interval=0.2)
    async with app.run_test(size=(100, 30)) as pilot:
        _, pane = await open_log(pilot, app, registry, "seq 1 60; sleep 30")
        await pilot.press("home")
        await until(pilot, lambda: pane.scroll_y == 0 and not pane.follow)
        await pilot.mouse_down(pane, offset=(2, 1))
        await pilot.hover(pane, offset=(2, 3))
        await pilot.mouse_up(pane, offset=(2, 3))
        await until(pilot, lambda: app.clipboard == "2\n3\n4", what="drag copied lines 2-4")
        # a click without a drag selects nothing and keeps the clipboard
        await pilot.click(pane, offset=(2, 5))
        assert pane.selection() is None and app.clipboard == "2\n3\n4"


async def test_ctrl_s_saves_the_log_raw_or_plain(registry, tmp_path):
    app = HermesApp(registry, sample_interval=0.2)
    async with app.run_test(size=(100, 30)) as pilot:
        _, _pane = await open_log(pilot, app, registry,
                                 "for i in $(seq 1 50); do printf '\\033[32mok %s\\033[0m\\n' $i; done; sleep 30")
        plain = tmp_path / "plain.log"
        await pilot.press("ctrl+s")
        await until(pilot, lambda: isinstance(app.screen, SaveLogScreen))
        assert app.screen.query_one("#save-path").value == os.path.join(os.getcwd(), "lines.log")  # NAME.log here
        app.screen.query_one("#save-path").value = str(plain)
        await pilot.press("enter")
        await until(pilot, lambda: plain.exists() and plain.stat().st_size > 0, what="plain saved")
        await until(pilot, lambda: "Log saved" in "".join(str(n.title) for n in app._notifications))
        assert plain.read_text().splitlines() == [f"ok {i}" for i in range(1, 51)]
        raw = tmp_path / "raw.log"
        await pilot.press("ctrl+s")
        await until(pilot, lambda: isinstance(app.screen, SaveLogScreen))
        app.screen.query_one("#save-path").value = str(raw)
        app.screen.query_one("#save-plain").value = False
        await pilot.press("enter")
        await until(pilot, lambda: raw.exists() and raw.stat().st_size > 0, what="raw saved")
        assert raw.read_bytes().startswith(b"\x1b[32mok 1\x1b[0m\n")
        # an existing file is never overwritten: the dialog says so and stays open
        await pilot.press("ctrl+s")
        await until(pilot, lambda: isinstance(app.screen, SaveLogScreen))
        app.screen.query_one("#save-path").value = str(raw)
        await pilot.press("enter")
        await pilot.pause(0.1)
        assert isinstance(app.screen, SaveLogScreen)
        assert "exists" in str(app.screen.query_one("#save-error").render())
        await pilot.press("escape")


async def test_the_suggested_file_of_a_saved_log_stays_in_the_current_folder():
    """The job's name is the job's to choose: no `/` or `..` of it leads the file elsewhere."""
    assert file_name("../../outside/evil", "proc_1") == "outside-evil.log"
    assert file_name("build [x] \x1b]52;c;QQ==\x07", "proc_1") == "build-x-52-c-QQ.log"
    assert file_name("..", "proc_1") == file_name("", "proc_1") == "proc_1.log"
    assert file_name("api.v2_test", "proc_1") == "api.v2_test.log"
