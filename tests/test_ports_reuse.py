"""Ports, reuse and the port guard (issue 23 items 1-3), through the API and the CLI, with real
listening sockets: `ports` in poll, list, ls --json and per process in tree; `spawn(reuse=True)`
returns the running job of the same name; `spawn(port=N)` refuses a port in use, naming its
holder, and creates nothing; `wait(until="port")` waits for the job's own port."""

from __future__ import annotations

import json
import os
import socket
import threading

import pytest
from clirun import cli

# a server: listens on argv[1] (0: any free port) and says which, then stays
SERVER = ("exec python3 -I -S -c 'import socket,sys,time; s=socket.socket(); "
          "s.bind((\"127.0.0.1\", int(sys.argv[1]))); s.listen(); print(\"listening\", s.getsockname()[1], "
          "flush=True); time.sleep(60)' {port}")


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def serve(registry, port: int = 0, **options) -> tuple[str, int]:
    """A job listening on `port` (any free one for 0): its id and its port."""
    started = registry.spawn(SERVER.format(port=port), **options)
    assert started["status"] == "running", started
    got = registry.wait(started["session_id"], timeout=10, until=r"output:listening \d+")
    assert got["reason"] == "matched", got
    return started["session_id"], int(got["matched"].split()[1])


def job_count(registry) -> int:
    return len(os.listdir(registry.jobs_dir))


def test_ports_in_poll_list_and_tree(registry, home):
    sid, port = serve(registry, name="web")
    idle = registry.spawn("sleep 30")["session_id"]
    assert registry.poll(sid)["ports"] == [port]
    rows = {row["session_id"]: row for row in registry.list()}
    assert rows[sid]["ports"] == [port] and rows[idle]["ports"] == []
    (process,) = registry.tree(sid)["processes"]
    assert process["ports"] == [port]
    listed = {row["session_id"]: row for row in json.loads(cli(home, "ls", "--json").stdout)}
    assert listed[sid]["ports"] == [port]
    head, *lines = cli(home, "ls").stdout.splitlines()
    assert head.split() == ["ID", "STATUS", "PID", "STARTED", "DURATION", "PORTS", "COMMAND"]
    assert [line.split()[5] for line in lines if line.startswith(sid)] == [str(port)]
    assert f"listening on: {port}" in cli(home, "poll", sid).stdout
    assert str(port) in cli(home, "tree", sid).stdout.splitlines()[1]
    registry.kill(sid, grace=0.2)
    assert registry.poll(sid)["ports"] == []  # a finished job listens on nothing
    assert "PORTS" not in cli(home, "ls").stdout  # nobody listens: no column


def test_only_the_process_that_listens_shows_the_port(registry):
    shell = registry.spawn(SERVER.format(port=0).replace("exec ", "") + "; true")["session_id"]
    got = registry.wait(shell, timeout=10, until=r"output:listening \d+")
    port = int(got["matched"].split()[1])
    rows = registry.tree(shell)["processes"]
    assert [row["ports"] for row in rows] == [[], [port]]  # bash, then its python child
    assert registry.poll(shell)["ports"] == [port]  # the job's whole tree


def test_the_port_guard_names_a_job_and_creates_nothing(registry, home):
    sid, port = serve(registry, name="web")
    before = job_count(registry)
    refused = registry.spawn("sleep 1", port=port)
    assert refused["status"] == "error"
    assert refused["error"] == f"port {port} is in use by job {sid} (web); nothing was started"
    assert job_count(registry) == before
    out = cli(home, "run", "--port", str(port), "--", "sleep", "1")
    assert out.returncode == 1 and out.stderr == f"hermes-procs: error: {refused['error']}\n"
    assert job_count(registry) == before
    stacked, port = serve(registry, name="web", stack="st1")  # several stacks may have a web
    assert registry.spawn("sleep 1", port=port)["error"] == \
        f"port {port} is in use by job {stacked} (st1/web); nothing was started"


def test_a_job_started_with_the_port_holds_it_before_it_listens(registry):
    port = free_port()
    first = registry.spawn(f"sleep 0.3; {SERVER.format(port=port)}", name="dev", port=port)
    assert (first["status"], first["port"]) == ("running", port)
    second = registry.spawn("sleep 1", port=port)
    assert second["error"] == (f"port {port} is in use by job {first['session_id']} (dev), started with "
                               f"port={port} and not listening yet; nothing was started")
    got = registry.wait(first["session_id"], timeout=10, until="port")  # the job's own port
    assert (got["reason"], got["port"]) == ("port_open", port)
    assert registry.poll(first["session_id"])["port"] == port


def test_the_port_guard_names_an_outside_process():
    with socket.socket() as outside:
        outside.bind(("127.0.0.1", 0))
        outside.listen()
        port = outside.getsockname()[1]
        from hermes_procs.core.registry.portguard import holder

        who = holder([], port)
    assert who is not None and who.startswith(f"pid {os.getpid()} (") and "python" in who
    assert who.endswith("which is not a hermes-procs job of this home")
    assert holder([], port) is None  # closed: free again


def test_an_outside_listener_refuses_the_spawn(registry):
    with socket.socket() as outside:
        outside.bind(("127.0.0.1", 0))
        outside.listen()
        port = outside.getsockname()[1]
        got = registry.spawn("sleep 1", port=port)
    assert got["status"] == "error" and f"in use by pid {os.getpid()} (" in got["error"]
    assert job_count(registry) == 0


@pytest.mark.parametrize("port", [0, 70000, -1, "3000", True, 3000.5])
def test_bad_ports_get_one_line_and_create_nothing(registry, port):
    got = registry.spawn("sleep 1", port=port)
    assert got["status"] == "error" and "\n" not in got["error"]
    assert got["error"].startswith("port must be a whole number from 1 to 65535")
    assert job_count(registry) == 0


def test_wait_until_port_needs_a_port(registry):
    sid = registry.spawn("sleep 30")["session_id"]
    got = registry.wait(sid, timeout=1, until="port")
    assert got["status"] == "error" and "started without one: use until='port:N'" in got["error"]


def test_reuse_returns_the_running_job_of_the_name(registry, home):
    sid, _ = serve(registry, name="web")
    again = registry.spawn("echo a second server", name="web", reuse=True)
    assert (again["status"], again["session_id"], again["reused"]) == ("running", sid, True)
    assert again["command"] == SERVER.format(port=0)
    assert job_count(registry) == 1
    out = cli(home, "run", "--reuse", "--name", "web", "--", "echo", "another")
    assert (out.returncode, out.stdout.strip()) == (0, sid)
    other = registry.spawn("sleep 30", name="worker", reuse=True)  # another name: a new job
    assert other["reused"] is False and other["session_id"] != sid
    registry.kill(sid, grace=0.2)
    fresh = registry.spawn("sleep 30", name="web", reuse=True)  # the old one ended: a new one
    assert fresh["reused"] is False and fresh["session_id"] != sid


def test_reuse_never_hands_back_a_stacks_job(registry):
    """A stack's `worker` is `STACK/worker`: `run --name worker --reuse` gave it back (another
    command, maybe another project's stack)."""
    stacked = registry.spawn("sleep 30", name="worker", stack="proj")
    free = registry.spawn("sleep 31", name="worker", reuse=True)
    assert free["reused"] is False and free["session_id"] != stacked["session_id"]
    again = registry.spawn("sleep 32", name="worker", reuse=True)
    assert (again["reused"], again["session_id"]) == (True, free["session_id"])


def test_reuse_needs_a_name_and_a_flag(registry):
    assert registry.spawn("sleep 1", reuse=True)["error"].startswith("reuse needs a name")
    assert registry.spawn("sleep 1", name="x", reuse="yes")["error"].startswith("reuse must be true or false")
    assert job_count(registry) == 0


def test_concurrent_reuses_start_one_job(registry):
    results = []

    def start():
        results.append(registry.spawn("sleep 30", name="once", reuse=True))

    threads = [threading.Thread(target=start) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(30)
    assert len({r["session_id"] for r in results}) == 1
    assert sorted(r["reused"] for r in results) == [False, True, True, True]
    assert job_count(registry) == 1


def test_an_outside_holders_hostile_command_line_is_escaped(registry):
    port = free_port()
    listener = ("#\x1b]0;owned\x07\u202e\nimport socket, sys, time; s = socket.socket(); "
                "s.bind(('127.0.0.1', int(sys.argv[1]))); s.listen(); print('up', flush=True); time.sleep(30)")
    import subprocess
    import sys

    outside = subprocess.Popen([sys.executable, "-c", listener, str(port)],
                               stdout=subprocess.PIPE, text=True)
    try:
        assert outside.stdout.readline() == "up\n"
        error = registry.spawn("sleep 1", port=port)["error"]
    finally:
        outside.kill()
        outside.wait()
    assert f"in use by pid {outside.pid} (" in error
    assert not set(error) & {"\x1b", "\x07", "\u202e"} and "\\x1b]0;owned" in error, error


def test_the_kernels_two_answers_agree():
    """Listening sockets asked through netlink (sock_diag) and read from /proc/net/tcp{,6}: the
    same inodes and ports, IPv4 and IPv6, past one netlink reply buffer (400 listeners)."""
    from hermes_procs.core.supervisor import stats

    sockets = []
    try:
        for index in range(400):
            family, host = (socket.AF_INET6, "::1") if index % 2 and socket.has_ipv6 else (socket.AF_INET, "127.0.0.1")
            listener = socket.socket(family)
            sockets.append(listener)
            listener.bind((host, 0))
            listener.listen()
        fast, slow = stats._diag_listeners(), stats._proc_listeners()
        assert fast is not None and fast == slow
        ports = {s.getsockname()[1] for s in sockets}
        assert ports <= set(fast.values())
    finally:
        for listener in sockets:
            listener.close()
