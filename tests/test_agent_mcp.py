"""The new MCP tools (process_screen, process_search, process_restart, process_wait until=...)
through the SDK's real client against a real server subprocess."""

from test_mcp import run, with_client


def test_wait_until_input_then_screen_search_restart(tmp_path):
    async def body(c):
        tools = {t.name: t for t in (await c.session.list_tools()).tools}
        assert "until" in tools["process_wait"].input_schema["properties"]
        assert tools["process_search"].input_schema["required"] == ["pattern"]
        assert "quiet_after" in tools["process_start"].input_schema["properties"]
        started = await c.ok("process_start", command="python3 -q -i", pty=True)
        sid = started["session_id"]
        waited = await c.ok("process_wait", session_id=sid, until="input", timeout=30)
        assert waited["reason"] == "awaiting_input" and waited["status"] == "running"
        polled = await c.ok("process_poll", session_id=sid)
        assert polled["awaiting_input"] is True and polled["process_count"] == 1 and polled["rss_bytes"] > 0
        await c.ok("process_submit", session_id=sid, data="print('marker', 6*7)")
        await c.until(lambda: _screen_has(c, sid, "marker 42"))
        screen = await c.ok("process_screen", session_id=sid)
        assert screen["lines"][:2] == [">>> print('marker', 6*7)", "marker 42"]
        found = await c.ok("process_search", session_id=sid, pattern=r"marker \d+", context=0)
        assert found["total"] == 1 and found["matches"][0]["line_no"] == 1
        everywhere = await c.ok("process_search", pattern="marker")
        assert {m["session_id"] for m in everywhere["matches"]} == {sid}
        again = await c.ok("process_restart", session_id=sid)
        assert again["status"] == "running" and again["session_id"] != sid
        assert (await c.ok("process_poll", session_id=again["session_id"]))["rerun_of"] == sid
        assert (await c.ok("process_poll", session_id=sid))["status"] == "exited"
        await c.ok("process_kill", session_id=again["session_id"], grace=0.2)

    run(with_client(tmp_path / "home", body))


async def _screen_has(c, sid, text):
    return text in (await c.ok("process_screen", session_id=sid))["lines"]


def test_bad_until_pipe_screen_and_bad_pattern_are_errors(tmp_path):
    async def body(c):
        sid = (await c.ok("process_start", command="sleep 30"))["session_id"]
        for tool, args, words in (("process_wait", {"until": "later"}, "unknown until"),
                                  ("process_screen", {}, "pty"),
                                  ("process_search", {"pattern": "("}, "regular expression")):
            result = await c.call(tool, session_id=sid, **args)
            assert result.is_error and words in result.structured_content["error"], result
        await c.ok("process_kill", session_id=sid, grace=0.2)

    run(with_client(tmp_path / "home", body))
