"""Pilot tests: the log pane's filter mode (regex, context, the whole on-disk log, a worker)."""

from __future__ import annotations

import pytest
from pilot import select, until

from hermes_procs.tui.app import HermesApp
from hermes_procs.tui.jobs_table import JobsTable
from hermes_procs.tui.log_pane import LogPane

pytestmark = [pytest.mark.anyio, pytest.mark.timeout(60)]


def shown(pane: LogPane) -> list[str]:
    return ["".join(seg.text for seg in pane.render_line(y)).rstrip() for y in range(pane.size.height)]


async def test_filter_shows_matching_lines_of_the_whole_log_with_context(registry):
    # 30,000 lines: the matches are far outside what the pane ever read
    sid = registry.spawn("for i in $(seq 1 30000); do if [ $((i % 10000)) = 0 ]; then "
                         "printf '\\033[31mERROR\\033[0m at %s\\n' $i; else echo \"ok $i\"; fi; done; sleep 60",
                         name="errors")["session_id"]
    app = HermesApp(registry, sample_interval=0.2)
    async with app.run_test(size=(100, 30)) as pilot:
        table = app.query_one(JobsTable)
        await until(pilot, lambda: sid in table.rows_by_id)
        table.select_id(sid)
        pane = app.query_one(LogPane)
        await until(pilot, lambda: pane.total >= 30000 and not pane._tail_mode, what="whole log indexed")
        await pilot.press("ampersand")
        bar = app.query_one("#log-filter")
        assert bar.has_class("shown")
        await pilot.press(*"error at")  # lower case: case-insensitive
        app.query_one("#filter-context").value = "1"
        app.query_one("#filter-re").focus()
        await pilot.press("enter")
        await until(pilot, lambda: pane._filter is not None and pane._filter.done, what="scan done")
        assert pane._filter.matches == 3
        lines = [x for x in shown(pane) if x.strip()]
        assert lines[:3] == ["   9999 ok 9999", "  10000 ERROR at 10000", "  10001 ok 10001"]
        assert lines[3].strip() == "┄"  # a gap between groups
        rows = pane._filter.rows
        assert [r.line + 1 for r in rows if r is not None] == [9999, 10000, 10001, 19999, 20000, 20001, 29999, 30000]
        assert [r.line + 1 for r in rows if r is not None and r.match] == [10000, 20000, 30000]
        assert "3 matching lines" in str(app.query_one("#detail-title").render())
        # a bad regex says so and changes nothing
        await pilot.press("ampersand")
        app.query_one("#filter-re").value = "(unclosed"
        await pilot.press("enter")
        await until(pilot, lambda: any("not a valid regular expression" in str(n.message) for n in app._notifications))
        assert pane._filter.matches == 3
        # Esc in the bar: the whole log again, following
        await pilot.press("escape")
        await until(pilot, lambda: pane._filter is None and pane.follow and pane.total >= 30000)
        assert not bar.has_class("shown")


ECHO_PIECES = ("python3 -u -c \"import sys\nfor l in sys.stdin:\n    sys.stdout.write(l.rstrip('\\n').replace('|', "
               "'\\n')); sys.stdout.flush()\"")  # each line it reads, as it is: '|' ends a line


async def test_the_filter_follows_a_running_jobs_new_lines(registry):
    sid = registry.spawn(ECHO_PIECES, name="pieces")["session_id"]
    registry.submit(sid, "ok 1|ERROR one|ok 2|")
    app = HermesApp(registry, sample_interval=0.2)
    async with app.run_test(size=(100, 30)) as pilot:
        await select(pilot, app, sid)
        pane = app.query_one(LogPane)
        await until(pilot, lambda: pane.total >= 3, what="the first lines")
        await pilot.press("ampersand", *"error")
        app.query_one("#filter-re").focus()
        await pilot.press("enter")
        title = app.query_one("#detail-title")
        await until(pilot, lambda: pane._filter is not None and pane._filter.done, what="scan done")
        assert "1 matching line · following new lines" in str(title.render())
        registry.submit(sid, "ok 3|ER")  # half a line: matched once it is whole
        await pilot.pause(0.8)
        registry.submit(sid, "ROR two|ok 4|error three|")
        await until(pilot, lambda: pane._filter.matches == 3, what="the new lines matched")
        rows = [(r.line, r.raw) for r in pane._filter.rows if r is not None]
        assert rows == [(1, b"ERROR one"), (4, b"ERROR two"), (6, b"error three")]  # each once, in order
        assert [x.strip() for x in shown(pane) if x.strip()][:5] == ["2 ERROR one", "┄", "5 ERROR two", "┄",
                                                                     "7 error three"]
        registry.submit(sid, "".join(f"error {i}|" for i in range(40)))  # more than the pane holds
        await until(pilot, lambda: pane._filter.matches == 43, what="40 more")
        await until(pilot, lambda: "error 39" in " ".join(shown(pane)), what="the view kept at the newest")
        registry.close_stdin(sid)  # the job ends: nothing more to follow
        await until(pilot, lambda: "following" not in str(title.render()), what="following ended")
        assert "3 matching lines" in str(title.render())
