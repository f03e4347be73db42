"""The agent faces: what AI agents call. The function-calling `process` tool, the MCP server,
the event stream for programs, and the Hermes agent's adapter (`HermesProcessRegistry`, its
compat_*.py helpers) and plugin. Agent-facing results mask secrets (registry/redact.py).

May import: every room below it (remote, registry, supervisor), the standard library and the
MCP SDK (the only room that loads it). Nothing in core imports this room but core's own
`__init__`, `tool.py` and `compat.py` (the contract's import paths).
"""
