"""MCP server: the ``process`` tool's actions as MCP tools over stdio.

    hermes-procs mcp [--home PATH]          # what an MCP client runs

Tools: ``process_exec``, ``process_start``, ``process_list``, ``process_poll``, ``process_log``,
``process_wait``, ``process_kill``, ``process_write``, ``process_submit``, ``process_close``,
``process_screen``, ``process_search``, ``process_restart``, ``process_tree``, ``process_signal``,
``process_pin``, ``process_unpin``, ``process_up``, ``process_down``. Their arguments are
the tool's arguments (typed, described, checked by the SDK against the input schema) and their
results are the contract dicts, secrets masked: as structured content and as the same JSON in
a text block. A result whose status is ``error`` or ``not_found`` is flagged ``isError``.

Every call goes through :func:`hermes_procs.core.agents.tool.run_action`, so the MCP server, the
function-calling tool and the Python API share one implementation. Blocking calls
(``process_wait``, ``process_exec``, a write with ``yield_ms``) run on a worker thread, so the
server keeps answering other requests. An ``ephemeral`` job is leased to this server's process,
which lives as long as its client's connection: the job is killed when the client goes.

Built on the official ``mcp`` SDK (2.x: ``mcp.server.mcpserver.MCPServer``); the import
happens here, not in ``hermes_procs.core``, so the core works without the ``mcp`` extra.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated, Any

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError, UnexpectedToolError
from mcp.types import CallToolResult, TextContent, ToolAnnotations
from pydantic import BeforeValidator, Field, ValidationError

from ..registry.version import version
from ..supervisor.text import encodable, safe_json
from .mcp_stdin import mend_stdin
from .tool import run_action, unknown_argument

if TYPE_CHECKING:
    from ..registry.process_registry import ProcessRegistry

__all__ = ["TOOL_NAMES", "build_server", "serve"]

TOOL_NAMES = ("process_exec", "process_start", "process_list", "process_poll", "process_log", "process_wait",
              "process_kill", "process_write", "process_submit", "process_close", "process_screen",
              "process_search", "process_restart", "process_tree", "process_signal", "process_pin",
              "process_unpin", "process_up", "process_down")

INSTRUCTIONS = """\
hermes-procs runs background processes (builds, test runs, servers, installers, REPLs) as durable
jobs that keep running between calls and that the user can watch and answer in the hermes-procs
dashboard.
- One-shot commands (builds, tests, git, installers): process_exec runs the command and returns
  when it exits, waits for input, or yield_ms (default 10000) pass: status, exit_code, reason,
  output. Still running: keep its session_id and continue with process_wait / process_submit.
- Background jobs: process_start returns a session_id; keep it.
- Dev servers: process_start with name, reuse=true and port=N: reuse returns the job already
  running under that name instead of starting a second server; port refuses (naming who holds
  it) when N is taken; then process_wait until='port'. poll and list show each job's ports.
- Jobs are durable (they outlive this session). For scratch jobs set ephemeral=true: killed when
  this MCP client disconnects; process_pin keeps one anyway, process_unpin undoes that.
- A job runs silently: poll it (process_poll), wait for it (process_wait) or read its output
  (process_log); notify_on_complete / watch_patterns record events for event consumers.
- process_submit sends a line and presses Enter; process_write sends the data exactly, no Enter.
  With yield_ms they return `output`: only what the job printed after that input, once it waits
  for input again, exits, or yield_ms pass (answer a prompt and read the reply in one call).
- Use pty=true for programs that want a terminal (REPLs, interactive prompts).
- Don't poll in a loop: process_wait with until='input' returns when the job blocks reading its
  stdin (a prompt: answer it with process_submit); until='port:N' when a server listens ('port':
  the port it was started with),
  'output:REGEX' on new matching output, 'quiet:SECONDS' when it stops printing. `reason` says why.
- process_wait is clamped to a maximum (default 180 s; timeout_note says so): call it again.
- process_screen shows what a pty job's terminal shows now (full-screen programs, REPLs, top).
- process_search finds a regex in whole logs; process_restart reruns a job as a new one.
- process_log without offset shows the last lines; page with offset (0 = first line) and limit;
  since='5m' keeps only what arrived in the last 5 minutes.
- process_kill stops the job's whole process tree.
- process_tree lists the job's processes (pid, state, CPU, memory, awaiting_input, command);
  process_signal sends one signal (INT, TERM, HUP, USR1, ...) to the job's process group, or
  with pid (and start_ticks, from process_tree) to that one process only.
- A project's stack (hermes-procs.toml, Procfile, process-compose.yaml, mprocs.yaml): process_up
  starts its jobs in dependency order and keeps them (probes, restarts, file watching) after you
  are gone; wait=true returns once all are ready or says which failed; process_down stops it.
- Secrets in output are masked as ***."""


def _coerce_id(value: Any) -> Any:
    """Integer session ids and signal numbers (a model's habit) become strings; anything else is
    left to the schema."""
    if isinstance(value, int) and not isinstance(value, bool):
        return str(value)
    return value


SessionId = Annotated[
    str,
    BeforeValidator(_coerce_id),
    Field(description="The job's id from process_start or process_list (proc_ + 12 hex characters); "
                      "a unique prefix of at least 4 hex characters also works."),
]

HostArg = Annotated[
    str | None,
    Field(description="Run on / look at another machine: ssh://[user@]host[:port], docker://CONTAINER, "
                      "k8s://[NAMESPACE/]POD[/CONTAINER] or a host name from the config file. Omit for "
                      "this machine (or the server's HERMES_PROCS_HOST)."),
]

Result = Annotated[CallToolResult, dict[str, Any]]

Reuse = Annotated[bool, Field(description="When a job of this name is running, return it (reused: true) and "
                                          "start nothing: for dev servers.")]
Port = Annotated[int | None, Field(ge=1, le=65535, description="The TCP port the job will serve: refused, naming "
                                                               "who holds it, when in use; process_wait "
                                                               "until='port' waits for it.")]
Ephemeral = Annotated[bool, Field(description="Kill the job when this MCP client disconnects (default: jobs are "
                                              "durable). process_pin keeps it.")]
YieldMs = Annotated[float | None, Field(ge=0, description="Then wait until the job waits for input again, exits, "
                                                          "or this many milliseconds pass, and return what it "
                                                          "printed after this input as `output`.")]

_ERROR_STATUSES = ("error", "not_found")


def _result(result: dict[str, Any]) -> CallToolResult:
    shown = encodable(result)  # a name or command that was not UTF-8 holds surrogates: no UTF-8 for them
    return CallToolResult(
        content=[TextContent(type="text", text=safe_json(shown))],  # a client may print it: C1, bidi escaped
        structured_content=shown,
        is_error=result.get("status") in _ERROR_STATUSES,
    )


_READ_ONLY = ("process_list", "process_poll", "process_log", "process_wait", "process_screen", "process_search",
              "process_tree")


def build_server(home: str | None = None, registry: ProcessRegistry | None = None) -> MCPServer:
    """An MCPServer with the process tools over ``registry`` (default: one over ``home``)."""
    if registry is None:
        from ..registry.process_registry import ProcessRegistry

        registry = ProcessRegistry(home=home)
    tools = _Tools(registry)
    server = _Server(name="hermes-procs", version=version(), instructions=INSTRUCTIONS, log_level="WARNING")
    read_only = ToolAnnotations(read_only_hint=True, destructive_hint=False, open_world_hint=False)
    for name in TOOL_NAMES:
        server.add_tool(getattr(tools, name), name=name, annotations=read_only if name in _READ_ONLY else None)
    return server


class _Server(MCPServer):
    """The SDK's server, but an unknown tool, an unknown argument and arguments its input schema
    refuses (a missing session_id, a negative offset) get the one-line error dict every other error gets, not the
    SDK's text or pydantic's multi-line report with a link to its docs."""

    async def call_tool(self, name: str, arguments: dict[str, Any], context: Any = None) -> Any:
        if name not in TOOL_NAMES:
            return _result({"status": "error", "error": f"unknown tool {name[:80]!r}: the tools are "
                                                        f"{', '.join(TOOL_NAMES)}"})
        known = (self._tool_input_schema(name) or {}).get("properties", {})
        unknown = [str(key) for key in arguments or {} if key not in known]
        if unknown:  # the SDK drops them: a misspelt `limt` would silently be the default
            return _result({"status": "error", "error": f"{name}: {unknown_argument(unknown[0], known)}"})
        try:
            return await super().call_tool(name, arguments, context)
        except ToolError as exc:
            if isinstance(exc, UnexpectedToolError) or not isinstance(exc.__cause__, ValidationError):
                raise
            return _result({"status": "error", "error": f"{name}: {_argument_errors(exc.__cause__)}"})


def _argument_errors(exc: ValidationError) -> str:
    """``session_id is required; offset: Input should be greater than or equal to 0`` (the
    fields and the rule, never the values: they are the caller's data)."""
    parts = []
    for err in exc.errors():
        where = ".".join(str(part) for part in err["loc"]) or "arguments"
        parts.append(f"{where} is required" if err["type"] == "missing" else f"{where}: {err['msg']}")
    return "; ".join(sorted(set(parts)))


class _Tools:
    """The MCP tools over one registry: one method a tool, named as the tool (TOOL_NAMES). Each
    method's parameters are the tool's input schema and its docstring the tool's description;
    every call goes through :func:`run_action` (the agent tool's checks and results)."""

    def __init__(self, registry: ProcessRegistry) -> None:
        self._registry = registry

    def _call(self, args: dict[str, Any], task_id: str | None = None) -> CallToolResult:
        args = {k: v for k, v in args.items() if v is not None}
        return _result(run_action(args, self._registry, task_id=task_id))

    def process_start(
        self,
        command: Annotated[str, Field(description="The shell command to run (bash -c), e.g. 'make test'.")],
        pty: Annotated[bool, Field(description="Run in a pseudo-terminal: for REPLs and programs that "
                                               "prompt on a terminal.")] = False,
        cwd: Annotated[str | None, Field(description="Working directory (default: the server's).")] = None,
        name: Annotated[str | None, Field(description="A short label shown in lists and the dashboard.")] = None,
        notify_on_complete: Annotated[bool, Field(description="Record a completion event (exit code and last "
                                                              "output) when the job exits.")] = False,
        watch_patterns: Annotated[list[str] | None, Field(description="Record an event when an output line "
                                                                      "contains one of these substrings "
                                                                      "(rate limited; for rare signals).")] = None,
        max_runtime: Annotated[float | None, Field(description="Kill the job's whole tree after this many "
                                                               "seconds; it then ends 'timed_out'.")] = None,
        env: Annotated[dict[str, str] | None, Field(description="Extra environment variables.")] = None,
        quiet_after: Annotated[float | None, Field(description="Record a 'quiet' event when the job has "
                                                               "printed nothing for this many seconds.")] = None,
        task_id: Annotated[str | None, Field(description="Optional task label to group jobs "
                                                         "(process_list can filter by it).")] = None,
        reuse: Reuse = False,
        port: Port = None,
        ephemeral: Ephemeral = False,
        host: HostArg = None,
    ) -> Result:
        """Start a background job; returns its session_id and pid (status 'running'), or with reuse the
        running job of that name (reused: true)."""
        return self._call({"host": host, "action": "start", "command": command, "pty": pty, "cwd": cwd, "name": name,
                           "notify_on_complete": notify_on_complete, "watch_patterns": watch_patterns,
                           "max_runtime": max_runtime, "env": env, "quiet_after": quiet_after, "reuse": reuse,
                           "port": port, "ephemeral": ephemeral}, task_id=task_id or None)

    def process_exec(
        self,
        command: Annotated[str, Field(description="The shell command to run (bash -c), e.g. 'make test'.")],
        yield_ms: Annotated[float, Field(ge=0, description="Return after at most this many milliseconds "
                                                           "(the job keeps running).")] = 10_000,
        pty: Annotated[bool, Field(description="Run in a pseudo-terminal.")] = False,
        cwd: Annotated[str | None, Field(description="Working directory (default: the server's).")] = None,
        name: Annotated[str | None, Field(description="A short label shown in lists and the dashboard.")] = None,
        env: Annotated[dict[str, str] | None, Field(description="Extra environment variables.")] = None,
        max_runtime: Annotated[float | None, Field(description="Kill the job's whole tree after this many "
                                                               "seconds; it then ends 'timed_out'.")] = None,
        reuse: Reuse = False,
        port: Port = None,
        ephemeral: Ephemeral = False,
        task_id: Annotated[str | None, Field(description="Optional task label to group jobs.")] = None,
        host: HostArg = None,
    ) -> Result:
        """Run a command and return at the first of: it exits, it waits for input, yield_ms pass. status
        'exited' (exit_code) or 'running' (continue with session_id), reason (exited, awaiting_input,
        yielded) and output (everything so far; capped, output_note says what was left out)."""
        return self._call({"host": host, "action": "exec", "command": command, "yield_ms": yield_ms, "pty": pty,
                           "cwd": cwd, "name": name, "env": env, "max_runtime": max_runtime, "reuse": reuse,
                           "port": port, "ephemeral": ephemeral}, task_id=task_id or None)

    def process_list(
        self,
        task_id: Annotated[str | None, Field(description="Only the jobs started with this task_id.")] = None,
        stack: Annotated[str | None, Field(description="Only the jobs of this stack (with the stack's "
                                                       "state).")] = None,
        host: HostArg = None,
    ) -> Result:
        """List jobs, newest first: {"processes": [{session_id, name, command, status, pid, stack, restarts,
        ...}]}."""
        return self._call({"host": host, "action": "list", "stack": stack}, task_id=task_id or None)

    def process_poll(self, session_id: SessionId, host: HostArg = None) -> Result:
        """Status of a job ('running' or 'exited') with the last 1000 characters of output; when exited also
        exit_code, completion_reason (exited, killed, timed_out, lost) and signal."""
        return self._call({"host": host, "action": "poll", "session_id": session_id})

    def process_log(
        self,
        session_id: SessionId,
        offset: Annotated[int | None, Field(ge=0, description="First line to return (0 = the first line). "
                                                              "Omit for the last `limit` lines.")] = None,
        limit: Annotated[int, Field(ge=1, description="How many lines to return.")] = 200,
        since: Annotated[str | float | None, Field(description=(
            "Only output that arrived since then: seconds ago (300), a duration ('5m', '1h30m') or an "
            "ISO time ('2026-11-26T06:30:00'). Not with offset."))] = None,
        host: HostArg = None,
    ) -> Result:
        """Output lines of a job (ANSI stripped) with total_lines, so a long log can be paged."""
        return self._call({"host": host, "action": "log", "session_id": session_id, "offset": offset, "limit": limit,
                           "since": since})

    def process_wait(
        self,
        session_id: SessionId,
        timeout: Annotated[float | None, Field(description="Seconds to wait at most; clamped to the server's "
                                                           "maximum (default 180).")] = None,
        until: Annotated[str, Field(description="'exit', 'input' (blocked reading stdin: a prompt), "
                                                "'quiet:SECONDS', 'output:REGEX' (new output matches) or "
                                                "'port:N' (listens on TCP port N).")] = "exit",
        host: HostArg = None,
    ) -> Result:
        """Block until the job exits, or until the `until` condition holds, or the timeout passes. `reason`
        says why: exited, awaiting_input, quiet, matched (with `matched`), port_open, timeout."""
        return self._call({"host": host, "action": "wait", "session_id": session_id, "timeout": timeout,
                           "until": until})

    def process_kill(
        self,
        session_id: SessionId,
        grace: Annotated[float | None, Field(ge=0, description="Seconds between SIGTERM and SIGKILL "
                                                               "(default 3).")] = None,
        host: HostArg = None,
    ) -> Result:
        """Kill the job's whole process tree (SIGTERM, then SIGKILL after the grace period)."""
        return self._call({"host": host, "action": "kill", "session_id": session_id, "grace": grace})

    def process_write(
        self,
        session_id: SessionId,
        data: Annotated[str, Field(description="Text sent to the job's stdin exactly as given (no Enter).")],
        yield_ms: YieldMs = None,
        host: HostArg = None,
    ) -> Result:
        """Send raw text to the job's stdin without pressing Enter; with yield_ms also the job's reply."""
        return self._call({"host": host, "action": "write", "session_id": session_id, "data": data,
                           "yield_ms": yield_ms})

    def process_submit(
        self,
        session_id: SessionId,
        data: Annotated[str, Field(description="The line to type before Enter (empty: just press "
                                               "Enter).")] = "",
        yield_ms: YieldMs = None,
        host: HostArg = None,
    ) -> Result:
        """Type a line into the job and press Enter (answers prompts, runs REPL statements); with yield_ms
        also the job's reply (`output`)."""
        return self._call({"host": host, "action": "submit", "session_id": session_id, "data": data,
                           "yield_ms": yield_ms})

    def process_close(self, session_id: SessionId, host: HostArg = None) -> Result:
        """Close the job's stdin (EOF; Ctrl-D for a pty job)."""
        return self._call({"host": host, "action": "close", "session_id": session_id})

    def process_screen(self, session_id: SessionId, host: HostArg = None) -> Result:
        """The terminal screen of a pty job as text: rows, cols, lines, cursor [row, col], alternate_screen.
        For full-screen programs (installers, REPLs, top, vim) whose log is mostly escape codes."""
        return self._call({"host": host, "action": "screen", "session_id": session_id})

    def process_search(
        self,
        pattern: Annotated[str, Field(description="A regular expression (Python syntax) matched against each "
                                                  "log line.")],
        session_id: Annotated[str | None, Field(description="The job to search; omit to search every job "
                                                            "(of task_id, when given).")] = None,
        context: Annotated[int, Field(ge=0, description="Lines shown before and after each match.")] = 2,
        limit: Annotated[int, Field(ge=1, description="How many matches to return (total counts all).")] = 50,
        task_id: Annotated[str | None, Field(description="Without session_id: only this task's jobs.")] = None,
        host: HostArg = None,
    ) -> Result:
        """Search whole job logs: {"matches": [{session_id, line_no, line, before, after}], "total"}; line_no
        is the offset to pass to process_log."""
        return self._call({"host": host, "action": "search", "session_id": _coerce_id(session_id), "pattern": pattern,
                           "context": context, "limit": limit, "all": not task_id}, task_id=task_id or None)

    def process_restart(
        self,
        session_id: Annotated[str | None, BeforeValidator(_coerce_id), Field(description=(
            "The job's id (proc_ + 12 hex characters, or a unique prefix); omit with stack."))] = None,
        stack: Annotated[str | None, Field(description="Restart this stack instead (in dependency "
                                                       "order).")] = None,
        job: Annotated[str | None, Field(description="With stack: only this job of it.")] = None,
        host: HostArg = None,
    ) -> Result:
        """Run a job's command again (same cwd, env, pty and options) as a new job whose rerun_of is the old
        id; a job still running is killed first. The old job keeps its log. With stack: the whole stack (or
        one job of it)."""
        return self._call({"host": host, "action": "restart", "session_id": session_id, "stack": stack,
                           "job": job})

    def process_up(
        self,
        cwd: Annotated[str | None, Field(description="The project folder holding hermes-procs.toml, Procfile, "
                                                     "process-compose.yaml or mprocs.yaml.")] = None,
        path: Annotated[str | None, Field(description="The stack file itself (instead of cwd).")] = None,
        stack: Annotated[str | None, Field(description="The stack's name (default: the file's name, else "
                                                        "the folder's).")] = None,
        wait: Annotated[bool, Field(description="Return once every job is ready, or with an error naming "
                                                "the job that failed and why.")] = False,
        timeout: Annotated[float | None, Field(description="With wait: seconds at most (default 180).")] = None,
    ) -> Result:
        """Bring a project's stack up: its jobs start in dependency order under a stack supervisor that
        probes readiness, restarts them by policy and on file changes, and runs on after you are gone.
        A bad file starts nothing (the error names the key). Returns the stack's state and each job's."""
        return self._call({"action": "up", "cwd": cwd, "path": path, "stack": stack, "wait_ready": wait,
                           "timeout": timeout})

    def process_down(
        self,
        stack: Annotated[str | None, Field(description="The stack's name (from process_up or "
                                                       "process_list).")] = None,
        path: Annotated[str | None, Field(description="Or the stack file it was brought up from.")] = None,
    ) -> Result:
        """Stop a stack: its jobs (dependents first) and its supervisor."""
        return self._call({"action": "down", "stack": stack, "path": path})

    def process_tree(self, session_id: SessionId, host: HostArg = None) -> Result:
        """The job's processes, parents first: pid, ppid, start_ticks, depth, command, state, cpu_percent,
        rss_bytes, awaiting_input (which one blocks reading the job's stdin). `processes` is empty when none
        is left."""
        return self._call({"host": host, "action": "tree", "session_id": session_id})

    def process_signal(
        self,
        session_id: SessionId,
        signal: Annotated[str, BeforeValidator(_coerce_id), Field(description=(
            "The signal: INT, TERM, HUP, KILL, QUIT, USR1, USR2, STOP, CONT or WINCH (SIGINT and numbers "
            "such as 2 also work)."))],
        pid: Annotated[int | None, Field(ge=1, description="Only this process of the job (a pid from "
                                                           "process_tree); omit for the job's process "
                                                           "group.")] = None,
        start_ticks: Annotated[int | None, Field(ge=0, description="With pid: the process's start_ticks from "
                                                                   "process_tree; pins that exact process.")] = None,
        host: HostArg = None,
    ) -> Result:
        """Send one signal to the job's process group, or (pid) to one process of its tree; no kill logic. Status
        ok (with pid and signal for one process), already_exited, or error (unknown signal, pid not in the
        job)."""
        return self._call({"host": host, "action": "signal", "session_id": session_id, "signal": signal,
                           "pid": pid, "start_ticks": start_ticks})


    def process_pin(self, session_id: SessionId, host: HostArg = None) -> Result:
        """Keep an ephemeral (leased) job running after its owner ends. Returns ok with lease {pid, pinned,
        owner_alive}."""
        return self._call({"host": host, "action": "pin", "session_id": session_id})

    def process_unpin(self, session_id: SessionId, host: HostArg = None) -> Result:
        """Undo process_pin: the job is killed when its owner ends (at once if it has)."""
        return self._call({"host": host, "action": "unpin", "session_id": session_id})


def serve(home: str | None = None) -> None:
    """Run the MCP server on stdin/stdout until the client disconnects (blocking)."""
    server = build_server(home)
    mend_stdin()  # a request with a lone surrogate escape is answered, not dropped (mcp_stdin.py)
    server.run("stdio")


if __name__ == "__main__":  # python -m hermes_procs.core.agents.mcp_server [HOME]
    import sys

    serve(sys.argv[1] if len(sys.argv) > 1 else None)
