"""What the stacks take from the rest of the core, in one place: the registry's public API and
a few small stdlib-only helpers (the sanitiser, atomic files, process identity, the home's
wake-ups, user regexes with deadlines, the job environment). Nothing else in core/stacks/
imports a core module directly."""

from __future__ import annotations

from ..registry.envsafe import child_env, shell_argv
from ..registry.paths import IdError, check_private_dir, ensure_private_dir, open_nofollow, read_json, write_json_atomic
from ..registry.process_registry import ProcessRegistry
from ..registry.userregex import PatternError, UserRegex, compile_user
from ..registry.watch import HomeWatch
from ..supervisor.bounds import BadNumber, seconds
from ..supervisor.proctree import is_alive, send, start_ticks
from ..supervisor.text import one_line, safe_line, to_text

__all__ = ["BadNumber", "HomeWatch", "IdError", "PatternError", "ProcessRegistry", "UserRegex", "check_private_dir",
           "child_env", "compile_user", "ensure_private_dir", "is_alive", "one_line", "open_nofollow", "read_json",
           "safe_line", "seconds", "send", "shell_argv", "start_ticks", "to_text", "write_json_atomic"]
