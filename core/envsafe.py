"""The environment a job starts with: the caller's, minus secrets, plus a few fixed settings."""

from __future__ import annotations

import os
import shlex

SECRET_MARKERS = ("API_KEY", "APIKEY", "TOKEN", "SECRET", "PASSWORD", "PASSWD", "PRIVATE_KEY",
                  "CREDENTIAL", "ACCESS_KEY", "AUTH", "SESSION_KEY", "COOKIE")
PASS_THROUGH_ENV = "HERMES_PROCS_ENV_PASSTHROUGH"


def is_secret_name(name: str) -> bool:
    upper = name.upper()
    return any(marker in upper for marker in SECRET_MARKERS)


def child_env(overrides: dict | None = None, pty: bool = False, base: dict | None = None) -> dict:
    """Parent env minus secret-named variables (except $HERMES_PROCS_ENV_PASSTHROUGH), plus overrides."""
    source = os.environ if base is None else base
    keep = set(source.get(PASS_THROUGH_ENV, "").replace(",", " ").split())
    env = {k: v for k, v in source.items() if k in keep or not is_secret_name(k)}
    env["PYTHONUNBUFFERED"] = "1"
    if pty:
        env.update(TERM="xterm-256color", PAGER="cat", GIT_PAGER="cat")
    for key, value in (overrides or {}).items():
        env[str(key)] = str(value)
    return env


def shell_argv(command: str) -> list[str]:
    """How the command runs: `bash -c COMMAND`, or $HERMES_PROCS_SHELL (e.g. "zsh -c")."""
    configured = os.environ.get("HERMES_PROCS_SHELL")
    prefix = shlex.split(configured) if configured else ["/bin/bash", "-c"]
    return [*prefix, command]
