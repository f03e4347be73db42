"""list() and spawn with hundreds of running jobs: what a registry keeps between calls (meta.json and
proc.json of each job folder, the output preview while the log is unchanged), `list(only=...)`,
the one-read-per-process tree walk, and the dashboard sampler that re-reads only the rows on
screen; the job folder count a spawn takes in one stat. Every kept value must still follow a change."""

from __future__ import annotations

import json
import os
import shutil

import pytest
from conftest import until_async, wait_until

from hermes_procs.core import ProcessRegistry
from hermes_procs.core.supervisor import stats
from hermes_procs.tui.app import HermesApp
from hermes_procs.tui.jobs_table import JobsTable
from hermes_procs.tui.sampler import Sampler


def _row(rows: list[dict], sid: str) -> dict:
    return next(r for r in rows if r["session_id"] == sid)


def _gate(tmp_path, name: str) -> tuple[str, str]:
    """A job that prints `name` once the file `name` exists, then idles (no input, no event)."""
    flag = tmp_path / name
    return f"while [ ! -e {flag} ]; do sleep 0.02; done; echo {name}; sleep 60", str(flag)


def test_list_only_gives_just_those_jobs(registry):
    a, b, c = (registry.spawn("sleep 60")["session_id"] for _ in range(3))
    rows = registry.list(only={a, c, "proc_000000000000"})
    assert sorted(r["session_id"] for r in rows) == sorted([a, c])
    assert {r["session_id"] for r in registry.list()} == {a, b, c}
    assert registry.list(only=[]) == []
    assert registry.list(only="abc")["status"] == "error"


def test_a_warm_registry_shows_new_output_of_a_running_job(registry, tmp_path):
    command, flag = _gate(tmp_path, "hello-there")
    sid = registry.spawn(command)["session_id"]
    first = _row(registry.list(), sid)
    assert first["output_preview"] == "" and first["output_bytes"] == 0
    open(flag, "w").close()
    row = wait_until(lambda: (r := _row(registry.list(), sid))["output_bytes"] and r)
    assert "hello-there" in row["output_preview"] and row["output_bytes"] == len("hello-there\n")


def test_a_job_folder_replaced_under_the_same_name_is_read_again(registry, home):
    sid = registry.spawn("sleep 60", name="before")["session_id"]
    assert _row(registry.list(), sid)["name"] == "before"  # meta.json is now kept
    jobdir = registry.job_dir(sid)
    copy = home / "copy"
    shutil.copytree(jobdir, copy, ignore=shutil.ignore_patterns("sock"))
    meta = json.loads((copy / "meta.json").read_text())
    (copy / "meta.json").write_text(json.dumps({**meta, "name": "after"}))
    os.rename(jobdir, home / "old")
    os.rename(copy, jobdir)  # another folder (another inode) under the same name
    assert _row(registry.list(), sid)["name"] == "after"
    assert _row(ProcessRegistry(home=home).list(), sid)["name"] == "after"
    os.rename(home / "old", home / "jobs" / "proc_0123456789ab")  # the real job, killed at the end


def test_the_tree_walk_with_stat_fields_finds_what_tree_finds(registry):
    sid = registry.spawn("sh -c 'sleep 60 & sleep 60 & wait'; sleep 60")["session_id"]
    supervisor = json.loads((registry.job_dir(sid) / "proc.json").read_text())["supervisor_pid"]
    wait_until(lambda: len(stats.tree(supervisor, include_root=False)) >= 4)
    found = stats.tree_stats(supervisor, include_root=False)
    assert sorted(found) == sorted(stats.tree(supervisor, include_root=False))
    assert all(fields[0] in "RSDZT" for fields in found.values())
    assert _row(registry.list(), sid)["process_count"] == 4


def test_a_new_job_builds_one_row_and_keeps_the_others(registry):
    """A job that starts among finished ones: the sampler builds its row and keeps every other
    JobRow object (a new job moves no row's age), and the newest sort still puts it first."""
    done = [registry.spawn(f"echo {i}")["session_id"] for i in range(3)]
    for sid in done:
        registry.wait(sid, timeout=30)
    sampler = Sampler(registry, target=None)
    before = {r.session_id: r for r in sampler.sample().jobs}
    new = registry.spawn("sleep 30")["session_id"]
    after = sampler.sample().jobs
    assert [r.session_id for r in after] == [new, *reversed(done)]  # the list: newest first
    assert all(after[i + 1] is before[sid] for i, sid in enumerate(reversed(done)))
    assert max(r.age for r in after) == after[0].age and sorted(r.age for r in after) == [0, 1, 2, 3]
    registry.kill(new)


def test_the_sampler_rereads_the_rows_on_screen_and_the_rest_on_a_change(registry, tmp_path):
    on_command, on_flag = _gate(tmp_path, "shown")
    off_command, off_flag = _gate(tmp_path, "hidden")
    shown = registry.spawn(on_command)["session_id"]
    hidden = registry.spawn(off_command)["session_id"]
    sampler = Sampler(registry, target=None)
    sampler.PARTIAL_FROM = 1  # as with hundreds of running jobs
    sampler.FULL_EVERY = 3600.0
    started = registry.home / "events.jsonl"
    wait_until(lambda: started.exists() and started.read_text().count('"started"') == 2)
    sampler.sample()  # the first sample lists every job
    sampler.on_screen = frozenset({shown})
    open(on_flag, "w").close()
    open(off_flag, "w").close()
    outside = ProcessRegistry(home=registry.home)
    wait_until(lambda: all(_row(outside.list(), s)["output_bytes"] for s in (shown, hidden)))

    def rows():
        return {r.session_id: r for r in sampler.sample().jobs}

    got = wait_until(lambda: (r := rows())[shown].output_bytes and r)
    assert got[hidden].output_bytes == 0  # not on screen: the last full list's row
    sampler.FULL_EVERY = 0.0  # time for a full list: every row is read again
    assert rows()[hidden].output_bytes == len("hidden\n")
    sampler.FULL_EVERY = 3600.0
    registry.kill(hidden, grace=0.2)  # an exit appends to events.jsonl: a full list
    assert rows()[hidden].status == "exited"


@pytest.mark.anyio
@pytest.mark.timeout(60)
async def test_the_dashboard_tells_the_sampler_which_rows_are_on_screen(registry):
    ids = [registry.spawn("true")["session_id"] for _ in range(36)]  # newest first in the table
    for sid in ids:
        registry.wait(sid, timeout=30)
    app = HermesApp(registry, sample_interval=0.2)
    async with app.run_test(size=(100, 20)) as pilot:
        table = app.query_one(JobsTable)
        await until_async(lambda: len(table.rows_by_id) == 36, what="36 rows",
                          pause=lambda: pilot.pause(0.03))
        sampler = app.screen.sampler
        await until_async(lambda: ids[-1] in sampler.on_screen, what="the newest row on screen",
                          pause=lambda: pilot.pause(0.03))
        assert ids[0] not in sampler.on_screen  # the oldest job is far below the viewport
        table.scroll_end(animate=False)
        await until_async(lambda: ids[0] in sampler.on_screen, what="the oldest row on screen after a scroll",
                          pause=lambda: pilot.pause(0.03))
        assert ids[-1] not in sampler.on_screen


def test_spawn_counts_the_job_folders_in_one_stat(registry):
    from hermes_procs.core.registry.housekeeping import _folder_count
    from hermes_procs.core.registry.paths import list_job_ids

    for _ in range(3):
        registry.wait(registry.spawn("true")["session_id"], timeout=30)
    assert _folder_count(registry.jobs_dir) == len(list_job_ids(registry.jobs_dir)) == 3


@pytest.mark.anyio
@pytest.mark.timeout(60)
async def test_the_table_builds_cells_only_when_their_text_changes(registry):
    from dataclasses import replace

    from hermes_procs.tui.sampler import JobRow

    app = HermesApp(registry, sample_interval=0.2)
    async with app.run_test(size=(120, 30)) as pilot:
        app.screen.sampler.stop()  # the rows below are the only ones
        await pilot.pause(0.3)
        table = app.query_one(JobsTable)
        row = JobRow(session_id="proc_0123456789ab", name="", command="sleep 600", cwd="/", pid=42, pty=False,
                     status="running", label="running", exit_code=None, started=1.0e9, uptime=61.0, cpu=0.0,
                     rss=1 << 20, silence=61.0, age=0)
        table.apply([row])
        cell = table.get_cell(row.session_id, "time")
        assert cell == "1m"
        table.apply([replace(row, uptime=62.5, silence=62.5)])  # new figures, the same text
        assert table.get_cell(row.session_id, "time") is cell
        table.apply([replace(row, uptime=125.0, silence=125.0, waiting=True)])
        assert table.get_cell(row.session_id, "time") == "2m"
        assert "?" in table.get_cell(row.session_id, "flags").plain
        table.apply([replace(row, uptime=125.0, silence=125.0, cpu=12.0)])
        assert table.get_cell(row.session_id, "cpu") == "12"
        assert "?" not in table.get_cell(row.session_id, "flags").plain


@pytest.mark.anyio
@pytest.mark.timeout(60)
async def test_the_table_shows_a_stopped_job_and_the_signal_that_ended_one(registry):
    from textual.widgets.data_table import CellDoesNotExist, RowDoesNotExist

    stopped = registry.spawn("sleep 60")["session_id"]
    crashed = registry.spawn("kill -SEGV $$")["session_id"]
    registry.wait(crashed, timeout=30)
    wait_until(lambda: registry.poll(stopped)["process_count"] >= 1)
    registry.signal(stopped, "STOP")
    app = HermesApp(registry, sample_interval=0.2)
    async with app.run_test(size=(120, 30)):
        table = app.query_one(JobsTable)

        def status(sid: str) -> str:
            try:
                return table.get_cell(sid, "status").plain.strip()
            except (CellDoesNotExist, RowDoesNotExist):  # the row is not in yet
                return ""

        await until_async(lambda: status(stopped) == "stopped" and status(crashed) == "SIGSEGV")
        registry.signal(stopped, "CONT")
        await until_async(lambda: status(stopped) == "running")
    registry.kill(stopped, grace=0.2)


def test_a_registry_keeps_files_only_of_running_jobs(registry):
    from conftest import supervisor_gone

    running = registry.spawn("sleep 60")["session_id"]
    done = registry.spawn("true")["session_id"]
    registry.wait(done, timeout=30)
    supervisor_gone(registry, done)
    registry.list()  # the finished one goes to the index; only the running one's files are kept
    assert set(registry._seen) == {running}
    registry.kill(running, grace=0.2)
    supervisor_gone(registry, running)
    registry.list()
    assert registry._seen == {}
