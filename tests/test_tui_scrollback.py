"""Pilot tests of the terminal pane's scrollback (Shift-PgUp/PgDn, the mouse wheel) against real
PTY jobs that print numbered lines, and of its refusal on the alternate screen."""

from __future__ import annotations

import re
import sys

import pytest
from conftest import until_async
from textual import events
from textual.app import App, ComposeResult

from hermes_procs.tui.terminal import TerminalPane

PY = sys.executable
pytestmark = [pytest.mark.anyio, pytest.mark.timeout(60)]
NUMBERED = "for i in $(seq 1 300); do echo \"line $i\"; done; exec cat"


class PaneApp(App):
    def __init__(self, registry, session_id: str) -> None:
        super().__init__()
        self.registry = registry
        self.session_id = session_id

    def compose(self) -> ComposeResult:
        yield TerminalPane(self.registry, self.session_id)

    def on_mount(self) -> None:
        self.query_one(TerminalPane).focus()


def spawn(registry, command: str) -> str:
    result = registry.spawn(command, pty=True)
    assert result["status"] == "running", result
    return result["session_id"]


def rows(pane: TerminalPane) -> list[str]:
    """What the pane shows now, row by row (the scrollback view or the live screen)."""
    return [pane.render_line(y).text.rstrip() for y in range(pane.engine.rows)]


def numbers(pane: TerminalPane) -> list[int]:
    return [int(m.group(1)) for r in rows(pane) if (m := re.fullmatch(r"line (\d+)", r))]


async def wheel(pilot, event) -> None:
    """A notch of the mouse wheel over the pane, as the terminal driver delivers it."""
    await pilot._post_mouse_events([event], TerminalPane, offset=(5, 5))


def indicator(pane: TerminalPane) -> str:
    return rows(pane)[-1].strip()


async def test_shift_pageup_pages_back_and_shift_pagedown_returns_to_live(registry):
    sid = spawn(registry, NUMBERED)
    app = PaneApp(registry, sid)
    async with app.run_test(size=(80, 24)) as pilot:
        pane = app.query_one(TerminalPane)
        await until_async(lambda: "line 300" in pane.screen_text(), what="the job's output")
        live_bottom = max(numbers(pane))
        assert live_bottom == 300 and pane.back == 0
        await pilot.press("shift+pageup")
        await until_async(lambda: pane.back > 0 and numbers(pane), what="the scrollback view")
        first_page = numbers(pane)
        step = pane.engine.rows - 2
        # one page back: the view ends `step` lines above the end of the log, in order
        assert first_page == list(range(first_page[0], first_page[0] + len(first_page)))
        assert first_page[-1] == 300 - step and len(first_page) == pane.engine.rows - 1
        assert indicator(pane) == f"scrollback: {step} lines up · any key returns to live"
        await pilot.press("shift+pageup")
        await until_async(lambda: pane.back == 2 * step and numbers(pane)[-1] == 300 - 2 * step,
                          what="a second page back")
        await pilot.press("shift+pagedown")
        await until_async(lambda: pane.back == step and numbers(pane)[-1] == 300 - step, what="a page forward")
        await pilot.press("shift+pagedown")  # past the bottom: live again
        await until_async(lambda: pane.back == 0, what="the live screen")
        assert "scrollback" not in "\n".join(rows(pane)) and max(numbers(pane)) == 300


async def test_scrolling_stops_at_the_first_line_and_new_output_does_not_move_the_view(registry):
    sid = spawn(registry, NUMBERED)
    app = PaneApp(registry, sid)
    async with app.run_test(size=(80, 24)) as pilot:
        pane = app.query_one(TerminalPane)
        await until_async(lambda: "line 300" in pane.screen_text(), what="the job's output")
        for _ in range(20):
            await pilot.press("shift+pageup")
        await until_async(lambda: numbers(pane)[:1] == [1], what="the top of the history")
        top = rows(pane)
        assert registry.write(sid, "more output\n")["status"] == "ok"
        await until_async(lambda: "more output" in pane.engine.screen_text(), what="live output behind the view")
        assert rows(pane) == top  # the view holds still while the job prints


async def test_any_key_returns_to_live_and_still_reaches_the_job(registry):
    sid = spawn(registry, NUMBERED)
    app = PaneApp(registry, sid)
    async with app.run_test(size=(80, 24)) as pilot:
        pane = app.query_one(TerminalPane)
        await until_async(lambda: "line 300" in pane.screen_text(), what="the job's output")
        await pilot.press("shift+pageup")
        await until_async(lambda: pane.back > 0 and numbers(pane), what="the scrollback view")
        await pilot.press("x", "enter")
        await until_async(lambda: pane.back == 0, what="the live screen")
        # cat echoes the line back: the key went to the job
        await until_async(lambda: pane.screen_text().count("x") >= 2, what="the typed line echoed")
        assert "scrollback" not in "\n".join(rows(pane))


async def test_the_mouse_wheel_scrolls_back_and_forward(registry):
    sid = spawn(registry, NUMBERED)
    app = PaneApp(registry, sid)
    async with app.run_test(size=(80, 24)) as pilot:
        pane = app.query_one(TerminalPane)
        await until_async(lambda: "line 300" in pane.screen_text(), what="the job's output")
        await wheel(pilot, events.MouseScrollUp)
        await until_async(lambda: pane.back == TerminalPane.WHEEL_LINES, what="a notch back")
        assert numbers(pane)[-1] == 300 - TerminalPane.WHEEL_LINES
        assert indicator(pane).startswith(f"scrollback: {TerminalPane.WHEEL_LINES} lines up")
        await wheel(pilot, events.MouseScrollUp)
        await until_async(lambda: pane.back == 2 * TerminalPane.WHEEL_LINES, what="two notches back")
        await wheel(pilot, events.MouseScrollDown)
        await wheel(pilot, events.MouseScrollDown)
        await until_async(lambda: pane.back == 0, what="back to live")


async def test_the_alternate_screen_has_no_scrollback_and_says_so(registry, tmp_path):
    page = tmp_path / "page.txt"
    page.write_text("".join(f"row {i}\n" for i in range(1, 500)))
    sid = spawn(registry, f"for i in $(seq 1 100); do echo early $i; done; exec less {page}")
    app = PaneApp(registry, sid)
    async with app.run_test(size=(80, 24)) as pilot:
        pane = app.query_one(TerminalPane)
        await until_async(lambda: pane.engine.modes.alt_screen and "row 1" in pane.screen_text(),
                          what="less on the alternate screen")
        await pilot.press("shift+pageup")
        await until_async(lambda: any("No scrollback" in str(n.message) for n in app._notifications),
                          what="the note")
        assert pane.back == 0 and "early" not in "\n".join(rows(pane))
        # less once stayed after a q in a loaded CI run (not reproduced in 15 runs alone; maybe
        # the key came while it repainted for the attach's resize nudge): a second q, as a
        # person would press; a pane that drops keys still fails
        for attempt in range(2):
            await pilot.press("q")
            try:
                await until_async(lambda: not pane.engine.modes.alt_screen, timeout=4.0, what="less quits")
                break
            except AssertionError:
                if attempt:
                    raise


async def test_the_history_keeps_its_colours_and_drops_other_escapes(registry):
    sid = spawn(registry, "for i in $(seq 1 100); do "
                          "printf '\\033[31mred %s\\033[0m \\033]0;title\\007plain\\n' $i; done; exec cat")
    app = PaneApp(registry, sid)
    async with app.run_test(size=(80, 24)) as pilot:
        pane = app.query_one(TerminalPane)
        await until_async(lambda: "red 100" in pane.screen_text(), what="the job's output")
        await pilot.press("shift+pageup")
        await until_async(lambda: pane.back > 0 and any(r.startswith("red ") for r in rows(pane)), what="history")
        strip = pane.render_line(0)
        assert strip.text.rstrip().endswith(" plain") and "title" not in strip.text
        red = [seg for seg in strip if seg.text.startswith("red")]
        assert red and red[0].style.color is not None and red[0].style.color.name in ("red", "color(1)")
