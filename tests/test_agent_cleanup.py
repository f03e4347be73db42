"""Issue 23 through the agent faces: the `process` tool and the MCP server (driven by the official
SDK client), with real processes: exec and submit with a yield, ports, reuse, the port guard,
`ephemeral` jobs leased to their caller (a real tool caller and a real MCP server that end), pin
and unpin, and bad values that get one-line errors and create nothing."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time

import pytest
from conftest import wait_until
from test_mcp import run, with_client
from test_ports_reuse import SERVER, free_port

from hermes_procs.core import ProcessRegistry
from hermes_procs.core.agents.tool import handle_process

PROMPT = "printf 'name? '; read x; echo hello $x; printf 'again? '; read y; echo bye $y"


def call(registry, **args):
    return json.loads(handle_process(args, registry=registry))


def test_tool_exec_and_submit_with_a_yield(registry):
    done = call(registry, action="exec", command="echo built; exit 2")
    assert (done["status"], done["exit_code"], done["reason"], done["output"]) == ("exited", 2, "exited", "built\n")
    asks = call(registry, action="exec", command=PROMPT, yield_ms=5000)
    assert (asks["status"], asks["reason"], asks["output"]) == ("running", "awaiting_input", "name? ")
    sid = asks["session_id"]
    reply = call(registry, action="submit", session_id=sid, data="ann", yield_ms=5000)
    assert (reply["reason"], reply["output"]) == ("awaiting_input", "hello ann\nagain? ")
    last = call(registry, action="submit", session_id=sid, data="bob", yield_ms=5000)
    assert (last["status"], last["exit_code"], last["output"]) == ("exited", 0, "bye bob\n")
    runs_on = call(registry, action="exec", command="sleep 30", yield_ms=100)
    assert (runs_on["status"], runs_on["reason"]) == ("running", "yielded")


def test_tool_dev_server_with_reuse_and_port(registry):
    port = free_port()
    command = SERVER.format(port=port)
    first = call(registry, action="start", command=command, name="web", reuse=True, port=port)
    assert (first["status"], first["reused"], first["port"]) == ("running", False, port)
    sid = first["session_id"]
    up = call(registry, action="wait", session_id=sid, until="port", timeout=10)
    assert (up["reason"], up["port"]) == ("port_open", port)
    again = call(registry, action="start", command=command, name="web", reuse=True, port=port)
    assert (again["session_id"], again["reused"]) == (sid, True)
    refused = call(registry, action="start", command=command, name="web2", port=port)
    assert refused == {"status": "error", "error": f"port {port} is in use by job {sid} (web); nothing was started"}
    assert call(registry, action="poll", session_id=sid)["ports"] == [port]
    assert [row["ports"] for row in call(registry, action="list")["processes"]] == [[port]]


@pytest.mark.parametrize("args", [{"port": 0}, {"port": 70000}, {"yield_ms": -1}, {"yield_ms": "soon"},
                                  {"reuse": True}, {"ephemeral": "yes"}])
def test_tool_bad_values_get_one_line_and_create_nothing(registry, args):
    got = call(registry, action="exec", command="echo hi", **args)
    assert got["status"] == "error" and "\n" not in got["error"], got
    assert os.listdir(registry.jobs_dir) == []


CALLER = """
import json, sys
from hermes_procs.core import ProcessRegistry
from hermes_procs.core.agents.tool import handle_process
reg = ProcessRegistry(home=sys.argv[1])
for name in ("scratch", "kept"):
    got = json.loads(handle_process({"action": "start", "command": "sleep 60", "name": name, "ephemeral": True},
                                    registry=reg))
    print(got["session_id"], flush=True)
print(json.loads(handle_process({"action": "pin", "session_id": got["session_id"]}, registry=reg))["status"],
      flush=True)
sys.stdin.readline()
"""


def test_tool_ephemeral_jobs_end_with_their_caller_unless_pinned(registry, home):
    caller = subprocess.Popen([sys.executable, "-c", CALLER, str(home)], stdin=subprocess.PIPE,
                              stdout=subprocess.PIPE, text=True)
    try:
        scratch, kept, pinned = (caller.stdout.readline().strip() for _ in range(3))
        assert pinned == "ok"
        assert registry.poll(scratch)["lease"] == {"pid": caller.pid, "pinned": False, "owner_alive": True}
        assert registry.poll(scratch)["status"] == "running"
    finally:
        caller.stdin.close()  # the agent process ends
        caller.wait(10)
    ended = registry.wait(scratch, timeout=5)
    assert (ended["status"], ended["completion_reason"]) == ("exited", "killed")
    assert registry.poll(kept)["status"] == "running"
    assert call(registry, action="unpin", session_id=kept)["status"] == "ok"
    assert registry.wait(kept, timeout=5)["completion_reason"] == "killed"


def test_mcp_exec_submit_ports_reuse_and_errors(tmp_path):
    home = tmp_path / "home"
    port = free_port()
    command = SERVER.format(port=port)

    async def body(c):
        tools = {t.name: t for t in (await c.session.list_tools()).tools}
        assert {"process_exec", "process_pin", "process_unpin"} <= set(tools)
        for name in ("reuse", "port", "ephemeral"):
            assert tools["process_start"].input_schema["properties"][name]["description"], name
            assert tools["process_exec"].input_schema["properties"][name]["description"], name
        done = await c.ok("process_exec", command="echo one; exit 3")
        assert (done["status"], done["exit_code"], done["output"]) == ("exited", 3, "one\n")
        asks = await c.ok("process_exec", command=PROMPT)
        assert (asks["reason"], asks["output"]) == ("awaiting_input", "name? ")
        reply = await c.ok("process_submit", session_id=asks["session_id"], data="ann", yield_ms=5000)
        assert reply["output"] == "hello ann\nagain? "
        last = await c.ok("process_submit", session_id=asks["session_id"], data="bob", yield_ms=5000)
        assert (last["status"], last["exit_code"], last["output"]) == ("exited", 0, "bye bob\n")
        web = await c.ok("process_start", command=command, name="web", reuse=True, port=port)
        up = await c.ok("process_wait", session_id=web["session_id"], until="port", timeout=10)
        assert (up["reason"], up["port"]) == ("port_open", port)
        again = await c.ok("process_start", command=command, name="web", reuse=True, port=port)
        assert (again["session_id"], again["reused"]) == (web["session_id"], True)
        assert (await c.ok("process_poll", session_id=web["session_id"]))["ports"] == [port]
        refused = await c.call("process_exec", command="true", port=port)
        assert refused.is_error and refused.structured_content["error"] == (
            f"port {port} is in use by job {web['session_id']} (web); nothing was started")
        for bad in ({"port": 0}, {"port": 70000}, {"yield_ms": -1}):
            got = await c.call("process_exec", command="echo hi", **bad)
            assert got.is_error and "\n" not in got.structured_content["error"], bad
        not_leased = await c.call("process_pin", session_id=done["session_id"])
        assert not_leased.is_error and "has no lease" in not_leased.structured_content["error"]
        await c.ok("process_kill", session_id=web["session_id"])
        return {row["session_id"] for row in (await c.ok("process_list"))["processes"]}

    listed = run(with_client(home, body))
    assert len(listed) == 3  # the two execs and the server: nothing else was created
    assert not [job for job in ProcessRegistry(home=home).list() if job["status"] == "running"]


def test_mcp_ephemeral_jobs_end_with_the_client(tmp_path):
    home = tmp_path / "home"

    async def body(c):
        scratch = await c.ok("process_start", command="sleep 60", ephemeral=True)
        kept = await c.ok("process_exec", command="sleep 60", yield_ms=0, ephemeral=True)
        pinned = await c.ok("process_pin", session_id=kept["session_id"])
        assert pinned["lease"]["pinned"] is True
        durable = await c.ok("process_start", command="sleep 60")
        return scratch["session_id"], kept["session_id"], durable["session_id"]

    scratch, kept, durable = run(with_client(home, body))  # the client disconnects: its server ends
    registry = ProcessRegistry(home=home)
    try:
        started = time.monotonic()
        ended = registry.wait(scratch, timeout=5)
        assert (ended["status"], ended["completion_reason"]) == ("exited", "killed")
        assert time.monotonic() - started < 3
        assert registry.poll(kept)["status"] == "running" and registry.poll(durable)["status"] == "running"
        assert registry.poll(kept)["lease"]["owner_alive"] is False
    finally:
        for sid in (kept, durable):
            registry.kill(sid, grace=0.2)
    wait_until(lambda: registry.poll(kept)["status"] == "exited")


def test_mcp_answers_while_an_exec_yields(tmp_path):
    import asyncio

    async def body(c):
        done = []

        async def exec_call():
            result = await c.ok("process_exec", command="sleep 30", yield_ms=3000)
            done.append("exec")
            return result

        async def list_call():
            await asyncio.sleep(0.5)
            listed = await c.ok("process_list")
            done.append("list")
            return listed

        ran, listed = await asyncio.gather(exec_call(), list_call())
        assert done == ["list", "exec"] and ran["reason"] == "yielded"
        assert [row["session_id"] for row in listed["processes"]] == [ran["session_id"]]
        await c.ok("process_kill", session_id=ran["session_id"])

    run(with_client(tmp_path / "home", body))
