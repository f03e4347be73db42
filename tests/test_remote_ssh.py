"""Jobs on a remote host through a real sshd on 127.0.0.1: the API, the CLI, drops, reconnects."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time

import pytest
import sshd as sshd_mod
from conftest import wait_until

from hermes_procs.core import ProcessRegistry
from hermes_procs.core.remote.address import parse_host
from hermes_procs.core.remote.client import RemoteRegistry, connection

pytestmark = pytest.mark.skipif(sshd_mod.available() is not None, reason=str(sshd_mod.available()))

CLI = [sys.executable, "-m", "hermes_procs"]


def cli(server, rhome, *args, input=None, timeout=60):
    env = {**os.environ, "HERMES_PROCS_SSH_ARGS": server.ssh_args}
    return subprocess.run([*CLI, "--host", server.url(rhome), *args], capture_output=True, text=True,
                          input=input, timeout=timeout, env=env)


def test_a_job_on_the_host_runs_under_its_supervisor_there(remote):
    assert isinstance(remote, RemoteRegistry)
    job = remote.spawn("echo out; echo err >&2; exit 3")
    assert job["status"] == "running" and job["host"] == remote.host.label
    res = remote.wait(job["session_id"], timeout=20)
    assert (res["status"], res["exit_code"]) == ("exited", 3)
    assert "out\nerr" in res["output"]
    # the job's folder is in the remote home, not in any local one
    assert (remote.test_home / "jobs" / job["session_id"] / "exit.json").exists()
    rows = remote.list()
    assert [r["session_id"] for r in rows] == [job["session_id"]] and rows[0]["host"] == remote.host.label
    assert remote.read_log(job["session_id"])["output"] == "out\nerr"
    assert remote.poll("nonexistent")["status"] in ("error", "not_found")


def test_code_is_sent_once_then_cached(server, tmp_path, monkeypatch):
    monkeypatch.setenv("HERMES_PROCS_SSH_ARGS", server.ssh_args)
    url = server.url(server.home_dir())
    first = ProcessRegistry(host=url).connect()
    assert first["state"] == "connected", first
    assert first["code"] in ("sent", "cached")
    connection(parse_host(url)).close()
    again = ProcessRegistry(host=url).connect()
    assert again["code"] == "cached"
    connection(parse_host(url)).close()


def test_pty_stream_stdin_resize_and_kill_of_a_tree(remote, alive):
    job = remote.spawn("cat", pty=True)
    sid = job["session_id"]
    with remote.stream(sid, input=True) as st:
        assert st.pty
        st.send(b"hello remote\r")
        got = b""
        deadline = time.monotonic() + 10
        while b"hello remote" not in got and time.monotonic() < deadline:
            got += st.read(0.5) or b""
        assert b"hello remote" in got
    assert remote.resize(sid, 40, 100)["status"] == "ok"
    tree = remote.spawn("sleep 300 & sleep 300 & wait")
    wait_until(lambda: "sleep" in open(f"/proc/{tree['pid']}/cmdline").read() or True)
    res = remote.kill(tree["session_id"], grace=1)
    assert res["status"] == "killed", res
    assert remote.submit(sid, "bye")["status"] == "ok"
    assert remote.kill(sid, grace=0.5)["status"] == "killed"


def test_screen_of_a_remote_pty_job(remote):
    """The host sends the bytes that draw the screen; this side draws them (the code sent to a
    host has no terminal emulator)."""
    sid = remote.spawn("printf 'top line\\n\\033[2J\\033[3;5Hdrawn at 3,5'; sleep 30", pty=True, rows=10,
                       cols=40)["session_id"]
    wait_until(lambda: "drawn" in remote.read_log(sid)["output"], timeout=15)
    shown = remote.screen(sid)
    assert (shown["status"], shown["rows"], shown["cols"]) == ("running", 10, 40), shown
    assert shown["lines"][2] == "    drawn at 3,5" and "top line" not in shown["lines"], shown["lines"]
    assert shown["host"] == remote.host.label and "data" not in shown
    remote.kill(sid, grace=0.5)


def test_wait_is_interrupted_on_the_remote_too(remote):
    import threading

    job = remote.spawn("sleep 30")
    stop = threading.Event()
    threading.Timer(0.3, stop.set).start()
    res = remote.wait(job["session_id"], timeout=20, interrupt=stop)
    assert res["status"] == "interrupted"
    assert remote.poll(job["session_id"])["status"] == "running"


def test_exit_code_survives_a_dropped_connection(server, remote):
    job = remote.spawn("sleep 1; echo done; exit 7")
    assert remote.connect()["state"] == "connected"
    server.drop_connections()
    wait_until(lambda: remote.status()["state"] == "unreachable", timeout=10)
    res = remote.poll(job["session_id"])  # reconnects
    assert res.get("host_state") != "unreachable", res
    res = remote.wait(job["session_id"], timeout=20)
    assert (res["status"], res["exit_code"], res["output"]) == ("exited", 7, "done\n")


def test_unreachable_host_is_one_clear_error(monkeypatch, tmp_path):
    monkeypatch.setenv("HERMES_PROCS_SSH_ARGS", "-o ConnectTimeout=3")
    reg = ProcessRegistry(host="ssh://root@127.0.0.1:1")
    res = reg.list()
    assert res["status"] == "error" and res["host_state"] == "unreachable"
    assert "unreachable" in res["error"] and "\n" not in res["error"]


@pytest.mark.parametrize("url", ["ftp://box", "ssh://", "ssh://-oProxyCommand=x", "box-not-configured",
                                 "docker://a/b", "k8s://a/b/c/d", "ssh://box:99999", ""])
def test_bad_host_urls_are_refused(url, monkeypatch, tmp_path):
    monkeypatch.setenv("HERMES_PROCS_CONFIG", str(tmp_path / "none.toml"))
    with pytest.raises(ValueError):
        parse_host(url, {})
    if not url:
        return  # --host "" means this machine
    res = subprocess.run([*CLI, "--host", url, "ls"], capture_output=True, text=True, timeout=30,
                         env={**os.environ, "HERMES_PROCS_CONFIG": str(tmp_path / "none.toml")})
    assert res.returncode == 1 and res.stderr.count("\n") == 1 and "Traceback" not in res.stderr


def test_host_names_from_the_config_file(server, tmp_path, monkeypatch):
    cfg = tmp_path / "config.toml"
    cfg.write_text(f'[hosts]\nbox = "{server.url(server.home_dir())}"\n')
    monkeypatch.setenv("HERMES_PROCS_CONFIG", str(cfg))
    monkeypatch.setenv("HERMES_PROCS_SSH_ARGS", server.ssh_args)
    reg = ProcessRegistry(host="box")
    assert reg.host.label == server.url().split("?")[0]
    assert reg.list() == []
    reg.conn.close()


def test_cli_run_ls_log_follow_write_kill(server, tmp_path):
    rhome = server.home_dir()
    res = cli(server, rhome, "run", "--", "bash", "-c", "for i in 1 2 3; do echo line$i; sleep 0.3; done; exit 4")
    assert res.returncode == 0, res.stderr
    sid = res.stdout.strip()
    follow = cli(server, rhome, "log", sid, "--follow")
    assert follow.returncode == 0, follow.stderr
    assert follow.stdout == "line1\nline2\nline3\n"
    ls = cli(server, rhome, "ls", "--json")
    rows = json.loads(ls.stdout)
    assert rows[0]["session_id"] == sid and rows[0]["exit_code"] == 4 and rows[0]["host"]
    cat = cli(server, rhome, "run", "--", "cat").stdout.strip()
    assert cli(server, rhome, "submit", cat, "typed remotely").returncode == 0
    wait_until(lambda: "typed remotely" in cli(server, rhome, "log", cat).stdout, timeout=15)
    killed = cli(server, rhome, "kill", cat, "--json")
    assert json.loads(killed.stdout)["status"] == "killed"
    bad = cli(server, rhome, "poll", "abcd1234")
    assert bad.returncode == 1 and "Traceback" not in bad.stderr


def test_log_follow_has_no_gap_or_duplicate_across_a_drop(server, tmp_path):
    rhome = server.home_dir()
    sid = cli(server, rhome, "run", "--", "bash", "-c",
              "for i in $(seq 1 40); do echo n$i; sleep 0.1; done").stdout.strip()
    env = {**os.environ, "HERMES_PROCS_SSH_ARGS": server.ssh_args}
    follow = subprocess.Popen([*CLI, "--host", server.url(rhome), "log", sid, "--follow"],
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    first = follow.stdout.readline()  # following now
    server.drop_connections()  # the follow's ssh dies mid-stream
    out = first + follow.stdout.read()  # (communicate() would skip what readline buffered)
    err = follow.stderr.read()
    follow.wait(timeout=60)
    assert out.split() == [f"n{i}" for i in range(1, 41)], (out, err)


def test_one_view_of_local_and_remote_jobs(server, remote, registry, tmp_path, hostset):
    """The dashboard's HostSet: merged list with host, calls routed by id, logs mirrored."""

    view = hostset(registry, [remote.host.url])
    here = registry.spawn("sleep 30", name="local-one")
    there = remote.spawn("for i in 1 2 3; do echo remote-$i; done; sleep 30", name="remote-one")
    rows = {r["name"]: r for r in view.list()}
    assert rows["local-one"]["host"] == "" and rows["remote-one"]["host"] == remote.host.label
    assert view.poll(there["session_id"])["host"] == remote.host.label
    assert view.poll(here["session_id"])["status"] == "running"
    # the log of the remote job appears in a local mirror file (what the log pane reads)
    wait_until(lambda: view.log_files(there["session_id"])
               and b"remote-3" in view.log_files(there["session_id"])[0].read_bytes(), timeout=15)
    # closing the view stops its log mirrors (they copied on for 30 s, reconnecting to the host)
    mirror = [t for t in threading.enumerate() if t.name == f"mirror-{there['session_id']}"]
    assert mirror and mirror[0].is_alive()
    view.close()
    assert not mirror[0].is_alive()
    assert view.host_states()[0]["state"] == "connected"
    # a dropped connection keeps the host's rows, marked unreachable, not lost
    good = os.environ["HERMES_PROCS_SSH_ARGS"]
    os.environ["HERMES_PROCS_SSH_ARGS"] = good + " -o Port=1"  # the host cannot be reached now
    server.drop_connections()
    wait_until(lambda: remote.status()["state"] == "unreachable", timeout=20)
    rows = {r["name"]: r for r in view.list()}
    assert rows["remote-one"]["host_state"] == "unreachable" and rows["remote-one"]["status"] == "running"
    assert view.host_states()[0]["state"] == "unreachable"
    os.environ["HERMES_PROCS_SSH_ARGS"] = good
    remote.conn._last_try = 0  # no need to wait for the next reconnect slot
    res = view.kill(there["session_id"], grace=0.5)
    assert res["status"] == "killed", res
    assert view.kill(here["session_id"], grace=0.5)["status"] == "killed"
