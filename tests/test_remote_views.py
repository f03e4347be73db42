"""The dashboard and the browser view with remote hosts, over a real OpenSSH server and a real
Docker daemon: a host's jobs in the table next to this machine's, a remote job's log with the
time each line arrived over there (`T`), typing into a remote PTY job in the terminal pane, a
stopped container's rows; the same dashboard in a browser (`hermes-procs web`); and the
terminal pane's scrollback over a RemoteRegistry, which pages read_log past its answer cap.
tests/test_remote_dashboard.py has the rest over ssh (host filter, input bar, new job, kill,
rerun, a host that drops)."""

from __future__ import annotations

import os
import re
import subprocess
import sys

import dockerd
import pytest
import sshd
from pilot import select, until

from hermes_procs.core import ProcessRegistry
from hermes_procs.core.remote.address import parse_host
from hermes_procs.core.remote.client import connection
from hermes_procs.tui.app import HermesApp
from hermes_procs.tui.bars import TopBar
from hermes_procs.tui.jobs_table import JobsTable
from hermes_procs.tui.log_pane import LogPane
from hermes_procs.tui.terminal import TerminalPane

pytestmark = [pytest.mark.anyio, pytest.mark.timeout(120)]

CLOCK = re.compile(r"(\d\d:\d\d:\d\d) (early|late)$")


def container(request, monkeypatch) -> ProcessRegistry:
    """A RemoteRegistry over a container of this test (removed afterwards)."""
    if dockerd.available():
        pytest.skip(dockerd.available())
    daemon = request.getfixturevalue("docker_daemon")
    monkeypatch.setenv("DOCKER_HOST", daemon.host)
    name = daemon.run(f"hpv{os.getpid()}{request.node.name[5:8]}")  # short: a HOST cell shows it whole
    reg = ProcessRegistry(host=f"docker://{name}")
    reg.daemon, reg.name, reg.short = daemon, name, f"docker:{name}"
    request.addfinalizer(lambda: (connection(parse_host(reg.host.url)).close(),
                                  daemon.docker("rm", "-f", name, check=False)))
    return reg


def ssh_host(request) -> ProcessRegistry:
    if sshd.available():
        pytest.skip(sshd.available())
    reg = request.getfixturevalue("remote")
    reg.short = "testbox:"  # and its port, if the HOST column is wide enough
    return reg


@pytest.fixture(params=["ssh", "docker"])
def box(request, monkeypatch):
    return container(request, monkeypatch) if request.param == "docker" else ssh_host(request)


def log_rows(app) -> list[str]:
    pane = app.query_one(LogPane)
    return [pane.render_line(y).text.rstrip() for y in range(pane.size.height)]


async def test_a_hosts_jobs_their_times_and_a_terminal(registry, box, hostset):
    here = registry.spawn("sleep 60", name="local-one")["session_id"]
    ticker = box.spawn("echo early; sleep 1.2; echo late; sleep 60", name="ticker")["session_id"]
    repl = box.spawn("python3 -q -i", pty=True, name="repl")["session_id"]
    app = HermesApp(hostset(registry, [box.host.url]), sample_interval=0.2)
    async with app.run_test(size=(130, 36)) as pilot:
        table = app.query_one(JobsTable)
        await until(pilot, lambda: {here, ticker, repl} <= set(table.rows_by_id), what="every job listed")
        assert str(table.get_cell(repl, "host")).startswith(box.short)
        assert str(table.get_cell(here, "host")) == "local"
        await until(pilot, lambda: "●" in str(app.query_one(TopBar).render()), what="connected")

        # the remote job's log, and when each line arrived there (its times.idx, mirrored)
        await select(pilot, app, ticker)
        await until(pilot, lambda: "late" in log_rows(app), what="the ticker's lines")
        await pilot.press("l", "T")  # to the log pane, then its times
        await until(pilot, lambda: all(CLOCK.match(r) for r in log_rows(app) if r), what="the time gutter")
        early, late = (CLOCK.match(r).group(1) for r in log_rows(app) if r)
        assert early != late  # 1.2 s apart over there (one second of the clock passed, at least)

        # type into the PTY job over there
        await select(pilot, app, repl, indexed=False)
        await pilot.press("t")
        pane = await until(pilot, lambda: app.query(TerminalPane).first(None), what="the terminal pane")
        await until(pilot, lambda: ">>>" in pane.screen_text(), what="the prompt")
        await pilot.press(*"print(6*7)", "enter")
        await until(pilot, lambda: "\n42\n" in pane.screen_text(), what="the answer")
        assert [i["source"] for i in box.inputs(repl)] == ["human"]
        assert "42" in box.screen(repl)["lines"]

        if box.host.scheme == "docker":  # the container stops: its rows stay, marked, the top bar says why
            await pilot.press("ctrl+right_square_bracket")
            box.daemon.docker("stop", "-t", "0", box.name)
            await until(pilot, lambda: table.rows_by_id[ticker].unreachable, what="rows marked")
            await until(pilot, lambda: f"{box.short} down" in str(app.query_one(TopBar).render()),
                        what="down in the top bar")
            assert registry.poll(here)["status"] == "running"


def test_the_browser_view_shows_every_hosts_jobs(request, monkeypatch, tmp_path):
    """`hermes-procs web` serves the same dashboard: the hosts jobs were started on from this
    home (a container and an ssh host) show with their jobs."""
    from webserver import Screen, Served, chromium

    hosts = [container(request, monkeypatch)]
    if not sshd.available():
        hosts.append(ssh_host(request))
    home = tmp_path / "home"  # this machine's: the hosts are remembered there (--home would name the host's)
    for i, box in enumerate(hosts):
        started = subprocess.run([sys.executable, "-m", "hermes_procs", "--host", box.host.url, "run", "--name",
                                  f"remote-job-{i}", "--", "sleep", "60"], capture_output=True, text=True,
                                 timeout=60, env={**os.environ, "HERMES_PROCS_HOME": str(home)})
        assert started.returncode == 0, started.stderr
    served = Served(home)
    try:
        with chromium() as browser:
            page = browser.new_page(viewport={"width": 1400, "height": 800})
            screen = Screen(page)
            page.goto(f"http://127.0.0.1:{served.port}/?token={served.token}")
            screen.wait_for(*(f"remote-job-{i}" for i in range(len(hosts))), *(b.short for b in hosts), timeout=60)
    finally:
        served.stop()


async def test_a_remote_terminals_scrollback_asks_on_past_a_capped_answer(request):
    # a RemoteRegistry has no job folder here: a page of scrollback comes from read_log, whose
    # answers hold at most 1 MiB: 23 lines of 60,000 characters take two answers
    from textual.app import App

    remote = ssh_host(request)
    sid = remote.spawn("python3 -c \"print(('y' * 60000 + chr(10)) * 40, end='')\"; exec cat", pty=True)["session_id"]

    class PaneApp(App):
        def compose(self):
            yield TerminalPane(remote, sid)

    app = PaneApp()
    async with app.run_test(size=(80, 24)) as pilot:
        await until(pilot, lambda: remote.search(sid, "^y{60000}$", limit=1)["total"] == 40, what="40 long lines")
        pane = app.query_one(TerminalPane)
        pane.focus()
        await pilot.press("shift+pageup")
        await until(pilot, lambda: pane.back > 0 and pane._history, what="the scrollback view")
        assert len(pane._history) == pane.engine.rows - 1  # the whole window, not 1 MiB's worth of it
        assert {line.plain for line in pane._history} == {"y" * 60000}
