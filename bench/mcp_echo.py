"""The anchor of the MCP row (bench/b_mcp.py): the SDK's own server with one tool that returns
its argument as a ready result (no output schema, no conversion), over stdio: what any MCP tool
call costs before a tool does anything."""

from __future__ import annotations

from mcp.server.mcpserver import MCPServer
from mcp.types import CallToolResult, TextContent

server = MCPServer(name="echo", log_level="WARNING")


@server.tool()
def echo(session_id: str) -> CallToolResult:
    """Return the argument."""
    return CallToolResult(content=[TextContent(type="text", text=session_id)])


if __name__ == "__main__":
    server.run("stdio")
