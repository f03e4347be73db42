"""Regexes from users and agents run with a deadline (issue 19 item 4) and one search answer is
bounded (item 5).

`(a+)+$` against a line of 41 `a` and a `!` backtracks for hours in Python's re, holding the
GIL: it froze the CLI's search, the MCP server (every later call too) and the dashboard's `&`
filter. Each test drives a real process (the CLI, the MCP server over stdio, the dashboard in
tmux) with a timeout around it, so a regression fails instead of hanging the suite.
"""

from __future__ import annotations

import json
import os
import select
import signal
import subprocess
import sys
import time

import psutil
import pytest
import sshd
from conftest import pid_alive, wait_until
from tmux import dashboard_command

from hermes_procs.core import ProcessRegistry
from hermes_procs.core.agents.tool import handle_process
from hermes_procs.core.registry.userregex import PatternTimeout, compile_user

pytestmark = pytest.mark.timeout(120)

HOSTILE_LINE = "a" * 41 + "!"
RE2_HOSTILE = r"(a+)+$"  # exponential in Python's re, linear in RE2
WORKER_HOSTILE = r"(?=a)(a+)+$"  # the same with a look-ahead, which RE2 lacks: it runs in the worker
FAST = {"HERMES_PROCS_REGEX_TIMEOUT": "1"}
NO_RE2 = {**FAST, "HERMES_PROCS_REGEX_ENGINE": "re"}


def hostile_job(registry: ProcessRegistry) -> str:
    sid = registry.spawn(f"printf 'ok\\n{HOSTILE_LINE}\\nend\\n'")["session_id"]
    assert registry.wait(sid, timeout=20)["status"] == "exited"
    return sid


def cli(home, *args: str, env: dict[str, str] | None = None,
        timeout: float = 30) -> tuple[subprocess.CompletedProcess, float]:
    started = time.monotonic()
    res = subprocess.run([sys.executable, "-m", "hermes_procs", "--home", str(home), *args], capture_output=True,
                         text=True, timeout=timeout, env={**os.environ, **(env or {})})
    return res, time.monotonic() - started


def regex_worker_of(pid: int) -> psutil.Process:
    """The regex worker process (core/registry/regex_worker.py) that `pid` started, once it runs."""
    return wait_until(lambda: next((p for p in psutil.Process(pid).children()
                                    if "regex_worker.py" in " ".join(p.cmdline())), None), 20)


# ---- the engines ------------------------------------------------------------------------------

SAMPLE = "ok 1\nfoo bar\nFoo\n\nbar baz\n" + HOSTILE_LINE + "\nnaïve café\nlast"
PATTERNS = [r"foo", r"^bar", r"o$", r"foo\nbar", r"[^x]*baz", r"x*", r"(?i)FOO", r"caf.", r"^$", r"a{3}!",
            r"(?s)bar.*", r"b(a|o)r", r"\d+", r"ï"]


@pytest.mark.parametrize("pattern", PATTERNS)
def test_re2_and_the_worker_find_the_same_lines(pattern, monkeypatch):
    with compile_user(pattern) as fast:
        assert fast.engine == "re2"
        want = fast.lines(SAMPLE), fast.first(SAMPLE), fast.spans(SAMPLE.split("\n")[1])
    monkeypatch.setenv("HERMES_PROCS_REGEX_ENGINE", "re")
    with compile_user(pattern) as slow:
        assert slow.engine == "re"
        assert (slow.lines(SAMPLE), slow.first(SAMPLE), slow.spans(SAMPLE.split("\n")[1])) == want


def test_syntax_re2_lacks_or_reads_differently_goes_to_the_worker():
    for pattern in (r"(\w)\1", r"(?<=a)b", r"foo(?!bar)", r"[[:alpha:]]", r"a{,2}", r"\Aok", r"(?x) a b"):
        with compile_user(pattern) as regex:
            assert regex.engine == "re", pattern
    with pytest.raises(ValueError, match="not a valid regular expression"):
        compile_user("(unclosed")
    with pytest.raises(ValueError, match="at most 4096"):
        compile_user("a" * 5000)


def test_a_pattern_too_big_for_a_bounded_re2_goes_to_the_worker():
    # RE2's time grows with its program when its DFA gives up: `a[a-z]{400}[0-9]|b...` ran
    # 14 s per MB of random letters in RE2, unstopped; in the worker every call has a deadline
    big = "(?:" + "|".join(f"{c}[a-z]{{400}}[0-9]" for c in "abcdefghijklmnopqrstuvwxyz") + ")"
    with compile_user(big) as regex:
        assert regex.engine == "re"
        assert regex.first("x\n" + "a" * 401 + "0\n") == "a" * 401 + "0"
    words = "|".join(f"word{i}" for i in range(150))  # a long list of words stays in RE2
    with compile_user(f"(?:{words})") as regex:
        assert regex.engine == "re2" and regex.first("x\nsay word149\n") is not None


def test_a_worker_past_its_deadline_is_killed_and_says_so(monkeypatch):
    monkeypatch.setenv("HERMES_PROCS_REGEX_TIMEOUT", "1")
    regex = compile_user(WORKER_HOSTILE)
    started = time.monotonic()
    with pytest.raises(PatternTimeout, match="took too long"):
        regex.lines(HOSTILE_LINE + "\n")
    assert time.monotonic() - started < 10
    worker = regex._worker.proc
    assert worker.poll() is not None  # killed and reaped
    with pytest.raises(PatternTimeout):  # and the regex stays failed: no second worker spins
        regex.lines("a\n")
    regex.close()


def test_a_worker_outlives_its_caller_by_its_deadline_at_most(tmp_path):
    """The caller killed (-9) in the middle of a match: the worker's alarm ends it."""
    script = ("import os, sys; os.environ['HERMES_PROCS_REGEX_TIMEOUT'] = '2'\n"
              "from hermes_procs.core.registry.userregex import compile_user\n"
              f"r = compile_user({WORKER_HOSTILE!r}); print('go', flush=True); r.lines({HOSTILE_LINE!r})\n")
    caller = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, text=True)
    try:
        assert caller.stdout.readline().strip() == "go"
        worker = regex_worker_of(caller.pid)
        caller.kill()
        caller.wait(10)
        started = time.monotonic()
        wait_until(lambda: not pid_alive(worker.pid), timeout=15)
        assert time.monotonic() - started < 6  # deadline 2 s, alarm 3 s
    finally:
        caller.kill()
        caller.wait(10)


# ---- the CLI -----------------------------------------------------------------------------------

def test_cli_search_with_a_backtracking_pattern_answers(registry, home):
    sid = hostile_job(registry)
    res, took = cli(home, "search", sid, RE2_HOSTILE, "-C", "0")
    assert res.returncode == 0 and res.stdout.strip() == "" and took < 20, res
    for env, pattern in ((NO_RE2, RE2_HOSTILE), (FAST, WORKER_HOSTILE)):
        res, took = cli(home, "search", sid, pattern, env=env)
        assert res.returncode == 1 and took < 20, res
        assert res.stderr.count("\n") == 1 and "took too long" in res.stderr, res.stderr
    # a pattern the worker runs fine still finds its lines
    res, _ = cli(home, "search", sid, r"(?<=o)k", "-C", "0", env=FAST)
    assert res.returncode == 0 and res.stdout.strip() == "1:ok", res  # grep -n numbers from 1


def test_a_slow_pattern_over_a_long_log_has_one_deadline_for_the_whole_search(registry, home):
    """Each 1 MiB block had 3 s: `(.+)\\1x` (a back-reference: the worker) at ~1.4 s a MiB kept
    a CLI busy for 28 s on 20 MB, a thousand blocks of a 1 GB log for tens of minutes."""
    sid = registry.spawn(f"{sys.executable} -c \"import sys; sys.stdout.write(('x' + 'a' * 120 + '\\\\n') * 35000)\"")[
        "session_id"]
    assert registry.wait(sid, timeout=30)["status"] == "exited"
    res, took = cli(home, "search", sid, r"(.+)\1x", env={"HERMES_PROCS_REGEX_TIMEOUT": "60",
                                                         "HERMES_PROCS_SEARCH_TIMEOUT": "1"})
    assert res.returncode == 1 and "took too long (over 1 s for the whole search" in res.stderr, res.stderr
    assert took < 20, took


def test_cli_wait_until_output_with_a_backtracking_pattern(registry, home):
    sid = registry.spawn(f"while true; do printf '{HOSTILE_LINE}\\n'; sleep 0.3; done")["session_id"]
    res, took = cli(home, "wait", sid, "--until", f"output:{WORKER_HOSTILE}", "--timeout", "30", env=FAST, timeout=60)
    assert res.returncode == 1 and "took too long" in res.stderr and took < 30, res
    res, took = cli(home, "wait", sid, "--until", f"output:{RE2_HOSTILE}", "--timeout", "3", "--json")
    assert json.loads(res.stdout)["reason"] == "timeout" and took < 20, res
    res, took = cli(home, "wait", sid, "--until", "output:a{41}!$", "--timeout", "20", "--json", env=FAST)
    assert json.loads(res.stdout)["matched"] == HOSTILE_LINE, res


# ---- the MCP server ----------------------------------------------------------------------------

class RawMcp:
    """The MCP server over stdio with plain JSON-RPC lines: every read has a deadline."""

    def __init__(self, home, env: dict[str, str]) -> None:
        self.proc = subprocess.Popen([sys.executable, "-m", "hermes_procs", "mcp", "--home", str(home)],
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                                     env={**os.environ, **env})
        self.next_id = 0
        self.buffer = b""
        self.request("initialize", {"protocolVersion": "2025-06-18", "capabilities": {},
                                    "clientInfo": {"name": "raw", "version": "1"}})
        self.send({"jsonrpc": "2.0", "method": "notifications/initialized"})

    def send(self, message: dict) -> None:
        self.proc.stdin.write(json.dumps(message).encode() + b"\n")
        self.proc.stdin.flush()

    def request(self, method: str, params: dict, timeout: float = 20) -> dict:
        self.next_id += 1
        self.send({"jsonrpc": "2.0", "id": self.next_id, "method": method, "params": params})
        deadline = time.monotonic() + timeout
        while True:
            while b"\n" in self.buffer:
                line, _, self.buffer = self.buffer.partition(b"\n")
                reply = json.loads(line)
                if reply.get("id") == self.next_id:
                    return reply
            left = deadline - time.monotonic()
            assert left > 0 and select.select([self.proc.stdout], [], [], left)[0], f"{method} unanswered"
            self.buffer += os.read(self.proc.stdout.fileno(), 1 << 20)

    def tool(self, name: str, **args) -> tuple[bool, dict]:
        result = self.request("tools/call", {"name": name, "arguments": args})["result"]
        return bool(result.get("isError")), result.get("structuredContent") or {}


def test_mcp_server_answers_and_stays_responsive(registry, home):
    sid = hostile_job(registry)
    running = registry.spawn("sleep 60")["session_id"]
    mcp = RawMcp(home, FAST)
    try:
        is_error, found = mcp.tool("process_search", session_id=sid, pattern=RE2_HOSTILE)
        assert not is_error and found["total"] == 0
        is_error, found = mcp.tool("process_search", session_id=sid, pattern=WORKER_HOSTILE)
        assert is_error and "took too long" in found["error"]
        registry.write(running, "x")  # nothing to match; the wait ends by its timeout
        is_error, waited = mcp.tool("process_wait", session_id=running, until=f"output:{RE2_HOSTILE}", timeout=1)
        assert not is_error and waited["reason"] == "timeout"
        is_error, listed = mcp.tool("process_list")
        assert not is_error and {row["session_id"] for row in listed["processes"]} >= {sid, running}
        mcp.proc.stdin.close()  # the client goes: so does the server
        mcp.proc.wait(timeout=15)
    finally:
        mcp.proc.kill()
        mcp.proc.wait(10)


def test_mcp_answers_a_request_that_holds_a_lone_surrogate(registry, home):
    # "\ud800" alone is JSON but no character: the SDK's parser dropped the whole request and the
    # client waited for ever (a model that cuts an emoji's escape in two writes that)
    sid = registry.spawn("echo hi")["session_id"]
    registry.wait(sid, timeout=10)
    mcp = RawMcp(home, FAST)
    try:
        is_error, found = mcp.tool("process_search", session_id=sid, pattern="h\ud800|hi")
        assert not is_error and found["pattern"] == "h\ufffd|hi" and found["total"] == 1, found
        started = mcp.request("tools/call", {"name": "process_start",
                                             "arguments": {"command": "echo \U0001f600 \udc00", "name": "x\ud83d"}})
        is_error, started = started["result"].get("isError"), started["result"]["structuredContent"]
        assert not is_error and started["name"] == "x\ufffd" and started["command"] == "echo \U0001f600 \ufffd"
        is_error, listed = mcp.tool("process_list")  # and the server answers on
        assert not is_error and len(listed["processes"]) == 2
        # nested too deeply for the json module, with a surrogate escape: the mender's recursion
        # error closed stdin and the server went
        mcp.proc.stdin.write(b'{"x": "\\ud800", "y": ' + b"[" * 5000 + b"]" * 5000 + b"}\n")
        mcp.proc.stdin.flush()
        assert not mcp.tool("process_list")[0]
    finally:
        mcp.proc.kill()
        mcp.proc.wait(10)


def test_mcp_answers_what_it_was_asked_before_stdin_closed(home):
    # `printf REQUESTS | hermes-procs mcp`: the SDK cancelled the requests still running when
    # stdin ended and exited without their answers (a newcomer saw only initialize's)
    lines = [{"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
                 "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "raw", "version": "1"}}},
             {"jsonrpc": "2.0", "method": "notifications/initialized"},
             {"jsonrpc": "2.0", "id": 2, "method": "tools/call",
              "params": {"name": "process_exec", "arguments": {"command": "sleep 1; echo done; exit 3"}}},
             {"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": {"name": "process_list", "arguments": {}}}]
    done = subprocess.run([sys.executable, "-m", "hermes_procs", "mcp", "--home", str(home)],
                          input=b"".join(json.dumps(line).encode() + b"\n" for line in lines),
                          capture_output=True, timeout=60)
    assert done.returncode == 0, done.stderr
    answers = {reply["id"]: reply for reply in map(json.loads, done.stdout.splitlines())}
    assert sorted(answers) == [1, 2, 3], answers
    result = answers[2]["result"]["structuredContent"]
    assert result["exit_code"] == 3 and "done" in result["output"], result


def test_mcp_does_not_wait_for_requests_nobody_will_answer(registry, home):
    # after stdin closed the server waited 60 s for answers to a line the SDK drops (no
    # "jsonrpc": "2.0", params that are a list) and to a request the client had cancelled
    running = registry.spawn("sleep 60")["session_id"]
    lines = [{"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
                 "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "raw", "version": "1"}}},
             {"jsonrpc": "2.0", "method": "notifications/initialized"},
             {"id": 2, "method": "tools/list"},
             {"jsonrpc": "2.0", "id": 3, "method": "tools/list", "params": []},
             {"jsonrpc": "2.0", "id": 4, "method": "tools/call",
              "params": {"name": "process_wait", "arguments": {"session_id": running, "timeout": 50}}},
             {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 4}},
             {"jsonrpc": "2.0", "id": 5, "method": "ping"}]
    started = time.monotonic()
    done = subprocess.run([sys.executable, "-m", "hermes_procs", "mcp", "--home", str(home)],
                          input=b"".join(json.dumps(line).encode() + b"\n" for line in lines),
                          capture_output=True, timeout=45)
    assert done.returncode == 0, done.stderr
    assert sorted(reply["id"] for reply in map(json.loads, done.stdout.splitlines())) == [1, 5]
    assert time.monotonic() - started < 40  # not the 50 s wait, nor the 60 s drain
    assert registry.poll(running)["status"] == "running"
    registry.kill(running)


# ---- a remote host (stdlib only: no RE2 there) --------------------------------------------------

@pytest.mark.skipif(sshd.available() is not None, reason=str(sshd.available()))
def test_remote_search_runs_in_the_hosts_worker_with_a_deadline(remote):
    sid = hostile_job(remote)
    found = remote.search(sid, r"(?<=o)k", context=0)
    assert [m["line"] for m in found["matches"]] == ["ok"]
    started = time.monotonic()
    refused = remote.search(sid, RE2_HOSTILE)  # no RE2 on the host: Python's re, with its deadline
    assert refused["status"] == "error" and "took too long" in refused["error"], refused
    assert time.monotonic() - started < 30
    assert remote.list()[0]["session_id"] == sid  # the host's server still answers


# ---- the dashboard -----------------------------------------------------------------------------

def _dashboard_pid(tmux) -> int:
    shell = int(tmux("display", "-p", "-t", "t", "#{pane_pid}").stdout)
    return wait_until(lambda: next((p.pid for p in psutil.Process(shell).children(recursive=True)
                                    if "hermes_procs" in " ".join(p.cmdline())), None), 20)


def _filter(tmux, pattern: str) -> None:
    tmux.keys("&")
    tmux.wait_screen(lambda t: "filter" in t and "Enter filters" in t, what="the filter bar")
    tmux.keys("-l", pattern)
    tmux.keys("Enter")


def test_dashboard_filter_with_a_backtracking_pattern_stops_and_quits(registry, home, tmux):
    sid = hostile_job(registry)
    tmux.start(dashboard_command(home, **NO_RE2), width=140, height=40)
    tmux.wait(HOSTILE_LINE)
    _filter(tmux, RE2_HOSTILE)
    tmux.wait_screen(lambda t: "took too long" in t, what="the filter's error", timeout=30)
    pid = _dashboard_pid(tmux)
    _quit(tmux)
    wait_until(lambda: not pid_alive(pid), timeout=15)
    assert registry.poll(sid)["status"] == "exited"


def _quit(tmux) -> None:
    """`q` once the table has the keys again (the footer offers Quit). Not Escape first: a
    terminal reader that takes ESC and `q` in one read (a loaded machine) sees Alt+Q, and a
    soak run's dashboard did not quit."""
    tmux.wait_screen(lambda t: "q Quit" in t, what="the table's keys")
    tmux.keys("q")


@pytest.mark.parametrize("stop", ["q", "SIGTERM"])
def test_dashboard_quits_and_takes_sigterm_while_a_slow_filter_runs(registry, home, tmux, stop):
    """A deadline of a minute: the scan is still running when the dashboard is told to go."""
    hostile_job(registry)
    tmux.start(dashboard_command(home, HERMES_PROCS_REGEX_ENGINE="re", HERMES_PROCS_REGEX_TIMEOUT="60"),
               width=140, height=40)
    tmux.wait(HOSTILE_LINE)
    pid = _dashboard_pid(tmux)
    _filter(tmux, RE2_HOSTILE)
    worker = regex_worker_of(pid)
    time.sleep(0.5)  # the worker has the hostile line: the scan thread waits for its answer
    if stop == "q":
        _quit(tmux)
    else:
        os.kill(pid, signal.SIGTERM)
    wait_until(lambda: not pid_alive(pid), timeout=15)
    wait_until(lambda: not pid_alive(worker.pid), timeout=15)


# ---- one answer is bounded (item 5) ------------------------------------------------------------

def test_one_search_answer_is_capped(registry, home):
    """6 MB of lines holding `a`, context 100, limit 10000: 209 MB and GBs of RSS before."""
    sid = registry.spawn("python3 -c \"import sys; sys.stdout.write(('abc ' * 15 + '\\n') * 100000)\"")["session_id"]
    assert registry.wait(sid, timeout=60)["status"] == "exited"
    # VmHWM, not ru_maxrss: a child started by vfork+exec reports its parent's peak as its own
    script = ("import json, re, sys\nfrom hermes_procs.core import ProcessRegistry\n"
              f"r = ProcessRegistry(home={str(home)!r}).search({sid!r}, 'a', context=100, limit=10000)\n"
              "print(len(json.dumps(r)), r['total'], len(r['matches']), r.get('truncated'), "
              "int(re.search(r'VmHWM:\\s+(\\d+)', open('/proc/self/status').read()).group(1)) // 1024)\n"
              "print(r.get('note'))\n")
    res = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)
    size, total, shown, truncated, rss_mb = res.stdout.split("\n")[0].split()
    note = res.stdout.split("\n")[1]
    assert int(total) == 100000 and truncated == "True", res.stdout
    assert int(size) < 3 << 20 and 0 < int(shown) < 10000
    assert int(rss_mb) < 400, rss_mb
    assert "capped" in note and "limit" in note and "read_log(offset=line_no)" in note
    # the CLI says so in words, and the agent tool carries the note
    cli_res, _ = cli(home, "search", sid, "a", "-C", "100", "--limit", "10000", timeout=120)
    assert cli_res.returncode == 0 and cli_res.stdout.rstrip().endswith(f"({note})")
    answer = handle_process({"action": "search", "session_id": sid, "pattern": "a", "context": 100,
                             "limit": 10000}, registry=registry)
    assert len(answer) < 3 << 20 and json.loads(answer)["truncated"] is True


def test_watch_patterns_are_substrings_of_bounded_number_and_length(registry):
    assert "at most 64" in registry.spawn("true", watch_patterns=["x"] * 65)["error"]
    assert "at most 64" in registry.spawn("true", watch_patterns=["x" * 1001])["error"]
    sid = registry.spawn(f"sleep 0.5; echo '{HOSTILE_LINE}'; sleep 5", watch_patterns=["(a+)+$", "a!"])["session_id"]
    events = wait_until(lambda: [e for e in registry.drain_events("w") if e.get("type") == "watch_match"], 10)
    assert [e["pattern"] for e in events] == ["a!"]  # a substring: "(a+)+$" is not a regex here
    registry.kill(sid, grace=0.2)


def test_highlight_rules_of_the_config_run_in_re2_only(tmp_path):
    """Highlights run on every line drawn, in the dashboard's screen thread."""
    from hermes_procs.tui.config import DEFAULT_HIGHLIGHTS, load_config

    path = tmp_path / "config.toml"
    path.write_text('[[highlight]]\npattern = "(a+)+$"\nstyle = "bold"\n'
                    '[[highlight]]\npattern = "(\\\\w)\\\\1"\nstyle = "bold"\n'
                    '[[highlight]]\npattern = "^.{300,}$"\nstyle = "bold"\n')
    cfg = load_config(path)
    assert len(cfg.highlights) == len(DEFAULT_HIGHLIGHTS) + 1
    assert any("highlight #2 skipped" in p and "back-references" in p for p in cfg.problems), cfg.problems
    assert any("highlight #3 skipped" in p and "too big for RE2" in p for p in cfg.problems), cfg.problems
    started = time.monotonic()
    assert cfg.highlights[-1].spans(HOSTILE_LINE) == [] and cfg.highlights[-1].spans("aaa") == [(0, 3)]
    assert time.monotonic() - started < 1
