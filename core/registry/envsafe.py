"""The environment a job starts with: the caller's, minus secrets, plus a few fixed settings.

A variable is a secret when its name contains one of the words of core/registry/secretwords.py (the
list the masking uses too), or when its value holds something the masking would hide: a
password in a URL (``http_proxy=http://user:pw@proxy``, ``DATABASE_URL``), a known token shape,
a private key. $HERMES_PROCS_ENV_PASSTHROUGH names variables to pass anyway.
"""

from __future__ import annotations

import os
from collections.abc import Mapping

PASS_THROUGH_ENV = "HERMES_PROCS_ENV_PASSTHROUGH"
_VERDICTS: dict[tuple[str, str], bool] = {}  # the env is mostly the same from spawn to spawn
_MAX_VERDICTS = 4096


def is_secret(name: str, value: str) -> bool:
    """True when the variable `name`=`value` must not reach a job (remembered: the masking
    patterns cost ~10 us a variable, ~0.3 ms a spawn with a usual environment)."""
    key = (name, value)
    verdict = _VERDICTS.get(key)
    if verdict is None:
        # the masking's patterns load at the first spawn, not with the registry: compiling them
        # is most of what importing the registry costs a one-shot query (`hermes-procs poll`)
        from .redact import contains_secret
        from .secretwords import is_secret_name

        if len(_VERDICTS) >= _MAX_VERDICTS:
            _VERDICTS.clear()
        verdict = _VERDICTS[key] = is_secret_name(name) or contains_secret(value)
    return verdict


def child_env(overrides: Mapping[str, object] | None = None, pty: bool = False,
              base: Mapping[str, str] | None = None) -> dict[str, str]:
    """Parent env minus secrets (except $HERMES_PROCS_ENV_PASSTHROUGH), plus overrides."""
    source = os.environ if base is None else base
    keep = set(source.get(PASS_THROUGH_ENV, "").replace(",", " ").split())
    env = {k: v for k, v in source.items() if k in keep or not is_secret(k, v)}
    env["PYTHONUNBUFFERED"] = "1"
    if pty:
        env.update(TERM="xterm-256color", PAGER="cat", GIT_PAGER="cat")
    for key, value in (overrides or {}).items():
        env[str(key)] = str(value)
    return env


def shell_argv(command: str) -> list[str]:
    """How the command runs: `bash -c COMMAND`, or $HERMES_PROCS_SHELL (e.g. "zsh -c")."""
    configured = os.environ.get("HERMES_PROCS_SHELL")
    if not configured:
        return ["/bin/bash", "-c", command]
    import shlex  # only for this setting: ~0.5 ms of a CLI query's start otherwise

    return [*shlex.split(configured), command]
