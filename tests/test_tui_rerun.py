"""Pilot tests of rerun (`r`) against real jobs in a temporary home (no mocks)."""

from __future__ import annotations

import pytest
from pilot import confirm, notes, select, spawn, until

from hermes_procs.tui.app import HermesApp
from hermes_procs.tui.bars import DetailTitle
from hermes_procs.tui.dialogs import RerunScreen
from hermes_procs.tui.jobs_table import JobsTable, short_id

pytestmark = [pytest.mark.anyio, pytest.mark.timeout(60)]


def reruns_of(registry, sid: str) -> list[str]:
    return [j["session_id"] for j in registry.list() if j.get("rerun_of") == sid]


async def test_rerun_of_a_finished_job_starts_a_linked_copy_and_selects_it(registry, tmp_path):
    old = spawn(registry, 'echo "run $HP_MARK in $PWD"; exit 3', name="flaky", cwd=str(tmp_path),
                env={"HP_MARK": "m-42"})
    app = HermesApp(registry, sample_interval=0.2)
    async with app.run_test(size=(120, 34)) as pilot:
        table = app.query_one(JobsTable)
        await until(pilot, lambda: old in table.rows_by_id and not table.rows_by_id[old].running, what="exit")
        await select(pilot, app, old, indexed=False)
        await pilot.press("r")
        await until(pilot, lambda: reruns_of(registry, old), what="a new job with rerun_of")
        new = reruns_of(registry, old)[0]
        await until(pilot, lambda: app.main.selected == new, what="the new job selected")
        header = str(app.query_one(DetailTitle).render())
        assert f"rerun of {short_id(old)}" in header and new in header
        await until(pilot, lambda: not table.rows_by_id[new].running, what="the rerun ends")
        # the same command, cwd, env and name; the old job and its log stay
        meta = registry.get(new)["meta"]
        assert meta["name"] == "flaky" and meta["cwd"] == str(tmp_path) and not meta["pty"]
        assert f"run m-42 in {tmp_path}" in registry.read_log(new)["output"]
        assert old in table.rows_by_id and f"run m-42 in {tmp_path}" in registry.read_log(old)["output"]
        assert table.rows_by_id[new].label == "exited 3"
        # the header of the old job names its rerun
        await select(pilot, app, old, indexed=False)
        header = str(app.query_one(DetailTitle).render())
        assert f"rerun as {short_id(new)}" in header and "rerun of" not in header


async def test_rerun_of_a_running_job_asks_then_kills_and_restarts(registry):
    old = spawn(registry, "cat", name="server", pty=True)
    app = HermesApp(registry, sample_interval=0.2)
    async with app.run_test(size=(120, 34)) as pilot:
        await select(pilot, app, old, indexed=False)
        # n: nothing happens
        await pilot.press("r")
        await until(pilot, lambda: isinstance(app.screen, RerunScreen), what="the confirm dialog")
        assert "kill it and run it again" in str(app.screen.query_one(".title").render())
        await pilot.press("n")
        await until(pilot, lambda: not isinstance(app.screen, RerunScreen), what="dialog closed")
        await pilot.pause(0.3)
        assert registry.poll(old)["status"] == "running" and not reruns_of(registry, old)
        # confirmed: the old one is killed, the new one runs in a PTY and is selected
        await pilot.press("r")
        await until(pilot, lambda: isinstance(app.screen, RerunScreen), what="the confirm dialog")
        await confirm(pilot)
        await until(pilot, lambda: reruns_of(registry, old), what="the rerun")
        new = reruns_of(registry, old)[0]
        await until(pilot, lambda: app.main.selected == new, what="the new job selected")
        assert registry.poll(old)["status"] == "exited"
        poll = registry.poll(new)
        assert poll["status"] == "running" and poll["pty"] is True
        table = app.query_one(JobsTable)
        await until(pilot, lambda: old in table.rows_by_id and not table.rows_by_id[old].running, what="old ended")
        await pilot.pause(0.5)  # a few more samples
        # the kill was ours: no "Job killed" alert for it
        assert "Job killed" not in notes(app) and "Rerun started" in notes(app)


async def test_rerun_on_a_read_only_dashboard_is_refused(registry):
    old = spawn(registry, "true", name="done")
    app = HermesApp(registry, sample_interval=0.2, read_only=True)
    async with app.run_test(size=(120, 34)) as pilot:
        await select(pilot, app, old, indexed=False)
        await pilot.press("r")
        await until(pilot, lambda: "read-only" in notes(app), what="the refusal")
        await pilot.pause(0.3)
        assert not reruns_of(registry, old)
