"""Hermes adapter results as upstream shapes them: read_log paging, unknown ids, kill results,
env_vars filtering, wait interrupts (incl. Hermes' own tools.interrupt), output_buffer, spawn_via_env."""

import sys
import threading
import types

import pytest
from conftest import wait_until

pytestmark = pytest.mark.usefixtures("login_shell_home")  # the jobs run in a login shell


def test_read_log_offsets_and_showing(hermes):
    """Hermes' paging: offset 0 (its default) is the tail, offset N starts at line N."""
    session = hermes.spawn_local("for i in $(seq 0 299); do echo line $i; done")
    hermes.wait(session.id, timeout=10)
    tail = hermes.read_log(session.id, limit=5)  # offset omitted: the last lines
    assert tail["output"].splitlines() == [f"line {i}" for i in range(295, 300)]
    assert tail["total_lines"] == 300 and tail["showing"] == "5 lines" and tail["status"] == "exited"
    assert tail["session_id"] == session.id and tail["command"] == session.command
    assert set(tail) == {"session_id", "command", "status", "output", "total_lines", "showing"}
    default = hermes.read_log(session.id, offset=0)  # what process(action="log") asks for
    assert default["showing"] == "200 lines" and default["output"].startswith("line 100\n")
    assert hermes.read_log(session.id, offset=None)["output"] == default["output"]
    page = hermes.read_log(session.id, offset=10, limit=5)
    assert page["showing"] == "5 lines" and page["output"].startswith("line 10\n")
    assert hermes.read_log(session.id, offset=500)["showing"] == "0 lines"
    assert hermes.read_log(session.id, offset=-1)["status"] == "error"


def test_read_log_past_the_answer_cap_says_where_the_rest_is(hermes):
    session = hermes.spawn_local("for i in $(seq 0 2999); do printf '%05d %0994d\\n' $i 0; done")
    hermes.wait(session.id, timeout=30)
    page = hermes.read_log(session.id, offset=1, limit=3000)  # 3 MB asked for: 100,000 characters answered
    shown = page["output"].splitlines()
    assert shown[0].startswith("00001 ") and len(shown) == 99, len(shown)  # 1,000 characters a line
    assert page["showing"] == "99 lines; answer capped at 100,000 characters: " \
                              "2900 more lines after them (read on with offset=100)"
    # a tail: Hermes' offset=0 is the tail, so the rest is read from offset 1 at least (the note
    # said offset=0, which gave the same page again)
    tail = hermes.read_log(session.id, limit=150)
    assert tail["output"].splitlines()[0].startswith("02901 ")
    assert tail["showing"].endswith("51 more lines before them (read them with offset=2850, limit=51)")
    whole = hermes.read_log(session.id, limit=3000)
    assert whole["showing"].endswith("2901 more lines before them (read them with offset=1, limit=2900)")


@pytest.mark.parametrize("bad", ["nonexistent", "xyz123", "proc_ffffffffffff", "ffff", "../etc"])
def test_unresolvable_ids_are_not_found(hermes, bad):
    for result in (hermes.poll(bad), hermes.read_log(bad), hermes.wait(bad, timeout=1), hermes.kill_process(bad),
                   hermes.write_stdin(bad, "x"), hermes.submit_stdin(bad), hermes.close_stdin(bad)):
        assert result == {"status": "not_found", "error": f"No process with ID {bad}"}
    assert hermes.get(bad) is None and not hermes.is_completion_consumed(bad)


def test_get_returns_the_same_object_and_prefixes(hermes, registry):
    session = hermes.spawn_local("sleep 30")
    assert hermes.get(session.id) is session
    assert hermes.get(session.id.removeprefix("proc_")[:6]) is session
    human = registry.spawn("sleep 30", task_id="h")
    seen = hermes.get(human["session_id"])
    assert seen is hermes.get(human["session_id"]) and seen.task_id == "h" and not seen.exited
    assert hermes.get("") is None and hermes.get("proc_") is None


def test_kill_results(hermes):
    session = hermes.spawn_local("echo started; sleep 30")
    wait_until(lambda: "started" in session.output_buffer)
    killed = hermes.kill_process(session.id, grace=0.2)
    assert killed["status"] == "killed" and killed["session_id"] == session.id
    assert killed["completion_reason"] == "killed" and killed["termination_source"] == "process.kill"
    assert "started" in killed["output"]
    assert session.exited and session.completion_reason == "killed" and session.termination_source == "process.kill"
    again = hermes.kill_process(session.id)
    assert again["status"] == "already_exited" and again["termination_source"] == "process.kill"
    done = hermes.spawn_local("exit 2")
    hermes.wait(done.id, timeout=10)
    late = hermes.kill_process(done.id)
    assert late["status"] == "already_exited" and late["exit_code"] == 2 and late["termination_source"] == ""


def test_env_vars_block_secrets_and_force_prefix(hermes, monkeypatch):
    monkeypatch.setenv("FIRECRAWL_API_KEY", "fc-secret")  # the parent's secrets never reach the job
    session = hermes.spawn_local(
        'echo "custom=$MY_CUSTOM_VAR bot=${TELEGRAM_BOT_TOKEN:-unset} fc=${FIRECRAWL_API_KEY:-unset} '
        'forced=${_HERMES_FORCE_GH_TOKEN:-unset} gh=${GH_TOKEN:-unset} pyu=$PYTHONUNBUFFERED"',
        env_vars={"MY_CUSTOM_VAR": "keep-me", "TELEGRAM_BOT_TOKEN": "drop-me",
                  "_HERMES_FORCE_GH_TOKEN": "forced-token"})
    hermes.wait(session.id, timeout=10)
    out = hermes.registry.read_log(session.id)["output"]  # unmasked: what the child really saw
    assert out == "custom=keep-me bot=unset fc=unset forced=unset gh=forced-token pyu=1"


def test_wait_shapes_and_the_terminal_timeout_clamp(hermes, monkeypatch):
    session = hermes.spawn_local("echo working; sleep 30", notify_on_complete=True)
    wait_until(lambda: "working" in session.output_buffer)
    timed = hermes.wait(session.id, timeout=0.3)
    assert timed == {"status": "timeout", "command": session.command, "output": "working\n",
                     "timeout_note": "Waited 0.3s, process still running"}
    monkeypatch.setenv("TERMINAL_TIMEOUT", "1")  # Hermes' limit (its config's terminal.timeout)
    clamped = hermes.wait(session.id, timeout=6)
    assert clamped["timeout_note"] == "Requested wait of 6s was clamped to configured limit of 1s"
    assert hermes.wait(session.id, timeout=0)["timeout_note"] == "Waited 1s, process still running"  # 0: the limit
    assert hermes.wait(session.id, timeout="x") == {"status": "error",
                                                    "error": "timeout must be a number of seconds, not 'x'"}
    monkeypatch.setenv("TERMINAL_TIMEOUT", "300")  # longer than the registry's own limit (180 s)
    monkeypatch.setenv("HERMES_PROCS_MAX_WAIT", "0.2")
    done = hermes.spawn_local("sleep 1; exit 7")
    assert hermes.wait(done.id, timeout=30)["exit_code"] == 7  # waited on in steps


def test_wait_interrupted_by_event_or_callable(hermes):
    session = hermes.spawn_local("sleep 30")
    stop = threading.Event()
    threading.Timer(0.2, stop.set).start()
    result = hermes.wait(session.id, timeout=30, interrupt=stop)
    assert result["status"] == "interrupted" and result["note"] == "User sent a new message -- wait interrupted"
    calls = []
    result = hermes.wait(session.id, timeout=30, interrupt=lambda: calls.append(1) or len(calls) > 3)
    assert result["status"] == "interrupted" and len(calls) > 3


def test_wait_sees_hermes_per_thread_interrupt(hermes, monkeypatch):
    """Hermes' `tools.interrupt.is_interrupted()` flag (per thread) stops a wait on that thread only."""
    import hermes_procs.core.agents.compat_stock as compat_stock

    flagged: set[threading.Thread] = set()  # thread objects: a finished thread's ident is reused
    tools = types.ModuleType("tools")
    tools.__path__ = []
    interrupt = types.ModuleType("tools.interrupt")
    interrupt.is_interrupted = lambda: threading.current_thread() in flagged
    monkeypatch.setitem(sys.modules, "tools", tools)
    monkeypatch.setitem(sys.modules, "tools.interrupt", interrupt)
    monkeypatch.setattr(compat_stock, "_modules", {})  # looked up again
    session = hermes.spawn_local("sleep 30")
    results = {}

    def waiter(name):
        if name == "flagged":
            flagged.add(threading.current_thread())
        results[name] = hermes.wait(session.id, timeout=0.5)["status"]

    threads = [threading.Thread(target=waiter, args=(n,)) for n in ("flagged", "other")]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=20)
    assert results == {"flagged": "interrupted", "other": "timeout"}


def test_output_buffer_is_a_bounded_cached_tail(hermes):
    session = hermes.spawn_local("seq 1 200000")
    hermes.wait(session.id, timeout=30)
    session.max_output_chars = 1000
    tail = session.output_buffer
    assert len(tail) == 1000 and tail.endswith("199999\n200000\n")
    assert session.output_buffer is tail  # nothing re-read while the log is unchanged
    session.max_output_chars = 200_000
    assert len(session.output_buffer) == 200_000


def test_spawn_via_env(hermes, tmp_path):
    class LocalEnvironment:
        cwd = str(tmp_path)

    local = hermes.spawn_via_env(LocalEnvironment(), "pwd", task_id="t")
    hermes.wait(local.id, timeout=10)
    assert local.output_buffer.strip() == str(tmp_path) and local.task_id == "t"

    class DockerEnvironment:
        def execute(self, *a, **k):
            raise AssertionError("never called")

    failed = hermes.spawn_via_env(DockerEnvironment(), "echo hi", task_id="t")
    assert failed.exited and failed.exit_code == -1 and failed.completion_reason == "failed_start"
    assert failed.termination_source == "failed_start" and failed.pid is None
    assert "DockerEnvironment" in failed.output_buffer and "cannot run" in failed.output_buffer
    assert hermes.get(failed.id) is None and failed.id not in {r["session_id"] for r in hermes.list_sessions()}


def test_a_stack_jobs_secret_is_masked_by_the_adapter_too(hermes, tmp_path):
    """The adapter reads every job of the home: a stack's web printed its token in the clear
    to Hermes while the tool and MCP masked it."""
    registry = hermes.registry
    (tmp_path / "hermes-procs.toml").write_text(
        '[jobs.web]\ncommand = "echo web $API_TOKEN; sleep 300"\nenv = { API_TOKEN = "tok_ABCdef123456xyz" }\n')
    up = registry.up(str(tmp_path), wait=True, timeout=30)
    sid = up["jobs"][0]["session_id"]
    try:
        assert wait_until(lambda: "web tok_" in registry.read_log(sid)["output"], timeout=10)
        assert hermes.read_log(sid)["output"] == "web ***"
        assert "tok_ABCdef123456xyz" not in repr(hermes.poll(sid))
    finally:
        registry.down(up["stack"])
