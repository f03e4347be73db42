"""Issue 8 class 16 and issue 10 item 7: a spawn that cannot work is refused first with a clear
error, and a spawn that fails (exec, fork) leaves nothing behind: no folder, no ghost row."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest


def _nothing_left(registry, home) -> None:
    assert sorted(os.listdir(home / "jobs")) == []
    assert registry.list() == []


@pytest.mark.parametrize("size", [131_072, 1_100_000])
def test_command_too_long_for_exec(registry, home, size):
    result = registry.spawn("echo " + "x" * size)
    assert result["status"] == "error" and "exec argument" in result["error"], result
    assert len(result["error"]) < 400
    _nothing_left(registry, home)


def test_env_value_too_long_for_exec(registry, home):
    result = registry.spawn("true", env={"BIG": "x" * 200_000})
    assert result["status"] == "error" and "BIG" in result["error"], result
    _nothing_left(registry, home)


def test_env_too_large_in_total(registry, home):
    env = {f"V{i}": "x" * 100_000 for i in range(40)}  # each fits, together far over ARG_MAX
    result = registry.spawn("true", env=env)
    assert result["status"] == "error" and "together" in result["error"], result
    _nothing_left(registry, home)


@pytest.mark.parametrize("pty", [False, True])
def test_exec_failure_is_a_clear_spawn_error(registry, home, tmp_path, monkeypatch, pty):
    shell = tmp_path / "badshell"
    shell.write_text("#!/nonexistent/interpreter\n")
    shell.chmod(0o755)
    monkeypatch.setenv("HERMES_PROCS_SHELL", f"{shell} -c")
    result = registry.spawn("echo hi", pty=pty)
    assert result["status"] == "error", result
    assert "cannot run" in result["error"] and "No such file" in result["error"], result
    _nothing_left(registry, home)


SPAWN = ("import json, os, sys; from hermes_procs.core import ProcessRegistry; "
         "reg = ProcessRegistry(sys.argv[1]); "
         "sys.stdin.readline(); "  # the test moves us into the pids cgroup meanwhile
         "print(json.dumps([reg.spawn('echo hi', pty=sys.argv[2] == 'pty'), os.listdir(reg.jobs_dir), reg.list()]))")


@pytest.mark.parametrize("max_pids, who, mode", [(1, "registry", "pipes"), (2, "supervisor", "pipes"),
                                                 (2, "supervisor", "pty")])
def test_fork_failure_leaves_nothing(tmp_path, pids_cgroup, max_pids, who, mode):
    """EAGAIN from fork: in the registry (no supervisor) or in the supervisor (no job)."""
    _group, enter = pids_cgroup
    proc = subprocess.Popen([sys.executable, "-c", SPAWN, str(tmp_path / "home"), mode], stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    enter(proc.pid, max_pids)
    out, err = proc.communicate("go\n", timeout=60)
    result, names, rows = json.loads(out)
    assert result["status"] == "error", (who, result, err)
    assert "fork" in result["error"] or "temporarily unavailable" in result["error"], result
    assert names == [] and rows == []


@pytest.mark.parametrize("pty", [False, True])
@pytest.mark.parametrize("idle", ["0", "120"])  # a cold supervisor, and one forked by the template
def test_job_inherits_no_fd_of_its_supervisor(registry, home, monkeypatch, pty, idle):
    """A pipe job is posix_spawned (every other fd must be close-on-exec), a PTY job forked by
    ptyprocess: either way the job holds its stdin, stdout and stderr, nothing of the
    supervisor's log, socket or pipes (3 is the shell's own listing of the folder)."""
    monkeypatch.setenv("HERMES_PROCS_TEMPLATE_IDLE", idle)
    umask = os.umask(0o027)
    os.umask(umask)
    for _ in range(2):  # the first spawn starts the template, the second goes through it
        job = registry.spawn("for f in /proc/$$/fd/*; do echo ${f##*/}; done; umask; pwd", pty=pty, cwd="/usr")
        out = registry.wait(job["session_id"], timeout=30)["output"].split()
        assert out[-2:] == [f"{umask:04o}", "/usr"], out
        assert set(out[:-2]) <= {"0", "1", "2", "3"}, out


@pytest.mark.parametrize("pty", [False, True])
@pytest.mark.parametrize("idle", ["0", "120"])
def test_a_shell_by_name_is_found_in_the_jobs_path(registry, home, tmp_path, monkeypatch, pty, idle):
    """The supervisor looks the program up itself (a template-forked one does not take the job's
    environment as its own): a shell given by name comes from the job's PATH, first entry first."""
    monkeypatch.setenv("HERMES_PROCS_TEMPLATE_IDLE", idle)
    tools = tmp_path / "tools"
    tools.mkdir()
    (tools / "mysh").write_text("#!/bin/sh\necho via-mysh\nexec /bin/sh \"$@\"\n")
    (tools / "mysh").chmod(0o755)
    monkeypatch.setenv("PATH", f"{tools}:{os.environ['PATH']}")
    monkeypatch.setenv("HERMES_PROCS_SHELL", "mysh -c")
    for _ in range(2):
        job = registry.spawn("echo $HP_X", env={"HP_X": "from-env"}, pty=pty)
        assert job["status"] == "running", job
        assert registry.wait(job["session_id"], timeout=30)["output"].split() == ["via-mysh", "from-env"]
