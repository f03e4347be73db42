"""The user's config file: `$XDG_CONFIG_HOME/hermes-procs/config.toml` (default ~/.config).

One TOML file for everything a user sets once: `[hosts]` (names for remote host URLs) here;
the dashboard reads its own tables (highlight rules, keys, theme) from the same file.
`HERMES_PROCS_CONFIG` points at another file. A missing file is an empty config; a broken
one raises ConfigError with the file name and TOML's own message.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any


class ConfigError(ValueError):
    """The config file exists but cannot be read or parsed."""


def config_path() -> Path:
    explicit = os.environ.get("HERMES_PROCS_CONFIG")
    if explicit:
        return Path(explicit).expanduser()
    base = os.environ.get("XDG_CONFIG_HOME") or ""
    root = Path(base) if os.path.isabs(base) else Path.home() / ".config"  # XDG: ignore relative
    return root / "hermes-procs" / "config.toml"


def load() -> dict[str, Any]:
    """The parsed config file ({} when there is none)."""
    import tomllib

    path = config_path()
    try:
        with open(path, "rb") as fh:
            return tomllib.load(fh)
    except FileNotFoundError:
        return {}
    except (OSError, tomllib.TOMLDecodeError) as exc:
        raise ConfigError(f"cannot read {path}: {exc}") from None


def host_aliases() -> dict[str, str]:
    """[hosts] of the config file: name -> URL (e.g. box = "ssh://me@build-box")."""
    hosts = load().get("hosts", {})
    if not isinstance(hosts, dict):
        raise ConfigError(f"[hosts] in {config_path()} must be a table of name = \"URL\"")
    return {str(k): str(v) for k, v in hosts.items() if isinstance(v, str)}
