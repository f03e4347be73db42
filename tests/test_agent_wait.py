"""wait(id, until=...) returns when the condition holds, and says why (reason)."""

import socket

import pytest
from conftest import wait_until


def test_until_input_returns_at_the_prompt_and_the_answer_goes_through(registry):
    sid = registry.spawn("echo installing; printf 'Proceed? [y/N] '; read a; echo answer=$a")["session_id"]
    got = registry.wait(sid, timeout=20, until="input")
    assert (got["status"], got["reason"]) == ("running", "awaiting_input"), got
    assert got["output"].endswith("Proceed? [y/N] ")
    registry.submit(sid, "y")
    done = registry.wait(sid, timeout=20)
    assert (done["status"], done["reason"], done["exit_code"]) == ("exited", "exited", 0)
    assert "answer=y" in done["output"]


def test_until_input_in_a_pty(registry):
    sid = registry.spawn("python3 -q -i", pty=True)["session_id"]
    assert registry.wait(sid, timeout=20, until="input")["reason"] == "awaiting_input"


def test_until_output_matches_new_output_only_and_a_prompt_without_newline(registry):
    sid = registry.spawn("echo 'Password: old'; read go; sleep 1; printf 'Password: '; sleep 30")["session_id"]
    wait_until(lambda: "old" in registry.poll(sid)["output_preview"])
    waiter = registry.wait(sid, timeout=0.3, until="output:Password: old")
    assert waiter["reason"] == "timeout"  # printed before the call
    registry.submit(sid, "")  # the job prints its prompt a second after this
    got = registry.wait(sid, timeout=20, until=r"output:^Pass\w+:\s*$")
    assert (got["status"], got["reason"], got["matched"]) == ("running", "matched", "Password: ")


def test_until_output_sees_colours_stripped_and_output_just_before_exit(registry):
    sid = registry.spawn(r"sleep 1; printf '\033[32mBUILD OK\033[0m\n'; exit 3")["session_id"]
    got = registry.wait(sid, timeout=20, until="output:BUILD OK")
    assert got["reason"] == "matched" and got["matched"] == "BUILD OK"


def test_until_output_when_the_job_exits_without_a_match(registry):
    sid = registry.spawn("echo nothing here; exit 4")["session_id"]
    got = registry.wait(sid, timeout=20, until="output:never")
    assert (got["status"], got["reason"], got["exit_code"]) == ("exited", "exited", 4)


def test_until_quiet(registry):
    sid = registry.spawn("for i in 1 2 3; do echo $i; sleep 0.1; done; sleep 30")["session_id"]
    got = registry.wait(sid, timeout=20, until="quiet:0.6")
    assert got["reason"] == "quiet" and got["status"] == "running"
    assert registry.poll(sid)["quiet_seconds"] >= 0.6
    assert "3" in got["output"]


def test_until_port(registry):
    with socket.socket() as probe:  # a free port
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    server = f"sleep 0.3; exec python3 -m http.server {port} --bind 127.0.0.1"
    sid = registry.spawn(server)["session_id"]
    got = registry.wait(sid, timeout=20, until=f"port:{port}")
    assert (got["reason"], got["port"]) == ("port_open", port)
    with socket.create_connection(("127.0.0.1", port), timeout=5):
        pass
    assert registry.wait(sid, timeout=0.2, until=f"port:{port + 1 if port < 65535 else 1}")["reason"] == "timeout"


def test_interrupted_and_timeout_reasons(registry):
    import threading

    sid = registry.spawn("sleep 30")["session_id"]
    flag = threading.Event()
    flag.set()
    assert registry.wait(sid, timeout=5, until="input", interrupt=flag)["reason"] == "interrupted"
    got = registry.wait(sid, timeout=0.1)
    assert (got["status"], got["reason"]) == ("timeout", "timeout")


def test_until_on_a_finished_job_says_exited(registry):
    sid = registry.spawn("true")["session_id"]
    registry.wait(sid, timeout=20)
    assert registry.wait(sid, until="input")["reason"] == "exited"


@pytest.mark.parametrize("until, words", [
    ("bogus", "unknown until"), ("quiet:abc", "positive number"), ("quiet:0", "positive number"),
    ("output:", "regular expression"), ("output:(", "not a valid regular expression"),
    ("port:0", "1 to 65535"), ("port:http", "1 to 65535"), (3, "must be a string"), ("input:1", "unknown"),
])
def test_bad_until_is_a_clear_error(registry, until, words):
    sid = registry.spawn("sleep 30")["session_id"]
    got = registry.wait(sid, until=until)
    assert got["status"] == "error" and words in got["error"], got
    assert registry.poll(sid)["status"] == "running"
