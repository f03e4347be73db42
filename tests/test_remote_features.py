"""Every feature on every remote host: the same tests over `ssh://` (a real OpenSSH server on
127.0.0.1, tests/sshd.py) and `docker://` (a real Docker daemon, tests/dockerd.py: a container
of the test image, `--network none`, `sleep infinity` as its pid 1, as containers often are).
Neither host has hermes-procs installed: the code is sent over the connection. The table in
docs/remote.md names these tests."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import dockerd
import pytest
import sshd
from conftest import wait_until

from hermes_procs.core import ProcessRegistry

pytestmark = pytest.mark.timeout(120)

CLI = [sys.executable, "-m", "hermes_procs"]
PORT_SERVER = ("import socket, time; s = socket.socket(); s.bind(('127.0.0.1', 0)); s.listen(); "
               "print('port', s.getsockname()[1], flush=True); time.sleep(60)")


@pytest.fixture(scope="module", params=["ssh", "docker"])
def box(request):
    """A RemoteRegistry over the module's ssh:// or docker:// host (skipped, saying why, where
    that cannot run). `box.exists(path)` says whether a path of its state home is there."""
    saved = {k: os.environ.get(k) for k in ("DOCKER_HOST", "HERMES_PROCS_SSH_ARGS")}
    cleanup = []
    if request.param == "docker":
        if dockerd.available():
            pytest.skip(dockerd.available())
        daemon = request.getfixturevalue("docker_daemon")
        os.environ["DOCKER_HOST"] = daemon.host
        name = daemon.run(f"hp-features-{os.getpid()}")
        reg = ProcessRegistry(host=f"docker://{name}")
        reg.exists = lambda rel: daemon.docker("exec", name, "test", "-e", f"/root/.hermes/procs/{rel}",
                                               check=False).returncode == 0
        cleanup.append(lambda: daemon.docker("rm", "-f", name, check=False))
    else:
        if sshd.available():
            pytest.skip(sshd.available())
        server = request.getfixturevalue("server")
        os.environ["HERMES_PROCS_SSH_ARGS"] = server.ssh_args
        rhome = server.home_dir()
        reg = ProcessRegistry(host=server.url(rhome))
        reg.exists = lambda rel: Path(rhome, rel).exists()
    yield reg
    reg.conn.close()
    for step in cleanup:
        step()
    for key, value in saved.items():
        if value is None:
            os.environ.pop(key, None)
        else:
            os.environ[key] = value


def cli(box, *args: str, timeout: float = 60) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*CLI, "--host", box.host.url, *args], capture_output=True, text=True, timeout=timeout)


def test_run_wait_log_search_events_and_times(box):
    started = box.spawn("echo first; echo 'warning: disk'; sleep 0.3; echo last; exit 3", name="build",
                        notify_on_complete=True)
    assert started["status"] == "running" and started["host"] == box.host.label, started
    sid = started["session_id"]
    done = box.wait(sid, timeout=30)
    assert (done["status"], done["exit_code"]) == ("exited", 3), done
    assert box.read_log(sid)["output"] == "first\nwarning: disk\nlast"
    found = box.search(sid, "warn")
    assert [m["line"] for m in found["matches"]] == ["warning: disk"], found
    assert box.status()["code"] in ("sent", "cached")
    events = box.drain_events("container-test")
    assert any(e.get("session_id") == sid and e.get("type") == "completion" for e in events), events
    assert box.drain_events("container-test") == []  # exactly once
    since = box.read_log(sid, since="1h")  # the output's arrival times (times.idx on the host)
    assert since["output"].endswith("last") and since["since"], since
    assert box.read_log(sid, since="2099-01-01T00:00:00")["output"] == ""


def test_pty_submit_and_the_screen_of_a_repl(box):
    """screen() of a PTY job in a container: the host has no terminal emulator (only the
    stdlib core and ptyprocess are sent), so the client draws the screen from the job's bytes."""
    sid = box.spawn("python3 -i", pty=True, rows=20, cols=70)["session_id"]
    assert box.wait(sid, timeout=30, until="output:>>> ")["status"] == "running"
    assert box.submit(sid, "print(6 * 7)")["status"] == "ok"
    # the answer and the next prompt: a screen taken before the prompt came had its cursor on "42"
    wait_until(lambda: box.read_log(sid)["output"].endswith("42\n>>> "), timeout=20)
    shown = box.screen(sid)
    assert shown["status"] == "running" and (shown["rows"], shown["cols"]) == (20, 70), shown
    assert ">>> print(6 * 7)" in shown["lines"] and "42" in shown["lines"], shown["lines"]
    assert shown["lines"][shown["cursor"][0]].startswith(">>>")
    # the CLI and the agent tool go the same way
    printed = cli(box, "screen", sid)
    assert printed.returncode == 0 and "42" in printed.stdout, printed.stderr
    from hermes_procs.core.agents.tool import handle_process

    tool = json.loads(handle_process({"action": "screen", "session_id": sid, "host": box.host.url}))
    assert "42" in tool["lines"], tool
    assert box.write(sid, "exit()\r")["status"] == "ok"
    assert box.wait(sid, timeout=30)["exit_code"] == 0
    after = box.screen(sid)  # a finished job's last screen
    assert after["status"] == "exited" and "42" in after["lines"]
    pipes = box.spawn("echo no terminal")["session_id"]
    refused = box.screen(pipes)
    assert refused["status"] == "error" and "pty=True" in refused["error"], refused
    assert box.screen("proc_000000000000")["status"] in ("not_found", "error")


def test_tree_and_a_signal_to_one_process(box):
    sid = box.spawn("sleep 300 & sleep 301 & wait")["session_id"]
    def sleeps():
        return [p for p in box.tree(sid)["processes"] if p["command"].startswith("sleep")]

    victim = wait_until(lambda: len(sleeps()) == 2 and next(p for p in sleeps() if p["command"] == "sleep 301"),
                        timeout=15)
    res = box.signal_process(sid, victim["pid"], "TERM")
    assert res["status"] == "ok", res
    wait_until(lambda: [p["command"] for p in sleeps()] == ["sleep 300"], timeout=10)
    assert box.poll(sid)["status"] == "running"  # the rest of the job runs on
    assert box.kill(sid, grace=0.5)["status"] == "killed"


def test_restart_runs_the_job_again_on_its_host(box):
    old = box.spawn("echo once; sleep 60", name="server")["session_id"]
    new = box.restart(old)
    assert new["status"] == "running" and new["session_id"] != old, new
    assert box.poll(old)["status"] == "exited"
    assert box.get(new["session_id"])["rerun_of"] == old
    box.kill(new["session_id"], grace=0.5)


@pytest.mark.parametrize("until, command, expect", [
    ("input", "read answer; echo got $answer", "awaiting_input"),
    ("quiet:0.5", "echo start; sleep 60", "quiet"),
    ("output:ready", "sleep 0.3; echo 'server ready'; sleep 60", "matched"),
    ("port", f"python3 -c \"{PORT_SERVER}\"", "port_open"),
])
def test_wait_until(box, until, command, expect):
    sid = box.spawn(command)["session_id"]
    try:
        if until == "port":  # the port it was given (a fixed one may be taken on the ssh host, this machine)
            port = wait_until(lambda: re.search(r"port (\d+)", box.read_log(sid)["output"]), timeout=15).group(1)
            until = f"port:{port}"
        res = box.wait(sid, timeout=30, until=until)
        assert (res["status"], res["reason"]) == ("running", expect), res
    finally:
        box.kill(sid, grace=0.5)


def test_cli_run_log_follow_submit_kill(box):
    if box.host.scheme == "ssh":
        pytest.skip("tests/test_remote_ssh.py runs the CLI over ssh (and across a dropped connection)")
    sid = cli(box, "run", "--", "bash", "-c", "for i in 1 2 3; do echo n$i; sleep 0.2; done").stdout.strip()
    follow = cli(box, "log", sid, "--follow")
    assert (follow.returncode, follow.stdout) == (0, "n1\nn2\nn3\n"), follow.stderr
    cat = box.spawn("cat", pty=True)["session_id"]
    assert cli(box, "submit", cat, "typed-in").returncode == 0
    wait_until(lambda: "typed-in" in box.read_log(cat)["output"], timeout=15)
    assert json.loads(cli(box, "kill", cat, "--json").stdout)["status"] == "killed"
    assert box.exists(f"jobs/{cat}")  # the job lives in the host's home


def test_agent_tool_and_mcp_take_a_host(box, tmp_path):
    """The `process` tool's and the MCP tools' `host` argument."""
    from hermes_procs.core.agents.mcp_server import build_server
    from hermes_procs.core.agents.tool import PROCESS_TOOL_SCHEMA, handle_process

    assert "host" in PROCESS_TOOL_SCHEMA["parameters"]["properties"]
    started = json.loads(handle_process({"action": "start", "command": "echo on-box", "host": box.host.url}))
    assert started["status"] == "running" and started["host"] == box.host.label, started
    done = json.loads(handle_process({"action": "wait", "session_id": started["session_id"], "host": box.host.url}))
    assert (done["status"], done["output"]) == ("exited", "on-box\n")
    assert started["session_id"] in [r["session_id"] for r in box.list()]
    bad = json.loads(handle_process({"action": "list", "host": "ftp://x"}))
    assert bad["status"] == "error" and "host" in bad["error"]
    assert build_server(home=str(tmp_path / "local")) is not None


def test_exec_ports_reuse_and_leases_on_the_host(box):
    """Issue 23 on a host: exec and submit with a yield, ports, reuse, the port guard, and a job
    leased to a connection's server there, which ends with the connection."""
    from test_ports_reuse import SERVER, free_port

    done = box.exec("echo one; exit 3")
    assert (done["status"], done["exit_code"], done["output"]) == ("exited", 3, "one\n")
    asks = box.exec("printf 'name? '; read x; echo hello $x")
    assert (asks["reason"], asks["output"]) == ("awaiting_input", "name? ")
    reply = box.submit(asks["session_id"], "ann", yield_ms=10_000)
    assert (reply["status"], reply["output"]) == ("exited", "hello ann\n")
    port = free_port()
    web = box.spawn(SERVER.format(port=port), name="web", reuse=True, port=port)
    try:
        assert box.wait(web["session_id"], timeout=30, until="port")["reason"] == "port_open"
        assert box.poll(web["session_id"])["ports"] == [port]
        assert box.spawn("sleep 1", name="web", reuse=True)["session_id"] == web["session_id"]
        refused = box.exec("true", port=port)
        assert refused["error"] == f"port {port} is in use by job {web['session_id']} (web); nothing was started"
        assert box.exec("true", yield_ms=-1)["error"].startswith("yield_ms must be")
    finally:
        box.kill(web["session_id"], grace=0.5)
    other = ProcessRegistry(host=box.host.url)  # a second connection: its server owns the leases
    owner = other.caller_pid()
    assert isinstance(owner, int)
    scratch = box.spawn("sleep 60", lease=owner)["session_id"]
    kept = box.spawn("sleep 60", lease=owner)["session_id"]
    assert box.pin(kept)["lease"] == {"pid": owner, "pinned": True, "owner_alive": True}
    other.conn.close()
    try:
        ended = box.wait(scratch, timeout=15)
        assert (ended["status"], ended["completion_reason"]) == ("exited", "killed")
        assert box.poll(kept)["status"] == "running"
    finally:
        box.kill(kept, grace=0.5)
