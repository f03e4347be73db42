"""Background processes of Hermes' Docker and SSH sandboxes, as jobs on those hosts.

Stock Hermes runs a sandbox's background process through the sandbox (``nohup bash -lc CMD`` by
``docker exec`` or ``ssh``) and reads its log file every 2 seconds. With the plugin it becomes a
hermes-procs job on the sandbox itself, reached as a remote host (core/remote/client.py):

- a ``DockerEnvironment``: ``docker://CONTAINER`` (Hermes' container id)
- an ``SSHEnvironment``: ``ssh://USER@HOST:PORT``, with Hermes' key and its connection socket

The job runs there under its own supervisor, in a login shell (``bash -lc``, as stock Hermes
runs it), its output durable there, and this machine's dashboard lists the host's jobs. The
sandbox needs python3 (3.9 or newer); when it has none or cannot be reached, :func:`spawn`
returns None with the reason, and the adapter runs the process as stock Hermes does.
"""

from __future__ import annotations

from typing import Any

__all__ = ["SHELL", "sandbox_host", "spawn"]

SHELL = ["bash", "-lc"]


def sandbox_host(env: Any) -> tuple[str, tuple[str, ...]] | None:
    """(host URL, ssh options) of a Hermes Docker or SSH environment; None for other backends."""
    kind = type(env).__name__
    if kind == "DockerEnvironment":
        container = getattr(env, "_container_id", None)
        return (f"docker://{container}", ()) if isinstance(container, str) and container else None
    if kind == "SSHEnvironment":
        host, user, port = str(getattr(env, "host", "")), str(getattr(env, "user", "")), getattr(env, "port", 22)
        if not host or not user:
            return None
        options = ["-o", "BatchMode=yes", "-o", "StrictHostKeyChecking=accept-new", "-o", "ConnectTimeout=10"]
        socket = getattr(env, "control_socket", None)
        if socket:
            options += ["-o", f"ControlPath={socket}", "-o", "ControlMaster=auto", "-o", "ControlPersist=300"]
        key = getattr(env, "key_path", "")
        if key:
            options += ["-i", str(key)]
        name = f"[{host}]" if ":" in host else host
        return f"ssh://{user}@{name}:{int(port)}", tuple(options)
    return None


def spawn(hosts: dict[tuple[str, tuple[str, ...]], Any], target: tuple[str, tuple[str, ...]], consumer: str,
          command: str, cwds: list[str | None], labels: dict[str, str]) -> tuple[Any, dict[str, Any]]:
    """Start `command` on the sandbox host `target`: (its registry, the spawn result). The first
    of `cwds` that exists there is the job's folder. `hosts` keeps one registry per host."""
    from ..remote.client import RemoteRegistry

    registry = hosts.get(target)
    if registry is None:
        registry = hosts[target] = RemoteRegistry(target[0], ssh_options=target[1])
    first = registry.drain_events(consumer, all_types=True, only_new=True)  # the cursor at the end: nothing old
    if isinstance(first, dict) and first.get("status") == "error":
        return registry, first
    result: dict[str, Any] = {"status": "error", "error": "no working directory"}
    for cwd in cwds:
        result = registry.spawn(command, cwd=cwd, shell=SHELL, **labels)
        if result.get("status") == "running" or "Working directory" not in str(result.get("error", "")):
            break
    return registry, result
