"""Pilot tests of the log pane's times: `T` toggles the HH:MM:SS gutter (when each line arrived,
from the job's times.idx) and `@` jumps to the output of a time; real jobs that print, sleep,
print."""

from __future__ import annotations

import re
import time
from datetime import datetime

import pytest
from conftest import until_async
from textual import on
from textual.app import App, ComposeResult
from textual.widgets import Input

from hermes_procs.core.supervisor import timeline
from hermes_procs.tui.log_pane import LogPane
from hermes_procs.tui.log_times import TimeJumpScreen, parse_jump

pytestmark = [pytest.mark.anyio, pytest.mark.timeout(60)]
# 200 early lines, then (once the test's go-file exists, and 1.5 s later) 200 late ones
SCRIPT = ("seq -f 'early %g' 1 200; while [ ! -e go ]; do sleep 0.02; done; sleep 1.5; "
          "seq -f 'late %g' 1 200; sleep 60")
CLOCK = re.compile(r"\d\d:\d\d:\d\d ")


class LogApp(App):
    def __init__(self, registry, session_id: str) -> None:
        super().__init__()
        self.registry = registry
        self.session_id = session_id
        self.statuses: list[str] = []

    def compose(self) -> ComposeResult:
        yield LogPane()

    def on_mount(self) -> None:
        pane = self.query_one(LogPane)
        pane.show_job(self.session_id, self.registry.job_dir(self.session_id))
        pane.focus()

    @on(LogPane.Status)
    def _status(self, message: LogPane.Status) -> None:
        self.statuses.append(message.text)


def shown(pane: LogPane) -> list[str]:
    return [pane.render_line(y).text.rstrip() for y in range(pane.size.height)]


async def early_then_late(registry, tmp_path, pilot, pane) -> tuple[str, float]:
    """The job's early lines are in the pane; returns (id, a time between the two parts)."""
    sid = pane.session_id
    await until_async(lambda: any("early 200" in r for r in shown(pane)), what="the early lines")
    middle = time.time()
    (tmp_path / "go").touch()
    await until_async(lambda: any("late 200" in r for r in shown(pane)), timeout=20, what="the late lines")
    return sid, middle


async def test_T_shows_when_each_line_arrived_and_hides_it_again(registry, tmp_path):
    sid = registry.spawn(SCRIPT, cwd=str(tmp_path))["session_id"]
    app = LogApp(registry, sid)
    async with app.run_test(size=(80, 20)) as pilot:
        pane = app.query_one(LogPane)
        await early_then_late(registry, tmp_path, pilot, pane)
        assert not any(CLOCK.match(r) for r in shown(pane))
        await pilot.press("T")
        await until_async(lambda: all(CLOCK.match(r) for r in shown(pane)), what="the gutter")
        log = (registry.job_dir(sid) / "output.log").read_bytes()
        with timeline.TimeIndex(registry.job_dir(sid)) as times:
            late, early = times.time_at(log.index(b"late 1")), times.time_at(log.index(b"early 200"))
        assert late - early >= 1.5
        expect = time.strftime("%H:%M:%S ", time.localtime(late))
        assert all(r.startswith(expect) and "late" in r for r in shown(pane))
        # scroll back to where the two parts meet: the early lines carry an earlier time
        pane.scroll_to(y=195, animate=False, immediate=True, force=True)
        await until_async(lambda: any(r.endswith("early 200") for r in shown(pane))
                          and any(r.endswith("late 1") for r in shown(pane)), what="both parts on screen")
        rows = shown(pane)
        assert all(CLOCK.match(r) for r in rows)
        early_row = next(r for r in rows if "early 200" in r)
        assert early_row == time.strftime("%H:%M:%S ", time.localtime(early)) + "early 200"
        assert next(r for r in rows if r.endswith("late 1")) == expect + "late 1"
        await pilot.press("T")
        await until_async(lambda: not any(CLOCK.match(r) for r in shown(pane)), what="no gutter")
        assert any(r.startswith("early 200") for r in shown(pane))


async def test_at_jumps_to_the_output_of_a_time(registry, tmp_path):
    sid = registry.spawn(SCRIPT, cwd=str(tmp_path))["session_id"]
    app = LogApp(registry, sid)
    async with app.run_test(size=(80, 20)) as pilot:
        pane = app.query_one(LogPane)
        _, middle = await early_then_late(registry, tmp_path, pilot, pane)
        await pilot.press("at")
        await until_async(lambda: isinstance(app.screen, TimeJumpScreen), what="the prompt")
        box = app.screen.query_one(Input)
        await until_async(lambda: box.has_focus, what="the prompt's focus")
        box.value = ""
        await pilot.press(*datetime.fromtimestamp(middle).isoformat(), "enter")
        await until_async(lambda: not isinstance(app.screen, TimeJumpScreen), what="the prompt closes")
        await until_async(lambda: shown(pane)[0].startswith("late 1"), what="the jump")
        assert not pane.follow and any("output of" in s and "line 201" in s for s in app.statuses)


async def test_the_prompt_refuses_nonsense_and_a_future_time_finds_nothing(registry, tmp_path):
    sid = registry.spawn(SCRIPT, cwd=str(tmp_path))["session_id"]
    app = LogApp(registry, sid)
    async with app.run_test(size=(80, 20)) as pilot:
        pane = app.query_one(LogPane)
        await until_async(lambda: any("early 200" in r for r in shown(pane)), what="the early lines")
        await pilot.press("at")
        await until_async(lambda: isinstance(app.screen, TimeJumpScreen), what="the prompt")
        box = app.screen.query_one(Input)
        await until_async(lambda: box.has_focus, what="the prompt's focus")
        box.value = ""
        await pilot.press(*"whenever", "enter")
        error = app.screen.query_one("#jump-error")
        await until_async(lambda: "not 'whenever'" in str(error.render()), what="the error")
        assert isinstance(app.screen, TimeJumpScreen)
        box.value = ""
        await pilot.press(*datetime.fromtimestamp(time.time() + 3600).isoformat(), "enter")
        await until_async(lambda: any(s.startswith("no output since") for s in app.statuses), what="nothing since")
        assert pane.follow  # the view stays where it was


def test_parse_jump_forms():
    now = datetime(2026, 11, 26, 12, 0, 0).timestamp()
    assert parse_jump("5", now) == now - 300
    assert parse_jump("90s", now) == now - 90
    assert parse_jump("1h30m", now) == now - 5400
    assert parse_jump("06:30", now) == datetime(2026, 11, 26, 6, 30).timestamp()
    assert parse_jump("13:15:30", now) == datetime(2026, 11, 25, 13, 15, 30).timestamp()  # still to come: yesterday
    for bad in ("25:00", "-5", "soon", ""):
        with pytest.raises(ValueError):
            parse_jump(bad, now)


def test_tail_line_starts_match_the_log(tmp_path):
    """The flood (tail-only) view dates its lines by their absolute offsets, computed from a tail."""
    from hermes_procs.core.registry import logstore
    from hermes_procs.tui.log_reader import _starts

    (tmp_path / "output.log").write_bytes(b"".join(b"line %d\n" % i for i in range(1000)))
    start, data = logstore.tail_span(tmp_path, 100)
    assert data == (tmp_path / "output.log").read_bytes()[start:]
    lines = data.split(b"\n")[1:-1]  # the first one is cut; the last is empty
    first = start + len(data.split(b"\n")[0]) + 1
    starts = _starts(first, lines, 5)
    log = (tmp_path / "output.log").read_bytes()
    assert [log[s:log.index(b"\n", s)] for s in starts] == lines[-5:]
