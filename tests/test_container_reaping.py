"""Containers as they are, against a real Docker daemon: a pid 1 that never collects exits
(`sleep infinity`) must not fill the container with zombies, one warm template per home and
code serves every connection, and where nothing can collect them a warning says so."""

from __future__ import annotations

import os
import subprocess
import sys

import dockerd
import pytest
from conftest import wait_until

from hermes_procs.core import ProcessRegistry
from hermes_procs.core.remote.address import parse_host
from hermes_procs.core.remote.client import connection

pytestmark = [pytest.mark.timeout(120),
              pytest.mark.skipif(dockerd.available() is not None, reason=str(dockerd.available()))]

CLI = [sys.executable, "-m", "hermes_procs"]


def cli(url: str, *args: str) -> subprocess.CompletedProcess[str]:
    """One CLI call: one `docker exec` connection of its own, as an agent's shell commands are."""
    return subprocess.run([*CLI, "--host", url, *args], capture_output=True, text=True, timeout=60)


def zombies(daemon, name):
    return [p for p in daemon.processes(name) if p["state"] == "Z"]


def named(daemon, name, comm):
    return [p for p in daemon.processes(name) if p["comm"] == comm and p["state"] != "Z"]


def test_no_zombies_and_one_template_where_pid1_does_not_reap(docker_env):
    daemon = docker_env
    name = daemon.run(f"hp-reap-{os.getpid()}")  # pid 1: sleep infinity
    url = f"docker://{name}"
    try:
        # each CLI call is a connection of its own (the first sends the code, the others find it)
        ids = [cli(url, "run", "--", "echo", "job").stdout.strip(),
               cli(url, "run", "--", "bash", "-c", "sleep 0.5 & echo left a child").stdout.strip(),
               cli(url, "run", "--pty", "--", "cat").stdout.strip()]
        assert all(i.startswith("proc_") for i in ids), ids
        reg = ProcessRegistry(host=url)
        assert reg.kill(ids[-1], grace=0.5)["status"] == "killed"
        assert [reg.wait(sid, timeout=30)["status"] for sid in ids] == ["exited"] * 3
        # every supervisor, spare and leftover has ended; none is left a zombie
        wait_until(lambda: not zombies(daemon, name) and not named(daemon, name, "hp-supervisor"), timeout=15)
        assert len(named(daemon, name, "hp-template")) == 1, daemon.processes(name)
        status = reg.connect()
        assert status["reaper"] == "template" and not status.get("warning"), status
    finally:
        connection(parse_host(url)).close()
        daemon.docker("rm", "-f", name, check=False)


def test_a_container_with_an_init_needs_no_reaper(docker_env):
    daemon = docker_env
    name = daemon.run(f"hp-init-{os.getpid()}", init=True)
    url = f"docker://{name}"
    try:
        reg = ProcessRegistry(host=url)
        assert reg.connect()["reaper"] == "pid1"
        sid = reg.spawn("sleep 0.2 & echo hi")["session_id"]
        assert reg.wait(sid, timeout=30)["exit_code"] == 0
        # the first supervisor was started cold by the connection's server, whose child it is
        # until it ends: collected at the next look at the jobs (the dashboard's list, each second)
        wait_until(lambda: isinstance(reg.list(), list) and not zombies(daemon, name), timeout=15)
    finally:
        connection(parse_host(url)).close()
        daemon.docker("rm", "-f", name, check=False)


def test_a_warning_where_nothing_can_collect_exits(docker_env, tmp_path, monkeypatch):
    """The template off in the container (its environment): the client is told, in one line,
    what will happen and what to do."""
    daemon = docker_env
    name = f"hp-nothing-{os.getpid()}"
    daemon.docker("rm", "-f", name, check=False)
    daemon.docker("run", "-d", "--name", name, "--network", "none", "-e", "HERMES_PROCS_TEMPLATE_IDLE=0",
                  daemon.image, "sleep", "infinity")
    url = f"docker://{name}"
    monkeypatch.setenv("HERMES_PROCS_HOME", str(tmp_path / "local"))
    try:
        status = ProcessRegistry(host=url).connect()
        assert status["reaper"] == "none", status
        assert "zombies" in status["warning"] and "docker run --init" in status["warning"]
        assert "\n" not in status["warning"] and "(sleep)" in status["warning"]
        started = cli(url, "run", "--", "true")
        assert started.returncode == 0 and f"warning: {url}: pid 1 (sleep)" in started.stderr, started.stderr
        hosts = subprocess.run([*CLI, "hosts"], capture_output=True, text=True, timeout=60)
        assert "docker run --init" in hosts.stdout, hosts.stdout
    finally:
        connection(parse_host(url)).close()
        daemon.docker("rm", "-f", name, check=False)
