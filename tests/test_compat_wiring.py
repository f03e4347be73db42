"""The Hermes adapter's parts that stand in for what stock Hermes does, with real processes and no
Hermes installed (tests/test_hermes_plugin.py runs them inside the real Hermes): the job's login
shell, live output for `on_output`, masking of the values of a job's secret variables, and the
adoption of processes a stock Hermes recorded in its processes.json."""

from __future__ import annotations

import json
import subprocess
import threading
import time

import pytest
from conftest import wait_until

from hermes_procs.core.agents import compat_output, compat_stock
from hermes_procs.core.agents.compat_adopt import stock_entries
from hermes_procs.core.agents.secret_values import SecretValues

pytestmark = pytest.mark.usefixtures("login_shell_home")  # the jobs run in a login shell


@pytest.fixture
def login_home(tmp_path, monkeypatch):
    """A HOME whose login profile puts a tool on PATH (as nvm or pyenv do)."""
    home = tmp_path / "user"
    (home / "bin").mkdir(parents=True)
    (home / ".bash_profile").write_text('export PATH="$HOME/bin:$PATH"\nexport FROM_PROFILE=yes\n')
    tool = home / "bin" / "mytool"
    tool.write_text("#!/bin/sh\necho mytool-ran\n")
    tool.chmod(0o755)
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("SHELL", "/bin/bash")
    return home


@pytest.mark.parametrize("pty", [False, True])
def test_the_job_runs_in_a_login_interactive_shell_without_noise(hermes, login_home, pty):
    session = hermes.spawn_local("mytool; echo profile=$FROM_PROFILE flags=${-//[^i]/}; echo err >&2",
                                 use_pty=pty)
    out = hermes.wait(session.id, timeout=10)["output"].replace("\r\n", "\n")
    assert out == "mytool-ran\nprofile=yes flags=i\nerr\n"  # stderr too, and nothing from bash itself
    raw = hermes.registry.log_bytes(session.id)["data"]
    assert b"job control" not in raw and b"process group" not in raw


@pytest.mark.parametrize("pty", [False, True])
def test_a_loop_in_the_interactive_shell_ends_at_once_when_killed(hermes, login_home, tmp_path, pty):
    # bash -i ignores TERM: each TERM to the loop's child ran the body again, ~20 times in the
    # grace period of a pipe job (stock Hermes: 2), with "tcsetattr" noise; HUP ends the shell
    count = tmp_path / "count"
    session = hermes.spawn_local(f"while true; do echo run >> {count}; sleep 5; done", use_pty=pty)
    wait_until(lambda: count.exists())
    before = len(count.read_text().splitlines())
    started = time.monotonic()
    assert hermes.kill_process(session.id)["status"] in ("killed", "already_exited")
    assert time.monotonic() - started < 2.5  # the grace is 3 s: a loop ran until it ended
    time.sleep(0.5)
    assert len(count.read_text().splitlines()) - before <= 1
    assert b"tcsetattr" not in hermes.registry.log_bytes(session.id)["data"]


def test_shell_argv_follows_hermes_rules(monkeypatch):
    monkeypatch.setenv("SHELL", "/usr/bin/fish")  # not a POSIX shell: bash, as Hermes does
    assert compat_stock.shell_argv(False)[-1] == "/bin/bash"
    monkeypatch.setenv("SHELL", "/bin/sh")
    assert compat_stock.shell_argv(True) == ["/bin/sh", "-c", 'exec "$0" -lic "set +m; $1"', "/bin/sh"]


def test_secret_values_are_masked_wherever_they_appear():
    secrets = SecretValues()
    secrets.add_from({"MY_DB_PASSWORD": "pw-Hunter2-db", "GITHUB_TOKEN_ENABLED": "true", "API_KEY": "12345678",
                      "PLAIN": "pw-Hunter2-db-not-secret-named", "SESSION_KEY": "short"})
    text = {"output": "connect pw-Hunter2-db ok; flag true 12345678", "n": [("pw-Hunter2-db",)]}
    assert secrets.mask(text) == {"output": "connect *** ok; flag true 12345678", "n": [("***",)]}


# ---- on_output -----------------------------------------------------------------------------

def test_on_output_streams_from_the_logs(hermes):
    chunks = []
    hermes.on_output = lambda session, chunk: chunks.append((session.id, chunk))
    session = hermes.spawn_local("for i in 1 2 3; do echo line$i; sleep 0.1; done; printf 'caf\\303'; "
                                 "sleep 0.2; printf '\\251\\n'")
    hermes.wait(session.id, timeout=10)
    wait_until(lambda: "café" in "".join(c for _, c in chunks))
    assert {sid for sid, _ in chunks} == {session.id}
    assert "".join(c for _, c in chunks) == "line1\nline2\nline3\ncafé\n"  # a character split in two reads


def test_on_output_set_later_starts_at_the_current_end_and_unset_stops(hermes):
    session = hermes.spawn_local("echo before; read go; echo after; read again; echo never-seen")
    wait_until(lambda: "before" in session.output_buffer)
    chunks = []
    hermes.on_output = lambda s, chunk: chunks.append(chunk)
    hermes.submit_stdin(session.id, "")
    wait_until(lambda: "after" in "".join(chunks))
    hermes.on_output = None
    hermes.submit_stdin(session.id, "")
    hermes.wait(session.id, timeout=10)
    time.sleep(0.3)
    assert "".join(chunks) == "after\n"


def test_a_slow_sink_never_holds_the_job_up(hermes, monkeypatch):
    """The job writes 8 MB while the sink takes 1 s a call: the job ends at once, the sink
    skips ahead to the latest output and says so."""
    monkeypatch.setattr(compat_output, "SKIP_AFTER", 1 << 20)
    calls, gate = [], threading.Event()

    def slow(session, chunk):
        calls.append(chunk)
        gate.wait(1.0)

    hermes.on_output = slow
    session = hermes.spawn_local("head -c 8000000 /dev/zero | tr '\\0' x; echo; echo THE-END")
    assert hermes.wait(session.id, timeout=20)["status"] == "exited"
    gate.set()  # the sink is quick from now on
    wait_until(lambda: "THE-END" in "".join(calls[-3:]), timeout=20)
    seen = sum(len(c) for c in calls)
    assert seen < 4_000_000 and any("output skipped" in c for c in calls)


# ---- processes of a stock Hermes -------------------------------------------------------------

def _stock_process(command: str) -> subprocess.Popen[bytes]:
    """A background process as stock Hermes starts one (its own session, output to a pipe)."""
    return subprocess.Popen(["bash", "-c", command], start_new_session=True, stdout=subprocess.DEVNULL)


def _ticks(pid: int) -> int:
    with open(f"/proc/{pid}/stat") as fh:
        return int(fh.read().rsplit(")", 1)[1].split()[19])


def _checkpoint(path, procs, **extra):
    entries = [{"session_id": f"proc_{i:012x}", "command": cmd, "pid": p.pid, "pid_scope": "host",
                "host_start_time": _ticks(p.pid), "cwd": "/", "started_at": time.time() - 5, "task_id": "default",
                "session_key": "chat-1", "watcher_platform": "", "watcher_chat_id": "", "watcher_user_id": "",
                "watcher_user_name": "", "watcher_thread_id": "", "watcher_message_id": "", "watcher_interval": 0,
                "notify_on_complete": i == 1, "watch_patterns": [], **extra}
               for i, (cmd, p) in enumerate(procs)]
    path.write_text(json.dumps(entries))
    return [e["session_id"] for e in entries]


def test_processes_of_a_stock_hermes_become_jobs(hermes, tmp_path, monkeypatch, alive):
    procs = [("sleep 60", _stock_process("sleep 60")), ("sleep 1", _stock_process("sleep 1"))]
    path = tmp_path / "processes.json"
    long_id, short_id = _checkpoint(path, procs)
    monkeypatch.setattr(compat_stock, "checkpoint_path", lambda: path)
    try:
        assert hermes.recover_from_checkpoint() == 2
        polled = hermes.poll(long_id)
        assert polled["status"] == "running" and polled["detached"] is True
        assert polled["note"] == "Process recovered after restart -- output history unavailable"
        row = {r["session_id"]: r for r in hermes.registry.list()}[long_id]
        assert row["status"] == "running" and row["name"] == "hermes chat-1"  # the human sees it
        (event, text), = wait_until(lambda: hermes.drain_notifications(), timeout=20)  # notify_on_complete
        assert event["session_id"] == short_id and "exit code unknown" in text
        hermes._notes._lost_look = 0  # an adopted process has no supervisor: told once, not again as lost
        hermes.pump()
        assert hermes.drain_notifications() == []
        waited = hermes.wait(short_id, timeout=20)
        assert waited["status"] == "exited" and waited["exit_code"] is None  # nobody saw its exit code
        assert hermes.kill_process(long_id, grace=0.5)["status"] == "killed"
        assert not alive(procs[0][1].pid)
        assert hermes.poll(long_id)["completion_reason"] == "killed"
        assert hermes.recover_from_checkpoint() == 0  # nothing runs any more
    finally:
        for _, proc in procs:
            proc.kill()
            proc.wait()


def test_a_recycled_pid_is_never_adopted(tmp_path):
    proc = _stock_process("sleep 60")
    try:
        path = tmp_path / "processes.json"
        _checkpoint(path, [("sleep 60", proc)], host_start_time=_ticks(proc.pid) - 1)  # another process's pid
        assert stock_entries(path) == []
        path.write_text("not json")
        assert stock_entries(path) == [] and stock_entries(None) == []
    finally:
        proc.kill()
        proc.wait()
