"""What stock Hermes (hermes-agent 0.19.0) does where the adapter (:mod:`.compat`) stands in for
its process registry, so that Hermes behaves as it does without hermes-procs.

Each answer comes from Hermes' own code when Hermes is importable (the adapter running inside
Hermes as its plugin), else from an equivalent here (the adapter used on its own):

- the shell of a background job: the user's login shell as an interactive login shell,
  ``$SHELL -lic "set +m; COMMAND"`` (``tools.environments.local._find_shell``), so the rc files
  run (PATH from nvm, pyenv, ...). bash prints "cannot set terminal process group" and "no job
  control in this shell" when it starts interactive without a terminal; Hermes strips them from
  the first chunk it reads, here they never reach the log: the shell starts with its stderr on
  /dev/null and the command line puts it back (``exec 2>&1``) before running the command
- its environment: the one Hermes builds (``_sanitize_subprocess_env``: provider keys, Hermes'
  internal variables, ``VIRTUAL_ENV`` and ``CONDA_PREFIX`` stripped, every other variable kept)
  plus ``PYTHONUNBUFFERED=1``
- its working directory: the given one, else the nearest usable parent (``_resolve_safe_cwd``)
- how long ``wait`` may block: ``$TERMINAL_TIMEOUT`` seconds (Hermes puts its config's
  ``terminal.timeout`` there), 180 by default
- how long a kill waits between SIGTERM and SIGKILL: Hermes' ``terminal.daemon_term_grace_seconds``
- ANSI stripping, the ``[IMPORTANT: ...]`` text of a notification, the agent's interrupt flag,
  the async-delegation completions a new registry restores, and the stock checkpoint file
  (``$HERMES_HOME/processes.json``)
"""

from __future__ import annotations

import importlib
import os
import queue
import tempfile
from pathlib import Path
from types import ModuleType
from typing import Any

from ..supervisor import text
from .compat_session import format_process_notification

__all__ = ["COLS", "DEFAULT_WAIT", "ROWS", "checkpoint_path", "interrupted", "job_environ", "kill_grace", "max_wait",
           "notification_text", "restore_delegations", "safe_cwd", "shell_argv", "strip_ansi"]

DEFAULT_WAIT = 180
ROWS, COLS = 30, 120  # the terminal size of a PTY job
# `sh -c SCRIPT SHELL COMMAND`: the shell runs as `SHELL -lic "set +m; ...COMMAND"` (exec: same pid)
_PIPE_SCRIPT = 'exec "$0" -lic "set +m; exec 2>&1; $1" 2>/dev/null'
_PTY_SCRIPT = 'exec "$0" -lic "set +m; $1"'
_MISSING = object()
_modules: dict[str, Any] = {}


def hermes(name: str) -> ModuleType | None:
    """Hermes' module `name` (imported once), or None where Hermes is not installed."""
    found = _modules.get(name, _MISSING)
    if found is _MISSING:
        try:
            found = importlib.import_module(name)
        except Exception:  # noqa: BLE001 - no Hermes here, or a broken one: use the equivalents
            found = None
        _modules[name] = found
    return found if isinstance(found, ModuleType) else None


def _local_env() -> ModuleType | None:
    return hermes("tools.environments.local")


def shell_argv(pty: bool) -> list[str]:
    """The argv a background command is appended to (registry.spawn's `shell`)."""
    local = _local_env()
    shell = ""
    if local is not None:
        try:
            shell = str(local._find_shell())
        except Exception:  # noqa: BLE001 - Hermes' lookup failed: the same rules below
            shell = ""
    if not shell:
        user = os.environ.get("SHELL", "")
        ok = os.path.basename(user) in ("bash", "zsh", "sh", "dash", "ksh", "mksh") and os.access(user, os.X_OK)
        shell = user if ok else "/bin/bash"
    return ["/bin/sh", "-c", _PTY_SCRIPT if pty else _PIPE_SCRIPT, shell]


def job_environ(env_vars: dict[str, Any] | None) -> dict[str, str] | None:
    """The environment Hermes gives a background job (None where Hermes is not installed)."""
    local = _local_env()
    if local is None:
        return None
    env = local._sanitize_subprocess_env(os.environ, env_vars)
    env["PYTHONUNBUFFERED"] = "1"
    return {str(k): str(v) for k, v in env.items()}


def safe_cwd(cwd: str | None) -> str:
    """`cwd` (default: the current folder) if usable, else its nearest usable parent."""
    wanted = cwd or os.getcwd()
    local = _local_env()
    if local is not None:
        return str(local._resolve_safe_cwd(wanted))
    path = os.path.abspath(os.path.expanduser(wanted))
    while path:
        if os.path.isdir(path) and os.access(path, os.X_OK):
            return path
        parent = os.path.dirname(path)
        if parent == path:
            break
        path = parent
    return tempfile.gettempdir()


def max_wait() -> int:
    """The longest wait in seconds: $TERMINAL_TIMEOUT, else 180 (read at each call, as Hermes does)."""
    try:
        return int(os.getenv("TERMINAL_TIMEOUT", str(DEFAULT_WAIT)))
    except (TypeError, ValueError):
        return DEFAULT_WAIT


def kill_grace() -> float | None:
    """Seconds between SIGTERM and SIGKILL in a kill, from Hermes' config; None (the registry's
    own grace) without Hermes, or when Hermes' is 0 (for Hermes: never SIGKILL; a job is killed
    here, never left running)."""
    module = hermes("tools.process_registry")
    try:
        grace = float(module.ProcessRegistry._daemon_term_grace_seconds()) if module is not None else 0.0
    except Exception:  # noqa: BLE001 - Hermes' lookup failed: the registry's own grace
        grace = 0.0
    return grace if grace > 0 else None


def strip_ansi(value: str) -> str:
    """Hermes' ANSI stripping (tools.ansi_strip), else core/supervisor/text.py's."""
    module = hermes("tools.ansi_strip")
    if module is not None:
        return str(module.strip_ansi(value))
    return text.strip_ansi(value)


def notification_text(event: dict[str, Any]) -> str | None:
    """The ``[IMPORTANT: ...]`` message Hermes makes of a completion_queue event."""
    module = hermes("tools.process_registry")
    if module is not None:
        found = module.format_process_notification(event)
        return None if found is None else str(found)
    return format_process_notification(event)


def interrupted() -> bool:
    """Whether Hermes' per-thread interrupt flag is set (False without Hermes)."""
    module = hermes("tools.interrupt")
    if module is None:
        return False
    try:
        return bool(module.is_interrupted())
    except Exception:  # noqa: BLE001 - a broken check never aborts a wait
        return False


def restore_delegations(target: queue.Queue[Any]) -> int:
    """Queue the async-delegation completions no session has received yet (Hermes' durable
    ledger), as a new stock registry does; 0 without Hermes."""
    module = hermes("tools.async_delegation")
    if module is None:
        return 0
    return int(module.restore_undelivered_completions(target))


def checkpoint_path() -> Path | None:
    """Where stock Hermes records its running background processes (None without Hermes)."""
    module = hermes("tools.process_registry")
    path = getattr(module, "CHECKPOINT_PATH", None) if module is not None else None
    return Path(path) if path else None
