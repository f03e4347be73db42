"""Exec and write/submit with a yield (issue 23 items 5-6), through the API and the CLI, with real
processes: `exec` returns at the first of exit, waiting for input, yield_ms; `write`/`submit` with
`yield_ms` return only what the job printed after that input."""

from __future__ import annotations

import os
import time

import pytest
from clirun import cli

REPL = ("exec python3 -I -S -c 'while True:\n    line = input(\"> \")\n    if line == \"quit\": raise SystemExit(4)\n"
        "    print(\"got\", line * 2)'")


def test_exec_of_a_quick_command_returns_its_result(registry):
    got = registry.exec("echo one; echo two >&2; exit 3")
    assert (got["status"], got["reason"], got["exit_code"], got["completion_reason"]) == ("exited", "exited", 3,
                                                                                         "exited")
    assert got["output"] == "one\ntwo\n" and "output_note" not in got
    assert got["session_id"].startswith("proc_") and got["pid"] > 0


def test_exec_returns_at_a_prompt_and_submit_returns_the_reply(registry):
    got = registry.exec(REPL)
    assert (got["status"], got["reason"], got["exit_code"], got["output"]) == ("running", "awaiting_input", None,
                                                                               "> ")
    sid = got["session_id"]
    reply = registry.submit(sid, "ab", yield_ms=5000)
    assert (reply["status"], reply["reason"], reply["output"]) == ("running", "awaiting_input", "got abab\n> ")
    assert reply["bytes_written"] == 3
    reply = registry.write(sid, "cd\n", yield_ms=5000)
    assert reply["output"] == "got cdcd\n> "  # only what came after this write
    ended = registry.submit(sid, "quit", yield_ms=5000)
    assert (ended["status"], ended["reason"], ended["exit_code"]) == ("exited", "exited", 4)


def test_a_reply_that_takes_a_while_is_waited_for(registry):
    sid = registry.exec("while read x; do sleep 0.3; echo done $x; done")["session_id"]
    reply = registry.submit(sid, "1", yield_ms=5000)
    assert (reply["reason"], reply["output"]) == ("awaiting_input", "done 1\n")


def test_submit_yield_in_a_terminal(registry):
    got = registry.exec("python3 -I -q", pty=True)
    assert (got["reason"], got["output"]) == ("awaiting_input", ">>> ")
    reply = registry.submit(got["session_id"], "6 * 7", yield_ms=5000)
    assert reply["output"].replace("\r", "") == "6 * 7\n42\n>>> "  # the terminal echoes the line


def test_exec_yields_a_job_that_runs_on(registry):
    started = time.monotonic()
    got = registry.exec("echo begun; sleep 30", yield_ms=300)
    assert time.monotonic() - started < 3
    assert (got["status"], got["reason"], got["exit_code"], got["output"]) == ("running", "yielded", None, "begun\n")
    assert registry.poll(got["session_id"])["status"] == "running"
    assert registry.exec("sleep 30", yield_ms=0)["reason"] == "yielded"


def test_a_write_yield_ends_after_yield_ms(registry):
    sid = registry.exec("sleep 30", yield_ms=200)["session_id"]  # never reads: never waits for input
    started = time.monotonic()
    reply = registry.submit(sid, "x", yield_ms=200)
    assert (reply["status"], reply["reason"], reply["output"]) == ("running", "yielded", "")
    assert 0.15 < time.monotonic() - started < 3
    assert registry.poll(sid)["status"] == "running"


def test_long_output_is_cut_with_a_note(registry):
    got = registry.exec("seq 1 20000")
    text, note = got["output"], got["output_note"]
    assert text.startswith("1\n2\n3\n") and text.endswith("19999\n20000\n")
    assert len(text) < 16_200 and "left out" in text
    assert note.startswith("output cut to its first 2000 and last 14000 characters") and got["session_id"] in note
    big = registry.exec("head -c 3000000 /dev/zero | tr '\\0' x; echo; echo END")  # past the bytes read whole
    assert big["output"].endswith("END\n") and big["output"].startswith("x" * 2000) and "bytes" in big["output_note"]


@pytest.mark.parametrize("yield_ms", [-1, "10", float("nan"), True])
def test_bad_yields_get_one_line_and_do_nothing(registry, yield_ms):
    assert registry.exec("echo hi", yield_ms=yield_ms)["error"].startswith("yield_ms must be a number of ms"[:20])
    assert os.listdir(registry.jobs_dir) == []
    sid = registry.spawn("cat")["session_id"]
    got = registry.submit(sid, "hello", yield_ms=yield_ms)
    assert got["status"] == "error" and "\n" not in got["error"]
    assert registry.inputs(sid) == []  # nothing was written


def test_exec_takes_spawn_options_and_their_errors(registry, tmp_path):
    got = registry.exec("pwd; echo $GREETING", cwd=str(tmp_path), env={"GREETING": "hi"}, name="where")
    assert got["output"] == f"{tmp_path}\nhi\n" and got["name"] == "where"
    assert registry.exec("true", port=0)["error"].startswith("port must be")
    assert registry.exec("true", lease=999_999_999)["error"].startswith("lease: no running process")
    assert registry.exec("true", bogus=1)["status"] == "error"


def test_cli_exec_prints_the_output_and_exits_with_the_code(registry, home):
    out = cli(home, "exec", "--", "echo hello; exit 7")
    assert (out.returncode, out.stdout, out.stderr) == (7, "hello\n", "")
    out = cli(home, "exec", "--", "sh -c 'kill -TERM $$'")
    assert out.returncode == 128 + 15


def test_cli_exec_of_a_job_that_runs_on_puts_its_id_on_stderr(registry, home):
    out = cli(home, "exec", "--yield-ms", "200", "--", "echo started; sleep 30")
    assert out.returncode == 0 and out.stdout == "started\n"
    sid = out.stderr.split()[0]
    assert out.stderr == f"{sid} still running (yielded)\n" and registry.poll(sid)["status"] == "running"
    prompt = cli(home, "exec", "--", REPL)
    sid = prompt.stderr.split()[0]
    assert (prompt.returncode, prompt.stdout, prompt.stderr) == (0, "> \n", f"{sid} still running (awaiting_input)\n")
    reply = cli(home, "submit", "--yield-ms", "5000", sid, "xy")
    assert (reply.returncode, reply.stdout) == (0, "got xyxy\n> \n")
    ended = cli(home, "submit", "--yield-ms", "5000", sid, "quit")
    assert ended.returncode == 4 and ended.stderr == ""
    bad = cli(home, "exec", "--yield-ms", "-3", "--", "true")
    assert bad.stderr.startswith("hermes-procs: error: --yield-ms must be"), bad


def test_exec_output_reaches_the_terminal_sanitised(registry, home):
    hostile = r"printf 'a\033]52;c;aGk=\007b\033[2Jc\302\233d\342\200\256e\n'"
    api = registry.exec(hostile)["output"]  # escape sequences stripped, as read_log's
    assert not set(api) & {"\x1b", "\x07", "\x9b"} and api.startswith("abc"), repr(api)
    shown = cli(home, "exec", "--", hostile).stdout  # and what reaches a terminal: the one sanitiser
    assert not set(shown) & {"\x1b", "\x07", "\x9b", "\u202e"} and "\\u202e" in shown, repr(shown)
