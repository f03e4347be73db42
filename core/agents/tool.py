"""The agent tool: one function-calling tool named ``process`` over a ProcessRegistry.

    from hermes_procs.core.agents.tool import PROCESS_TOOL_SCHEMA, handle_process

    tools = [PROCESS_TOOL_SCHEMA]                      # OpenAI / Anthropic function format
    result_json = handle_process({"action": "start", "command": "make test",
                                  "notify_on_complete": True}, task_id="task-1")

``handle_process(args, registry=None, task_id=None) -> str`` returns a JSON string holding the
same dicts as the Python API (``list`` returns ``{"processes": [...]}``), with secrets masked
(see :mod:`hermes_procs.core.registry.redact`), and the values of the secret-named variables
given to the jobs it names masked, also printed bare (:mod:`.secret_values`). It never raises:
a missing or wrong-typed argument, an unknown action or an internal failure all come back as
``{"status": "error", "error": ...}``.

``registry=None`` uses one module-level ``ProcessRegistry()`` created on first use (state home
from ``$HERMES_PROCS_HOME`` and friends). With ``task_id``, ``start`` records the task and
``list`` shows only that task's jobs unless ``all`` is true.

:func:`run_action` is the same dispatch returning the (redacted) dict; the MCP server uses it.
"""

from __future__ import annotations

import json
import os
import threading
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from ..registry.paths import HomeError
from ..registry.redact import redact_obj
from ..supervisor.text import one_line, safe_json
from .answer_cap import capped
from .secret_values import mask_job_secrets

if TYPE_CHECKING:
    from ..registry.process_registry import ProcessRegistry

__all__ = ["ACTIONS", "PROCESS_TOOL_SCHEMA", "default_registry", "handle_process", "run_action", "unknown_argument"]

# characters of lines in one log or search answer: a model's context, and many MCP clients,
# take far less than the API's 1 MiB (the answer says where the rest is)
ANSWER_CHARS = 100_000
ACTIONS = ("exec", "start", "list", "poll", "log", "wait", "kill", "write", "submit", "close", "screen", "search",
           "restart", "tree", "signal", "pin", "unpin", "up", "down")

_DESCRIPTION = (
    "Run and control background processes (builds, test runs, dev servers, installers, REPLs) "
    "that keep running between your turns and that the user can watch in the hermes-procs "
    "dashboard.\n"
    "Actions: exec (run `command` and get its result in one call: it returns when the command "
    "exits, waits for input, or yield_ms (default 10000) pass, with status, exit_code, reason and "
    "output; a command still running keeps going as a job: continue with its session_id), start "
    "(run `command` in the background; returns session_id), list, poll (status, recent output, "
    "awaiting_input, quiet_seconds, cpu_percent, rss_bytes, process_count, ports), log (output lines), "
    "wait (block until exit, or until=input / quiet:SECONDS / output:REGEX / port:N), kill, "
    "write, submit, close (send EOF to stdin), screen (a pty job's terminal screen as text), "
    "search (regex over whole logs), restart (run a job's command again as a new job), tree (the "
    "job's processes: pid, state, CPU, memory, which one waits for input, command), signal (send "
    "one signal to the job, or with pid to one process of its tree), pin / unpin (keep an "
    "ephemeral job after you are gone, or not).\n"
    "Know this:\n"
    "- One-shot commands (a build, a test run, git, ls, an installer): exec. It returns the "
    "result at once when the command is quick; when it asks a question (reason 'awaiting_input') "
    "answer with submit and yield_ms, which returns only the job's reply to that line.\n"
    "- Dev servers: start with a name, reuse=true and port=N. reuse returns the job already "
    "running under that name (reused: true) instead of a second server; port refuses to start "
    "when N is taken and names who holds it; then wait until='port' (the job's own port). poll "
    "and list show the ports each job listens on.\n"
    "- Jobs are durable: they run on after you finish, until they end or are killed. For scratch "
    "jobs (a watcher, a server only this session needs) set ephemeral=true: the job is killed "
    "when you (this agent process / MCP client) are gone. pin keeps such a job anyway, unpin "
    "undoes it.\n"
    "- A started job runs silently: you hear nothing about it unless you set "
    "notify_on_complete=true (an event when it exits) or watch_patterns (an event when a line "
    "contains one of the strings), or you poll/wait yourself.\n"
    "- submit sends `data` and presses Enter; write sends `data` exactly, with no Enter.\n"
    "- Use pty=true for programs that need a terminal (REPLs, prompts that read from a tty).\n"
    "- Don't poll in a loop: after starting an installer or anything that may ask a question, "
    "wait with until='input' (returns with reason 'awaiting_input' when it blocks reading its "
    "stdin, output ends with the question), then submit the answer. A server: until='port:8000'. "
    "A build's milestone: until='output:REGEX'. Something that may hang: until='quiet:30'. "
    "The result's reason says what happened (exited, awaiting_input, quiet, matched, "
    "port_open, timeout).\n"
    "- wait is clamped to a maximum (default 180 s; the result says so in timeout_note): call "
    "it again to keep waiting.\n"
    "- For full-screen programs in a pty (top, vim, curses installers, REPLs) the log is a "
    "soup of escape codes: use screen to see what the terminal shows now.\n"
    "- search finds a regex in a job's whole log (or every job's, without session_id) with "
    "line numbers usable as log offset; restart reruns a job with the same command, cwd, env "
    "and options (killing it first if it runs).\n"
    "- log without offset shows the last `limit` lines (default 200); page through a long log "
    "with offset (0 = first line) and limit; total_lines tells you how far there is to go; "
    "since ('5m', seconds ago, or an ISO time) keeps only the output that arrived since then.\n"
    "- kill stops the whole process tree (children and grandchildren too), not just the shell.\n"
    "- signal sends `signal` (INT, TERM, HUP, USR1, USR2, QUIT, STOP, CONT, WINCH, KILL, or a "
    "number) to the job's process group, or with `pid` (from tree) to that one process only: "
    "e.g. INT to interrupt a stuck test runner's worker, HUP to make a server reload.\n"
    "- A project's dev stack (db, api, web...) from its hermes-procs.toml, Procfile, "
    "process-compose.yaml or mprocs.yaml: up (in `cwd`, or `path`; wait_ready=true returns once every "
    "job is ready, or says which failed and why) starts its jobs in dependency order and keeps "
    "them (readiness probes, restart policies, file watching) after you are gone; list with "
    "`stack` shows its jobs; restart with `stack` (and `job`) restarts it; down with `stack` "
    "stops it, dependents first. Don't start a stack's pieces one by one.\n"
    "- Secrets (tokens, passwords) in output are masked as ***."
)

PROCESS_TOOL_SCHEMA: dict[str, Any] = {
    "name": "process",
    "description": _DESCRIPTION,
    "parameters": {
        "type": "object",
        "properties": {
            "action": {
                "type": "string",
                "enum": list(ACTIONS),
                "description": "What to do. exec and start need command; write needs session_id and data; "
                "search needs pattern; signal needs session_id and signal; poll, log, wait, kill, "
                "submit, close, screen, restart, tree, pin, unpin need session_id (restart: or stack); list "
                "needs nothing; up needs a stack file in cwd (or path); down needs stack (or path).",
            },
            "command": {
                "type": "string",
                "description": "exec, start: the shell command to run (bash -c).",
            },
            "yield_ms": {
                "type": "number",
                "minimum": 0,
                "description": "exec (default 10000), write, submit: return after at most this many "
                "milliseconds, or sooner when the job exits or waits for input; with `output`.",
            },
            "pty": {
                "type": "boolean",
                "description": "exec, start: run in a pseudo-terminal (REPLs, interactive prompts). Default false.",
            },
            "cwd": {"type": "string", "description": "exec, start: working directory (default: the current one). "
                    "up: the folder whose stack file to read."},
            "name": {"type": "string", "description": "exec, start: a short label shown in list and the dashboard."},
            "reuse": {
                "type": "boolean",
                "description": "exec, start: when a job of this `name` is running, return it (reused: true) "
                "and start nothing. For dev servers.",
            },
            "port": {
                "type": "integer",
                "minimum": 1,
                "maximum": 65535,
                "description": "exec, start: the TCP port the job will serve; refused (naming the holder) "
                "when it is in use; wait until='port' waits for it.",
            },
            "ephemeral": {
                "type": "boolean",
                "description": "exec, start: kill the job when its caller (this agent process, or the MCP "
                "client's server) ends; default false (jobs are durable). pin keeps it.",
            },
            "path": {"type": "string", "description": "up, down: the stack file (hermes-procs.toml, Procfile, "
                     "process-compose.yaml, mprocs.yaml)."},
            "stack": {"type": "string", "description": "down, restart, list: the stack's name (up: its name, "
                      "default the file's name or folder's name)."},
            "job": {"type": "string", "description": "restart with stack: only this job of it."},
            "wait_ready": {"type": "boolean", "description": "up: return once every job is ready (or one "
                           "failed: the error says which and why)."},
            "notify_on_complete": {
                "type": "boolean",
                "description": "start: deliver a completion event (exit code + last output) when the "
                "job exits. Without it (or watch_patterns) you are not told when it ends.",
            },
            "watch_patterns": {
                "type": "array",
                "items": {"type": "string"},
                "description": "start: deliver an event when an output line contains one of these "
                "substrings (e.g. 'Proceed?', 'ERROR', 'listening on'). Rate limited; for rare signals.",
            },
            "max_runtime": {
                "type": "number",
                "description": "start: kill the job's whole tree after this many seconds "
                "(it ends with completion_reason 'timed_out').",
            },
            "quiet_after": {
                "type": "number",
                "description": "start: record a 'quiet' event when the job has printed nothing for "
                "this many seconds (once per quiet stretch).",
            },
            "env": {
                "type": "object",
                "additionalProperties": {"type": "string"},
                "description": "start: extra environment variables for the job.",
            },
            "host": {
                "type": "string",
                "description": "Any action: run on / look at another machine (ssh://[user@]host[:port], "
                "docker://CONTAINER, k8s://[NAMESPACE/]POD[/CONTAINER] or a host name from the config "
                "file). Omit for this machine. Use the same host for every action on that job.",
            },
            "session_id": {
                "type": "string",
                "description": "The job's id from start or list (proc_ + 12 hex); a unique prefix of "
                "at least 4 hex characters also works.",
            },
            "data": {
                "type": "string",
                "description": "write: bytes to send as is (no Enter). submit: the line to send "
                "before Enter (may be empty to just press Enter). With yield_ms the result's `output` "
                "is what the job printed after it.",
            },
            "timeout": {
                "type": "number",
                "description": "wait: seconds to wait at most (clamped to the server maximum, default 180). "
                "up with wait_ready: seconds to wait for the stack (default 180).",
            },
            "until": {
                "type": "string",
                "description": "wait: what to wait for: 'exit' (default), 'input' (the job blocks "
                "reading its stdin: a prompt), 'quiet:SECONDS' (no output for that long), "
                "'output:REGEX' (new output matches), 'port:N' (the job listens on TCP port N), 'port' "
                "(on the port it was started with).",
            },
            "pattern": {
                "type": "string",
                "description": "search: a regular expression (Python syntax) matched against each log line.",
            },
            "context": {
                "type": "integer",
                "minimum": 0,
                "description": "search: lines shown before and after each match (default 2).",
            },
            "offset": {
                "type": "integer",
                "minimum": 0,
                "description": "log: first line to show (0 = the first line). Omit for the last lines.",
            },
            "since": {
                "type": ["string", "number"],
                "description": "log: only output that arrived since then: seconds ago (300), a duration "
                "('5m', '1h30m') or an ISO time ('2026-11-26T06:30:00'; local unless it ends in Z or "
                "an offset). Not with offset.",
            },
            "limit": {
                "type": "integer",
                "minimum": 1,
                "description": "log: how many lines to show (default 200). search: how many matches "
                "to return (default 50; total counts them all).",
            },
            "grace": {
                "type": "number",
                "minimum": 0,
                "description": "kill: seconds between SIGTERM and SIGKILL (default 3).",
            },
            "signal": {
                "type": ["string", "integer"],
                "description": "signal: the signal to send: INT, TERM, HUP, KILL, QUIT, USR1, USR2, STOP, "
                "CONT, WINCH (SIGINT and numbers such as 2 also work).",
            },
            "pid": {
                "type": "integer",
                "minimum": 1,
                "description": "signal: send to this one process of the job (a pid from tree) instead of "
                "the job's whole process group.",
            },
            "start_ticks": {
                "type": "integer",
                "minimum": 0,
                "description": "signal with pid: the process's start_ticks as tree showed them; pins that "
                "exact process (a pid reused since is refused).",
            },
            "all": {
                "type": "boolean",
                "description": "list, search: every job, not only the ones of the current task.",
            },
        },
        "required": ["action"],
    },
}

# ---------------------------------------------------------------------------------------------
# the default registry
# ---------------------------------------------------------------------------------------------
_default: ProcessRegistry | None = None
_default_lock = threading.Lock()


def default_registry() -> ProcessRegistry:
    """The module-level ``ProcessRegistry()`` used when ``registry=None`` (created lazily)."""
    global _default
    if _default is None:
        with _default_lock:
            if _default is None:
                from ..registry.process_registry import ProcessRegistry

                _default = ProcessRegistry()
    return _default


_hosts: dict[str, ProcessRegistry] = {}


def _host_registry(host: str) -> ProcessRegistry:
    """The registry of a remote host (core/remote/client.py), one per host for this process."""
    with _default_lock:
        if host not in _hosts:
            from ..registry.process_registry import ProcessRegistry

            try:
                _hosts[host] = ProcessRegistry(host=host)
            except ValueError as exc:  # a bad URL or an unknown host name
                raise _ArgError(f"argument 'host': {exc}") from None
        return _hosts[host]


# ---------------------------------------------------------------------------------------------
# argument checking
# ---------------------------------------------------------------------------------------------
class _ArgError(Exception):
    pass


_MISSING = object()
_TYPE_NAMES = {str: "a string", bool: "true or false", int: "a whole number", float: "a number",
               list: "a list of strings", dict: "an object of string values"}


def _as_bool(value: Any) -> tuple[bool, Any]:
    return isinstance(value, bool), value


def _as_int(value: Any) -> tuple[bool, Any]:
    if isinstance(value, float) and value.is_integer():  # 3.0 from a JSON encoder that writes floats
        value = int(value)
    return isinstance(value, int) and not isinstance(value, bool), value


def _as_float(value: Any) -> tuple[bool, Any]:
    return isinstance(value, (int, float)) and not isinstance(value, bool), value


def _as_str(value: Any) -> tuple[bool, Any]:
    return isinstance(value, str), value


def _as_list(value: Any) -> tuple[bool, Any]:
    if isinstance(value, str):  # one pattern given as a plain string
        value = [value]
    return isinstance(value, list) and all(isinstance(v, str) for v in value), value


def _as_dict_of_str(value: Any) -> tuple[bool, Any]:
    """Names to strings; a number or boolean is written as text (`1`, `true`), a list or table
    as JSON; a null is refused (PATH=None made every command of the job `not found`)."""
    if not (isinstance(value, dict) and all(isinstance(k, str) for k in value)):
        return False, value
    unset = next((k for k, v in value.items() if v is None), None)
    if unset is not None:
        raise _ArgError(f"argument 'env': {unset[:80]!r} is null: give it a string, or leave it out")
    return True, {k: v if isinstance(v, str) else json.dumps(v) if isinstance(v, (bool, dict, list)) else str(v)
                  for k, v in value.items()}


# how _get checks (and gently converts) a value of each kind: (ok, value)
_CHECKERS: dict[type, Callable[[Any], tuple[bool, Any]]] = {
    bool: _as_bool, int: _as_int, float: _as_float, str: _as_str, list: _as_list, dict: _as_dict_of_str}


def _get(args: dict[str, Any], name: str, kind: type, *, required: bool = False, default: Any = None) -> Any:
    """Argument `name` checked to be of `kind` (see _CHECKERS); `default` when absent or null."""
    value = args.get(name, _MISSING)
    if value is _MISSING or value is None:
        if required:
            raise _ArgError(f"missing required argument '{name}'")
        return default
    ok, value = _CHECKERS[kind](value)
    if not ok:
        raise _ArgError(f"argument '{name}' must be {_TYPE_NAMES[kind]}, not {_describe(value)}")
    return value


def _describe(value: Any) -> str:
    text = json.dumps(value, default=str) if not isinstance(value, str) else repr(value)
    if len(text) > 60:
        text = text[:57] + "..."
    return f"{type(value).__name__} {text}"


def _session_id(args: dict[str, Any]) -> str:
    value = args.get("session_id")
    if value is None or value == "":
        raise _ArgError("missing required argument 'session_id' (the id returned by start or list)")
    if isinstance(value, bool) or not isinstance(value, (str, int)):
        raise _ArgError(f"argument 'session_id' must be a string such as 'proc_1a2b3c4d5e6f', "
                        f"not {_describe(value)}")
    return str(value).strip()


# ---------------------------------------------------------------------------------------------
# dispatch
# ---------------------------------------------------------------------------------------------
def run_action(args: Any, registry: ProcessRegistry | None = None, task_id: str | None = None) -> dict[str, Any]:
    """Perform one tool call and return its result dict (redacted, at most MAX_ANSWER characters
    of JSON: answer_cap.py). Never raises."""
    reg = None
    try:
        reg, result = _dispatch(args, registry, task_id)
    except (_ArgError, HomeError) as exc:  # bad arguments, or a state home that is unsafe to use
        result = {"status": "error", "error": one_line(str(exc))}
    except Exception as exc:  # noqa: BLE001 - the tool must never raise into the agent loop
        result = {"status": "error", "error": one_line(f"internal error: {type(exc).__name__}: {exc}")}
    try:
        masked: dict[str, Any] = redact_obj(result)  # first: it tells a cut tail by its length
        return capped(masked if reg is None else mask_job_secrets(masked, reg, raw=result))
    except Exception as exc:  # noqa: BLE001
        return {"status": "error", "error": f"internal error while masking secrets: {type(exc).__name__}"}


def handle_process(args: Any, registry: ProcessRegistry | None = None, task_id: str | None = None) -> str:
    """Perform one ``process`` tool call; returns a JSON string (see module docstring)."""
    result = run_action(args, registry, task_id)
    try:
        return safe_json(result)  # an agent's UI may print it: C1 and bidi controls escaped too
    except Exception as exc:  # noqa: BLE001
        return json.dumps({"status": "error", "error": f"internal error: unserialisable result ({exc})"})


def _dispatch(args: Any, registry: ProcessRegistry | None,
              task_id: str | None) -> tuple[ProcessRegistry, dict[str, Any]]:
    """Check the call's shape and action, pick the registry (``host``), run the action's handler."""
    args = _parse_args(args)
    action = _action(args)
    _refuse_unknown(args, PROCESS_TOOL_SCHEMA["parameters"]["properties"])
    if task_id is not None and not isinstance(task_id, str):
        task_id = str(task_id)
    reg = registry if registry is not None else default_registry()
    host = _get(args, "host", str)
    if host:
        reg = _host_registry(host)
    return reg, _HANDLERS[action](reg, args, task_id)


def _parse_args(args: Any) -> dict[str, Any]:
    """The call's arguments as a dict (a JSON string is decoded; "" is no arguments)."""
    if isinstance(args, str):
        try:
            args = json.loads(args) if args.strip() else {}
        except ValueError as exc:
            raise _ArgError(f"arguments are not valid JSON: {exc}") from None
    if not isinstance(args, dict):
        raise _ArgError(f"arguments must be an object with an 'action', not {_describe(args)}")
    return args


def _refuse_unknown(args: dict[str, Any], known: dict[str, Any]) -> None:
    """A misspelt argument (``limt``) is an error naming it, not a default silently used."""
    unknown = [str(name) for name in args if name not in known]
    if unknown:
        raise _ArgError(unknown_argument(unknown[0], known))


def unknown_argument(name: str, known: Any) -> str:
    """``unknown argument 'limt' (did you mean 'limit'?)``, or the list of arguments there are."""
    import difflib

    close = difflib.get_close_matches(name, list(known), n=1)
    hint = f"did you mean {close[0]!r}?" if close else f"the arguments are: {', '.join(sorted(known))}"
    return f"unknown argument {name[:80]!r} ({hint})"


def _action(args: dict[str, Any]) -> str:
    """The ``action`` argument, normalised (trimmed, lower case) and checked against ACTIONS."""
    action = args.get("action")
    valid = ", ".join(ACTIONS)
    if action is None or action == "":
        raise _ArgError(f"missing required argument 'action' (one of: {valid})")
    if not isinstance(action, str):
        raise _ArgError(f"argument 'action' must be a string, one of: {valid}")
    action = action.strip().lower()
    if action not in ACTIONS:
        raise _ArgError(f"unknown action {args.get('action')!r}; valid actions: {valid}")
    return action


# ---------------------------------------------------------------------------------------------
# the actions: one handler each, (registry, args, task_id) -> result dict
# ---------------------------------------------------------------------------------------------
def _start(reg: ProcessRegistry, args: dict[str, Any], task_id: str | None) -> dict[str, Any]:
    return _as_dict(reg.spawn(_command(args), **_spawn_options(reg, args, task_id)))


def _exec(reg: ProcessRegistry, args: dict[str, Any], task_id: str | None) -> dict[str, Any]:
    command, options = _command(args), _spawn_options(reg, args, task_id)
    yield_ms = args.get("yield_ms")  # validated by the registry (error dict)
    return _as_dict(reg.exec(command, **options) if yield_ms is None else reg.exec(command, yield_ms, **options))


def _command(args: dict[str, Any]) -> str:
    command: str = _get(args, "command", str, required=True)
    if not command.strip():
        raise _ArgError("argument 'command' must not be empty")
    return command


def _spawn_options(reg: ProcessRegistry, args: dict[str, Any], task_id: str | None) -> dict[str, Any]:
    """The spawn arguments of start and exec."""
    kwargs = {
        "cwd": _get(args, "cwd", str),
        "pty": _get(args, "pty", bool, default=False),
        "name": _get(args, "name", str),
        "notify_on_complete": _get(args, "notify_on_complete", bool, default=False),
        "watch_patterns": _get(args, "watch_patterns", list),
        "env": _get(args, "env", dict),
        "task_id": task_id or "",
        "reuse": _get(args, "reuse", bool, default=False),
    }
    for passed_on in ("quiet_after", "max_runtime", "port"):  # validated by the registry (error dict)
        if args.get(passed_on) is not None:
            kwargs[passed_on] = args[passed_on]
    if _get(args, "ephemeral", bool, default=False):
        kwargs["lease"] = _caller(reg)
    return kwargs


def _caller(reg: ProcessRegistry) -> int:
    """Who an ephemeral job is leased to: this process (the agent that calls the tool, or the MCP
    server, which lives as long as its client); on a remote host, this connection's server there."""
    if not getattr(reg, "remote", False):
        return os.getpid()
    pid = reg.caller_pid()  # type: ignore[attr-defined]  # a RemoteRegistry (ProcessRegistry(host=...))
    if not isinstance(pid, int):
        raise _ArgError("ephemeral: the host cannot be reached, so the job cannot be leased to this connection")
    return pid


def _search(reg: ProcessRegistry, args: dict[str, Any], task_id: str | None) -> dict[str, Any]:
    pattern = _get(args, "pattern", str, required=True)
    scope = None if _get(args, "all", bool, default=False) else task_id
    one = _session_id(args) if args.get("session_id") not in (None, "") else None
    return _as_dict(reg.search(one, pattern, context=_get(args, "context", int, default=2),
                               limit=_get(args, "limit", int, default=50), task_id=scope, max_chars=ANSWER_CHARS))


def _list(reg: ProcessRegistry, args: dict[str, Any], task_id: str | None) -> dict[str, Any]:
    show_all = _get(args, "all", bool, default=False)
    stack = _get(args, "stack", str)
    rows = reg.list(task_id=None if show_all or not task_id or stack else task_id)
    if isinstance(rows, dict):  # an error dict
        return rows
    if stack:
        processes, info = [r for r in rows if r.get("stack") == stack], reg.stacks(stack)
        if not processes and isinstance(info, dict) and info.get("status") == "error":
            return info  # no stack of that name: an error, not an empty list
        return {"processes": processes, "stacks": info}
    return {"processes": list(rows)}


def _poll(reg: ProcessRegistry, args: dict[str, Any], task_id: str | None) -> dict[str, Any]:
    return _as_dict(reg.poll(_session_id(args)))


def _log(reg: ProcessRegistry, args: dict[str, Any], task_id: str | None) -> dict[str, Any]:
    session_id = _session_id(args)
    offset = _get(args, "offset", int)
    limit = _get(args, "limit", int, default=200)
    since = args.get("since")  # a number or a string: validated by the registry (error dict)
    if since is None:
        return _as_dict(reg.read_log(session_id, offset=offset, limit=limit, max_chars=ANSWER_CHARS))
    return _as_dict(reg.read_log(session_id, offset=offset, limit=limit, since=since, max_chars=ANSWER_CHARS))


def _wait(reg: ProcessRegistry, args: dict[str, Any], task_id: str | None) -> dict[str, Any]:
    session_id = _session_id(args)
    return _as_dict(reg.wait(session_id, timeout=_get(args, "timeout", float),
                             until=_get(args, "until", str, default="exit")))


def _kill(reg: ProcessRegistry, args: dict[str, Any], task_id: str | None) -> dict[str, Any]:
    session_id = _session_id(args)
    return _as_dict(reg.kill(session_id, grace=_get(args, "grace", float)))


def _write(reg: ProcessRegistry, args: dict[str, Any], task_id: str | None) -> dict[str, Any]:
    session_id = _session_id(args)
    data = _get(args, "data", str, required=True)
    return _as_dict(reg.write(session_id, data, yield_ms=args.get("yield_ms")))  # yield_ms: the registry checks it


def _submit(reg: ProcessRegistry, args: dict[str, Any], task_id: str | None) -> dict[str, Any]:
    session_id = _session_id(args)
    return _as_dict(reg.submit(session_id, _get(args, "data", str, default=""), yield_ms=args.get("yield_ms")))


def _pin(reg: ProcessRegistry, args: dict[str, Any], task_id: str | None) -> dict[str, Any]:
    return _as_dict(reg.pin(_session_id(args)))


def _unpin(reg: ProcessRegistry, args: dict[str, Any], task_id: str | None) -> dict[str, Any]:
    return _as_dict(reg.unpin(_session_id(args)))


def _close(reg: ProcessRegistry, args: dict[str, Any], task_id: str | None) -> dict[str, Any]:
    return _as_dict(reg.close_stdin(_session_id(args)))


def _screen(reg: ProcessRegistry, args: dict[str, Any], task_id: str | None) -> dict[str, Any]:
    return _as_dict(reg.screen(_session_id(args)))


def _restart(reg: ProcessRegistry, args: dict[str, Any], task_id: str | None) -> dict[str, Any]:
    stack = _get(args, "stack", str)
    if stack:
        return _as_dict(reg.restart_stack(stack, _get(args, "job", str)))
    return _as_dict(reg.restart(_session_id(args)))


def _up(reg: ProcessRegistry, args: dict[str, Any], task_id: str | None) -> dict[str, Any]:
    if args.get("ephemeral"):
        raise _ArgError("ephemeral does not go with up: a stack's jobs outlive the caller; down stops them")
    path, cwd = _get(args, "path", str), _get(args, "cwd", str)
    if path and cwd:
        path = os.path.join(os.path.expanduser(cwd), os.path.expanduser(path))
    return _as_dict(reg.up(path or cwd or None, _get(args, "stack", str),
                           wait=_get(args, "wait_ready", bool, default=False), timeout=_get(args, "timeout", float)))


def _down(reg: ProcessRegistry, args: dict[str, Any], task_id: str | None) -> dict[str, Any]:
    stack, path = _get(args, "stack", str), _get(args, "path", str)
    if not stack and not path:
        raise _ArgError("missing required argument 'stack' (the stack's name from up or list) or 'path'")
    return _as_dict(reg.down(stack, path))


def _tree(reg: ProcessRegistry, args: dict[str, Any], task_id: str | None) -> dict[str, Any]:
    return _as_dict(reg.tree(_session_id(args)))


def _signal(reg: ProcessRegistry, args: dict[str, Any], task_id: str | None) -> dict[str, Any]:
    """The job's process group (registry.signal), or with ``pid`` one process (signal_process)."""
    session_id = _session_id(args)
    sig = args.get("signal")
    if sig is None or sig == "":
        raise _ArgError("missing required argument 'signal' (INT, TERM, HUP, USR1, ...)")
    if isinstance(sig, bool) or not isinstance(sig, (str, int)):
        raise _ArgError(f"argument 'signal' must be a signal name such as 'INT' or a number, not {_describe(sig)}")
    pid = _get(args, "pid", int)
    start_ticks = _get(args, "start_ticks", int)
    if pid is None:
        if start_ticks is not None:
            raise _ArgError("argument 'start_ticks' goes with 'pid'")
        return _as_dict(reg.signal(session_id, sig))  # the name is checked by the registry (error dict)
    return _as_dict(reg.signal_process(session_id, pid, sig, start_ticks))


_HANDLERS: dict[str, Callable[[ProcessRegistry, dict[str, Any], str | None], dict[str, Any]]] = {
    "exec": _exec, "start": _start, "list": _list, "poll": _poll, "log": _log, "wait": _wait, "kill": _kill,
    "write": _write, "submit": _submit, "close": _close, "screen": _screen, "search": _search,
    "restart": _restart, "tree": _tree, "signal": _signal, "pin": _pin, "unpin": _unpin, "up": _up, "down": _down,
}


def _as_dict(result: Any) -> dict[str, Any]:
    return result if isinstance(result, dict) else {"status": "error", "error": f"unexpected result {result!r}"}
