"""Why a container host cannot be reached: asked of its engine when the connection fails.

A `docker exec` (or `kubectl exec`) that fails or drops says little ("the connection
dropped", exit status 137). The engine knows better: the container was stopped, is
restarting, or no longer exists. Then its jobs are not merely out of reach, they ended with
it (everything in a container is killed when it stops), and waiting for the host to answer
again, as for an SSH host on a bad network, would hang for nothing. `down_reason(host)` is
that sentence, or None when the container runs (the trouble is elsewhere) or the engine does
not answer either.

Client side only (never sent to a host).
"""

from __future__ import annotations

import subprocess
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .address import Host

ASK_TIMEOUT = 5.0  # seconds the engine has to answer
_NOT_RUNNING = {"exited": "was stopped", "dead": "is dead", "created": "was never started",
                "paused": "is paused", "restarting": "is restarting", "removing": "is being removed"}


def down_reason(host: Host) -> str | None:
    """One sentence when the host is a container that is not running, else None."""
    if host.scheme == "docker":
        return _docker(host.target)
    if host.scheme == "k8s":
        namespace, pod, _ = host.extra
        return _k8s(namespace, pod)
    return None


def docker_argv(container: str) -> list[str]:
    return ["docker", "inspect", "--type", "container", "--format", "{{.State.Status}}", "--", container]


def k8s_argv(namespace: str, pod: str) -> list[str]:
    ns = ["-n", namespace] if namespace else []
    return ["kubectl", "get", "pod", *ns, "-o", "jsonpath={.status.phase}", "--", pod]


def _docker(container: str) -> str | None:
    answer = _ask(docker_argv(container))
    if answer is None:
        return None
    code, out, err = answer
    if code != 0:
        return f"no container named {container} (removed?)" if "no such" in err.lower() else None
    state = out.strip()
    if state == "running":
        return None
    what = _NOT_RUNNING.get(state, f"is {state or 'not running'}")
    return f"container {container} {what}: its jobs ended with it (their exit codes were not recorded)" \
        if state in ("exited", "dead", "restarting") else f"container {container} {what}"


def _k8s(namespace: str, pod: str) -> str | None:
    answer = _ask(k8s_argv(namespace, pod))
    if answer is None:
        return None
    code, out, err = answer
    if code != 0:
        return f"no pod named {pod} (deleted?)" if "notfound" in err.lower().replace(" ", "") else None
    phase = out.strip()
    if phase in ("Running", ""):
        return None
    return f"pod {pod} is {phase}: its jobs ended with it (their exit codes were not recorded)" \
        if phase in ("Succeeded", "Failed") else f"pod {pod} is {phase}"


def _ask(argv: list[str]) -> tuple[int, str, str] | None:
    """(exit status, stdout, stderr) of the engine's command; None when it cannot be run."""
    try:
        res = subprocess.run(argv, capture_output=True, text=True, timeout=ASK_TIMEOUT, stdin=subprocess.DEVNULL)
    except (OSError, subprocess.TimeoutExpired):
        return None
    return res.returncode, res.stdout, res.stderr
