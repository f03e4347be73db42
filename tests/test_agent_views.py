"""screen, search and restart on real jobs: what an agent sees is what the human sees."""

import json
import os

from conftest import wait_until

# ---- screen ---------------------------------------------------------------------------------

def test_screen_of_a_repl_shows_prompt_answer_and_cursor(registry):
    sid = registry.spawn("python3 -q -i", pty=True, rows=10, cols=40)["session_id"]
    assert registry.wait(sid, timeout=20, until="input")["reason"] == "awaiting_input"
    registry.submit(sid, "print(6*7)")
    wait_until(lambda: "42" in registry.screen(sid)["lines"], timeout=10)
    shown = registry.screen(sid)
    assert (shown["status"], shown["rows"], shown["cols"], shown["alternate_screen"]) == ("running", 10, 40, False)
    assert len(shown["lines"]) == 10 and shown["lines"][:3] == [">>> print(6*7)", "42", ">>>"]
    wait_until(lambda: registry.screen(sid)["cursor"] == [2, 4])


def test_screen_of_a_full_screen_program_and_after_it_leaves(registry):
    script = (r"printf 'before\n'; printf '\033[?1049h\033[2J\033[H'; printf 'MENU\033[5;3Hpick one'; "
              r"read x; printf '\033[?1049l'; echo after")
    sid = registry.spawn(script, pty=True, rows=8, cols=30)["session_id"]
    registry.wait(sid, timeout=20, until="input")
    wait_until(lambda: registry.screen(sid)["alternate_screen"])
    shown = registry.screen(sid)
    assert shown["lines"][0] == "MENU" and shown["lines"][4] == "  pick one" and "before" not in shown["lines"]
    registry.submit(sid, "")
    registry.wait(sid, timeout=20)
    after = registry.screen(sid)
    assert after["status"] == "exited" and not after["alternate_screen"]
    assert "before" in after["lines"] and "after" in after["lines"]


def test_screen_follows_a_resize(registry):
    sid = registry.spawn("sleep 30", pty=True, rows=10, cols=40)["session_id"]
    registry.resize(sid, 20, 60)
    shown = registry.screen(sid)
    assert (shown["rows"], shown["cols"], len(shown["lines"])) == (20, 60, 20)


def test_screen_of_a_long_log_reads_only_its_tail(registry):
    sid = registry.spawn("seq 1 300000; echo LAST", pty=True, rows=5, cols=20)["session_id"]
    registry.wait(sid, timeout=60)
    assert registry.screen(sid)["lines"][:4] == ["299998", "299999", "300000", "LAST"]


def test_screen_of_a_pipe_job_is_a_clear_error(registry):
    sid = registry.spawn("echo hi")["session_id"]
    got = registry.screen(sid)
    assert got["status"] == "error" and "pty" in got["error"]
    assert registry.screen("proc_000000000000")["status"] == "not_found"


# ---- search ---------------------------------------------------------------------------------

def test_search_one_log_with_context_and_line_numbers_usable_as_offsets(registry):
    sid = registry.spawn(r"for i in $(seq 1 5000); do echo line $i; done; printf '\033[31mERROR\033[0m: disk\n'; "
                         "echo tail")["session_id"]
    registry.wait(sid, timeout=30)
    got = registry.search(sid, r"^ERROR: \w+$", context=2)
    assert got["total"] == 1 and got["session_id"] == sid
    match = got["matches"][0]
    assert match["line"] == "ERROR: disk" and match["after"] == ["tail"]
    assert match["before"] == ["line 4999", "line 5000"]
    assert registry.read_log(sid, offset=match["line_no"], limit=1)["output"].strip() == "ERROR: disk"


def test_search_counts_every_match_and_returns_limit(registry):
    sid = registry.spawn("seq 1 200000")["session_id"]
    registry.wait(sid, timeout=30)
    got = registry.search(sid, r"^1\d*7$", context=0, limit=3)
    assert [m["line"] for m in got["matches"]] == ["17", "107", "117"] and got["matches"][0]["line_no"] == 16
    assert got["total"] == sum(1 for n in range(1, 200001) if str(n).startswith("1") and str(n).endswith("7"))


def test_search_every_job_of_a_task(registry):
    a = registry.spawn("echo needle one", task_id="t1")["session_id"]
    b = registry.spawn("echo needle two", task_id="t2")["session_id"]
    for sid in (a, b):
        registry.wait(sid, timeout=20)
    assert {m["session_id"] for m in registry.search(pattern="needle")["matches"]} == {a, b}
    assert [m["line"] for m in registry.search(pattern="needle", task_id="t1")["matches"]] == ["needle one"]


def test_search_bad_input(registry):
    sid = registry.spawn("true")["session_id"]
    assert "regular expression" in registry.search(sid, "(")["error"]
    assert "non-empty" in registry.search(sid, "")["error"]
    assert "context" in registry.search(sid, "x", context=-1)["error"]
    assert "limit" in registry.search(sid, "x", limit=0)["error"]
    assert registry.search("proc_000000000000", "x")["status"] == "not_found"


# ---- restart --------------------------------------------------------------------------------

def test_restart_kills_and_reruns_with_the_same_command_cwd_env_and_options(registry, tmp_path, alive):
    cwd = tmp_path / "work"
    cwd.mkdir()
    old = registry.spawn('echo "$GREETING from $PWD"; sleep 60', cwd=str(cwd), env={"GREETING": "hello"}, pty=True,
                         name="srv", task_id="t9", notify_on_complete=True, watch_patterns=["hello"],
                         quiet_after=30)
    sid = old["session_id"]
    wait_until(lambda: "hello from" in registry.poll(sid)["output_preview"])
    new = registry.restart(sid)
    assert new["status"] == "running" and new["session_id"] != sid and not alive(old["pid"])
    assert registry.poll(sid)["completion_reason"] == "killed"
    assert "hello from" in registry.read_log(sid)["output"]  # the old job keeps its log
    polled = registry.poll(new["session_id"])
    assert polled["rerun_of"] == sid and polled["pty"] and polled["name"] == "srv" and polled["task_id"] == "t9"
    assert next(j for j in registry.list() if j["session_id"] == new["session_id"])["rerun_of"] == sid
    wait_until(lambda: f"hello from {cwd}" in registry.poll(new["session_id"])["output_preview"])
    meta = json.loads((registry.job_dir(new["session_id"]) / "meta.json").read_text())
    assert (meta["notify_on_complete"], meta["watch_patterns"], meta["quiet_after"]) == (True, ["hello"], 30.0)
    assert registry.poll(sid)["rerun_of"] is None


def test_restart_of_a_finished_job_and_of_an_unknown_one(registry):
    sid = registry.spawn("echo run; exit 3")["session_id"]
    registry.wait(sid, timeout=20)
    new = registry.restart(sid)["session_id"]
    assert registry.wait(new, timeout=20)["exit_code"] == 3
    assert registry.restart("proc_000000000000")["status"] == "not_found"


def test_restart_reports_a_cwd_that_is_gone(registry, tmp_path):
    cwd = tmp_path / "gone"
    cwd.mkdir()
    sid = registry.spawn("true", cwd=str(cwd))["session_id"]
    registry.wait(sid, timeout=20)
    os.rmdir(cwd)
    got = registry.restart(sid)
    assert got["status"] == "error" and "does not exist" in got["error"]


# ---- the process tool and the CLI -----------------------------------------------------------

def test_tool_actions(registry):
    from hermes_procs.core.agents.tool import PROCESS_TOOL_SCHEMA, handle_process

    def call(**args):
        return json.loads(handle_process(args, registry=registry, task_id="tt"))

    assert {"screen", "search", "restart"} <= set(PROCESS_TOOL_SCHEMA["parameters"]["properties"]["action"]["enum"])
    assert "until='input'" in PROCESS_TOOL_SCHEMA["description"] and "screen" in PROCESS_TOOL_SCHEMA["description"]
    sid = call(action="start", command="printf 'Proceed? '; read a; echo got $a", quiet_after=5)["session_id"]
    waited = call(action="wait", session_id=sid, until="input", timeout=20)
    assert waited["reason"] == "awaiting_input" and waited["output"].endswith("Proceed? ")
    assert call(action="poll", session_id=sid)["awaiting_input"] is True
    call(action="submit", session_id=sid, data="y")
    assert call(action="wait", session_id=sid, timeout=20)["reason"] == "exited"
    assert call(action="search", pattern="got y")["matches"][0]["session_id"] == sid
    assert call(action="search", pattern="got y", all=True)["total"] == 1
    assert "pty" in call(action="screen", session_id=sid)["error"]
    assert call(action="restart", session_id=sid)["status"] == "running"
    assert "missing required argument 'pattern'" in call(action="search")["error"]
    assert "until" in call(action="wait", session_id=sid, until=5)["error"]


def _cli(home, *args):
    import subprocess
    import sys

    return subprocess.run([sys.executable, "-m", "hermes_procs", "--home", str(home), *args],
                          capture_output=True, text=True, timeout=60)


def test_cli_wait_until_input_and_screen(registry, home):
    sid = registry.spawn("printf 'Continue? '; read a; echo answer $a; sleep 30", pty=True)["session_id"]
    waited = _cli(home, "wait", sid, "--until", "input", "--timeout", "20")
    assert waited.returncode == 0 and "reason: awaiting_input" in waited.stdout
    assert _cli(home, "screen", sid).stdout.strip() == "Continue?"
    assert json.loads(_cli(home, "screen", sid, "--json").stdout)["cursor"] == [0, 10]
    bad = _cli(home, "wait", sid, "--until", "soon")
    assert bad.returncode == 1 and bad.stderr.count("\n") == 1 and "unknown until" in bad.stderr


def test_cli_search_and_restart(registry, home):
    sid = registry.spawn("echo first; echo answer y; echo last")["session_id"]
    registry.wait(sid, timeout=20)
    # lines count from 1, as grep -n and the dashboard count them (--json: the 0-based offset)
    assert _cli(home, "search", sid, "answer", "-C", "0").stdout.strip() == "2:answer y"
    assert _cli(home, "search", "answer", "-C", "0").stdout.strip() == f"{sid}:2:answer y"
    # as grep -n -C: `--` only between two groups, never after the last one
    assert _cli(home, "search", sid, "answer", "-C", "1").stdout == "1-first\n2:answer y\n3-last\n"
    assert _cli(home, "search", sid, "first|last", "-C", "0").stdout == "1:first\n3:last\n"
    # overlapping groups are merged, a match inside another's context is shown as a match
    assert _cli(home, "search", sid, "first|y", "-C", "1").stdout == "1:first\n2:answer y\n3-last\n"
    assert json.loads(_cli(home, "search", sid, "answer", "--json").stdout)["matches"][0]["line_no"] == 1
    assert _cli(home, "search", "a", "b", "c").returncode == 1
    new = _cli(home, "restart", sid).stdout.strip()
    assert registry.poll(new)["rerun_of"] == sid


def test_a_private_key_is_masked_in_search_context_and_log_windows(registry, tmp_path):
    """Each search match's context line and each log window is a string of its own: a window
    inside a key's block shows neither its BEGIN nor its END line, and must not show its body."""
    import base64
    import random

    from hermes_procs.core.agents.tool import handle_process

    body = base64.b64encode(random.Random(26).randbytes(600)).decode()  # the same key every run
    lines = [body[i:i + 64] for i in range(0, len(body), 64)]
    key = tmp_path / "key.pem"
    key.write_text("-----BEGIN PRIVATE KEY-----\n" + "\n".join(lines) + "\n-----END PRIVATE KEY-----\n")
    sid = registry.spawn(f"echo writing key; cat {key}; echo done")["session_id"]
    registry.wait(sid, timeout=20)

    def call(**args):
        return handle_process(args, registry=registry, task_id="tt")

    answers = [call(action="search", session_id=sid, pattern="BEGIN PRIVATE KEY", context=20),
               call(action="log", session_id=sid, offset=2, limit=8),  # inside the block
               call(action="search", session_id=sid, pattern="^[A-Za-z0-9+/]{60,}$", context=0),
               call(action="search", session_id=sid, pattern="done", context=3),
               call(action="log", session_id=sid)]
    for answer in answers:
        assert not any(line[:40] in answer for line in lines[:-1]), answer
    assert '"total": 1' in answers[0] and "writing key" in answers[0]  # the rest of the answer is there
