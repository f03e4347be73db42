"""`hermes_procs.core.compat`: the Hermes adapter's public import path (CONTRACT.md), kept as it was.

The adapter lives with the other agent faces in core/agents/compat.py; this module only
re-exports it, so `from hermes_procs.core.compat import HermesProcessRegistry` goes on working
for agents written against it.
"""

from .agents.compat import HermesProcessRegistry

__all__ = ["HermesProcessRegistry"]
