"""The `hermes-procs` command line, run as a real subprocess (`python -m hermes_procs`)
against a temporary state home, with real jobs."""

from __future__ import annotations

import itertools
import json
import os
import re
import shlex
import socket
import subprocess
import sys
import time

import pytest

ID_RE = re.compile(r"^proc_[0-9a-f]{12}$")


@pytest.fixture
def cli(home):
    """Run the CLI; returns CompletedProcess (text)."""
    started: list[str] = []

    def run(*args, input=None, timeout=30, env=None, check=None):
        full_env = dict(os.environ, HERMES_PROCS_HOME=str(home), COLUMNS="200")
        if env:
            full_env.update(env)
        proc = subprocess.run(
            [sys.executable, "-m", "hermes_procs", *args],
            input=input,
            capture_output=True,
            text=True,
            timeout=timeout,
            env=full_env,
        )
        if args and args[0] == "run" and proc.returncode == 0 and "--json" not in args:
            started.append(proc.stdout.strip())
        if check is not None:
            assert proc.returncode == check, (proc.returncode, proc.stdout, proc.stderr)
        return proc

    yield run
    from hermes_procs.core import ProcessRegistry

    reg = ProcessRegistry(home=home)
    for job in reg.list():
        if isinstance(job, dict) and (job.get("status") == "running" or job.get("leftover_pids")):
            reg.kill(job["session_id"], grace=0.2)


def one_error_line(proc, *needles):
    assert proc.returncode == 1, (proc.returncode, proc.stdout, proc.stderr)
    lines = proc.stderr.splitlines()
    assert len(lines) == 1, proc.stderr
    assert lines[0].startswith("hermes-procs: error: "), lines
    assert "Traceback" not in proc.stderr
    for n in needles:
        assert n in lines[0], lines[0]
    return lines[0]


def start(cli, *args) -> str:
    proc = cli("run", *args, check=0)
    sid = proc.stdout.strip()
    assert ID_RE.match(sid), proc.stdout
    return sid


def wait_for(pred, timeout=5.0):
    deadline = time.monotonic() + timeout
    while True:
        value = pred()
        if value:
            return value
        assert time.monotonic() < deadline, "condition not met"
        time.sleep(0.05)


def test_run_ls_poll_wait_text_and_json(cli):
    sid = start(cli, "--name", "hello", "--", "echo", "hello world")
    done = json.loads(cli("wait", sid, "--json", check=0).stdout)
    assert done["status"] == "exited" and done["exit_code"] == 0
    assert "hello world" in done["output"]

    jobs = json.loads(cli("ls", "--json", check=0).stdout)
    assert isinstance(jobs, list) and jobs[0]["session_id"] == sid
    assert jobs[0]["command"] == "echo 'hello world'"  # several words: shlex.join

    table = cli("ls", check=0).stdout
    assert "ID" in table and "STATUS" in table and "COMMAND" in table
    assert cli("list", check=0).stdout == table  # the name pm2 users type
    row = next(line for line in table.splitlines() if sid in line)
    assert "exited 0" in row and "hello: echo 'hello world'" in row

    polled = json.loads(cli("poll", sid, "--json", check=0).stdout)
    assert polled["status"] == "exited" and polled["exit_code"] == 0
    assert polled["completion_reason"] == "exited"
    human = cli("poll", sid[5:11], check=0).stdout.splitlines()  # unique prefix
    assert human[0].startswith(f"{sid}  exited 0")
    assert "hello world" in human

    text = cli("wait", sid, check=0).stdout
    assert text.startswith(f"{sid}  exited 0")


def test_readme_flow_pty_python_repl(cli):
    sid = start(cli, "--pty", "--", "python3", "-i")
    wait_for(lambda: ">>>" in cli("log", sid).stdout)
    assert "submitted" in cli("submit", sid, "print(6*7)", check=0).stdout
    log = wait_for(lambda: (out := cli("log", sid).stdout) and "\n42" in out and out)
    assert "\x1b" not in log  # ANSI stripped
    killed = json.loads(cli("kill", sid, "--json", "--grace", "1", check=0).stdout)
    assert killed["status"] == "killed" and killed["completion_reason"] == "killed"
    again = cli("kill", sid, check=0).stdout
    assert "already exited" in again


def test_log_prints_every_line_asked_for_past_the_answer_cap(cli):
    # read_log answers at most 1 MiB of lines; `log` asks again for the rest, in order
    sid = start(cli, "--", sys.executable, "-c", "for i in range(3000): print('%05d' % i + ' ' + 'x' * 994)")
    cli("wait", sid, check=0)
    want = ["%05d " % i + "x" * 994 for i in range(3000)]
    assert cli("log", sid, "--limit", "5000").stdout.splitlines() == want
    assert cli("log", sid, "--limit", "2500").stdout.splitlines() == want[500:]
    assert cli("log", sid, "--offset", "100", "--limit", "2000").stdout.splitlines() == want[100:2100]
    capped = json.loads(cli("log", sid, "--limit", "5000", "--json").stdout)  # --json: the API's one answer
    assert capped["capped"] and len(capped["output"]) <= 1 << 20 and "read them with offset=0" in capped["showing"]
    # empty lines at the edge of an answer are lines too (a review found one lost between pages)
    script = "for i in range(60): print(('%02d' % i) * 30000 if i % 3 else '')"
    gaps = start(cli, "--", sys.executable, "-c", script)
    cli("wait", gaps, check=0)
    want = [("%02d" % i) * 30000 if i % 3 else "" for i in range(60)]
    for args in (["--limit", "100"], ["--offset", "0", "--limit", "100"], ["--offset", "7", "--limit", "40"]):
        got = cli("log", gaps, *args).stdout.split("\n")
        assert got[-1] == "" and got[:-1] == (want if args[1] in ("100", "0") else want[7:47]), args


def test_log_paging_stops_with_a_warning_when_the_log_cap_drops_output_meanwhile(cli):
    # a job writing without pause under a 3 MiB log cap: between two pages of an answer its
    # oldest output is dropped and the line numbers move; `log` says so instead of printing
    # lines that do not follow on
    writer = "import itertools, sys\nfor i in itertools.count(): sys.stdout.write('%09d %s\\n' % (i, 'x' * 990))"
    sid = cli("run", "--", sys.executable, "-c", writer, env={"HERMES_PROCS_LOG_CAP": str(3 << 20)}).stdout.strip()
    wait_for(lambda: json.loads(cli("log", sid, "--limit", "1", "--json").stdout)["dropped_bytes"] > 0, timeout=30)
    for _ in range(20):
        done = cli("log", sid, "--offset", "0", "--limit", "100000")
        numbers = [int(line[:9]) for line in done.stdout.splitlines() if len(line) == 1000]  # not a line half written
        assert numbers == list(range(numbers[0], numbers[0] + len(numbers)))  # what is printed follows on
        if "dropped by the log cap meanwhile" in done.stderr:
            assert done.returncode == 0 and len(done.stderr.splitlines()) == 1, done.stderr
            return
    raise AssertionError("20 pagings of a log that drops output every few ms never saw a drop")


def test_log_says_on_a_terminal_that_a_tail_left_lines_out(cli, home):
    # `log ID > saved.txt` kept the last 200 of 500 lines without a word
    import pty as ptymod

    sid = start(cli, "--", "seq 1 500")
    cli("wait", sid, check=0)
    master, slave = ptymod.openpty()
    try:
        done = subprocess.run([sys.executable, "-m", "hermes_procs", "log", sid], stdout=subprocess.PIPE,
                              stderr=slave, env=dict(os.environ, HERMES_PROCS_HOME=str(home)), timeout=30)
        said = os.read(master, 4096).decode()
    finally:
        os.close(slave)
        os.close(master)
    assert done.stdout.decode().splitlines() == [str(n) for n in range(301, 501)]
    assert "warning: the last 200 of 500 lines (--limit N shows more, --offset 0 from the first)" in said
    assert cli("log", sid).stderr == ""  # stderr a pipe: nothing
    assert cli("log", sid, "--limit", "500").stdout.count("\n") == 500


def test_ls_and_poll_say_when_a_job_seems_to_wait_for_input(cli):
    # only `poll --json` said so (awaiting_input): the dashboard's `?` was missing from the CLI
    sid = start(cli, "--", 'read -p "Continue? [y/N] " answer')
    row = wait_for(lambda: next((line for line in cli("ls").stdout.splitlines() if "(input?)" in line), None))
    assert row.startswith(sid) and "running (input?)" in row
    assert cli("poll", sid).stdout.splitlines()[0].startswith(f"{sid}  running (waiting for input?)  pid ")
    cli("submit", sid, "y", check=0)
    cli("wait", sid, check=0)
    assert "input?" not in cli("ls").stdout


def test_a_stopped_job_says_stopped_and_how_to_resume_it(cli):
    # `signal ID STOP` left ls and poll saying `running`; only `tree` showed the T
    sid = start(cli, "--", "sleep 60")
    cli("signal", sid, "STOP", check=0)
    row = wait_for(lambda: next((line for line in cli("ls").stdout.splitlines()
                                 if line.startswith(sid) and " stopped " in line), None))
    assert "running" not in row
    poll = cli("poll", sid).stdout.splitlines()
    assert poll[0].startswith(f"{sid}  stopped  pid ")
    assert f"stopped: `hermes-procs signal {sid} CONT` resumes it" in poll
    result = json.loads(cli("poll", sid, "--json").stdout)
    assert result["status"] == "running" and result["stopped"] is True  # the API's status stays
    cli("signal", sid, "CONT", check=0)
    wait_for(lambda: json.loads(cli("poll", sid, "--json").stdout)["stopped"] is False)
    assert " running " in next(line for line in cli("ls").stdout.splitlines() if line.startswith(sid))


def test_a_job_a_signal_ended_says_which_signal(cli):
    # a command that died of a signal nobody sent through us showed `exited -11`
    sid = start(cli, "--", "sh -c 'kill -SEGV $$'")
    assert cli("wait", sid).stdout.splitlines()[0] == f"{sid}  ended by SIGSEGV"
    row = next(line for line in cli("ls").stdout.splitlines() if line.startswith(sid))
    assert "ended by SIGSEGV" in row and "-11" not in row
    assert cli("poll", sid).stdout.startswith(f"{sid}  ended by SIGSEGV  pid ")  # not SIGSEGV twice
    assert json.loads(cli("poll", sid, "--json").stdout)["exit_code"] == -11
    assert cli("wait", sid, "--exit-code").returncode == 128 + 11


def test_arguments_in_bytes_that_are_not_utf8(cli, home):
    # a shell's $'a\xffb': write and submit send those bytes; a pattern of them is one error line
    # (each was "error: UnicodeEncodeError: 'utf-8' codec can't encode character '\udcff' ...")
    sid = start(cli, "--pty", "--", "cat")
    odd = os.fsdecode(b"a\xffb")  # how Python hands the program such an argument
    assert cli("write", sid, odd, check=0).stdout == "wrote 3 bytes\n"
    from hermes_procs.core import ProcessRegistry

    wait_for(lambda: b"a\xffb" in ProcessRegistry(home=home).log_bytes(sid)["data"])
    one_error_line(cli("search", odd), "pattern 'a\\udcffb' holds bytes that are not UTF-8 text")
    one_error_line(cli("wait", sid, "--until", "output:" + odd, "--timeout", "1"), "not UTF-8 text")


def test_log_follow_reads_a_bounded_part_of_a_huge_line(cli):
    # the lines before the live output were read whole: a 20 MB line was printed whole (50 MB: 166 MB of memory)
    sid = start(cli, "--", sys.executable, "-c", "print('y' * 20_000_000); print('end')")
    cli("wait", sid, check=0)
    followed = cli("log", sid, "--follow").stdout
    assert followed.endswith("y\nend\n") and len(followed) <= (8 << 20) + 100, len(followed)


def test_poll_shows_a_command_of_several_lines_as_a_shell_echoes_it(cli):
    fake = "proc_cafecafecafe  running  pid 1"  # a second line made to pass for a line of the answer
    sid = start(cli, "--", f"true\n{fake}")
    cli("wait", sid, check=0)
    lines = cli("poll", sid).stdout.splitlines()
    assert lines[1:3] == ["$ true", f"> {fake}"], lines
    assert not any(line.startswith("proc_cafe") for line in lines), lines


def test_kill_takes_several_ids_and_names_each_one_it_could_not(cli):
    first, second = start(cli, "--", "sleep", "300"), start(cli, "--", "sleep", "300")
    both = cli("kill", first, second[:10], "--grace", "1")
    assert both.returncode == 0 and both.stdout == f"{first} killed (SIGTERM)\n{second} killed (SIGTERM)\n", both
    third = start(cli, "--", "sleep", "300")
    mixed = cli("kill", "beef", third, "--json", "--grace", "1")
    assert mixed.returncode == 1, mixed
    results = json.loads(mixed.stdout)
    assert [r["status"] for r in results] == ["not_found", "killed"] and results[1]["session_id"] == third
    one_error_line(mixed, "could not kill 1 of 2: No process with ID beef")
    two_bad = cli("kill", "beef", "cafe", third, "--grace", "1")
    assert two_bad.stdout.startswith(f"{third} had already exited"), two_bad
    one_error_line(two_bad, "could not kill 2 of 3: No process with ID beef; No process with ID cafe")
    one_error_line(cli("kill", third, "beef", "--grace", "-1"), "grace must be a finite number of seconds")
    assert json.loads(cli("poll", third, "--json").stdout)["completion_reason"] == "killed"


def test_write_submit_close_on_a_pipe_job(cli):
    sid = start(cli, "--", "cat")
    assert json.loads(cli("write", sid, "-E", r"abc\n", "--json", check=0).stdout)["bytes_written"] == 4
    cli("submit", sid, "xyz", check=0)
    wait_for(lambda: "xyz" in cli("log", sid).stdout)
    assert cli("close", sid, check=0).stdout == f"closed the stdin of {sid}\n"  # as write says what it did
    done = json.loads(cli("wait", sid, "--timeout", "5", "--json", check=0).stdout)
    assert done["status"] == "exited" and done["exit_code"] == 0
    assert cli("log", sid, check=0).stdout == "abc\nxyz\n"
    one_error_line(cli("write", sid, "more"), sid, "exited")
    one_error_line(cli("submit", sid), sid, "exited")


def test_one_word_command_is_used_as_is(cli):
    sid = start(cli, "echo a && echo b | tr b B")
    cli("wait", sid, check=0)
    assert cli("log", sid, check=0).stdout == "a\nB\n"


def test_dash_and_dashboard_are_the_dashboard_too(cli):
    # `hermes-procs dash` was "No such command 'dash'."
    tui = cli("tui")
    assert tui.returncode == 1 and "the dashboard needs a terminal" in tui.stderr  # no terminal here
    for name in ("dash", "dashboard"):
        got = cli(name)
        assert (got.returncode, got.stderr) == (tui.returncode, tui.stderr), name
    assert "│ dash" not in cli("--help").stdout  # hidden: `tui` is the one listed


def test_log_takes_tails_n_and_lines_for_limit(cli):
    sid = start(cli, "--", "seq 1 10")
    cli("wait", sid, check=0)
    for flag in ("-n", "--lines", "--limit"):
        assert cli("log", sid, flag, "2", check=0).stdout == "9\n10\n", flag
    assert cli("log", sid, "--lines=3", check=0).stdout == "8\n9\n10\n"


def test_log_offset_limit(cli):
    sid = start(cli, "--", "seq", "1", "10")
    cli("wait", sid, check=0)
    assert cli("log", sid, "--offset", "2", "--limit", "3", check=0).stdout == "3\n4\n5\n"
    assert cli("log", sid, "--limit", "2", check=0).stdout == "9\n10\n"
    data = json.loads(cli("log", sid, "--offset", "0", "--limit", "4", "--json", check=0).stdout)
    assert data["output"] == "1\n2\n3\n4" and data["total_lines"] == 10


def test_log_follow_streams_until_exit(cli, home):
    go = home.parent / "go"  # the job holds after line 1 until the test has seen it streamed
    sid = start(cli, "--", f"echo line 1; while [ ! -e {go} ]; do sleep 0.05; done; "
                "for i in 2 3 4; do echo line $i; sleep 0.1; done; printf 'x 10%%\\rx 100%%\\n'")
    proc = subprocess.Popen(
        [sys.executable, "-m", "hermes_procs", "log", sid, "--follow"],
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
        env=dict(os.environ, HERMES_PROCS_HOME=str(home)),
    )
    first = proc.stdout.readline()  # arrives while the job still waits: streamed, not at the end
    assert first.startswith("line ")
    go.touch()
    rest = proc.stdout.read()  # (not communicate(): it would skip what readline buffered)
    assert proc.wait(timeout=10) == 0, rest
    lines = (first + rest).splitlines()
    assert lines == ["line 1", "line 2", "line 3", "line 4", "x 100%"]
    # a finished job: --follow prints the tail and returns at once
    assert cli("log", sid, "-f", "--limit", "1", check=0).stdout == "x 100%\n"


def test_wait_timeout_and_exit_code(cli):
    sid = start(cli, "--", "sleep 30")
    one_error_line(cli("wait", sid, "--timeout", "0.3"), "timed out", sid)  # the job sleeps 30 s
    res = cli("wait", sid, "--timeout", "0.2", "--json")
    assert res.returncode == 1 and json.loads(res.stdout)["status"] == "timeout"
    cli("kill", sid, "--grace", "0.5", check=0)
    sid2 = start(cli, "--", "exit 3")
    assert cli("wait", sid2).returncode == 0
    assert cli("wait", sid2, "--exit-code").returncode == 3
    one_error_line(cli("wait", sid2, "--timeout", "0"))
    for endless in ("inf", "1e400", "nan"):  # as the API words it, whether or not the job has ended
        one_error_line(cli("wait", sid2, "--timeout", endless), "timeout must be a finite number of seconds")


def test_signal_says_what_it_sent(cli):
    sid = start(cli, "--", "sleep 30; sleep 30")
    pid = json.loads(cli("tree", sid, "--json", check=0).stdout)["processes"][1]["pid"]  # the first sleep
    assert cli("signal", sid, "STOP", "--pid", str(pid), check=0).stdout == f"sent STOP to process {pid} of {sid}\n"
    assert cli("signal", sid[5:11], "2", check=0).stdout == f"sent INT to {sid}\n"


def test_screen_of_a_pipe_job_speaks_cli(cli):
    sid = start(cli, "--", "sleep 30")
    line = one_error_line(cli("screen", sid), sid, "run --pty", f"hermes-procs log {sid}")
    assert "pty=True" not in line and "read_log" not in line


def test_help_lists_the_everyday_commands_first_without_type_placeholders(cli, capsys, monkeypatch):
    out = cli("--help", check=0).stdout
    listed = re.findall(r"^│ ([a-z]+) ", out.split("Commands")[1], re.M)
    assert listed[:6] == ["run", "exec", "ls", "poll", "log", "wait"], listed
    from cli.main import _run  # every command's help in process: 40 interpreters took ~20 s

    monkeypatch.setenv("COLUMNS", "200")
    usages: dict[str, str] = {}
    for command in ["", *listed]:
        capsys.readouterr()
        assert _run([*([command] if command else []), "--help"]) == 0, command
        text = capsys.readouterr().out
        assert "Usage" in text, (command, text)
        assert "<bool>" not in text and "<list" not in text and "<int>" not in text, (command, text)
        usage = next(line for line in text.splitlines() if "Usage:" in line)
        # a paragraph's lines break where the screen is full, not where the source did (typer kept
        # those: "use `--`" then a break mid-sentence)
        prose = [line.strip() for line in text.split("Usage:")[1].split("╭")[0].splitlines()[1:]]
        width = max(map(len, prose))
        for here, after in itertools.pairwise(prose):
            assert not (here and after) or len(here) + 1 + len(after.split()[0]) > width, (command, here, after)
        assert "{" not in usage and "[[" not in usage, (command, usage)  # typer's `{ID} [[DATA]]`
        usages[command] = " ".join(usage.split()[2:])
    assert usages["submit"] == "submit [OPTIONS] ID [DATA]" and usages["kill"] == "kill [OPTIONS] ID..."
    assert usages["search"] == "search [OPTIONS] [ID] PATTERN"


def test_help_into_a_pipe_that_closes_early_exits_0(home):
    """`hermes-procs --help | head -3`: the reader has what it wanted; no error, status 0."""
    proc = subprocess.run(f"{shlex.quote(sys.executable)} -m hermes_procs --help | head -3; "
                          "echo \"status=${PIPESTATUS[0]}\"", shell=True, executable="/bin/bash",
                          capture_output=True, text=True, timeout=30, env=dict(os.environ, COLUMNS="80"))
    assert proc.stdout.splitlines()[-1] == "status=0" and proc.stderr == "", proc


def test_signal_and_max_runtime(cli):
    sid = start(cli, "--", "sleep 30")
    assert json.loads(cli("signal", sid, "TERM", "--json", check=0).stdout)["status"] == "ok"
    done = json.loads(cli("wait", sid, "--timeout", "5", "--json", check=0).stdout)
    assert done["exit_code"] == -15
    one_error_line(cli("signal", sid, "NOPE"), "unknown signal")
    sid2 = start(cli, "--max-runtime", "0.5", "--", "sleep 30")
    done = json.loads(cli("wait", sid2, "--timeout", "10", "--json", check=0).stdout)
    assert done["completion_reason"] == "timed_out"


def test_errors_are_one_line_exit_1(cli):
    cat = start(cli, "--", "cat")  # the home exists: an id is looked up in it
    one_error_line(cli("poll", "proc_000000000000"), "No process with ID")
    one_error_line(cli("log", "../x"))
    one_error_line(cli("kill", "/etc/passwd"))
    one_error_line(cli("write", "proc_x", "data"))
    one_error_line(cli("poll"), "Missing argument")
    one_error_line(cli("frobnicate"), "frobnicate")
    one_error_line(cli("log", "abcd", "--limit", "many"), "--limit")
    one_error_line(cli("log", "proc_000000000000", "--follow"), "No process with ID")
    one_error_line(cli("log", "../x", "-f"))
    # --raw is a way of following: alone it would print stripped text while promising bytes
    one_error_line(cli("log", "abcd", "--raw"), "--raw", "--follow")
    one_error_line(cli("run"), "needs a command")
    one_error_line(cli("run", "--cwd", "/nonexistent/dir", "--", "true"))
    # the error names the flag that was typed, not the API's keyword (max_runtime, quiet_after)
    for flag, value in (("--max-runtime", "-1"), ("--quiet-after", "0"), ("--watch", ""), ("--port", "0"),
                        ("--lease", "999999999"), ("--reuse", None)):
        value = () if value is None else (value,)
        assert one_error_line(cli("run", flag, *value, "--", "true")).startswith(f"hermes-procs: error: {flag}")
    assert one_error_line(cli("exec", "--yield-ms", "-1", "--", "true")) == \
        "hermes-procs: error: --yield-ms must be a number of milliseconds, 0 or more, not -1"  # as typed, not -1.0
    assert one_error_line(cli("run", "--max-runtime", "-2.5", "--", "true")).endswith(", not -2.5")
    # wait speaks of --until as typed, not of the API's until='...'
    assert one_error_line(cli("wait", cat, "--until", "port")).endswith("without one: use --until port:N")
    assert one_error_line(cli("write", cat, "x", "--yield-ms", "-1")).startswith("hermes-procs: error: --yield-ms ")
    one_error_line(cli("ls", "--home", "/dev/null/x"), "state home")
    # the same for every command's numbers (limit, offset, keep_days, grace, ... were the API's words)
    for args, start_of in ((("log", cat, "--limit", "0"), "--limit must be a whole number >= 1"),
                           (("log", cat, "--offset", "-1"), "--offset must be"),
                           (("search", cat, "x", "--limit", "0"), "--limit must be"),
                           (("search", cat, "x", "--context", "-1"), "--context must be"),
                           (("kill", cat, "--grace", "-1"), "--grace must be"),
                           (("prune", "--keep-days", "-1"), "--keep-days must be"),
                           (("web", "--port", "99999"), "--port must be a whole number from 0 to 65535, not 99999"),
                           (("web", "--max-sessions", "0"), "--max-sessions must be a whole number from 1 to 64")):
        assert one_error_line(cli(*args)).startswith(f"hermes-procs: error: {start_of}"), args
    # a year at most, said as such (it was `3.16224e+07 seconds`, and wait had no bound at all)
    for args in (("kill", cat, "--grace", "1e9"), ("wait", cat, "--timeout", "1e12")):
        one_error_line(cli(*args), "must be at most a year (31622400 seconds), not 1e+")
    # an empty --home (an unset variable in a script) is not the default home
    for args in (("--home", "", "ls"), ("ls", "--home", ""), ("run", "--home", "", "--", "true")):
        one_error_line(cli(*args), "--home is empty")
    one_error_line(cli("run", "--cwd", "/etc/passwd", "--", "true"), "is not a directory: /etc/passwd")
    one_error_line(cli("up", "--timeout", "5"), "--timeout works with --wait")
    one_error_line(cli("up", "--name", ""), "--name is empty")
    # nor is an empty filter "jobs without one" (it listed every job of a home with no tasks)
    for args in (("ls", "--task", ""), ("ls", "--session-key", ""), ("ls", "--stack="), ("search", "--task", "", "x")):
        one_error_line(cli(*args), f"{args[1].rstrip('=')} is empty: give a ")
    assert one_error_line(cli("log", "")).startswith("hermes-procs: error: ID must be a non-empty string")
    assert one_error_line(cli("log", cat, "--since", "bogus")).startswith("hermes-procs: error: --since must be")
    # the first instant there is, east of UTC, is in year 0 there: all of the output, not `year 0 is out of range`
    earliest = cli("log", cat, "--since", "0001-01-01T00:00:00+14:00", "--json")
    assert earliest.returncode == 0 and json.loads(earliest.stdout)["since"] == "0001-01-01T00:00:00Z", earliest.stderr
    # --json still prints the API's dict, and the one line on stderr
    res = cli("poll", "proc_000000000000", "--json")
    one_error_line(res)
    assert json.loads(res.stdout)["status"] == "not_found"


def test_a_misspelt_option_before_the_command_is_an_error_not_part_of_it(cli):
    # unknown options were taken for the command's first words and `--` was swallowed:
    # `run --pyt -- python3` started `--pyt python3` (exit 0) and bash failed on it
    assert "No such option: --pyt" in one_error_line(cli("run", "--pyt", "--", "python3"))
    assert "No such option: --notify" in one_error_line(cli("exec", "--notify", "--", "true"))
    assert json.loads(cli("ls", "--json", check=0).stdout) == []  # nothing started
    dashed = start(cli, "--", "-x")  # after `--` a dash is the command's
    assert json.loads(cli("poll", dashed, "--json", check=0).stdout)["command"] == "-x"
    flags = start(cli, "echo", "-n", "--json")  # after the command's first word, its own
    cli("wait", flags, check=0)
    assert cli("log", flags, check=0).stdout == "--json\n"


def test_home_before_or_after_the_subcommand(cli, tmp_path):
    other = tmp_path / "other-home"
    sid = cli("--home", str(other), "run", "--", "true", check=0).stdout.strip()
    assert ID_RE.match(sid)
    assert sid in cli("ls", "--home", str(other), "--json", check=0).stdout
    assert sid in cli("--home", str(other), "ls", "--json", check=0).stdout
    assert sid not in cli("ls", "--json", check=0).stdout  # $HERMES_PROCS_HOME
    assert (other / "jobs" / sid).is_dir()
    cli("--home", str(other), "--json", "wait", sid, check=0)


@pytest.fixture
def read_only_home(home, cli):
    """`home` with a finished job, seen through a read-only bind mount (root, as CI runs)."""
    cli("wait", start(cli, "--", "true"), check=0)
    view = home.parent / "read-only-view"
    view.mkdir()
    mounted = subprocess.run(["mount", "--bind", str(home), str(view)], capture_output=True)
    if mounted.returncode or subprocess.run(["mount", "-o", "remount,ro,bind", str(view)]).returncode:
        subprocess.run(["umount", str(view)], capture_output=True)
        pytest.skip("no bind mounts here (needs root)")
    yield view
    subprocess.run(["umount", "-l", str(view)], check=True)


def test_a_read_only_home_gets_one_line_errors_that_name_no_class(cli, read_only_home):
    # `events` said `HomeError: cannot create ...`; prune said `pruned 1` and left it there
    ro = str(read_only_home)
    assert one_error_line(cli("--home", ro, "events")) == \
        f"hermes-procs: error: cannot create {ro}/cursors: Read-only file system"
    one_error_line(cli("--home", ro, "run", "--", "true"), "Read-only file system")
    line = one_error_line(cli("--home", ro, "prune", "--keep-count", "0"))
    assert line.startswith("hermes-procs: error: could not delete 1 of 1 job folders (proc_")
    assert line.endswith(": Read-only file system); pruned 0")
    assert len(json.loads(cli("--home", ro, "ls", "--json", check=0).stdout)) == 1  # still there, whole
    stack = read_only_home.parent / "project"
    stack.mkdir()
    (stack / "hermes-procs.toml").write_text('[jobs.web]\ncommand = "sleep 60"\n')
    # it said `ro/stacks is not a private folder of yours ...: remove it`, of a folder that is not there
    assert one_error_line(cli("--home", ro, "up", "-f", str(stack))) == \
        f"hermes-procs: error: cannot create {ro}/stacks: Read-only file system"


def test_ls_of_a_home_that_does_not_exist_neither_makes_it_nor_looks_like_jobs_gone(cli, tmp_path):
    typo = tmp_path / "no" / "such" / "home"
    done = cli("ls", "--home", str(typo), check=0)
    assert done.stdout == "No processes.\n" and not (tmp_path / "no").exists()
    assert done.stderr == f"hermes-procs: warning: no state home at {typo}: no job has run there " \
                          "(created by the first run)\n"
    assert cli("ls", "--json", env={"HERMES_PROCS_HOME": str(typo)}, check=0).stdout.strip() == "[]"
    assert not (tmp_path / "no").exists()


@pytest.mark.parametrize("command", [
    ["poll", "proc_abcd"], ["log", "proc_abcd"], ["log", "-f", "proc_abcd"], ["wait", "proc_abcd"],
    ["search", "x"], ["kill", "proc_abcd"], ["write", "proc_abcd", "y"], ["tree", "proc_abcd"], ["prune"],
    ["stacks"], ["restart", "proc_abcd"]])
def test_a_query_of_a_home_that_does_not_exist_says_so_and_makes_nothing(cli, tmp_path, command):
    typo = tmp_path / "no" / "such" / "home"
    done = cli("--home", str(typo), *command, check=1)
    assert done.stderr == f"hermes-procs: error: no state home at {typo}: no job has run there " \
                          "(created by the first run)\n" and done.stdout == ""
    assert not (tmp_path / "no").exists()


def test_prune(cli):
    sid = start(cli, "--", "true")
    cli("wait", sid, check=0)
    keep = json.loads(cli("prune", "--json", check=0).stdout)
    assert keep["status"] == "ok" and keep["pruned"] == 0
    gone = cli("prune", env={"HERMES_PROCS_KEEP_COUNT": "0"}, check=0).stdout
    assert gone.strip() == "pruned 1 finished job"
    assert json.loads(cli("ls", "--json", check=0).stdout) == []
    assert cli("ls", check=0).stdout.strip() == "No processes."
    for _ in range(2):
        cli("wait", start(cli, "--", "true"), check=0)
    one_error_line(cli("prune", "--keep-count", "-1"), "error: --keep-count must be a number >= 0")  # the flag typed
    one_error_line(cli("prune", "--keep-days", "nan"), "error: --keep-days must be a number >= 0")
    assert cli("prune", "--keep-count", "1").stdout == "pruned 1 finished job\n"  # the option over the default
    assert cli("prune", "--keep-days", "0").stdout == "pruned 1 finished job\n"


def test_events_once_per_consumer(cli):
    sid = start(cli, "--notify", "--", "echo done")
    cli("wait", sid, check=0)

    def events(consumer, *extra):
        out = cli("events", "--consumer", consumer, *extra, check=0).stdout
        return [json.loads(line) for line in out.splitlines()]

    def has_completion(evs):
        return [e for e in evs if e["type"] == "completion" and e["session_id"] == sid]

    first = events("t1")
    assert has_completion(first), first
    assert events("t1") == []  # exactly once per consumer
    only = events("t2", "--type", "completion")
    assert [e["type"] for e in only] == ["completion"] and only[0]["session_id"] == sid
    assert events("t2") == []
    # a misspelled type is one line, and consumes nothing
    one_error_line(cli("events", "--consumer", "t3", "--type", "completion", "--type", "bogus"),
                   "unknown event type 'bogus'", "completion", "watch_match")
    assert has_completion(events("t3"))


def test_ls_starts_without_heavy_imports(cli, home):
    start(cli, "--", "true")
    proc = subprocess.run(
        [sys.executable, "-X", "importtime", "-m", "hermes_procs", "ls"],
        capture_output=True, text=True, timeout=30,
        env=dict(os.environ, HERMES_PROCS_HOME=str(home)),
    )
    assert proc.returncode == 0, proc.stderr
    modules = {line.split("|")[-1].strip() for line in proc.stderr.splitlines() if "|" in line}
    for heavy in ("textual", "mcp", "pydantic", "psutil", "hermes_procs.tui"):
        assert not any(m == heavy or m.startswith(heavy + ".") for m in modules), heavy


def test_demo_starts_each_sample_once_and_stops_them(cli, home):
    from hermes_procs.core import ProcessRegistry

    reg = ProcessRegistry(home=home)

    def samples():
        return {(j["name"], j["status"]) for j in reg.list(task_id="demo")}

    out = cli("demo", check=0).stdout  # no terminal: starts them and lists them
    assert "demo --stop" in out
    names = {name for name, _ in samples()}
    assert names == {"build", "python REPL", "reset staging", "ping", "tests"}
    build = next(j["session_id"] for j in reg.list(task_id="demo") if j["name"] == "build")
    done = reg.wait(build, timeout=60)  # the build ends after "build finished"
    assert done["exit_code"] == 0 and "build finished" in done["output"]
    tests = next(j["session_id"] for j in reg.list(task_id="demo") if j["name"] == "tests")
    reg.wait(tests, timeout=30)
    cli("demo", check=0)  # again: no new rows, the ended ones included
    assert len(reg.list(task_id="demo")) == 5
    assert cli("demo", "--stop", check=0).stdout == "stopped 3 sample jobs\n"  # REPL, ping, reset staging
    assert not any(status == "running" for _, status in samples())
    cli("demo", check=0)  # after a stop: the stopped ones start anew
    running = {j["name"] for j in reg.list(task_id="demo") if j["status"] == "running"}
    assert running == {"python REPL", "reset staging", "ping"} and len(reg.list(task_id="demo")) == 8


def test_version(cli):
    from hermes_procs import __version__

    assert cli("--version", check=0).stdout == f"hermes-procs {__version__}\n"


def test_help_and_attach_without_terminal(cli):
    out = cli("--help", check=0).stdout
    for word in ("run", "ls", "poll", "log", "wait", "kill", "write", "submit", "close", "attach", "events", "prune"):
        assert word in out
    sid = start(cli, "--pty", "--", "sleep 30")
    one_error_line(cli("attach", sid), "terminal")


def test_mcp_serves_on_stdio(home):
    pytest.importorskip("mcp")
    init = {"jsonrpc": "2.0", "id": 1, "method": "initialize",
            "params": {"protocolVersion": "2025-06-18", "capabilities": {},
                       "clientInfo": {"name": "t", "version": "1"}}}
    proc = subprocess.Popen([sys.executable, "-m", "hermes_procs", "mcp", "--home", str(home)],
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        proc.stdin.write(json.dumps(init) + "\n")
        proc.stdin.flush()
        reply = json.loads(proc.stdout.readline())
        assert reply["id"] == 1 and "tools" in reply["result"]["capabilities"]
    finally:
        proc.stdin.close()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def test_log_follow_loses_nothing_when_the_reader_falls_behind(cli, home):
    # The supervisor drops a live client more than 4 MiB behind; follow must fill the gap.
    n = 1_500_000  # ~10 MB of output
    go = home.parent / "go-flood"
    sid = start(cli, "--", f"echo ready; while [ ! -e {go} ]; do sleep 0.02; done; seq 1 {n}")
    proc = subprocess.Popen(
        [sys.executable, "-m", "hermes_procs", "log", sid, "--follow", "--raw", "--limit", str(n)],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE,
        env=dict(os.environ, HERMES_PROCS_HOME=str(home)),
    )
    # follow attaches to the live stream before it prints the lines before it: once `ready`
    # is read it is attached, however long a loaded machine took to start it
    assert proc.stdout.readline() == b"ready\n"
    go.touch()
    time.sleep(2.0)  # do not read: the pipe fills, follow blocks, the supervisor runs ahead
    out, err = proc.communicate(timeout=30)
    assert proc.returncode == 0, err
    assert out == b"".join(b"%d\n" % i for i in range(1, n + 1))


def _ls_on_a_terminal(home, columns: int) -> list[str]:
    """`ls` with its stdout on a real PTY of `columns` columns: the lines it printed, colours removed."""
    master, slave = os.openpty()
    try:
        env = dict(os.environ, HERMES_PROCS_HOME=str(home), COLUMNS=str(columns))
        subprocess.run([sys.executable, "-m", "hermes_procs", "ls"], stdout=slave, env=env, timeout=30, check=True)
        os.close(slave)
        data = b""
        while True:
            try:
                chunk = os.read(master, 65536)
            except OSError:  # EIO: the writer is gone and everything was read
                break
            if not chunk:
                break
            data += chunk
    finally:
        os.close(master)
    return [re.sub(r"\x1b\[[0-9;]*m", "", line) for line in data.decode().splitlines()]


def test_ls_on_a_narrow_terminal_never_wraps_a_row(cli, home):
    sid = start(cli, "--name", "a-long-name", "--", "sleep 0.1; echo " + "word " * 30)
    cli("wait", sid, check=0)
    for columns in (60, 80):
        lines = _ls_on_a_terminal(home, columns)
        assert len(lines) == 2 and lines[1].startswith(sid), lines
        assert max(len(line) for line in lines) <= columns, lines
        assert lines[1].endswith("\u2026"), lines  # COMMAND is cut, with an ellipsis
        # too narrow for a useful COMMAND: STARTED goes first, as in the dashboard
        assert ("STARTED" in lines[0]) == (columns == 80), lines


def test_an_unusable_home_is_the_same_one_line_for_the_dashboard_and_web(tmp_path):
    # `ls` said "cannot open state home"; the dashboard said "internal error: HomeError" and
    # `web` served a page whose every dashboard then failed
    shared = tmp_path / "shared"
    shared.mkdir(mode=0o777)
    shared.chmod(0o777)
    master, slave = os.openpty()
    try:
        for args in (["tui"], ["web", "--port", "0"], ["mcp"], ["ls"]):
            r = subprocess.run([sys.executable, "-m", "hermes_procs", "--home", str(shared), *args], stdin=slave,
                               stdout=slave, stderr=subprocess.PIPE, text=True, timeout=30)
            assert r.returncode == 1, (args, r.stderr)
            assert r.stderr == f"hermes-procs: error: cannot open state home {shared}: {shared} is writable by " \
                               "group or others (mode 0777); use a private directory (chmod go-w) or a new path\n"
    finally:
        os.close(slave)
        os.close(master)
    # named by the environment: the error says where the home came from (not "(default)")
    r = subprocess.run([sys.executable, "-m", "hermes_procs", "ls"], capture_output=True, text=True, timeout=30,
                       env=dict(os.environ, HERMES_PROCS_HOME=str(shared)))
    assert r.returncode == 1 and r.stderr.startswith(
        f"hermes-procs: error: cannot open state home ($HERMES_PROCS_HOME): {shared} is writable"), r.stderr


def test_web_on_a_port_in_use_says_how_to_pick_another(cli):
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        line = one_error_line(cli("web", "--port", str(port)), f"cannot serve on 127.0.0.1:{port}")
    assert line.endswith("address already in use (another port: --port N; --port 0 picks a free one)"), line


def test_an_unusable_number_setting_is_a_warning_not_silence(cli):
    """HERMES_PROCS_KILL_GRACE=3s (a typo) falls back to the default, and the command says so on
    stderr, once, after its answer; stdout stays what scripts parse."""
    bad = {"HERMES_PROCS_KILL_GRACE": "3s", "HERMES_PROCS_LOG_CAP": "\x1b]52;c;eA==\x07"}
    sid = start(cli, "--", "sleep 30")
    killed = cli("kill", sid, "--json", env=bad, check=0)
    assert json.loads(killed.stdout)["status"] == "killed", killed
    assert killed.stderr.splitlines() == [
        "hermes-procs: warning: HERMES_PROCS_KILL_GRACE='3s' is not a number > 0: 3 is used"], killed.stderr
    ran = cli("run", "--", "true", env=bad, check=0)
    assert ID_RE.match(ran.stdout.strip()), ran
    assert ran.stderr.splitlines() == [  # both are read when a job starts: each said once
        "hermes-procs: warning: HERMES_PROCS_LOG_CAP='\\x1b]52;c;eA==\\x07' is not a number > 0: 67108864 is used",
        "hermes-procs: warning: HERMES_PROCS_KILL_GRACE='3s' is not a number > 0: 3 is used"], ran.stderr
    assert "\x1b" not in ran.stderr and "\x07" not in ran.stderr, ran.stderr
    pruned = cli("prune", env={"HERMES_PROCS_KEEP_DAYS": "-1"}, check=0)
    assert pruned.returncode == 0 and "HERMES_PROCS_KEEP_DAYS='-1' is not a number >= 0: 7 is used" in pruned.stderr
    assert cli("ls", env={"HERMES_PROCS_KILL_GRACE": "2.5"}, check=0).stderr == ""
