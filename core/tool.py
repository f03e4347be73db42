"""`hermes_procs.core.tool`: the agent tool's public import path (CONTRACT.md), kept as it was.

The tool lives with the other agent faces in core/agents/tool.py; this module only re-exports
what the contract names, so `from hermes_procs.core.tool import PROCESS_TOOL_SCHEMA,
handle_process` goes on working for agents written against it.
"""

from .agents.tool import PROCESS_TOOL_SCHEMA, handle_process

__all__ = ["PROCESS_TOOL_SCHEMA", "handle_process"]
