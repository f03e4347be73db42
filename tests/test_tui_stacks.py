"""The dashboard's stacks (tui/stack_view.py, tui/stack_actions.py) against a real stack: one
header row with the stack's state above its jobs, Enter folds it, S shows one stack, the
selected stack's detail, D downs it (asks first), U brings it up again."""

from __future__ import annotations

import pytest
from pilot import confirm, notes, until
from stacks_helpers import down_all, jobs_of, stack_file

from hermes_procs.tui.app import HermesApp
from hermes_procs.tui.bars import DetailTitle
from hermes_procs.tui.jobs_table import JobsTable
from hermes_procs.tui.stack_actions import StackConfirmScreen
from hermes_procs.tui.stack_view import header_id

pytestmark = [pytest.mark.anyio, pytest.mark.timeout(90)]


@pytest.fixture
def stacked(registry, tmp_path):
    path = stack_file(tmp_path / "shop", """
        [jobs.db]
        command = "sleep 300"
        [jobs.api]
        command = "sleep 300"
        depends_on = ["db"]
        """)
    assert registry.up(path, wait=True, timeout=30)["state"] == "up"
    yield registry
    down_all(registry)


def visible(table: JobsTable) -> list[str]:
    return [row.key.value for row in table.ordered_rows]


async def test_a_stack_is_one_unit_in_the_table(stacked):
    registry = stacked
    loose = registry.spawn("sleep 300", name="loose")["session_id"]
    jobs = {n: j["session_id"] for n, j in jobs_of(registry, "shop").items()}
    app = HermesApp(registry, sample_interval=0.2)
    async with app.run_test(size=(120, 36)) as pilot:
        table = app.query_one(JobsTable)
        head = header_id("shop")
        await until(pilot, lambda: head in visible(table) and jobs["api"] in visible(table), what="stack rows")
        order = visible(table)
        assert order.index(head) < order.index(jobs["db"]) and order.index(head) < order.index(jobs["api"])
        assert abs(order.index(jobs["db"]) - order.index(jobs["api"])) == 1  # together under the header
        cells = " ".join(str(c) for c in table.get_row(head))
        assert "shop" in cells and "up" in cells and "2/2 ready" in cells, cells
        assert str(table.get_row(head)[0]) == "stack"  # not a cut "stack:" in the id column

        table.select_id(head)  # the detail area: each job's state
        await until(pilot, lambda: app.main.selected == head)
        detail = app.main.query_one("#stack-detail")
        await until(pilot, lambda: "api" in str(detail.render()) and "ready" in str(detail.render()))

        await pilot.press("enter")  # fold: the jobs are hidden, the header stays
        await until(pilot, lambda: jobs["db"] not in visible(table) and head in visible(table), what="folded")
        await pilot.press("enter")
        await until(pilot, lambda: jobs["db"] in visible(table), what="unfolded")

        await pilot.press("S")  # only this stack
        await until(pilot, lambda: loose not in visible(table) and jobs["api"] in visible(table), what="filter")
        await pilot.press("S")  # every job again
        await until(pilot, lambda: loose in visible(table), what="filter off")

        table.select_id(jobs["api"])  # a job's row picks its stack for D
        await until(pilot, lambda: app.main.selected == jobs["api"])
        await pilot.press("D")
        await until(pilot, lambda: isinstance(app.screen, StackConfirmScreen), what="down asks")
        await confirm(pilot)
        await until(pilot, lambda: registry.stacks("shop")[0]["state"] == "down", what="stack down")
        await until(pilot, lambda: "down" in " ".join(str(c) for c in table.get_row(head)), what="header down")
        cells = " ".join(str(c) for c in table.get_row(head))
        assert "2 jobs" in cells and "ready" not in cells, cells  # a stack down counts no job ready
        assert registry.poll(loose)["status"] == "running"  # not a member: untouched
        assert "stack shop is down" in notes(app)

        table.select_id(head)
        await until(pilot, lambda: app.main.selected == head)
        title = app.main.query_one(DetailTitle)
        await until(pilot, lambda: "shop" in str(title.render()), what="the stack's title")
        assert "· log" not in str(title.render())  # a stack's row has no log to follow
        await pilot.press("U")  # up again from its file
        await until(pilot, lambda: registry.stacks("shop")[0]["state"] == "up", what="stack up again")
    registry.kill(loose, grace=0.2)


async def test_the_read_only_dashboard_shows_stacks_but_refuses_their_keys(stacked):
    from hermes_procs.tui.readonly import ReadOnlyRegistry

    registry = stacked
    app = HermesApp(ReadOnlyRegistry(registry), sample_interval=0.2)
    async with app.run_test(size=(120, 36)) as pilot:
        table = app.query_one(JobsTable)
        head = header_id("shop")
        await until(pilot, lambda: head in visible(table), what="stack row")
        table.select_id(head)
        await until(pilot, lambda: app.main.selected == head)
        await pilot.press("D")
        await until(pilot, lambda: "read-only" in notes(app), what="refused")
        assert not isinstance(app.screen, StackConfirmScreen)
        assert registry.stacks("shop")[0]["state"] == "up"


async def test_a_stack_that_has_run_no_job_shows_no_time(registry, tmp_path):
    path = stack_file(tmp_path / "idle", """
        [jobs.tool]
        command = "sleep 300"
        autostart = false
        """)
    registry.up(path, wait=True, timeout=30)
    try:
        app = HermesApp(registry, sample_interval=0.2)
        async with app.run_test(size=(120, 36)) as pilot:
            table = app.query_one(JobsTable)
            head = header_id("idle")
            await until(pilot, lambda: head in visible(table), what="the stack's row")
            assert str(table.get_cell(head, "time")) == ""  # not "0s": nothing has run
    finally:
        down_all(registry)
