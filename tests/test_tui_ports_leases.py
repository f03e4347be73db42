"""The dashboard's face of issue 23, with real jobs: the PORTS column (a real listener; the first
column to go on a narrower terminal), the L and K marks of leased and kept jobs, the K key that
pins and unpins, and the ports of each process in the tree view."""

from __future__ import annotations

import subprocess

import pytest
from pilot import notes, select, spawn, until
from test_ports_reuse import SERVER, free_port

from hermes_procs.tui.app import HermesApp
from hermes_procs.tui.jobs_table import JobsTable
from hermes_procs.tui.proc_tree import TreeScreen

pytestmark = [pytest.mark.anyio, pytest.mark.timeout(60)]


def cell(table: JobsTable, sid: str, column: str) -> str:
    return str(getattr(table.get_cell(sid, column), "plain", table.get_cell(sid, column)))


async def test_ports_column_and_tree(registry):
    port = free_port()
    sid = spawn(registry, SERVER.format(port=port), name="web", port=port)
    app = HermesApp(registry, sample_interval=0.3)
    async with app.run_test(size=(130, 34)) as pilot:
        table = app.query_one(JobsTable)
        await until(pilot, lambda: sid in table.rows_by_id and cell(table, sid, "ports") == str(port),
                    what="the port shown")
        assert table.columns["ports"].width > 0
        await pilot.resize_terminal(110, 34)
        await until(pilot, lambda: table.columns["ports"].width == 0, what="PORTS dropped below 120 columns")
        assert table.columns["cpu"].width > 0 and table.columns["pid"].width > 0
        await pilot.resize_terminal(130, 34)
        await select(pilot, app, sid, indexed=False)
        await pilot.press("p")
        await until(pilot, lambda: isinstance(app.screen, TreeScreen) and app.screen.processes, what="tree")
        tree = app.screen.query_one("#tree-table")
        await until(pilot, lambda: any(str(port) in " ".join(str(c) for c in tree.get_row_at(i))
                                       for i in range(tree.row_count)), what="the port in the tree")


async def test_lease_marks_and_the_keep_key(registry):
    owner = subprocess.Popen(["sleep", "60"])
    try:
        leased = spawn(registry, "sleep 60", name="scratch", lease=owner.pid)
        durable = spawn(registry, "sleep 60", name="durable")
        app = HermesApp(registry, sample_interval=0.3)
        async with app.run_test(size=(130, 34)) as pilot:
            table = app.query_one(JobsTable)
            await until(pilot, lambda: leased in table.rows_by_id and cell(table, leased, "flags")[2] == "L",
                        what="L")
            assert cell(table, durable, "flags").strip() == ""
            await select(pilot, app, leased, indexed=False)
            await pilot.press("K")
            await until(pilot, lambda: registry.poll(leased)["lease"]["pinned"], what="pinned")
            await until(pilot, lambda: cell(table, leased, "flags")[2] == "K", what="K")
            await pilot.press("K")
            await until(pilot, lambda: not registry.poll(leased)["lease"]["pinned"], what="unpinned")
            await until(pilot, lambda: cell(table, leased, "flags")[2] == "L", what="L again")
            await select(pilot, app, durable, indexed=False)
            await pilot.press("K")
            await until(pilot, lambda: "has no lease" in notes(app), what="told")
            assert registry.poll(durable)["lease"] is None
            owner.kill()  # the lease ends the job; an ended job's lease decides nothing: no mark
            await until(pilot, lambda: registry.poll(leased)["status"] == "exited", what="ended by its lease")
            await until(pilot, lambda: cell(table, leased, "flags").strip() == "", what="no mark once ended")
    finally:
        owner.kill()
        owner.wait()
