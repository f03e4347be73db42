"""The dashboard over this machine and a real SSH host (sshd on 127.0.0.1): the HOST column,
the host filter, the host's state in the top bar, and the log, input, new job and kill of a
remote job, all from the keyboard (Pilot)."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest
import sshd as sshd_mod
from pilot import confirm, until

from hermes_procs.core import ProcessRegistry
from hermes_procs.core.remote.hosts import HostSet, dashboard_registry
from hermes_procs.tui.app import HermesApp
from hermes_procs.tui.bars import DetailTitle, TopBar
from hermes_procs.tui.dialogs import KillScreen, NewJobScreen, RerunScreen
from hermes_procs.tui.jobs_table import JobsTable
from hermes_procs.tui.log_pane import LogPane

pytestmark = [pytest.mark.anyio, pytest.mark.timeout(90),
              pytest.mark.skipif(sshd_mod.available() is not None, reason=str(sshd_mod.available()))]


def rendered(widget) -> str:
    return str(widget.render())


def log_text(app) -> str:
    pane = app.query_one(LogPane)
    return "\n".join("".join(seg.text for seg in pane.render_line(y)) for y in range(pane.size.height))


async def test_local_and_remote_jobs_in_one_dashboard(registry, remote, server, hostset):
    here = registry.spawn("sleep 60", name="here-job")["session_id"]
    there = remote.spawn("echo remote-hello; read line; echo got-$line; sleep 60", name="there-job")["session_id"]
    app = HermesApp(hostset(registry, [remote.host.url]), sample_interval=0.2)
    async with app.run_test(size=(130, 36)) as pilot:
        table = app.query_one(JobsTable)
        await until(pilot, lambda: {here, there} <= set(table.rows_by_id), what="both jobs listed")
        assert table.show_hosts and table.columns["host"].width > 0
        assert table.rows_by_id[there].host == remote.host.label
        assert str(table.get_cell(there, "host")) == f"testbox:{server.port}"
        assert str(table.get_cell(here, "host")) == "local"
        top = app.query_one(TopBar)
        await until(pilot, lambda: "●" in rendered(top), what="host state in the top bar")

        # the remote job's log, its host in the detail title, and typing into it
        table.select_id(there)
        await until(pilot, lambda: "remote-hello" in log_text(app), what="remote log")
        assert "on " in rendered(app.query_one(DetailTitle))
        await pilot.press("i")
        for ch in "abc":
            await pilot.press(ch)
        await pilot.press("enter")
        await until(pilot, lambda: "got-abc" in log_text(app), what="remote input echoed")

        # the host filter: every host -> this machine -> the remote host -> every host
        await pilot.press("escape")
        table.focus()
        await pilot.press("H")
        await until(pilot, lambda: set(table._cells) == {here}, what="local only")
        assert "host:local" in rendered(top)
        await pilot.press("H")
        await until(pilot, lambda: set(table._cells) == {there}, what="remote only")
        await pilot.press("H")
        await until(pilot, lambda: {here, there} <= set(table._cells), what="every host")

        # kill the remote job from the dashboard
        table.select_id(there)
        await until(pilot, lambda: app.main.selected == there)
        await pilot.press("k")
        await until(pilot, lambda: isinstance(app.screen, KillScreen))
        await confirm(pilot)
        await until(pilot, lambda: table.rows_by_id[there].label == "killed", what="remote job killed")
        assert remote.poll(there)["status"] == "exited"
        assert registry.poll(here)["status"] == "running"


async def test_new_job_on_a_remote_host_and_an_unreachable_host(registry, remote, server, hostset):
    app = HermesApp(hostset(registry, [remote.host.url]), sample_interval=0.2)
    async with app.run_test(size=(120, 36)) as pilot:
        top = app.query_one(TopBar)
        await until(pilot, lambda: "●" in rendered(top), what="host connected")
        await pilot.press("n")
        await until(pilot, lambda: isinstance(app.screen, NewJobScreen))
        dialog = app.screen
        dialog.query_one("#new-command").value = "echo made-remotely; sleep 60"
        dialog.query_one("#new-host").value = remote.host.label
        dialog.query_one("#new-cwd").value = "/tmp"  # a folder of the host, not checked here
        await pilot.click("#start")
        table = app.query_one(JobsTable)
        await until(pilot, lambda: any(r.host == remote.host.label for r in table.rows_by_id.values()),
                    what="the new job is listed on its host")
        sid = next(r.session_id for r in table.rows_by_id.values() if r.host == remote.host.label)
        assert remote.poll(sid)["status"] == "running"

        # the host drops and cannot be reached: its rows stay, marked, and the top bar says so
        good = os.environ["HERMES_PROCS_SSH_ARGS"]
        os.environ["HERMES_PROCS_SSH_ARGS"] = good + " -o Port=1"
        server.drop_connections()
        await until(pilot, lambda: table.rows_by_id.get(sid) and table.rows_by_id[sid].unreachable,
                    what="row marked unreachable")
        assert "unreachable" in str(table.get_cell(sid, "status"))
        assert "unreachable" in rendered(top)
        os.environ["HERMES_PROCS_SSH_ARGS"] = good
        remote.conn._last_try = 0
        await until(pilot, lambda: not table.rows_by_id[sid].unreachable, what="host back")
        assert table.rows_by_id[sid].running


async def test_rerun_of_a_remote_job_runs_on_its_host(registry, remote, hostset):
    old = remote.spawn("echo remote-run; sleep 60", name="remote-server")["session_id"]
    app = HermesApp(hostset(registry, [remote.host.url]), sample_interval=0.2)
    async with app.run_test(size=(120, 36)) as pilot:
        table = app.query_one(JobsTable)
        await until(pilot, lambda: old in table.rows_by_id, what="the remote job listed")
        table.select_id(old)
        await until(pilot, lambda: app.main.selected == old)
        await pilot.press("r")
        await until(pilot, lambda: isinstance(app.screen, RerunScreen), what="the confirmation")
        await confirm(pilot)
        await until(pilot, lambda: (app.main.current_row() is not None
                                    and app.main.current_row().rerun_of == old), what="the rerun selected")
        new = app.main.selected
        assert table.rows_by_id[new].host == remote.host.label
        assert remote.poll(new)["status"] == "running" and remote.poll(old)["status"] == "exited"
        assert not [j for j in registry.list() if j.get("rerun_of") == old]  # nothing started here
        assert "rerun of" in rendered(app.query_one(DetailTitle))


def test_dashboard_registry_takes_explicit_configured_and_remembered_hosts(tmp_path, monkeypatch):
    home = tmp_path / "h"
    assert isinstance(dashboard_registry(home), ProcessRegistry)  # no hosts: the plain registry
    config = tmp_path / "config.toml"
    config.write_text('[hosts]\nbox = "ssh://me@build-box"\n')
    monkeypatch.setenv("HERMES_PROCS_CONFIG", str(config))
    view = dashboard_registry(home, ["docker://web"])
    assert isinstance(view, HostSet)
    assert set(view.remotes) == {"docker://web", "ssh://me@build-box"}
    assert view.host_name("ssh://me@build-box") == "box" and view.host_name("") == "local"
    assert view.host_name("docker://web") == "docker:web"
    with pytest.raises(ValueError, match="unsupported host scheme"):
        dashboard_registry(home, ["ftp://x"])


def test_hosts_command_lists_connects_and_forgets(server, tmp_path):
    env = {**os.environ, "HERMES_PROCS_SSH_ARGS": server.ssh_args, "HERMES_PROCS_HOME": str(tmp_path / "local")}
    url = server.url(server.home_dir())

    def cli(*args):
        return subprocess.run([sys.executable, "-m", "hermes_procs", *args], capture_output=True, text=True,
                              env=env, timeout=60)

    assert "no remote hosts" in cli("hosts").stdout
    started = cli("--host", url, "run", "--", "sleep 30")
    assert started.returncode == 0, started.stderr
    rows = json.loads(cli("hosts", "--json").stdout)  # remembered: the job was started from here
    label = url.split("?", 1)[0]
    assert [(r["host"], r["state"], r["running"]) for r in rows] == [(label, "connected", 1)]
    assert "connected    1/1 running" in cli("hosts").stdout
    assert cli("--host", url, "kill", started.stdout.strip()).returncode == 0
    forgot = cli("hosts", "--forget", url)
    assert forgot.returncode == 0 and "forgot" in forgot.stdout
    assert "no remote hosts" in cli("hosts").stdout
    again = cli("hosts", "--forget", url)
    assert again.returncode == 1 and again.stderr.count("\n") == 1 and "not a remembered host" in again.stderr
    bad = cli("--host", "ftp://x")  # the dashboard with a bad host: one line, before any terminal
    assert bad.returncode == 1 and bad.stderr.count("\n") == 1 and "unsupported host scheme" in bad.stderr



def test_hermes_adapter_stays_local_when_the_cli_default_host_is_remote(tmp_path, monkeypatch, login_shell_home):
    """$HERMES_PROCS_HOST sets the CLI's default host; the adapter (which reads job folders
    directly) keeps its jobs on this machine instead of breaking."""
    from hermes_procs.core.agents.compat import HermesProcessRegistry

    monkeypatch.setenv("HERMES_PROCS_HOST", "ssh://nobody@nonexistent.invalid")
    adapter = HermesProcessRegistry(home=tmp_path / "home")
    try:
        session = adapter.spawn_local("echo here")
        assert (tmp_path / "home" / "jobs" / session.id).is_dir()
        assert "here" in adapter.wait(session.id, timeout=30)["output"]
    finally:
        adapter.close()
