"""hermes-procs.toml: the stack's own format, one ``[jobs.NAME]`` table per job.

    name = "shop"                      # optional; default: the folder's name
    debounce = 0.3                     # seconds watched files stay unchanged before a restart
    watch_interval = 0.5               # seconds between looks at watched files
    [jobs.db]
    command = "postgres -D data"
    ready = { port = 5432, timeout = 30 }
    [jobs.api]
    command = "uvicorn app:app --port 8000"
    cwd = "api"                        # relative to this file
    env = { DEBUG = "1" }
    env_file = ".env"
    depends_on = ["db"]                # or { db = "ready", migrate = "completed_successfully" }
    ready = { http = "http://127.0.0.1:8000/health" }
    restart = "on-failure"             # no | on-failure | always
    max_restarts = 5
    backoff = 1                        # seconds, doubling up to backoff_max
    watch = ["api/**/*.py"]            # relative to this file: a change restarts the job
    stop_grace = 5

Every key is checked: an unknown one, a wrong type, an unknown dependency or a cycle is one
line naming it (:class:`~.model.StackError`), and nothing starts.
"""

from __future__ import annotations

import tomllib
from typing import Any

from . import filewatch, schema
from .envfile import read_env_files
from .model import CONDITIONS, POLICIES, JobSpec, Probe, StackError, StackSpec, check_graph

TOP_KEYS = ("name", "jobs", "debounce", "watch_interval")
JOB_KEYS = ("command", "cwd", "env", "env_file", "pty", "depends_on", "ready", "restart", "max_restarts",
            "backoff", "backoff_max", "watch", "stop_grace", "autostart")
READY_KEYS = ("port", "output", "http", "exec", "timeout", "interval", "initial_delay")


def load(source: str, root: str, data: bytes, label: str) -> StackSpec:
    """The stack in a hermes-procs.toml file's bytes; StackError (one line) when it is wrong."""
    try:
        doc = tomllib.loads(data.decode("utf-8"))
    except UnicodeDecodeError as exc:
        raise StackError(f"{label}: not UTF-8 text ({exc.reason} at byte {exc.start})") from None
    except tomllib.TOMLDecodeError as exc:
        raise StackError(f"{label}: invalid TOML: {exc}") from None
    schema.unknown_keys(doc, TOP_KEYS, label)
    if "jobs" not in doc:
        raise StackError(f"{label}: no [jobs.NAME] table")
    spec = StackSpec(name=schema.text(doc, "name", label) or "", source=source, format="toml", root=root,
                     debounce=schema.seconds(doc, "debounce", label, 0.3),
                     watch_interval=schema.seconds(doc, "watch_interval", label, 0.5, allow_zero=False))
    for name, raw in schema.table(doc["jobs"], f"{label}: jobs").items():
        spec.jobs[name] = job(name, raw, root, f"{label}: jobs.{schema.job_name(name, label)}")
    check_graph(spec.jobs, label)
    return spec


def job(name: str, raw: object, root: str, where: str) -> JobSpec:
    data = schema.table(raw, where)
    schema.unknown_keys(data, JOB_KEYS, where)
    command = schema.text(data, "command", where)
    if not command or not command.strip():
        raise StackError(f"{where}: needs a command")
    env = read_env_files(schema.text_list(data, "env_file", where), root, f"{where}.env_file")
    env.update(schema.env_table(data.get("env", {}), f"{where}.env"))
    return JobSpec(
        name=name, command=command, cwd=schema.folder(root, schema.text(data, "cwd", where), f"{where}.cwd"), env=env,
        pty=schema.flag(data, "pty", where, False), depends_on=depends_on(data.get("depends_on", []), where),
        ready=probe(data["ready"], f"{where}.ready") if "ready" in data else None,
        restart=schema.choice(data, "restart", where, POLICIES, "no"),
        max_restarts=schema.count(data, "max_restarts", where, None),
        backoff=schema.seconds(data, "backoff", where, 1.0),
        backoff_max=schema.seconds(data, "backoff_max", where, 30.0),
        watch=globs(data, where),
        stop_grace=schema.seconds(data, "stop_grace", where, 3.0, maximum=schema.MAX_STOP_GRACE),
        autostart=schema.flag(data, "autostart", where, True))


def depends_on(value: object, where: str) -> dict[str, str]:
    """A list of names (each waits for `ready`: the probe, or the start when there is none) or
    a table of name -> condition."""
    where = f"{where}.depends_on"
    if isinstance(value, list):
        if not all(isinstance(v, str) and v for v in value):
            raise StackError(f"{where}: must list job names, not {schema.describe(value)}")
        return dict.fromkeys(value, "ready")
    if not isinstance(value, dict):
        raise StackError(f"{where}: must be a list of job names or a table of name = condition, "
                         f"not {schema.describe(value)}")
    data = schema.table(value, where)
    return {name: schema.choice(data, name, where, CONDITIONS, "ready") for name in data}


def probe(value: object, where: str) -> Probe:
    data = schema.table(value, where)
    schema.unknown_keys(data, READY_KEYS, where)
    kinds = [kind for kind in ("port", "output", "http", "exec") if kind in data]
    if len(kinds) != 1:
        raise StackError(f"{where}: needs exactly one of port, output, http, exec (got {', '.join(kinds) or 'none'})")
    kind = kinds[0]
    return Probe(kind=kind, target=probe_target(kind, data[kind], f"{where}.{kind}"),
                 timeout=schema.seconds(data, "timeout", where, 60.0, allow_zero=False),
                 interval=schema.seconds(data, "interval", where, 0.25, allow_zero=False),
                 initial_delay=schema.seconds(data, "initial_delay", where, 0.0))


def probe_target(kind: str, value: Any, where: str) -> str:
    """The probe's target checked: a port 1-65535, a valid regex, an http(s) URL, a command."""
    if kind == "port":
        if isinstance(value, bool) or not isinstance(value, int) or not 0 < value < 65536:
            raise StackError(f"{where}: must be a TCP port from 1 to 65535, not {schema.describe(value)}")
        return str(value)
    if not isinstance(value, str) or not value.strip() or "\0" in value:
        raise StackError(f"{where}: must be a non-empty string, not {schema.describe(value)}")
    if kind == "http":
        schema.check_url(value, where)
    if kind == "output":
        from .probes import check_pattern

        check_pattern(value, where)
    return value


def globs(data: dict[str, Any], where: str) -> list[str]:
    """`watch`: globs relative to the file's folder, each one RE2 can match (filewatch.check)."""
    found = schema.text_list(data, "watch", where)
    for glob in found:
        why = filewatch.check(glob)
        if why:
            raise StackError(f"{where}.watch: {schema.describe(glob)} {why}")
    return found
