"""The stack model every file format maps onto: a stack, its jobs, their probes, and the checks
that hold for every format (names, dependencies known, no cycle).

A `StackSpec` is what `up` validated and wrote to ``<home>/stacks/NAME/spec.json``; the stack
supervisor reads it back (:meth:`StackSpec.from_dict`) and never reparses the user's file.
"""

from __future__ import annotations

import difflib
import re
from dataclasses import asdict, dataclass, field
from typing import Any

__all__ = ["CONDITIONS", "POLICIES", "JobSpec", "Probe", "StackError", "StackSpec", "check_graph", "check_name",
           "closest", "start_order"]

# how a job waits for one of its dependencies
CONDITIONS = ("started", "ready", "completed", "completed_successfully")
POLICIES = ("no", "on-failure", "always")
PROBE_KINDS = ("port", "output", "http", "exec")
STACK_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,63}")
MAX_JOBS = 200


class StackError(ValueError):
    """A stack file or request that cannot be used: one line saying where and what."""


@dataclass
class Probe:
    """When a job counts as ready: a TCP `port` accepts a connection on localhost, its `output`
    matches a regex, an `http` URL answers 2xx/3xx, or an `exec` command exits 0; checked every
    `interval` seconds for at most `timeout` seconds after the job starts."""

    kind: str
    target: str  # the port number, regex, URL or command, as text
    timeout: float = 60.0
    interval: float = 0.25
    initial_delay: float = 0.0
    attempt_timeout: float = 5.0  # seconds one http or exec attempt may take

    def own_port(self) -> int | None:
        """The port the job itself must listen on for this probe to pass: a `port` probe's, or
        an `http` probe's on this machine (127.0.0.1, localhost, [::1]) with its port given.
        The job starts with it claimed (the port guard), so that another process already
        listening there fails the job instead of making it ready."""
        if self.kind == "port":
            return int(self.target)
        if self.kind != "http":
            return None
        from urllib.parse import urlsplit

        try:
            url = urlsplit(self.target)
            port = url.port
        except ValueError:
            return None
        return port if port and url.hostname in ("127.0.0.1", "localhost", "::1") else None

    def describe(self) -> str:
        """`port 5432`, `output /listening/`, `http http://...`, `exec pg_isready`."""
        return f"output /{self.target}/" if self.kind == "output" else f"{self.kind} {self.target}"


@dataclass
class JobSpec:
    """One job of a stack, whatever file it came from."""

    name: str
    command: str
    cwd: str  # absolute
    env: dict[str, str] = field(default_factory=dict)
    pty: bool = False
    depends_on: dict[str, str] = field(default_factory=dict)  # name -> one of CONDITIONS
    ready: Probe | None = None
    restart: str = "no"
    max_restarts: int | None = None  # None: no limit
    backoff: float = 1.0
    backoff_max: float = 30.0
    watch: list[str] = field(default_factory=list)  # globs relative to the stack's folder
    stop_grace: float = 3.0
    autostart: bool = True


@dataclass
class StackSpec:
    """A validated stack: its name, the file it came from, the folder relative paths start
    from, and its jobs in file order."""

    name: str
    source: str  # the file's absolute path
    format: str  # toml, procfile, process-compose, mprocs
    root: str  # the file's folder
    jobs: dict[str, JobSpec] = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)
    debounce: float = 0.3  # seconds a watched file must stay unchanged before its job restarts
    watch_interval: float = 0.5  # seconds between looks at watched files when inotify is missing

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> StackSpec:
        """The spec `up` wrote (spec.json). Raises StackError when it is not one."""
        try:
            jobs = {}
            for name, raw in data["jobs"].items():
                raw = dict(raw)
                probe = raw.pop("ready", None)
                jobs[name] = JobSpec(**raw, ready=Probe(**probe) if probe else None)
            rest = {k: v for k, v in data.items() if k != "jobs"}
            return cls(**rest, jobs=jobs)
        except (KeyError, TypeError, AttributeError) as exc:
            raise StackError(f"spec.json is damaged ({type(exc).__name__}: {exc}); run up again") from None

    def order(self) -> list[str]:
        """The jobs in dependency order (a job after everything it depends on)."""
        return start_order(self.jobs)

    def dependents(self, name: str) -> list[str]:
        """The jobs that depend on `name` directly."""
        return [job.name for job in self.jobs.values() if name in job.depends_on]


def check_name(name: object, what: str = "stack name") -> str:
    """A stack name: letters, digits, `.`, `_`, `-`, at most 64, starting with a letter or digit."""
    if not isinstance(name, str) or not STACK_NAME.fullmatch(name):
        raise StackError(f"{what} {name!r} must be 1-64 letters, digits, '.', '_' or '-' (starting with a letter "
                         "or digit)")
    return name


def closest(word: str, choices: list[str] | tuple[str, ...]) -> str:
    """` (did you mean X?)` for the nearest of `choices`, or nothing."""
    near = difflib.get_close_matches(word, list(choices), n=1, cutoff=0.6)
    return f" (did you mean {near[0]}?)" if near else ""


def check_graph(jobs: dict[str, JobSpec], where: str, section: str = "jobs") -> None:
    """Every dependency names a job of the stack and none depends on itself, directly or not;
    `section` is the file's table of jobs, for the error's key (`jobs.api.depends_on`)."""
    if not jobs:
        raise StackError(f"{where}: no jobs")
    if len(jobs) > MAX_JOBS:
        raise StackError(f"{where}: {len(jobs)} jobs; a stack holds at most {MAX_JOBS}")
    for job in jobs.values():
        for dep in job.depends_on:
            if dep not in jobs:
                raise StackError(f"{where}: {section}.{job.name}.depends_on: no job named {dep!r} in this stack"
                                 f"{closest(dep, list(jobs))}")
    start_order(jobs, where)


def start_order(jobs: dict[str, JobSpec], where: str = "stack") -> list[str]:
    """Jobs in dependency order, file order among equals; StackError naming a cycle."""
    done: list[str] = []
    placed: set[str] = set()
    visiting: list[str] = []

    def visit(name: str) -> None:
        if name in placed:
            return
        if name in visiting:
            cycle = [*visiting[visiting.index(name):], name]
            raise StackError(f"{where}: dependency cycle: {' -> '.join(cycle)}")
        visiting.append(name)
        for dep in jobs[name].depends_on:
            if dep in jobs:
                visit(dep)
        visiting.pop()
        placed.add(name)
        done.append(name)

    for name in jobs:
        visit(name)
    return done
