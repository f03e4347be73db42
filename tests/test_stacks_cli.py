"""Stacks from the command line as a newcomer runs them (the README's commands on
examples/stack, copied to a temporary folder), and from the agent tool and the MCP server."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import urllib.request
from pathlib import Path

import pytest
from conftest import wait_until
from stacks_helpers import down_all, free_port, jobs_of, stack_file

from hermes_procs.core.agents.tool import handle_process

ROOT = Path(__file__).resolve().parent.parent


def cli(home, *args, cwd=None):
    return subprocess.run([sys.executable, "-m", "hermes_procs", "--home", str(home), *args], cwd=cwd,
                          capture_output=True, text=True, timeout=120)


def answer(url: str) -> str:
    try:
        with urllib.request.urlopen(url, timeout=2) as reply:
            return reply.read().decode()
    except OSError:
        return ""


def test_the_readme_stack_commands_on_the_example(registry, home, tmp_path):
    readme = (ROOT / "README.md").read_text()
    for command in ("cd examples/stack && hermes-procs up --wait", "hermes-procs restart stack-demo api",
                    "hermes-procs ls --stack stack-demo", "hermes-procs down stack-demo"):
        assert command in readme, command
    folder = tmp_path / "stack"
    shutil.copytree(ROOT / "examples" / "stack", folder)
    try:
        up = cli(home, "up", "--wait", cwd=folder)
        assert up.returncode == 0, up.stdout + up.stderr
        assert up.stdout.startswith("stack stack-demo: up (supervisor pid ") and up.stderr == "", up
        assert answer("http://127.0.0.1:7412/") == "hello from db (api v1)\n"
        again = cli(home, "up", cwd=folder)  # the same file: it says so, as --json's status does
        assert again.returncode == 0 and "\n  already up: the file is unchanged, nothing was started\n" in again.stdout

        listed = cli(home, "ls", "--stack", "stack-demo")
        assert listed.returncode == 0 and "db: python3 db.py 7411" in listed.stdout, listed
        assert {r["name"] for r in json.loads(cli(home, "ls", "--stack", "stack-demo", "--json").stdout)} \
            >= {"db", "seed", "api", "worker"}

        server = folder / "api" / "server.py"  # the api job watches api/*.py
        server.write_text(server.read_text().replace("VERSION = 1", "VERSION = 2"))
        wait_until(lambda: answer("http://127.0.0.1:7412/") == "hello from db (api v2)\n", timeout=30, interval=0.2)
        wait_until(lambda: jobs_of(registry, "stack-demo")["api"]["message"] == "restarted: api/server.py changed",
                   timeout=30, interval=0.1)  # once its probe passed (before: "waiting for http ...")

        toml = folder / "hermes-procs.toml"  # up again after editing the file applies it
        toml.write_text(toml.read_text().replace("backoff_max = 8", "backoff_max = 4"))
        edited = cli(home, "up", cwd=folder)
        assert edited.returncode == 0 and "  the file changed: restarted worker\n" in edited.stdout, edited

        before = jobs_of(registry, "stack-demo")["api"]["session_id"]
        again = cli(home, "restart", "stack-demo", "api")
        assert again.returncode == 0, again.stdout + again.stderr
        wait_until(lambda: jobs_of(registry, "stack-demo")["api"]["session_id"] != before
                   and jobs_of(registry, "stack-demo")["api"]["state"] == "ready", timeout=30, interval=0.1)

        shown = json.loads(cli(home, "stacks", "--json").stdout)
        assert [s["stack"] for s in shown] == ["stack-demo"] and shown[0]["state"] in ("up", "starting", "degraded")

        down = cli(home, "down", "stack-demo")
        assert down.returncode == 0 and "stack stack-demo: down" in down.stdout, down
        assert not any(r["status"] == "running" for r in registry.list())
        assert answer("http://127.0.0.1:7412/health") == ""
    finally:
        down_all(registry)


def test_bad_input_on_the_command_line_is_one_line_and_starts_nothing(registry, home, tmp_path):
    bad = stack_file(tmp_path / "bad", '[jobs.a]\ncommand = "sleep 300"\nrestart = "sometimes"\n')
    fifo = tmp_path / "fifo.toml"
    os.mkfifo(fifo)  # opening it waited for a writer: `up -f` hung for ever
    for args, error in [
        (("up", "-f", str(fifo)), "fifo.toml: not a regular file"),
        (("up", "-f", bad), "hermes-procs.toml: jobs.a.restart: must be one of no, on-failure, always"),
        (("up",), "no stack file in"),
        (("up", "-f", str(tmp_path / "nope.toml")), "no such file"),
        (("up", "-f", str(tmp_path / "nope")), f"no such file: {tmp_path / 'nope'}"),  # not 'cannot tell the format'
        (("up", "-f", bad, "-f", str(fifo)), "-f is given 2 times: a stack is read from one file"),  # was the last
        (("down", "ghost"), "ghost"),
        (("ls", "--stack", "ghost"), "no stack named 'ghost'"),  # was "No processes.", exit 0
        (("ls", "--stack", "../s1"), "stack name '../s1' must be"),
        (("up", "--wait", "--timeout", "nan", "-f", str(tmp_path / "nope")), "timeout must be a finite number"),
        (("restart", "ghost", "api"), "ghost"),
        (("restart", "ghost"), "Invalid session id ghost: expected proc_ + 12 hex digits or a prefix of at least 4; "
                               "no stack has that name either"),
    ]:
        done = cli(home, *args, cwd=tmp_path)
        assert done.returncode == 1 and done.stdout == "", (args, done)
        lines = done.stderr.strip().splitlines()
        assert len(lines) == 1 and lines[0].startswith("hermes-procs: error: ") and error in lines[0], (args, lines)
    assert registry.list() == [] and registry.stacks() == []


def test_unsupported_keys_are_warned_on_stderr(registry, home, tmp_path):
    path = stack_file(tmp_path / "mp", "procs:\n  a:\n    shell: sleep 300\n    stop: SIGKILL\n", name="mprocs.yaml")
    try:
        done = cli(home, "up", "-f", path)
        assert done.returncode == 0, done
        assert done.stderr == "hermes-procs: warning: mprocs.yaml: procs.a.stop: not supported, ignored\n"
    finally:
        down_all(registry)


def call(registry, **args):
    return json.loads(handle_process(args, registry=registry))


def test_the_agent_tool_brings_a_stack_up_and_down(registry, tmp_path):
    port = free_port()
    folder = tmp_path / "agentstack"
    stack_file(folder, f"""
        [jobs.db]
        command = "{{py}} listener.py {port} 0.3"
        ready = {{ port = {port} }}
        [jobs.api]
        command = "{{py}} needs_port.py {port}"
        depends_on = {{ db = "ready" }}
        """)
    try:
        up = call(registry, action="up", cwd=str(folder), wait_ready=True, timeout=30)
        assert up["status"] == "ok" and up["state"] == "up" and up["stack"] == "agentstack", up
        listed = call(registry, action="list", stack="agentstack")
        assert {p["name"] for p in listed["processes"]} == {"db", "api"}
        assert all(p["stack"] == "agentstack" and p["restarts"] == 0 for p in listed["processes"])
        assert listed["stacks"][0]["state"] == "up"
        again = call(registry, action="restart", stack="agentstack", job="api")
        assert again["status"] == "ok", again
        missing = call(registry, action="down")
        assert missing["status"] == "error" and "stack" in missing["error"]
        down = call(registry, action="down", stack="agentstack")
        assert down["status"] == "down" and not any(r["status"] == "running" for r in registry.list())
    finally:
        down_all(registry)
    bad = call(registry, action="up", cwd=str(tmp_path))
    assert bad["status"] == "error" and "no stack file in" in bad["error"]
    # an unknown stack is an error an agent sees, not an empty list; ephemeral is no lease for a stack
    assert call(registry, action="list", stack="nosuch") == {"status": "error",
                                                           "error": "no stack named 'nosuch' (stacks: agentstack)"}
    lease = call(registry, action="up", cwd=str(folder), ephemeral=True)
    assert lease == {"status": "error", "error": "ephemeral does not go with up: a stack's jobs outlive the caller; "
                                                 "down stops them"}
    assert not any(r["status"] == "running" for r in registry.list())


def test_mcp_process_up_and_down(tmp_path):
    pytest.importorskip("mcp")
    from test_mcp import run, with_client

    folder = tmp_path / "mcpstack"
    stack_file(folder, 'web: sleep 300\nworker: sleep 300\n', name="Procfile")
    home = tmp_path / "home"

    async def body(c):
        tools = {t.name: t for t in (await c.session.list_tools()).tools}
        assert {"process_up", "process_down"} <= set(tools)
        up = await c.ok("process_up", cwd=str(folder), wait=True)
        assert up["state"] == "up" and {j["name"] for j in up["jobs"]} == {"web", "worker"}, up
        listed = await c.ok("process_list", stack="mcpstack")
        assert {p["name"] for p in listed["processes"]} == {"web", "worker"}
        down = await c.ok("process_down", stack="mcpstack")
        assert down["state"] == "down"
        bad = await c.call("process_up", cwd=str(tmp_path))
        assert bad.is_error or "no stack file" in bad.content[0].text

    try:
        run(with_client(home, body))
    finally:
        from hermes_procs.core import ProcessRegistry

        down_all(ProcessRegistry(home=home))


def _failed_up(registry, home, folder, ready: str):
    """`up --wait` of a stack whose one job's probe (`ready`, TOML) fails in half a second."""
    path = stack_file(folder, f"""
        [jobs.db]
        command = "sleep 300"
        ready = {{ {ready}, timeout = 0.5, interval = 0.1 }}
        """)
    try:
        done = cli(home, "up", "--wait", "-f", path)
        assert done.returncode == 1, done
        return done, cli(home, "stacks", folder.name).stdout
    finally:
        down_all(registry)


def test_what_a_stack_file_controls_reaches_the_terminal_as_visible_escapes(registry, home, tmp_path):
    """A probe regex with terminal controls, shown in the failed stack's table and the error."""
    done, _ = _failed_up(registry, home, tmp_path / "hostile", 'output = "\\u001b[31mRED\\u001b]0;title\\u0007"')
    assert "\x1b" not in done.stdout + done.stderr and "\x07" not in done.stdout + done.stderr, done
    assert "\\x1b[31mRED" in done.stdout and "\\x1b[31mRED" in done.stderr, done


def test_a_newline_in_a_stack_files_text_cannot_forge_a_row(registry, home, tmp_path):
    forged = 'exec = "false\\n  api  ready       proc_1234567890ab"'  # a row for a job that does not exist
    done, listed = _failed_up(registry, home, tmp_path / "forge", forged)
    rows = listed.splitlines()
    assert len(rows) == 2 and rows[1].lstrip().startswith("db "), rows  # the header and db's row
    assert not any(line.lstrip().startswith("api") for line in done.stdout.splitlines()), done.stdout


def test_stack_slash_job_names_a_stack_job_wherever_an_id_goes(registry, home, tmp_path):
    path = stack_file(tmp_path / "named", """
        [jobs.web]
        command = "echo serving; sleep 300"
        [jobs.later]
        command = "sleep 300"
        autostart = false
        """)
    try:
        registry.up(path, wait=True, timeout=30)
        web = jobs_of(registry, "named")["web"]["session_id"]
        assert registry.poll("named/web")["session_id"] == web
        wait_until(lambda: "serving" in registry.read_log("named/web")["output"])
        log = cli(home, "log", "named/web")
        assert log.returncode == 0 and "serving" in log.stdout, log
        assert call(registry, action="poll", session_id="named/web")["session_id"] == web
        for name, error in [("named/nope",
                             "No process named named/nope: stack named has no job 'nope' (jobs: web, later)"),
                            ("ghost/web", "No process named ghost/web: no stack named 'ghost' (stacks: named)"),
                            ("named/later", "No process named named/later: later has not started (off)")]:
            assert registry.poll(name) == {"status": "not_found", "error": error}, name
        bad = cli(home, "poll", "named/nope")
        assert bad.returncode == 1 and bad.stderr.strip().endswith("stack named has no job 'nope' (jobs: web, later)")
    finally:
        down_all(registry)
