"""Property test of every API entry point (Hypothesis): whatever a caller passes (ids of any
shape, numbers that are NaN, huge or negative, env of any shape, bytes, nested junk), each
`ProcessRegistry` method and each `process` tool action returns a JSON-serialisable result and
never raises; bad input is a one-line error sentence, never a stray exception dressed up by the
catch-all (``TypeError: ...`` from the registry, ``internal error: ...`` from the tool).

Commands are drawn from harmless ones only, signals sent to arbitrary pids are harmless ones, and
waits only target jobs that have ended (a valid long timeout on a running job would rightly wait).
"""

from __future__ import annotations

import contextlib
import json
import re
import shlex
import signal

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from hermes_procs.core import ProcessRegistry
from hermes_procs.core.agents.tool import handle_process

NUMBERS = st.one_of(
    st.integers(min_value=-(10**30), max_value=10**30), st.floats(allow_nan=True, allow_infinity=True),
    st.sampled_from([0, -1, 1, 2**31, 2**63, 2**64, 1e300, -1e300, 10**400, True, False]))
TEXT = st.one_of(st.text(max_size=12), st.sampled_from(["", " ", "\x00", "..", "../..", "/", "a\nb", "é" * 3]))
SCALARS = st.one_of(st.none(), st.booleans(), NUMBERS, TEXT, st.binary(max_size=8))
JUNK = st.recursive(SCALARS, lambda inner: st.lists(inner, max_size=3)
                    | st.dictionaries(st.text(max_size=6), inner, max_size=3), max_leaves=8)
HARMLESS = st.one_of(st.sampled_from(["true", "echo hi", "exit 3", ":", "printf 'a\\rb'"]),
                     st.text(max_size=30).map(lambda t: "echo " + shlex.quote(t)))
SHORT_TIMEOUTS = st.one_of(st.floats(min_value=0, max_value=0.05),
                           st.sampled_from([0, -1, float("nan"), "x", [], None]))
# no number or name that could end a job (junk like 9 or "TERM" would): containers, floats and
# out-of-range numbers only, besides the harmless ones
HARMLESS_SIGNALS = st.one_of(
    st.sampled_from([0, "0", "CONT", "SIGCONT", "WINCH", 28, "", "NOPE", "SIG", -1, -9, 65, 10**9, 2**63, 1.5,
                     float("nan"), None, True, b"9", "9.0"]),
    JUNK.filter(lambda v: isinstance(v, (list, dict))))

# "TypeError: ..." / "AttributeError: ..." is the registry's catch-all showing an exception it did
# not expect; a bad input must be refused before it gets that far, in words.
CATCH_ALL = re.compile(r"^(internal error|[A-Z][A-Za-z]*(Error|Exception|Exit)\b)")

_SETTINGS = settings(max_examples=300, deadline=None, database=None,
                     suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])


@pytest.fixture(scope="module")
def jobs(tmp_path_factory):
    """A registry with a running pipe job, a running PTY job and a finished job."""
    reg = ProcessRegistry(home=tmp_path_factory.mktemp("apiprop") / "home")
    # junk written to the PTY job may hold ^C, ^\ or ^Z: its sleep ignores what they send
    immune = "trap '' INT QUIT TSTP; sleep 600"
    running = [reg.spawn("sleep 600")["session_id"], reg.spawn(immune, pty=True)["session_id"]]
    done = reg.spawn("echo done")["session_id"]
    assert reg.wait(done, timeout=10)["status"] == "exited"
    yield reg, running, done
    for job in reg.list():
        if isinstance(job, dict) and job.get("status") == "running":
            reg.kill(job["session_id"], grace=0)


def _ids(running: list[str], done: str) -> st.SearchStrategy:
    real = [*running, done]
    return st.one_of(st.sampled_from(real), st.sampled_from([i[:9] for i in real] + [i[5:10] for i in real]),
                     st.sampled_from(["proc_", "proc_zzzzzzzzzzzz", "proc_000000000000", "0000", "../jobs", ""]),
                     TEXT, JUNK)


def _finished(running: list[str], done: str) -> st.SearchStrategy:
    """Ids for the calls that end or wait for a job: the finished one, or junk that names no running job."""
    return st.one_of(st.just(done), TEXT, JUNK).filter(lambda v: not _names_one_of(v, running))


def _calls(reg: ProcessRegistry, running: list[str], done: str) -> st.SearchStrategy:
    """(method name, args, kwargs) for every public method but `stream` (it hands back a live
    object and raises, as documented)."""
    ids, finished = _ids(running, done), _finished(running, done)
    env = st.one_of(st.none(), JUNK, st.dictionaries(TEXT, st.one_of(TEXT, JUNK), max_size=3))
    spawn = st.fixed_dictionaries({}, optional={
        "cwd": st.one_of(st.none(), TEXT, JUNK, st.just("/tmp")), "env": env, "pty": JUNK, "name": JUNK,
        "task_id": JUNK, "session_key": JUNK, "notify_on_complete": JUNK, "rows": NUMBERS, "cols": NUMBERS,
        "watch_patterns": JUNK, "max_runtime": st.one_of(NUMBERS, JUNK)})
    one = {
        "spawn": st.tuples(st.one_of(HARMLESS, JUNK).map(lambda c: (c,)), spawn),
        "poll": st.tuples(ids.map(lambda i: (i,)), st.just({})),
        "get": st.tuples(ids.map(lambda i: (i,)), st.just({})),
        "screen": st.tuples(ids.map(lambda i: (i,)), st.just({})),
        "tree": st.tuples(ids.map(lambda i: (i,)), st.just({})),
        "close_stdin": st.tuples(ids.map(lambda i: (i,)), st.just({})),
        "read_log": st.tuples(ids.map(lambda i: (i,)), st.fixed_dictionaries({}, optional={
            "offset": st.one_of(NUMBERS, JUNK), "limit": st.one_of(NUMBERS, JUNK), "since": st.one_of(NUMBERS, JUNK)})),
        "log_bytes": st.tuples(ids.map(lambda i: (i,)), st.fixed_dictionaries({}, optional={
            "start": st.one_of(NUMBERS, JUNK), "end": st.one_of(NUMBERS, JUNK), "max_bytes": NUMBERS})),
        "list": st.tuples(st.just(()), st.fixed_dictionaries({}, optional={
            "task_id": JUNK, "session_key": JUNK, "only": st.one_of(JUNK, st.lists(ids, max_size=3))})),
        "inputs": st.tuples(ids.map(lambda i: (i,)), st.fixed_dictionaries({}, optional={"limit": NUMBERS})),
        "wait": st.tuples(finished.map(lambda i: (i,)), st.fixed_dictionaries({}, optional={
            "timeout": st.one_of(NUMBERS, JUNK), "until": JUNK})),
        "wait_any": st.tuples(st.one_of(st.lists(finished, max_size=3), JUNK).map(lambda i: (i,)),
                              st.fixed_dictionaries({}, optional={"timeout": SHORT_TIMEOUTS})),
        "search": st.tuples(st.just(()), st.fixed_dictionaries({}, optional={
            "session_id": st.one_of(st.none(), ids), "pattern": st.one_of(TEXT, JUNK, st.just("(")),
            "context": NUMBERS, "limit": NUMBERS, "task_id": JUNK})),
        "write": st.tuples(st.tuples(ids, st.one_of(TEXT, st.binary(max_size=20), JUNK)),
                           st.fixed_dictionaries({}, optional={"source": JUNK})),
        "submit": st.tuples(st.tuples(ids, st.one_of(TEXT, st.binary(max_size=20), JUNK)), st.just({})),
        "resize": st.tuples(st.tuples(ids, NUMBERS, NUMBERS), st.just({})),
        "signal": st.tuples(st.tuples(ids, HARMLESS_SIGNALS), st.just({})),
        "signal_process": st.tuples(st.tuples(ids, st.one_of(NUMBERS, JUNK), HARMLESS_SIGNALS),
                                    st.fixed_dictionaries({}, optional={"start_ticks": st.one_of(NUMBERS, JUNK)})),
        "set_watch_patterns": st.tuples(st.tuples(ids, JUNK), st.just({})),
        "kill": st.tuples(finished.map(lambda i: (i,)), st.fixed_dictionaries({}, optional={
            "grace": st.one_of(NUMBERS, JUNK)})),
        "restart": st.tuples(finished.map(lambda i: (i,)), st.just({})),
        "drain_events": st.tuples(st.just(()), st.fixed_dictionaries({}, optional={
            "consumer": st.one_of(TEXT, JUNK), "all_types": JUNK, "only_new": JUNK})),
        "forget_consumer": st.tuples(st.one_of(TEXT, JUNK).map(lambda c: (c,)), st.just({})),
        "prune": st.tuples(st.just(()), st.fixed_dictionaries({}, optional={
            "keep_days": st.one_of(st.just(1e9), NUMBERS, JUNK), "keep_count": st.one_of(st.just(10**6), JUNK)})),
    }
    return st.one_of(*[st.tuples(st.just(name), calls) for name, calls in one.items()])


@contextlib.contextmanager
def _no_hang(where: str, seconds: int = 60):
    """A call that does not return within `seconds` fails the test instead of blocking the suite."""
    def hung(*_):
        pytest.fail(f"{where} did not return within {seconds} s")
    old = signal.signal(signal.SIGALRM, hung)
    signal.alarm(seconds)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, old)


def _names_one_of(value, session_ids: list[str]) -> bool:
    """Whether `value` is one of the ids or a prefix of one (with or without `proc_`)."""
    if not isinstance(value, str) or not value.strip():
        return False
    value = value.strip().lower()
    return any(sid.startswith(value) or sid[5:].startswith(value) for sid in session_ids)


def _raw_bytes(value):
    if isinstance(value, bytes):  # log_bytes hands back raw output in "data", as documented
        return value.hex()
    raise TypeError(f"{type(value).__name__} in a result")


def _check(where: str, result) -> None:
    json.dumps(result, allow_nan=False, default=_raw_bytes)  # a JSON answer, no NaN smuggled through
    if isinstance(result, list):
        return
    assert isinstance(result, dict), f"{where} returned {type(result).__name__}"
    if result.get("status") == "error":
        error = result.get("error")
        assert isinstance(error, str) and error and "\n" not in error.strip(), f"{where}: {result!r}"
        assert not CATCH_ALL.match(error), f"{where}: an unexpected exception, not a clear error: {error}"


def test_every_registry_method_answers_and_never_raises(jobs):
    reg, running, done = jobs
    calls = _calls(reg, running, done)

    @_SETTINGS
    @given(call=calls)
    def check(call):
        name, (args, kwargs) = call
        where = f"{name}(*{args!r}, **{kwargs!r})"[:400]
        try:
            with _no_hang(where):
                result = getattr(reg, name)(*args, **kwargs)
        except Exception as exc:  # noqa: BLE001 - the property under test
            pytest.fail(f"{where} raised {type(exc).__name__}: {exc}")
        _check(where, result)

    check()
    for sid in running:  # what was thrown at them left them running and answering
        assert reg.poll(sid)["status"] == "running", sid


def test_every_tool_action_answers_and_never_raises(jobs):
    reg, running, done = jobs
    ids = _ids(running, done)
    params = st.fixed_dictionaries({"action": st.one_of(st.sampled_from([
        "start", "list", "poll", "log", "wait", "kill", "write", "submit", "close", "screen", "search", "restart",
        "tree", "signal", " POLL ", "nope"]), JUNK)}, optional={
        "session_id": ids, "command": st.one_of(HARMLESS, JUNK), "cwd": st.one_of(TEXT, JUNK), "env": JUNK,
        "pty": JUNK, "name": JUNK, "data": JUNK, "offset": NUMBERS, "limit": NUMBERS, "since": JUNK,
        "pattern": JUNK, "context": NUMBERS, "timeout": SHORT_TIMEOUTS, "grace": SHORT_TIMEOUTS,
        "signal": HARMLESS_SIGNALS, "pid": st.one_of(NUMBERS, JUNK), "rows": NUMBERS, "cols": NUMBERS,
        "watch_patterns": JUNK,
        "max_runtime": st.one_of(NUMBERS, JUNK), "notify_on_complete": JUNK, "until": JUNK})

    @_SETTINGS
    @given(args=st.one_of(params, JUNK, st.text(max_size=40)))
    def check(args):
        if isinstance(args, dict) and str(args.get("action", "")).strip().lower() in ("kill", "restart", "wait") \
                and _names_one_of(args.get("session_id"), running):
            args = {**args, "session_id": done}  # keep the running jobs running; a valid wait would wait
        where = f"process({args!r})"[:400]
        try:
            with _no_hang(where):
                text = handle_process(args, registry=reg)
        except Exception as exc:  # noqa: BLE001 - the property under test
            pytest.fail(f"{where} raised {type(exc).__name__}: {exc}")
        result = json.loads(text)
        _check(where, result)

    check()
    for sid in running:
        assert reg.poll(sid)["status"] == "running", sid


def test_catch_all_pattern_is_not_vacuous():
    """The oracle recognises the shapes the catch-alls produce, and not ordinary sentences."""
    assert CATCH_ALL.match("TypeError: unhashable type: 'list'")
    assert CATCH_ALL.match("internal error: ValueError: x")
    assert not CATCH_ALL.match("timeout must be a finite number of seconds, not nan")


def test_every_hermes_adapter_method_answers_and_never_raises(jobs, tmp_path, login_shell_home):
    """The Hermes-compatible adapter (core/agents/compat.py) over the same kind of junk: its dict results
    follow the same rule; `spawn_local` raises RuntimeError with the registry's sentence, as
    upstream does."""
    from hermes_procs.core.agents.compat import HermesProcessRegistry

    adapter = HermesProcessRegistry(home=tmp_path / "home")
    running = adapter.spawn_local("sleep 600").id
    done = adapter.spawn_local("echo done").id
    assert adapter.wait(done, timeout=10)["status"] == "exited"
    ids, finished = _ids([running], done), _finished([running], done)
    calls = st.one_of(
        st.tuples(st.sampled_from(["poll", "get", "close_stdin", "is_session_waiting", "is_completion_consumed"]),
                  ids.map(lambda i: (i,)), st.just({})),
        st.tuples(st.just("read_log"), ids.map(lambda i: (i,)), st.fixed_dictionaries({}, optional={
            "offset": st.one_of(NUMBERS, JUNK), "limit": st.one_of(NUMBERS, JUNK)})),
        st.tuples(st.just("wait"), finished.map(lambda i: (i,)), st.fixed_dictionaries({}, optional={
            "timeout": st.one_of(NUMBERS, JUNK)})),
        st.tuples(st.just("kill_process"), finished.map(lambda i: (i,)), st.fixed_dictionaries({}, optional={
            "grace": st.one_of(NUMBERS, JUNK)})),
        st.tuples(st.sampled_from(["write_stdin", "submit_stdin"]), st.tuples(ids, st.one_of(TEXT, JUNK)), st.just({})),
        st.tuples(st.just("list_sessions"), st.just(()), st.fixed_dictionaries({}, optional={
            "task_id": JUNK, "session_key": JUNK})),
        st.tuples(st.sampled_from(["has_active_processes", "has_active_for_session", "snapshot_running_ids",
                                   "running_owned_by", "unread_completions_owned_by"]), JUNK.map(lambda v: (v,)),
                  st.just({})),
        st.tuples(st.just("spawn_local"), st.one_of(HARMLESS, JUNK).map(lambda c: (c,)),
                  st.fixed_dictionaries({}, optional={"cwd": st.one_of(TEXT, JUNK), "env_vars": JUNK,
                                                      "use_pty": JUNK, "task_id": JUNK})),
    )

    @_SETTINGS
    @given(call=calls)
    def check(call):
        name, args, kwargs = call
        where = f"adapter.{name}(*{args!r}, **{kwargs!r})"[:400]
        try:
            with _no_hang(where):
                result = getattr(adapter, name)(*args, **kwargs)
        except RuntimeError as exc:
            assert name == "spawn_local" and str(exc) and "\n" not in str(exc).strip(), f"{where}: {exc}"
            assert not CATCH_ALL.match(str(exc)), f"{where}: an unexpected exception, not a clear error: {exc}"
            return
        except Exception as exc:  # noqa: BLE001 - the property under test
            pytest.fail(f"{where} raised {type(exc).__name__}: {exc}")
        if isinstance(result, dict):  # lists hold ProcessSession objects (running_owned_by), as upstream's
            _check(where, result)

    try:
        check()
        assert adapter.poll(running)["status"] == "running"
    finally:
        adapter.kill_all(grace=0)
        adapter.close()


CLI_OPTIONS = {
    "ls": ["--all", "--task", "--session-key"], "poll": [], "tree": [], "screen": [], "close": [],
    "log": ["--offset", "--limit", "--since"], "kill": ["--grace"], "signal": ["--pid"],
    "search": ["--context", "-C", "--limit", "--task"], "write": ["--escapes", "-E"], "submit": ["--escapes", "-E"],
    "events": ["--consumer", "--type"], "prune": [], "restart": [], "wait": ["--timeout", "--exit-code"],
    "run": ["--pty", "--name", "--cwd", "--notify", "--watch", "--max-runtime", "--rows", "--cols", "--env", "-e",
            "--task", "--quiet-after"],
}
# given a finished job only: a valid call on a running one would end it (`signal ID 9`) or wait
ENDS_A_JOB = ("kill", "restart", "wait", "signal")


def _cli_argv(data, running: list[str], done: str) -> list[str]:
    command = data.draw(st.sampled_from(sorted(CLI_OPTIONS)))
    token = st.one_of(st.sampled_from(CLI_OPTIONS[command] + ["--json", "--home", "-x", "--bogus"]),
                      NUMBERS.map(str), TEXT).filter(lambda t: t not in ("--", "-f", "--follow", "--until"))
    tokens = data.draw(st.lists(token, max_size=6))
    if command == "run":
        return [command, *tokens, "--", data.draw(HARMLESS)]
    ids = [done] if command in ENDS_A_JOB else [*running, done]
    target = data.draw(st.one_of(st.sampled_from(ids + [i[5:10] for i in ids]), TEXT))
    tokens = [t for t in tokens if not (command in ENDS_A_JOB and _names_one_of(t, running))]
    if command in ENDS_A_JOB and "--timeout" not in tokens:
        tokens += ["--timeout", "1"] if command == "wait" else []
    return [command, target, *tokens]


def test_every_cli_command_answers_in_one_line(jobs, capsys, monkeypatch, tmp_path):
    """The CLI, in process (cli/main.py's `_run`): junk arguments end in exit status 1 or 2 with
    one line on stderr, never a traceback or an "internal error"."""
    from cli.main import _run

    monkeypatch.chdir(tmp_path)  # junk such as a second `--home --cwd` makes homes where it runs

    reg, running, done = jobs

    @settings(_SETTINGS, max_examples=100)
    @given(data=st.data())
    def check(data):
        argv = ["--home", str(reg.home), *_cli_argv(data, running, done)]
        where = f"hermes-procs {argv[2:]!r}"[:400]
        capsys.readouterr()
        try:
            with _no_hang(where):
                code = _run(argv)
        except Exception as exc:  # noqa: BLE001 - the property under test
            pytest.fail(f"{where} raised {type(exc).__name__}: {exc}")
        out = capsys.readouterr()
        assert code in (0, 1, 2, 3, 124) or argv[2] == "wait", f"{where}: exit status {code}"
        assert "Traceback" not in out.err and "internal error" not in out.err, f"{where}: {out.err}"
        if code and argv[2] != "wait":
            lines = out.err.strip().splitlines()
            assert len(lines) == 1, f"{where}: exit {code} with stderr {out.err!r}"

    check()
    for sid in running:
        assert reg.poll(sid)["status"] == "running", sid
