"""Stacks: a project's dev stack (db, api, web, worker) as one unit, from hermes-procs.toml, a
Procfile, process-compose.yaml or mprocs.yaml; dependencies, readiness probes, restart
policies and file watching, kept by one small supervisor process per stack.

Built on the registry's public API only (core_api.py lists what it takes from the rest of the
core): every job of a stack is an ordinary durable job, tagged with its `stack` and `restarts`.

    from hermes_procs.core import ProcessRegistry
    reg = ProcessRegistry()
    reg.up("hermes-procs.toml", wait=True)     # or stacks.api.up(reg, ...)
    reg.stacks()                               # [{"stack", "state", "jobs": [...]}]
    reg.down("shop")

Modules: model (the stack model), loader and fmt_* (the four formats), schema, envfile,
yamlfile (reading them), probes, filewatch, runner (a job's states and restart policy),
daemon (the stack supervisor), stopping (reverse dependency order), store (the stack's folder
in the home), api (the client side). docs/internals.md describes the design.
"""

from .model import StackError, StackSpec

__all__ = ["StackError", "StackSpec"]
