"""The `process` agent tool: schema, dispatch over a real registry, argument errors, redaction."""

import json
import sys

import pytest
from conftest import wait_until

from hermes_procs.core.agents import tool
from hermes_procs.core.agents.tool import ACTIONS, PROCESS_TOOL_SCHEMA, handle_process

GHP = "ghp_" + "a1B2c3D4e5" * 4


def call(registry, task_id=None, **args):
    out = handle_process(args, registry=registry, task_id=task_id)
    assert isinstance(out, str)
    return json.loads(out)


def test_schema_shape():
    assert PROCESS_TOOL_SCHEMA["name"] == "process"
    params = PROCESS_TOOL_SCHEMA["parameters"]
    assert params["type"] == "object" and params["required"] == ["action"]
    assert params["properties"]["action"]["enum"] == list(ACTIONS)
    assert set(ACTIONS) == {"exec", "start", "list", "poll", "log", "wait", "kill", "write", "submit", "close",
                            "screen", "search", "restart", "tree", "signal", "pin", "unpin", "up", "down"}
    for name in ("command", "pty", "cwd", "name", "notify_on_complete", "watch_patterns", "session_id", "data",
                 "timeout", "offset", "limit", "max_runtime", "all", "grace", "env", "until", "pattern", "context",
                 "quiet_after", "signal", "pid", "start_ticks", "yield_ms", "reuse", "port", "ephemeral"):
        assert name in params["properties"], name
        assert params["properties"][name].get("description")
    desc = PROCESS_TOOL_SCHEMA["description"]
    for trap in ("notify_on_complete", "watch_patterns", "Enter", "clamped", "offset", "tree", "exec", "reuse=true",
                 "ephemeral=true", "pin"):
        assert trap in desc, trap
    json.dumps(PROCESS_TOOL_SCHEMA)
    assert list(tool._HANDLERS) == list(ACTIONS)  # one handler an action, in the schema's order


def test_start_wait_log_poll(registry):
    started = call(registry, action="start", command="echo one; sleep 0.1; echo two; exit 4", name="build")
    assert started["status"] == "running" and started["session_id"].startswith("proc_") and started["pid"] > 0
    sid = started["session_id"]
    done = call(registry, action="wait", session_id=sid, timeout=10)
    assert done["status"] == "exited" and done["exit_code"] == 4 and "two" in done["output"]
    log = call(registry, action="log", session_id=sid)
    assert log["output"] == "one\ntwo" and log["total_lines"] == 2
    page = call(registry, action="log", session_id=sid, offset=1, limit=1)
    assert page["output"] == "two"
    polled = call(registry, action="poll", session_id=sid[:9])  # unique prefix works
    assert polled["status"] == "exited" and polled["exit_code"] == 4


def test_submit_write_close_pipe_job(registry):
    sid = call(registry, action="start", command="cat")["session_id"]
    assert call(registry, action="write", session_id=sid, data="abc")["status"] == "ok"
    assert call(registry, action="submit", session_id=sid, data="def")["status"] == "ok"
    wait_until(lambda: "abcdef" in registry.read_log(sid)["output"])
    assert call(registry, action="close", session_id=sid)["status"] == "ok"
    done = call(registry, action="wait", session_id=sid, timeout=10)
    assert done["status"] == "exited" and done["exit_code"] == 0


def test_pty_repl_submit(registry):
    sid = call(registry, action="start", command=f"{sys.executable} -i -q", pty=True)["session_id"]
    wait_until(lambda: ">>>" in registry.read_log(sid)["output"], timeout=10)
    assert call(registry, action="submit", session_id=sid, data="print(6*7)")["status"] == "ok"
    wait_until(lambda: "42" in call(registry, action="log", session_id=sid)["output"], timeout=10)
    killed = call(registry, action="kill", session_id=sid, grace=0.5)
    assert killed["status"] == "killed"


def test_kill_tree(registry, alive):
    sid = call(registry, action="start", command="sleep 30 & sleep 30 & wait")["session_id"]
    wait_until(lambda: len(_children(registry.poll(sid)["pid"])) == 2)
    kids = _children(registry.poll(sid)["pid"])
    killed = call(registry, action="kill", session_id=sid, grace=1)
    assert killed["status"] == "killed" and killed["completion_reason"] == "killed"
    wait_until(lambda: not any(alive(p) for p in kids))
    again = call(registry, action="kill", session_id=sid)
    assert again["status"] == "already_exited"


# a job with two long children and a shell that says when USR1 reaches it
TRAPPING = "sleep 60 & sleep 61 & trap 'echo got-usr1' USR1; while :; do sleep 0.1; done"


def _by_command(tree, command):
    return next(p for p in tree["processes"] if p["command"] == command)


def test_tree_and_signal_one_process(registry, alive):
    sid = call(registry, action="start", command=TRAPPING)["session_id"]
    root = registry.poll(sid)["pid"]
    wait_until(lambda: {"sleep 60", "sleep 61"} <= {p["command"] for p in call(
        registry, action="tree", session_id=sid)["processes"]})
    tree = call(registry, action="tree", session_id=sid)
    assert tree["status"] == "running" and tree["session_id"] == sid
    assert tree["processes"][0]["pid"] == root and tree["processes"][0]["depth"] == 0
    first, second = _by_command(tree, "sleep 60"), _by_command(tree, "sleep 61")
    assert first["ppid"] == root and first["depth"] == 1 and first["state"] and "rss_bytes" in first

    sent = call(registry, action="signal", session_id=sid, signal="TERM", pid=first["pid"],
                start_ticks=first["start_ticks"])
    assert sent == {"status": "ok", "session_id": sid, "pid": first["pid"], "signal": "TERM"}
    wait_until(lambda: not alive(first["pid"]))
    assert alive(second["pid"]) and registry.poll(sid)["status"] == "running"  # only that one process
    assert first["pid"] not in [p["pid"] for p in call(registry, action="tree", session_id=sid)["processes"]]
    stale = call(registry, action="signal", session_id=sid, signal="TERM", pid=first["pid"],
                 start_ticks=first["start_ticks"])
    assert stale["status"] == "error" and "not part of this job" in stale["error"]
    stranger = call(registry, action="signal", session_id=sid, signal="KILL", pid=1)
    assert stranger["status"] == "error" and "not part of this job" in stranger["error"]

    group = call(registry, action="signal", session_id=sid, signal="usr1")  # the whole process group
    assert group == {"status": "ok", "session_id": sid}
    wait_until(lambda: "got-usr1" in registry.read_log(sid)["output"])
    wait_until(lambda: not alive(second["pid"]))  # USR1's default action ends the other sleep
    assert registry.poll(sid)["status"] == "running"  # the shell trapped it

    assert call(registry, action="signal", session_id=sid, signal=15)["status"] == "ok"  # a number works
    assert call(registry, action="wait", session_id=sid, timeout=10)["status"] == "exited"
    assert call(registry, action="signal", session_id=sid, signal="INT")["status"] == "already_exited"
    # a `sleep 0.1` forked while TERM went out may outlive the shell for a moment (the tree shows it)
    wait_until(lambda: call(registry, action="tree", session_id=sid)["processes"] == [])
    assert call(registry, action="tree", session_id=sid)["status"] == "exited"


def test_tree_and_signal_errors(registry):
    missing = "proc_000000000000"
    assert call(registry, action="tree", session_id=missing)["status"] == "not_found"
    assert call(registry, action="signal", session_id=missing, signal="INT")["status"] == "not_found"
    sid = call(registry, action="start", command="sleep 30")["session_id"]
    for bad, word in (("BOGUS", "unknown signal"), ("SEGV", "cannot be sent"), (99, "unknown signal")):
        out = call(registry, action="signal", session_id=sid, signal=bad)
        assert out["status"] == "error" and word in out["error"] and "INT" in out["error"], out
        out = call(registry, action="signal", session_id=sid, signal=bad, pid=1)
        assert out["status"] == "error" and word in out["error"], out
    out = call(registry, action="signal", session_id=sid, signal="INT", pid=0)
    assert out["status"] == "error" and "pid" in out["error"]
    assert registry.poll(sid)["status"] == "running"  # nothing was sent
    assert call(registry, action="kill", session_id=sid, grace=0.5)["status"] == "killed"


def _children(pid):
    try:
        with open(f"/proc/{pid}/task/{pid}/children") as fh:
            return [int(p) for p in fh.read().split()]
    except (FileNotFoundError, ProcessLookupError):
        return []


def test_integer_session_id_coerced(registry):
    out = call(registry, action="poll", session_id=123456)
    assert out["status"] in ("not_found", "error") and "123456" in out["error"]


@pytest.mark.parametrize("args, word", [
    ({"action": "poll"}, "'session_id'"),
    ({"action": "log", "session_id": True}, "'session_id'"),
    ({"action": "log", "session_id": ["x"]}, "'session_id'"),
    ({"action": "start"}, "'command'"),
    ({"action": "start", "command": 5}, "'command'"),
    ({"action": "start", "command": "true", "pty": "yes"}, "'pty'"),
    ({"action": "start", "command": "true", "watch_patterns": [1, 2]}, "'watch_patterns'"),
    ({"action": "start", "command": "true", "notify_on_complete": 1}, "'notify_on_complete'"),
    ({"action": "start", "command": "true", "env": ["A=1"]}, "'env'"),
    ({"action": "start", "command": "true", "env": {"PATH": None}}, "argument 'env': 'PATH' is null"),  # was "None"
    ({"action": "start", "command": "true", "name": "a\0b"}, "name must not contain NUL"),
    ({"action": "log", "session_id": "proc_000000000000", "offset": "x"}, "'offset'"),
    ({"action": "log", "session_id": "proc_000000000000", "limit": 2.5}, "'limit'"),
    ({"action": "wait", "session_id": "proc_000000000000", "timeout": "soon"}, "'timeout'"),
    ({"action": "kill", "session_id": "proc_000000000000", "grace": "x"}, "'grace'"),
    ({"action": "write", "session_id": "proc_000000000000"}, "'data'"),
    ({"action": "write", "session_id": "proc_000000000000", "data": 5}, "'data'"),
    ({"action": "list", "all": "yes"}, "'all'"),
    ({"action": "tree"}, "'session_id'"),
    ({"action": "signal", "signal": "INT"}, "'session_id'"),
    ({"action": "signal", "session_id": "proc_000000000000"}, "'signal'"),
    ({"action": "signal", "session_id": "proc_000000000000", "signal": ["INT"]}, "'signal'"),
    ({"action": "signal", "session_id": "proc_000000000000", "signal": "INT", "pid": "12"}, "'pid'"),
    ({"action": "signal", "session_id": "proc_000000000000", "signal": "INT", "start_ticks": 5}, "'start_ticks'"),
    ({}, "'action'"),
    ({"action": 3}, "'action'"),
])
def test_bad_arguments_name_the_argument(registry, args, word):
    out = call(registry, **args)
    assert out["status"] == "error" and word in out["error"], out


def test_unknown_action_lists_valid_ones(registry):
    out = call(registry, action="explode")
    assert out["status"] == "error" and "explode" in out["error"]
    for action in ACTIONS:
        assert action in out["error"]


def test_an_unknown_argument_is_named_not_dropped(registry):
    """A misspelt `limt` silently gave the default 200 lines; an unknown name nothing like one."""
    out = call(registry, action="log", session_id="proc_000000000000", limt=3)
    assert out == {"status": "error", "error": "unknown argument 'limt' (did you mean 'limit'?)"}
    out = call(registry, action="list", **{"\x1b]0;x\x07" + "z" * 200: 1})
    assert out["error"].startswith("unknown argument '\\x1b]0;x\\x07zzz")
    assert "the arguments are: action, all," in out["error"]
    assert len(out["error"]) < 600 and "\x1b" not in out["error"]


def test_never_raises_on_garbage(registry):
    for args in (None, 5, "not json", "[]", ["action"], {"action": "start", "command": "\0"}):
        out = json.loads(handle_process(args, registry=registry))
        assert out["status"] == "error"
    assert json.loads(handle_process('{"action": "list"}', registry=registry)) == {"processes": []}


def test_registry_errors_pass_through(registry, tmp_path):
    assert call(registry, action="poll", session_id="proc_ffffffffffff")["status"] == "not_found"
    out = call(registry, action="start", command="true", cwd=str(tmp_path / "nope"))
    assert out["status"] == "error" and "nope" in out["error"]
    for bad in (0, -1, float("inf"), True):
        out = call(registry, action="start", command="sleep 5", max_runtime=bad)
        assert out["status"] == "error" and "max_runtime" in out["error"], bad
    assert registry.list() == []


def test_max_runtime(registry):
    sid = call(registry, action="start", command="sleep 30", max_runtime=0.5)["session_id"]
    done = call(registry, action="wait", session_id=sid, timeout=15)
    assert done["status"] == "exited" and done["completion_reason"] == "timed_out"


def test_wait_clamped(registry, monkeypatch):
    monkeypatch.setenv("HERMES_PROCS_MAX_WAIT", "0.3")
    sid = call(registry, action="start", command="sleep 30")["session_id"]
    out = call(registry, action="wait", session_id=sid, timeout=100)
    assert out["status"] == "timeout" and "clamp" in out["timeout_note"]


def test_task_scoping(registry):
    mine = call(registry, task_id="task-a", action="start", command="true")["session_id"]
    other = call(registry, task_id="task-b", action="start", command="true")["session_id"]
    ids = lambda out: [p["session_id"] for p in out["processes"]]
    assert ids(call(registry, task_id="task-a", action="list")) == [mine]
    assert set(ids(call(registry, task_id="task-a", action="list", all=True))) == {mine, other}
    assert set(ids(call(registry, action="list"))) == {mine, other}
    assert registry.poll(mine)["task_id"] == "task-a"


def test_results_are_redacted_but_raw_log_is_not(registry, monkeypatch):
    command = f"echo GITHUB_TOKEN={GHP}; echo plain"
    started = call(registry, action="start", command=command, notify_on_complete=True)
    assert GHP not in json.dumps(started) and "ghp_...***" in started["command"]
    sid = started["session_id"]
    for action in ("wait", "poll", "log"):
        out = call(registry, action=action, session_id=sid, **({"timeout": 10} if action == "wait" else {}))
        assert GHP not in json.dumps(out), action
    assert GHP not in json.dumps(call(registry, action="list"))
    assert GHP in registry.read_log(sid)["output"]  # the Python API and the disk keep the original
    monkeypatch.setenv("HERMES_PROCS_REDACT", "0")
    assert GHP in call(registry, action="log", session_id=sid)["output"]


def test_default_registry_is_lazy_and_shared(home, monkeypatch):
    monkeypatch.setattr(tool, "_default", None)
    out = json.loads(handle_process({"action": "start", "command": "echo hi"}))
    assert out["status"] == "running"
    reg = tool.default_registry()
    assert reg is tool.default_registry() and str(reg.home) == str(home)
    assert json.loads(handle_process({"action": "wait", "session_id": out["session_id"]}))["exit_code"] == 0


def test_log_and_search_answers_fit_a_models_context(registry):
    # 5 MB of 200,000-character lines: the default log answered 983,881 characters and a search
    # 244,795 (many MCP clients refuse far less); at most ANSWER_CHARS of lines, with where the rest is
    script = "import sys\nfor i in range(25): sys.stdout.write(f'{i:03d}' + 'q' * 199_997 + '\\n')"
    sid = call(registry, action="exec", command=f"{sys.executable} -c \"{script}\"")["session_id"]
    assert call(registry, action="wait", session_id=sid, timeout=30)["status"] == "exited"
    page = call(registry, action="log", session_id=sid)
    assert len(page["output"]) <= tool.ANSWER_CHARS and page["capped"], len(page["output"])
    assert "answer capped at 100,000 characters" in page["showing"] and "offset=" in page["note"]
    found = call(registry, action="search", session_id=sid, pattern="q+", context=1)
    chars = sum(len(line) for m in found["matches"] for line in [m["line"], *m["before"], *m["after"]])
    assert chars <= tool.ANSWER_CHARS and found["truncated"] and found["total"] == 25, found.get("note")
    assert registry.read_log(sid)["shown_lines"] > page["shown_lines"]  # the API keeps its 1 MiB


def test_list_tree_and_screen_answers_are_capped_too(registry, tmp_path):
    """67 jobs with long names and folders listed in 276,549 characters, a 1000x1000 screen in
    a million: every answer is at most answer_cap.MAX_ANSWER characters, and says what it cut."""
    from hermes_procs.core.agents.answer_cap import MAX_ANSWER

    folder = tmp_path / ("d" * 200) / ("e" * 200)
    folder.mkdir(parents=True)
    sids = [registry.spawn("true", name=f"{i:03d}" + "n" * 997, cwd=str(folder), task_id="t" * 1000)["session_id"]
            for i in range(70)]
    listed = call(registry, action="list")
    assert len(json.dumps(listed)) <= MAX_ANSWER and 0 < len(listed["processes"]) < 70, len(json.dumps(listed))
    assert listed["answer_capped"].endswith(f"processes: the first {len(listed['processes'])} of 70")
    assert listed["processes"][0]["session_id"] == sids[-1]  # the newest kept
    script = tmp_path / "fill.py"
    script.write_text('import sys, time\nsys.stdout.write(("A" * 999 + "\\n") * 999)\n'
                      'sys.stdout.flush()\ntime.sleep(60)\n')
    sid = registry.spawn(f"{sys.executable} {script}", pty=True, rows=1000, cols=1000)["session_id"]
    wait_until(lambda: "A" * 999 in registry.screen(sid)["lines"][900], timeout=20)
    screen = call(registry, action="screen", session_id=sid)
    assert len(json.dumps(screen)) <= MAX_ANSWER and "lines: the first" in screen["answer_capped"]
    assert len(call(registry, action="poll", session_id=sid)) > 5  # small answers are left whole
    assert "answer_capped" not in call(registry, action="poll", session_id=sid)


@pytest.mark.parametrize("answer", [
    {"status": "ok", "output": "\u009b" * 150_000},  # 6 characters each as written: 900,030 were not cut
    {"status": "ok", "output": "\x01" * 100_000},  # was cut to nothing
    {"status": "ok", "stacks": {"jobs": [{"message": "x" * 1000}] * 300}},  # was an error for the whole answer
])
def test_the_answer_cap_measures_what_is_written_and_keeps_what_fits(answer):
    from hermes_procs.core.agents.answer_cap import MAX_ANSWER, capped
    from hermes_procs.core.supervisor.text import safe_json

    out = capped(answer)
    assert MAX_ANSWER * 0.9 < len(safe_json(out)) <= MAX_ANSWER and out["status"] == "ok", len(safe_json(out))
    assert "answer_capped" in out
