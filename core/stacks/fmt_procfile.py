"""Procfile (foreman, overmind, honcho, Heroku): one ``NAME: COMMAND`` a line, all started at
once, with no dependencies, probes or restarts. As foreman does, a ``.env`` file next to the
Procfile gives every job its variables, and each job gets ``PORT`` = 5000 + 100 x its place
(5000, 5100, ...) unless ``.env`` sets it.
"""

from __future__ import annotations

import os
import re

from .envfile import read_env_file
from .model import JobSpec, StackError, StackSpec, check_graph

LINE = re.compile(r"([A-Za-z0-9_-]+)\s*:\s*(.*)")
BASE_PORT, PORT_STEP = 5000, 100


def load(source: str, root: str, data: bytes, label: str) -> StackSpec:
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise StackError(f"{label}: not UTF-8 text (byte {exc.start})") from None
    dotenv = os.path.join(root, ".env")
    env = read_env_file(dotenv, f"{label}: .env") if os.path.isfile(dotenv) else {}
    spec = StackSpec(name="", source=source, format="procfile", root=root)
    for number, line in enumerate(text.splitlines(), 1):
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        match = LINE.fullmatch(line.strip())
        if not match or not match.group(2).strip():
            raise StackError(f"{label} line {number}: expected NAME: COMMAND (NAME of letters, digits, '_', '-')")
        name, command = match.group(1), match.group(2).strip()
        if name in spec.jobs:
            raise StackError(f"{label} line {number}: job {name!r} is defined twice")
        port = str(BASE_PORT + PORT_STEP * len(spec.jobs))
        spec.jobs[name] = JobSpec(name=name, command=command, cwd=root, env={"PORT": port, **env})
    check_graph(spec.jobs, label)
    return spec
