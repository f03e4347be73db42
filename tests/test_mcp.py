"""The MCP server, driven over stdio by the official SDK client (no mocks): a real server
subprocess (`python -m hermes_procs mcp --home H`) and real jobs."""

import asyncio
import json
import os
import re
import select
import signal
import sys
import time

import pytest
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client

from hermes_procs.core import ProcessRegistry
from hermes_procs.core.agents.mcp_server import TOOL_NAMES

GHP = "ghp_" + "a1B2c3D4e5" * 4


def run(coro):
    return asyncio.run(asyncio.wait_for(coro, 60))


def server_params(home):
    return StdioServerParameters(command=sys.executable, args=["-m", "hermes_procs", "mcp", "--home", str(home)])


class Client:
    def __init__(self, session):
        self.session = session

    async def call(self, tool, **args):
        result = await self.session.call_tool(tool, args)
        assert result.content and result.content[0].type == "text"
        if result.structured_content is not None:
            assert json.loads(result.content[0].text) == result.structured_content
        return result

    async def ok(self, tool, **args):
        result = await self.call(tool, **args)
        assert not result.is_error, result
        return result.structured_content

    async def until(self, predicate, timeout=10.0):
        deadline = time.monotonic() + timeout
        while True:
            value = await predicate()
            if value:
                return value
            assert time.monotonic() < deadline, "condition not met"
            await asyncio.sleep(0.05)


async def with_client(home, body):
    async with stdio_client(server_params(home)) as (read, write), ClientSession(read, write) as session:
        await session.initialize()
        return await body(Client(session))


def test_server_says_its_name_and_version(tmp_path):
    from hermes_procs import __version__

    async def main():
        async with stdio_client(server_params(tmp_path / "home")) as (read, write), \
                ClientSession(read, write) as session:
            return (await session.initialize()).server_info

    info = run(main())
    assert (info.name, info.version) == ("hermes-procs", __version__) and __version__


def test_tools_and_schemas(tmp_path):
    async def body(c):
        tools = {t.name: t for t in (await c.session.list_tools()).tools}
        assert set(tools) == set(TOOL_NAMES)
        start = tools["process_start"].input_schema
        assert start["required"] == ["command"]
        props = start["properties"]
        for name in ("command", "pty", "cwd", "name", "notify_on_complete", "watch_patterns", "max_runtime", "env"):
            assert props[name]["description"], name
        assert props["pty"]["type"] == "boolean" and props["command"]["type"] == "string"
        for name in ("process_poll", "process_log", "process_wait", "process_kill", "process_write",
                     "process_submit", "process_close"):
            schema = tools[name].input_schema
            assert "session_id" in schema["required"], name
            assert schema["properties"]["session_id"]["type"] == "string"
            assert tools[name].description
        assert tools["process_write"].input_schema["required"] == ["session_id", "data"]
        assert tools["process_log"].input_schema["properties"]["offset"]["anyOf"][0]["type"] == "integer"
        assert tools["process_tree"].input_schema["required"] == ["session_id"]
        assert tools["process_tree"].annotations.read_only_hint
        signal = tools["process_signal"]
        assert signal.input_schema["required"] == ["session_id", "signal"] and not signal.annotations
        for name in ("signal", "pid", "start_ticks"):
            assert signal.input_schema["properties"][name]["description"], name

    run(with_client(tmp_path / "home", body))


def test_start_wait_log_list_redacted(tmp_path):
    home = tmp_path / "home"

    async def body(c):
        started = await c.ok("process_start", command=f"echo hello; sleep 0.3; echo GITHUB_TOKEN={GHP}; exit 3",
                             name="build", notify_on_complete=True)
        assert started["status"] == "running" and started["session_id"].startswith("proc_")
        assert GHP not in started["command"] and "ghp_...***" in started["command"]
        sid = started["session_id"]
        done = await c.ok("process_wait", session_id=sid, timeout=20)
        assert done["status"] == "exited" and done["exit_code"] == 3 and done["completion_reason"] == "exited"
        assert "hello" in done["output"] and GHP not in done["output"]
        log = await c.ok("process_log", session_id=sid)
        assert log["output"] == "hello\nGITHUB_TOKEN=ghp_...***" and log["total_lines"] == 2
        page = await c.ok("process_log", session_id=sid, offset=0, limit=1)
        assert page["output"] == "hello"
        recent = await c.ok("process_log", session_id=sid, since="1h")
        assert recent["output"] == log["output"] and "output since" in recent["showing"]
        assert (await c.ok("process_log", session_id=sid, since=0))["showing"].startswith("no output since")
        bad = await c.call("process_log", session_id=sid, since="whenever")
        assert bad.is_error and "since must be" in bad.content[0].text
        polled = await c.ok("process_poll", session_id=sid[:10])
        assert polled["exit_code"] == 3
        listed = await c.ok("process_list")
        assert [p["session_id"] for p in listed["processes"]] == [sid] and listed["processes"][0]["name"] == "build"
        return sid

    sid = run(with_client(home, body))
    # the job is the same object for the Python API (unmasked there) and its events are durable
    reg = ProcessRegistry(home=home)
    assert GHP in reg.read_log(sid)["output"]
    assert [e["type"] for e in reg.drain_events("t")] == ["completion"]


def test_pty_job_typing_and_kill(tmp_path):
    async def body(c):
        repl = await c.ok("process_start", command=f"{sys.executable} -i -q", pty=True)
        sid = repl["session_id"]

        async def log_has(text):
            return text in (await c.ok("process_log", session_id=sid))["output"]

        await c.until(lambda: log_has(">>>"))
        assert (await c.ok("process_submit", session_id=sid, data="print(6*7)"))["status"] == "ok"
        await c.until(lambda: log_has("42"))
        assert (await c.ok("process_write", session_id=sid, data="print('a'+'b')"))["status"] == "ok"
        await asyncio.sleep(0.2)
        assert not await log_has("ab\r\n") and not await log_has("ab\n")
        await c.ok("process_submit", session_id=sid)  # just Enter
        await c.until(lambda: log_has("ab"))
        assert (await c.ok("process_close", session_id=sid))["status"] == "ok"  # EOF: the REPL exits
        done = await c.ok("process_wait", session_id=sid, timeout=20)
        assert done["status"] == "exited" and done["exit_code"] == 0

        sleeper = await c.ok("process_start", command="sleep 60 & sleep 60; echo never")
        killed = await c.ok("process_kill", session_id=sleeper["session_id"], grace=1)
        assert killed["status"] == "killed" and killed["completion_reason"] == "killed"
        polled = await c.ok("process_poll", session_id=sleeper["session_id"])
        assert polled["status"] == "exited" and polled["leftover_pids"] == []

    run(with_client(tmp_path / "home", body))


def test_tree_and_signal(tmp_path):
    trapping = "sleep 60 & trap 'echo got-usr1' USR1; while :; do sleep 0.1; done"

    async def body(c):
        sid = (await c.ok("process_start", command=trapping))["session_id"]

        async def sleeper():
            tree = await c.ok("process_tree", session_id=sid)
            return next((p for p in tree["processes"] if p["command"] == "sleep 60"), None)

        child = await c.until(sleeper)
        tree = await c.ok("process_tree", session_id=sid)
        assert tree["status"] == "running" and tree["processes"][0]["depth"] == 0
        assert child["ppid"] == tree["processes"][0]["pid"] and child["depth"] == 1
        sent = await c.ok("process_signal", session_id=sid, signal="TERM", pid=child["pid"],
                          start_ticks=child["start_ticks"])
        assert sent == {"status": "ok", "session_id": sid, "pid": child["pid"], "signal": "TERM"}

        async def gone():
            return await sleeper() is None

        await c.until(gone)
        assert (await c.ok("process_poll", session_id=sid))["status"] == "running"  # only that process
        group = await c.ok("process_signal", session_id=sid, signal=int(signal.SIGUSR1))  # a number works too
        assert group == {"status": "ok", "session_id": sid}  # the whole process group

        async def trapped():
            return "got-usr1" in (await c.ok("process_log", session_id=sid))["output"]

        await c.until(trapped)
        bad = await c.call("process_signal", session_id=sid, signal="BOGUS")
        assert bad.is_error and "unknown signal" in bad.structured_content["error"]
        stranger = await c.call("process_signal", session_id=sid, signal="TERM", pid=1)
        assert stranger.is_error and "not part of this job" in stranger.structured_content["error"]
        no_signal = await c.session.call_tool("process_signal", {"session_id": sid})
        assert no_signal.is_error and "signal" in no_signal.content[0].text
        assert (await c.ok("process_kill", session_id=sid, grace=0.5))["status"] == "killed"
        assert (await c.ok("process_tree", session_id=sid)) == {"status": "exited", "session_id": sid,
                                                               "processes": []}
        missing = await c.call("process_tree", session_id="proc_ffffffffffff")
        assert missing.is_error and missing.structured_content["status"] == "not_found"

    run(with_client(tmp_path / "home", body))


def test_errors_are_flagged(tmp_path):
    async def body(c):
        missing = await c.call("process_poll", session_id="proc_ffffffffffff")
        assert missing.is_error and missing.structured_content["status"] == "not_found"
        bad = await c.call("process_start", command="sleep 5", max_runtime=-1)
        assert bad.is_error and "max_runtime" in bad.structured_content["error"]
        nocwd = await c.call("process_start", command="true", cwd=str(tmp_path / "nope"))
        assert nocwd.is_error and nocwd.structured_content["status"] == "error"
        as_int = await c.call("process_poll", session_id=123456)  # an integer id is taken as a string
        assert as_int.is_error and as_int.structured_content["status"] == "not_found"
        # arguments the input schema refuses: the one-line error dict every other error is
        negative = await c.call("process_log", session_id="proc_1", offset=-1)
        assert negative.is_error and negative.structured_content == {
            "status": "error", "error": "process_log: offset: Input should be greater than or equal to 0"}
        no_arg = await c.call("process_poll")
        assert no_arg.is_error and no_arg.structured_content == {
            "status": "error", "error": "process_poll: session_id is required"}
        unknown = await c.call("process_nope")
        assert unknown.is_error and unknown.structured_content["error"].startswith(
            "unknown tool 'process_nope': the tools are process_exec, process_start, process_list")
        two = await c.call("process_write")
        assert two.structured_content["error"] == "process_write: data is required; session_id is required"
        # an argument the tool has not (a misspelling): named, not dropped for the default
        misspelt = await c.call("process_log", session_id="proc_1", limt=3)
        assert misspelt.is_error and misspelt.structured_content == {
            "status": "error", "error": "process_log: unknown argument 'limt' (did you mean 'limit'?)"}
        stranger = await c.call("process_poll", session_id="proc_1", pid="x")
        assert stranger.structured_content["error"] == \
            "process_poll: unknown argument 'pid' (the arguments are: host, session_id)"
        assert (await c.ok("process_list")) == {"processes": []}

    run(with_client(tmp_path / "home", body))


def test_a_job_named_in_bytes_that_are_not_utf8(tmp_path):
    # a byte that is not UTF-8 in a command or name (bash -c $'... \x9b') is a lone surrogate in
    # Python: the SDK could not write it, the server died on its first list, every time after too
    home = tmp_path / "home"
    registry = ProcessRegistry(home=home)
    sid = registry.spawn("echo hi; : \udc9b", name="odd\udc9b")["session_id"]
    registry.wait(sid, timeout=10)

    async def body(c):
        listed = await c.ok("process_list")
        assert [(p["name"], p["command"]) for p in listed["processes"]] == [("odd\\udc9b", "echo hi; : \\udc9b")]
        assert (await c.ok("process_poll", session_id=sid))["name"] == "odd\\udc9b"
        assert (await c.ok("process_poll", session_id=sid))["status"] == "exited"  # the server lives on

    run(with_client(home, body))


@pytest.mark.timeout(60)
def test_serve_function_directly(tmp_path):
    """serve(home) is what the CLI calls; run it without the CLI too."""
    home = tmp_path / "home"
    params = StdioServerParameters(
        command=sys.executable,
        args=["-c", f"from hermes_procs.core.agents.mcp_server import serve; serve({str(home)!r})"])

    async def main():
        async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
            await session.initialize()
            result = await session.call_tool("process_start", {"command": "echo direct"})
            sid = result.structured_content["session_id"]
            done = await session.call_tool("process_wait", {"session_id": sid, "timeout": 20})
            return done.structured_content

    done = run(main())
    assert done["status"] == "exited" and "direct" in done["output"]


def test_the_raw_answer_line_holds_no_c1_or_bidi_control(tmp_path):
    """The text content was escaped, but the SDK writes `structuredContent` raw in the same line:
    a client that prints it got U+009B (CSI) and U+202E. Both now escaped on the wire."""
    from test_security_regex import RawMcp

    from hermes_procs.core.agents.mcp_stdin import _escaped

    assert _escaped(b'{"a":"x\x7fy"}\n') == b'{"a":"x\\u007fy"}\n'  # DEL alone: an ASCII line too

    home = tmp_path / "home"
    registry = ProcessRegistry(home=home)
    hostile = "n\u009b2J\u009d0;pwn\u009c\u202e\x7f"
    sid = registry.spawn("printf 'out \\302\\233 \\342\\200\\256 end\\n'", name=hostile)["session_id"]
    registry.wait(sid, timeout=10)
    mcp = RawMcp(home, {})
    try:
        mcp.send({"jsonrpc": "2.0", "id": 99, "method": "tools/call",
                  "params": {"name": "process_poll", "arguments": {"session_id": sid}}})
        deadline = time.monotonic() + 20
        while b'"id":99' not in mcp.buffer and time.monotonic() < deadline:
            if select.select([mcp.proc.stdout], [], [], 1)[0]:
                mcp.buffer += os.read(mcp.proc.stdout.fileno(), 1 << 20)
        line = next(raw for raw in mcp.buffer.split(b"\n") if b'"id":99' in raw)
        text = line.decode()
        assert not re.search("[\x7f-\u009f\u202a-\u202e\u2066-\u2069]", text), text
        result = json.loads(line)["result"]
        assert result["structuredContent"]["name"] == hostile  # escaped on the wire, the same once read
        assert "\u202e" in result["structuredContent"]["output_preview"]
    finally:
        mcp.proc.kill()
        mcp.proc.wait(10)
