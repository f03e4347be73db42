"""A container stopped, restarted or removed under running jobs, against a real Docker daemon:
the client says so in one line, nothing waits for a host that will not answer, and jobs of a
restarted container are `lost` (no exit code is made up)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time

import dockerd
import pytest
from conftest import wait_until

from hermes_procs.core import ProcessRegistry
from hermes_procs.core.remote.address import parse_host
from hermes_procs.core.remote.client import connection

pytestmark = [pytest.mark.timeout(120),
              pytest.mark.skipif(dockerd.available() is not None, reason=str(dockerd.available()))]

CLI = [sys.executable, "-m", "hermes_procs"]


@pytest.fixture
def box(docker_env, request):
    """A RemoteRegistry over a container of this test (removed afterwards)."""
    name = docker_env.run(f"hp-life-{request.node.name[5:20]}-{os.getpid()}")
    reg = ProcessRegistry(host=f"docker://{name}")
    reg.daemon, reg.name = docker_env, name
    yield reg
    connection(parse_host(reg.host.url)).close()
    docker_env.docker("rm", "-f", name, check=False)


def popen(box, *args: str) -> subprocess.Popen[str]:
    return subprocess.Popen([*CLI, "--host", box.host.url, *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True)


def finished(proc: subprocess.Popen[str], timeout: float = 30) -> tuple[int, str, str]:
    out, err = proc.communicate(timeout=timeout)  # a hang fails here
    return proc.returncode, out, err


def test_a_stopped_container_ends_waits_and_follows_with_one_line(box):
    sid = box.spawn("echo started; sleep 300")["session_id"]
    wait_until(lambda: "started" in box.read_log(sid)["output"], timeout=15)
    waiter = popen(box, "wait", sid)
    follower = popen(box, "log", sid, "--follow")
    wait_until(lambda: len([p for p in box.daemon.processes(box.name) if p["comm"] == "python3"]) >= 2, timeout=15)
    box.daemon.docker("stop", "-t", "0", box.name)
    for proc in (waiter, follower):
        code, out, err = finished(proc)
        assert code == 1 and err.count("\n") == 1 and "Traceback" not in err, (out, err)
        assert f"host {box.host.label} is down: container {box.name} was stopped" in err, err
    res = box.poll(sid)
    assert (res["status"], res["host_state"]) == ("error", "down"), res
    assert "its jobs ended with it" in res["error"]
    assert box.status()["state"] == "down"


def test_a_restarted_container_reports_its_jobs_lost(box):
    done = box.spawn("echo done; exit 5")["session_id"]
    assert box.wait(done, timeout=30)["exit_code"] == 5
    sid = box.spawn("echo started; sleep 300")["session_id"]
    wait_until(lambda: "started" in box.read_log(sid)["output"], timeout=15)
    follower = popen(box, "log", sid, "--follow")
    wait_until(lambda: len([p for p in box.daemon.processes(box.name) if p["comm"] == "python3"]) >= 2, timeout=15)
    box.daemon.docker("restart", "-t", "0", box.name)
    # it ends with the output it had: quietly when the container answered again (how the job
    # ended goes to a terminal only, this is a pipe), else saying in one line it was stopped
    code, out, err = finished(follower)
    said_down = code == 1 and err.count("\n") == 1 and "is down: container" in err
    assert out == "started\n" and ((code, err) == (0, "") or said_down), (code, out, err)
    box.conn._last_try = 0  # no need to wait for the next reconnect slot
    res = wait_until(lambda: (r := box.poll(sid)).get("status") != "error" and r, timeout=20)
    assert (res["status"], res["completion_reason"], res["exit_code"]) == ("exited", "lost", None), res
    assert box.poll(done)["exit_code"] == 5  # recorded before the restart: kept
    waited = subprocess.run([*CLI, "--host", box.host.url, "--json", "wait", sid], capture_output=True, text=True,
                            timeout=30)
    assert json.loads(waited.stdout)["completion_reason"] == "lost" and json.loads(waited.stdout)["exit_code"] is None
    again = box.spawn("echo after the restart")
    assert box.wait(again["session_id"], timeout=30)["output"] == "after the restart\n"


def test_a_removed_container_is_one_line_and_nothing_hangs(box):
    sid = box.spawn("sleep 300")["session_id"]
    follower = popen(box, "log", sid, "--follow")
    time.sleep(1)
    box.daemon.docker("rm", "-f", box.name)
    code, _out, err = finished(follower)
    assert code == 1 and err.count("\n") == 1 and f"no container named {box.name}" in err, err
    started = time.monotonic()
    res = box.list()
    assert res["status"] == "error" and res["host_state"] == "down" and "removed?" in res["error"], res
    cli = subprocess.run([*CLI, "--host", box.host.url, "ls"], capture_output=True, text=True, timeout=30)
    assert cli.returncode == 1 and cli.stderr.count("\n") == 1 and "no container named" in cli.stderr, cli.stderr
    assert time.monotonic() - started < 15
