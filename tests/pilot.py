"""Helpers of the Textual pilot tests (the dashboard against real jobs): wait for a condition
while the app runs, read its toasts, start a job that must be running, select a job.

The `anyio_backend` fixture these tests need (asyncio: what Textual runs on) is in conftest.py.
"""

from __future__ import annotations

from typing import Any

from conftest import until_async

from hermes_procs.tui.jobs_table import JobsTable
from hermes_procs.tui.keyroute import TypeAheadGuard
from hermes_procs.tui.log_pane import LogPane


async def until(pilot: Any, predicate: Any, timeout: float = 20.0, what: str = "") -> Any:
    """Wait (letting the app run) until `predicate()` is true; fail after `timeout` seconds,
    naming `what` (a loaded 2-core CI machine is slow: the bound is generous, a hang still fails)."""
    return await until_async(predicate, timeout, what, pause=lambda: pilot.pause(0.03))


def notes(app: Any) -> str:
    """Every toast the app has shown, title and message, one a line."""
    return "\n".join(f"{n.title} {n.message}" for n in app._notifications)


def spawn(registry: Any, command: str, **kw: Any) -> str:
    """Start `command` as a job (spawn's keywords) and return its id; it must be running."""
    r = registry.spawn(command, **kw)
    assert r["status"] == "running", r
    return r["session_id"]


async def settle(pilot: Any) -> None:
    """Wait as a person reads the open confirmation or signal chooser: the keys it gets sooner
    were typed ahead and are dropped (tui/keyroute.py)."""
    await until(pilot, lambda: pilot.app.screen.focused is not None, what="the dialog focused")
    await pilot.pause(TypeAheadGuard.QUIET + 0.1)


async def confirm(pilot: Any) -> None:
    """Answer the open confirmation: Enter on its confirm button, after a look at it."""
    await settle(pilot)
    await pilot.press("enter")


async def select(pilot: Any, app: Any, sid: str, indexed: bool = True) -> None:
    """Select job `sid` in the table once it is listed; `indexed`: also wait until the log pane's
    line index is ready (its first view is the raw tail)."""
    table = app.query_one(JobsTable)
    await until(pilot, lambda: sid in table.rows_by_id, what=f"{sid} listed")
    table.select_id(sid)
    await until(pilot, lambda: app.main.selected == sid, what="selected")
    if indexed:
        pane = app.query_one(LogPane)
        await until(pilot, lambda: pane.reader is not None and pane.reader.index is not None
                    and not pane._tail_mode, what="log indexed")
