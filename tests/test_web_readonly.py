"""`hermes-procs web --read-only`: the dashboard refuses every change to a job, in the app
process itself (a modified browser client only sends keys; the server-side app decides)."""

from __future__ import annotations

import pytest
from conftest import until_async
from pilot import notes

from hermes_procs.tui.app import HermesApp
from hermes_procs.tui.dialogs import KillScreen, NewJobScreen
from hermes_procs.tui.jobs_table import JobsTable

pytestmark = [pytest.mark.anyio, pytest.mark.timeout(30)]


async def test_read_only_refuses_kill_new_job_and_input(registry, alive):
    sid = registry.spawn("sleep 60", name="keeper")["session_id"]
    app = HermesApp(registry, sample_interval=0.2, read_only=True)
    async with app.run_test(size=(100, 30)) as pilot:
        async def until(predicate, what=""):
            return await until_async(predicate, 6.0, what, pause=lambda: pilot.pause(0.03))

        table = app.query_one(JobsTable)
        await until(lambda: sid in table.rows_by_id, "listed")
        table.select_id(sid)
        await until(lambda: app.main.selected == sid, "selected")
        pid = table.rows_by_id[sid].pid
        await pilot.press("k")
        await until(lambda: "read-only" in notes(app), "read-only toast")
        assert not isinstance(app.screen, KillScreen)
        for key in ("n", "i", "s", "t"):
            await pilot.press(key)
        await pilot.pause(0.1)
        assert not isinstance(app.screen, NewJobScreen)
        bar = app.main.input_bar
        assert not bar.has_class("shown") or not bar.line.has_focus
        # what a modified client could reach: the registry the app holds refuses too
        assert app.registry.kill(sid) == {"status": "error", "error": "read-only"}
        assert app.registry.submit(sid, "x")["error"] == "read-only"
        assert app.registry.spawn("true")["error"] == "read-only"
        with pytest.raises(PermissionError):
            app.registry.stream(sid, input=True)
    assert alive(pid)
    assert registry.poll(sid)["status"] == "running"
