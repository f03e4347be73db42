"""process-compose.yaml mapped onto the stack model.

    processes:
      db:
        command: postgres -D data
        readiness_probe:
          exec: { command: pg_isready }       # or http_get: { host, port, path, scheme }
          period_seconds: 1
          failure_threshold: 30               # ready within initial_delay + period x threshold
      api:
        command: ./api
        working_dir: ./api
        environment: ["DEBUG=1"]
        depends_on:
          db: { condition: process_healthy }  # process_started, process_completed(_successfully)
        availability: { restart: on_failure, backoff_seconds: 2, max_restarts: 5 }
        shutdown: { timeout_seconds: 5 }
        is_tty: false
        disabled: false

What else process-compose knows (liveness probes, namespaces, replicas, log settings, ...) is
one warning line per key: ``process-compose.yaml: processes.api.liveness_probe: not
supported, ignored``.
"""

from __future__ import annotations

from typing import Any

from . import schema
from .model import JobSpec, Probe, StackError, StackSpec, check_graph, closest
from .yamlfile import ignored, load_yaml

TOP_KEYS = ("version", "processes", "environment")
PROCESS_KEYS = ("command", "working_dir", "environment", "depends_on", "readiness_probe", "ready_log_line",
                "availability", "disabled", "is_tty", "shutdown")
PROBE_KEYS = ("exec", "http_get", "initial_delay_seconds", "period_seconds", "timeout_seconds",
              "failure_threshold", "success_threshold")
CONDITIONS = {"process_started": "started", "process_healthy": "ready", "process_log_ready": "ready",
              "process_completed": "completed", "process_completed_successfully": "completed_successfully"}
# keys that are no typo of a supported one: what to say instead of "did you mean"
NOTES = {"liveness_probe": " (a running job is not probed; availability.restart restarts it when it exits)"}
RESTART = {"no": "no", "on_failure": "on-failure", "always": "always", "exit_on_failure": "no"}


def load(source: str, root: str, data: bytes, label: str) -> StackSpec:
    doc = load_yaml(data, label)
    spec = StackSpec(name="", source=source, format="process-compose", root=root)
    ignored(doc, TOP_KEYS, f"{label}: ", spec.warnings)
    if "processes" not in doc:
        raise StackError(f"{label}: no processes")
    common = environment(doc.get("environment"), f"{label}: environment")
    for name, raw in schema.table(doc["processes"], f"{label}: processes").items():
        where = f"{label}: processes.{schema.job_name(name, label)}"
        spec.jobs[name] = process(name, schema.table(raw, where), root, where, spec.warnings)
        spec.jobs[name].env = {**common, **spec.jobs[name].env}
    check_graph(spec.jobs, label, "processes")
    return spec


def process(name: str, data: dict[str, Any], root: str, where: str, warnings: list[str]) -> JobSpec:
    ignored(data, PROCESS_KEYS, f"{where}.", warnings, NOTES)
    command = schema.text(data, "command", where)
    if not command or not command.strip():
        typo = next((str(key) for key in data if key != "command" and closest(str(key), ("command",))), None)
        raise StackError(f"{where}: needs a command" + (f" ({typo}: did you mean command?)" if typo else ""))
    job = JobSpec(name=name, command=command, cwd=schema.folder(root, schema.text(data, "working_dir", where),
                                                                f"{where}.working_dir"),
                  env=environment(data.get("environment"), f"{where}.environment"),
                  pty=schema.flag(data, "is_tty", where, False),
                  autostart=not schema.flag(data, "disabled", where, False))
    job.depends_on = depends_on(data.get("depends_on"), f"{where}.depends_on")
    if "readiness_probe" in data:
        job.ready = probe(schema.table(data["readiness_probe"], f"{where}.readiness_probe"),
                          f"{where}.readiness_probe", warnings)
    elif "ready_log_line" in data:
        from .fmt_toml import probe_target

        job.ready = Probe("output", probe_target("output", data["ready_log_line"], f"{where}.ready_log_line"))
    availability(job, data.get("availability"), f"{where}.availability", warnings)
    shutdown(job, data.get("shutdown"), f"{where}.shutdown", warnings)
    return job


def environment(value: object, where: str) -> dict[str, str]:
    """A list of `NAME=value` strings (process-compose's form) or a table."""
    if value is None:
        return {}
    if isinstance(value, list):
        pairs: dict[str, object] = {}
        for item in value:
            name, sep, text = item.partition("=") if isinstance(item, str) else ("", "", "")
            if not sep or not name:
                raise StackError(f"{where}: expected NAME=value, not {schema.describe(item)}")
            pairs[name] = text
        value = pairs  # and checked as a table is (no NUL in a name or value)
    return schema.env_table(value, where)


def depends_on(value: object, where: str) -> dict[str, str]:
    if value is None:
        return {}
    result = {}
    for dep, raw in schema.table(value, where).items():
        condition = schema.table(raw or {}, f"{where}.{dep}").get("condition", "process_started")
        if condition not in CONDITIONS:
            raise StackError(f"{where}.{dep}.condition: must be one of {', '.join(CONDITIONS)}, "
                             f"not {schema.describe(condition)}")
        result[dep] = CONDITIONS[condition]
    return result


def probe(data: dict[str, Any], where: str, warnings: list[str]) -> Probe:
    ignored(data, PROBE_KEYS, f"{where}.", warnings)
    if data.get("success_threshold", 1) != 1:
        warnings.append(f"{where}.success_threshold: only 1 is supported (the first success counts)")
    period = schema.seconds(data, "period_seconds", where, 10.0, allow_zero=False)
    delay = schema.seconds(data, "initial_delay_seconds", where, 0.0)
    threshold = schema.count(data, "failure_threshold", where, 3) or 1
    attempt = schema.seconds(data, "timeout_seconds", where, 1.0, allow_zero=False)
    timeout = delay + period * threshold
    if "exec" in data:
        command = schema.text(schema.table(data["exec"], f"{where}.exec"), "command", f"{where}.exec")
        if not command:
            raise StackError(f"{where}.exec: needs a command")
        return Probe("exec", command, timeout, period, delay, attempt)
    if "http_get" in data:
        http = schema.table(data["http_get"], f"{where}.http_get")
        ignored(http, ("host", "port", "path", "scheme"), f"{where}.http_get.", warnings)
        port = http.get("port", 80)
        if isinstance(port, bool) or not isinstance(port, int) or not 0 < port < 65536:
            raise StackError(f"{where}.http_get.port: must be a TCP port, not {schema.describe(port)}")
        url = (f"{schema.text(http, 'scheme', where, 'http')}://{schema.text(http, 'host', where, '127.0.0.1')}"
               f":{port}{schema.text(http, 'path', where, '/')}")
        schema.check_url(url, f"{where}.http_get")
        return Probe("http", url, timeout, period, delay, attempt)
    raise StackError(f"{where}: needs exec or http_get")


def availability(job: JobSpec, value: object, where: str, warnings: list[str]) -> None:
    if value is None:
        return
    data = schema.table(value, where)
    ignored(data, ("restart", "backoff_seconds", "max_restarts"), f"{where}.", warnings)
    policy = schema.choice(data, "restart", where, tuple(RESTART), "no")
    if policy == "exit_on_failure":
        warnings.append(f"{where}.restart: exit_on_failure is not supported (the job is not restarted and the "
                        "stack stays up)")
    job.restart = RESTART[policy]
    job.backoff = schema.seconds(data, "backoff_seconds", where, 1.0)
    job.max_restarts = schema.count(data, "max_restarts", where, None) or None  # 0 means no limit there


def shutdown(job: JobSpec, value: object, where: str, warnings: list[str]) -> None:
    if value is None:
        return
    data = schema.table(value, where)
    ignored(data, ("timeout_seconds",), f"{where}.", warnings)
    job.stop_grace = schema.seconds(data, "timeout_seconds", where, 3.0, maximum=schema.MAX_STOP_GRACE)
