"""mprocs.yaml mapped onto the stack model.

    procs:
      server:
        shell: "npm run dev"          # or cmd: ["npm", "run", "dev"]
        cwd: "<CONFIG_DIR>/web"       # relative paths: from the file's folder
        env: { PORT: "3000" }
        autostart: false              # defined, started with `restart STACK server`
        autorestart: true             # restart: always

mprocs has no dependencies or probes: every proc starts at once. Its UI settings (keymaps,
widths, ...) and the proc keys it alone knows (``stop``, ``add_path``, ...) are one warning
line each.
"""

from __future__ import annotations

import shlex
from typing import Any

from . import schema
from .model import JobSpec, StackError, StackSpec, check_graph
from .yamlfile import ignored, load_yaml

PROC_KEYS = ("shell", "cmd", "cwd", "env", "autostart", "autorestart")


def load(source: str, root: str, data: bytes, label: str) -> StackSpec:
    doc = load_yaml(data, label)
    spec = StackSpec(name="", source=source, format="mprocs", root=root)
    ignored(doc, ("procs",), f"{label}: ", spec.warnings)
    if "procs" not in doc:
        raise StackError(f"{label}: no procs")
    for name, raw in schema.table(doc["procs"], f"{label}: procs").items():
        where = f"{label}: procs.{schema.job_name(name, label)}"
        spec.jobs[name] = proc(name, {"shell": raw} if isinstance(raw, str) else schema.table(raw, where), root,
                               where, spec.warnings)
    check_graph(spec.jobs, label)
    return spec


def proc(name: str, data: dict[str, Any], root: str, where: str, warnings: list[str]) -> JobSpec:
    ignored(data, PROC_KEYS, f"{where}.", warnings)
    command = schema.text(data, "shell", where)
    if "cmd" in data:
        words = data["cmd"]
        if command or not isinstance(words, list) or not words or not all(isinstance(w, str) for w in words):
            raise StackError(f"{where}.cmd: must be a non-empty list of strings (and not with shell)")
        command = shlex.join(words)
    if not command or not command.strip():
        raise StackError(f"{where}: needs shell or cmd")
    cwd = schema.text(data, "cwd", where)
    env = {}
    for key, value in schema.table(data.get("env") or {}, f"{where}.env").items():
        if value is None:
            warnings.append(f"{where}.env.{key}: removing a variable (null) is not supported, ignored")
            continue
        env.update(schema.env_table({key: value}, f"{where}.env"))
    return JobSpec(name=name, command=command,
                   cwd=schema.folder(root, cwd.replace("<CONFIG_DIR>", root) if cwd else None, f"{where}.cwd"),
                   env=env, autostart=schema.flag(data, "autostart", where, True),
                   restart="always" if schema.flag(data, "autorestart", where, False) else "no")
