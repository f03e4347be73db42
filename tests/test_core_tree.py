"""registry.tree (a job's processes as rows) and registry.signal_process (one process of a job,
membership and identity checked), with real jobs; the same over a real SSH host."""

from __future__ import annotations

import json
import os
import shlex
import shutil
import signal
import subprocess
import sys

import pytest
import sshd as sshd_mod
from conftest import wait_until

from hermes_procs.core import ProcessRegistry
from hermes_procs.core.remote.hosts import HostSet

PY = shlex.quote(sys.executable)
ASKS = f"sleep 100 & {PY} -c 'input()'"  # a background sleeper and a process asking for input


def _rows(registry, sid):
    result = registry.tree(sid)
    assert result["status"] in ("running", "exited"), result
    return result["processes"]


def _ready(registry, sid):
    """The rows once the sleeper runs and python waits for input."""

    def both():
        rows = _rows(registry, sid)
        sleeper = [r for r in rows if r["command"] == "sleep 100"]
        # state and the read it waits in are two /proc reads: just woken, it may show R once
        asking = [r for r in rows if r["awaiting_input"] and r["state"] == "S"]
        return (rows, sleeper[0], asking[0]) if sleeper and asking else None

    return wait_until(both, timeout=10)


def test_tree_rows_parents_first_with_figures_and_who_waits_for_input(registry):
    sid = registry.spawn(ASKS)["session_id"]
    rows, sleeper, asking = _ready(registry, sid)
    by_pid = {r["pid"]: r for r in rows}
    assert "input()" in asking["command"] and asking["state"] == "S"
    assert not sleeper["awaiting_input"]
    for row in rows:
        assert set(row) >= {"pid", "ppid", "start_ticks", "depth", "command", "state", "cpu_percent",
                            "rss_bytes", "awaiting_input"}
        assert row["rss_bytes"] > 0 and row["cpu_percent"] >= 0
        if row["depth"]:  # a child comes after its parent, one level deeper
            parent = by_pid[row["ppid"]]
            assert rows.index(parent) < rows.index(row) and parent["depth"] == row["depth"] - 1
    assert rows[0]["depth"] == 0
    assert os.getpid() not in by_pid  # never the caller, never the supervisor
    supervisor = json.loads((registry.job_dir(sid) / "proc.json").read_text())["supervisor_pid"]
    assert supervisor not in by_pid


def test_a_tree_answer_lists_at_most_max_tree_processes_and_counts_the_rest(registry, monkeypatch):
    from hermes_procs.core.registry import observe

    monkeypatch.setattr(observe, "MAX_TREE", 3)  # 1,000 in use: a job with 4,000 processes answered 2 MB
    sid = registry.spawn("for i in 1 2 3 4 5; do sleep 60 & done; wait")["session_id"]
    try:
        wait_until(lambda: registry.tree(sid).get("more_processes") == 3, timeout=10)  # bash and 5 sleeps
        assert len(registry.tree(sid)["processes"]) == 3
    finally:
        registry.kill(sid, grace=0.2)


def test_signal_one_process_leaves_the_rest_running(registry, alive):
    sid = registry.spawn(ASKS)["session_id"]
    _, sleeper, asking = _ready(registry, sid)
    result = registry.signal_process(sid, sleeper["pid"], "TERM", start_ticks=sleeper["start_ticks"])
    assert result == {"status": "ok", "session_id": sid, "pid": sleeper["pid"], "signal": "TERM"}
    wait_until(lambda: not alive(sleeper["pid"]))
    assert alive(asking["pid"]) and registry.poll(sid)["status"] == "running"
    assert sleeper["pid"] not in [r["pid"] for r in _rows(registry, sid)]
    # STOP / CONT one process: its state shows it
    assert registry.signal_process(sid, asking["pid"], "STOP")["status"] == "ok"
    wait_until(lambda: any(r["pid"] == asking["pid"] and r["state"] == "T" for r in _rows(registry, sid)))
    assert registry.signal_process(sid, asking["pid"], "CONT")["status"] == "ok"
    wait_until(lambda: any(r["pid"] == asking["pid"] and r["state"] != "T" for r in _rows(registry, sid)))


def test_a_process_outside_the_job_is_never_signalled(registry, alive):
    sid = registry.spawn(ASKS)["session_id"]
    _ready(registry, sid)
    stranger = subprocess.Popen(["sleep", "60"])
    try:
        for pid in (stranger.pid, os.getpid(), 1):
            result = registry.signal_process(sid, pid, "KILL")
            assert result["status"] == "error" and f"process {pid} is not part of this job" in result["error"]
        supervisor = json.loads((registry.job_dir(sid) / "proc.json").read_text())["supervisor_pid"]
        assert "not part of this job" in registry.signal_process(sid, supervisor, "KILL")["error"]
        assert alive(stranger.pid) and alive(supervisor)
    finally:
        stranger.kill()
        stranger.wait()


def test_a_recycled_identity_is_refused(registry, alive):
    sid = registry.spawn(ASKS)["session_id"]
    _, sleeper, _ = _ready(registry, sid)
    result = registry.signal_process(sid, sleeper["pid"], "KILL", start_ticks=sleeper["start_ticks"] + 1)
    assert result["status"] == "error" and "pid was reused" in result["error"]
    assert alive(sleeper["pid"])


def test_bad_input_is_one_line_error(registry):
    sid = registry.spawn(ASKS)["session_id"]
    _, sleeper, _ = _ready(registry, sid)
    cases = [((sid, sleeper["pid"], "BOGUS"), "unknown signal"),
             ((sid, sleeper["pid"], "SEGV"), "cannot be sent"),
             ((sid, "12", "TERM"), "pid must be a whole number"),
             ((sid, -3, "TERM"), "pid must be a whole number"),
             ((sid, True, "TERM"), "pid must be a whole number"),
             (("proc_000000000000", sleeper["pid"], "TERM"), "No process with ID")]
    for args, needle in cases:
        result = registry.signal_process(*args)
        assert result["status"] in ("error", "not_found"), result
        assert needle in result["error"] and "\n" not in result["error"], result
    assert registry.tree("../etc")["status"] in ("error", "not_found")
    bad_ticks = registry.signal_process(sid, sleeper["pid"], "TERM", start_ticks="x")
    assert "start_ticks must be a whole number" in bad_ticks["error"]


def test_a_finished_job_shows_its_leftovers_then_nothing(registry, alive):
    sid = registry.spawn("sleep 60 & echo started")["session_id"]
    registry.wait(sid, timeout=10)
    (left,) = wait_until(lambda: _rows(registry, sid))
    assert left["command"] == "sleep 60" and registry.tree(sid)["status"] == "exited"
    assert registry.signal_process(sid, left["pid"], "KILL")["status"] == "ok"
    wait_until(lambda: not alive(left["pid"]))
    assert _rows(registry, sid) == []
    assert "not part of this job" in registry.signal_process(sid, left["pid"], "KILL")["error"]


def test_cli_tree_and_signal_pid(registry, home):
    sid = registry.spawn(ASKS)["session_id"]
    _, sleeper, _ = _ready(registry, sid)

    def cli(*args):
        env = dict(os.environ, HERMES_PROCS_HOME=str(home))
        return subprocess.run([sys.executable, "-m", "hermes_procs", *args], capture_output=True, text=True,
                              env=env, timeout=30)

    shown = cli("tree", sid)
    assert shown.returncode == 0 and "sleep 100" in shown.stdout, shown
    head, *rows = shown.stdout.splitlines()
    column = head.index("WAITS")  # a column of its own: "input" for the process that waits
    marks = {row.split()[0]: row[column:column + 5] for row in rows}
    assert marks == {str(p["pid"]): "input" if p["awaiting_input"] else "     "
                     for p in registry.tree(sid)["processes"]}, shown.stdout
    assert list(marks.values()).count("input") == 1, shown.stdout
    stranger = subprocess.Popen(["sleep", "60"])
    try:
        refused = cli("signal", sid, "KILL", "--pid", str(stranger.pid))
        assert refused.returncode == 1 and refused.stderr.count("\n") == 1
        assert "not part of this job" in refused.stderr and stranger.poll() is None
    finally:
        stranger.kill()
        stranger.wait()
    assert cli("signal", sid, "TERM", "--pid", str(sleeper["pid"])).returncode == 0
    wait_until(lambda: sleeper["pid"] not in [r["pid"] for r in _rows(registry, sid)])


@pytest.mark.timeout(90)
@pytest.mark.skipif(sshd_mod.available() is not None, reason=str(sshd_mod.available()))
def test_tree_and_signal_process_over_a_remote_host(monkeypatch, home):
    server = sshd_mod.start()
    try:
        monkeypatch.setenv("HERMES_PROCS_SSH_ARGS", server.ssh_args)
        url = server.url(server.home_dir())
        remote = ProcessRegistry(host=url)
        hosts = HostSet(ProcessRegistry(home=home), [url])  # what the dashboard holds
        try:
            sid = remote.spawn("sleep 100 & read answer")["session_id"]  # the shell itself asks
            _, sleeper, _ = _ready(remote, sid)
            assert remote.tree(sid)["host"] == remote.host.label
            assert "not part of this job" in remote.signal_process(sid, os.getpid(), "KILL")["error"]
            wait_until(lambda: any(r.get("session_id") == sid for r in hosts.list()), timeout=20)
            assert sleeper["pid"] in [r["pid"] for r in _rows(hosts, sid)]  # routed to the job's host
            assert hosts.signal_process(sid, sleeper["pid"], "KILL")["status"] == "ok"
            wait_until(lambda: sleeper["pid"] not in [r["pid"] for r in _rows(remote, sid)])
            remote.kill(sid, grace=0.2)
        finally:
            remote.conn.close()
            for reg in hosts.remotes.values():
                reg.conn.close()
    finally:
        server.stop()
        shutil.rmtree(server.dir, ignore_errors=True)


def test_signal_numbers_are_the_signals_sent(registry):
    """TERM by number reaches the process as SIGTERM: its exit says so."""
    sid = registry.spawn(f"exec {PY} -c 'import time; time.sleep(60)'")["session_id"]
    (row,) = wait_until(lambda: [r for r in _rows(registry, sid) if r["command"].startswith(sys.executable)])
    assert registry.signal_process(sid, row["pid"], int(signal.SIGTERM))["status"] == "ok"
    assert registry.wait(sid, timeout=10)["exit_code"] == -signal.SIGTERM


def test_signal_reaches_an_unsupervised_job_by_its_group(registry, alive):
    """registry.signal on a job whose supervisor died goes to the root's process group itself
    (identity-checked); it was an AttributeError."""
    sid = registry.spawn("sleep 60")["session_id"]
    proc = json.loads((registry.job_dir(sid) / "proc.json").read_text())
    wait_until(lambda: _rows(registry, sid))
    os.kill(proc["supervisor_pid"], signal.SIGKILL)
    wait_until(lambda: registry.poll(sid).get("unsupervised"))
    assert registry.signal(sid, "TERM") == {"status": "ok", "session_id": sid}
    wait_until(lambda: not alive(proc["pid"]))


def test_descendants_by_a_proc_scan_finds_children_and_grandchildren():
    """stats.tree's fallback where the kernel has no `children` files (it was missing)."""
    from hermes_procs.core.supervisor import proctree

    outer = subprocess.Popen(["sh", "-c", "sleep 60 & wait"])
    try:
        def grandchild():
            found = proctree.descendants(os.getpid())
            kids = [p for p in found if (proctree.stat_fields(p) or ["", "0"])[1] == str(outer.pid)]
            return kids and outer.pid in found

        wait_until(grandchild)
    finally:
        for pid in proctree.descendants(outer.pid):
            os.kill(pid, signal.SIGKILL)
        outer.kill()
        outer.wait()
