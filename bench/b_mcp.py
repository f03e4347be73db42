"""The MCP round trip (issue 26 item 4): `process_poll` of an ended job through the SDK's own
client over stdio, against the same client calling a raw SDK server whose one tool echoes its
argument (bench/mcp_echo.py), per call, warm (both servers started and called once first).
"""

from __future__ import annotations

import asyncio
import contextlib
import statistics
import sys
import time
from pathlib import Path

from hermes_procs.core import ProcessRegistry

from .common import Config, Row, temp_home

CALLS = 30  # calls per figure (one figure: their median)


async def _per_call(session, tool: str, args: dict) -> float:
    times = []
    for _ in range(CALLS):
        t0 = time.perf_counter()
        result = await session.call_tool(tool, args)
        times.append((time.perf_counter() - t0) * 1000)
        if result.is_error:
            raise RuntimeError(f"{tool} failed: {result.content}"[:200])
    return statistics.median(times)


async def _measure(home: Path, sid: str, runs: int) -> tuple[list[float], list[float]]:
    from mcp import ClientSession, StdioServerParameters
    from mcp.client.stdio import stdio_client

    ours_params = StdioServerParameters(command=sys.executable, args=["-m", "hermes_procs", "mcp", "--home", str(home)])
    echo_params = StdioServerParameters(command=sys.executable, args=[str(Path(__file__).with_name("mcp_echo.py"))])
    async with contextlib.AsyncExitStack() as stack:
        sessions = []
        for params in (ours_params, echo_params):
            read, write = await stack.enter_async_context(stdio_client(params))
            session = await stack.enter_async_context(ClientSession(read, write))
            await session.initialize()
            sessions.append(session)
        sides = [(sessions[0], "process_poll"), (sessions[1], "echo")]
        out: list[list[float]] = [[], []]
        for i in range(runs + 1):  # the first round warms both up
            for k in ((0, 1) if i % 2 == 0 else (1, 0)):
                value = await _per_call(sides[k][0], sides[k][1], {"session_id": sid})
                if i:
                    out[k].append(value)
        return out[0], out[1]


def run(cfg: Config) -> list[Row]:
    with temp_home() as home:
        reg = ProcessRegistry(home=home)
        sid = reg.spawn("echo hello")["session_id"]
        reg.wait(sid, timeout=30)
        ours, echo = asyncio.run(asyncio.wait_for(_measure(home, sid, cfg.runs), 300))
    return [Row("MCP process_poll round trip, warm (SDK client, stdio)", "ms", ours, "raw SDK echo server", echo,
                "< 5 ms (issue 26)", statistics.median(ours) < 5)]
