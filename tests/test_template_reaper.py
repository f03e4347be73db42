"""The template as the reaper of what it forks (core/supervisor/reaper.py), where pid 1 collects no exits:
forced here with HERMES_PROCS_REAPER=on (the container tests meet the real case, a container
whose pid 1 is `sleep infinity`)."""

from __future__ import annotations

import json
import os
import time

import pytest
from conftest import pid_alive, wait_until
from test_template import _templates

from hermes_procs.core.supervisor import template


@pytest.fixture(autouse=True)
def _reaping(monkeypatch, home):
    """The reaper on; afterwards its template (which never idles out) is sent away: its socket
    removed, it leaves once what it adopted has ended."""
    monkeypatch.setenv("HERMES_PROCS_REAPER", "on")
    monkeypatch.setenv("HERMES_PROCS_TEMPLATE_IDLE", "1")
    yield
    for sock in home.glob("template-*.sock"):
        sock.unlink()
    wait_until(lambda: not _templates(home), timeout=15)


def _stat(pid: int) -> tuple[str, int]:
    """(state, ppid) of a process, ("", 0) once it is gone."""
    try:
        with open(f"/proc/{pid}/stat") as fh:
            fields = fh.read().rsplit(")", 1)[1].split()
    except OSError:
        return "", 0
    return fields[0], int(fields[1])


def _proc(registry, sid: str) -> dict:
    return json.loads((registry.job_dir(sid) / "proc.json").read_text())


def _template_of(registry, home, sid: str) -> int:
    """The template that adopted the job's supervisor. Just after the fork, the supervisor's
    parent may still be the child that forked it (it exits at once, and a soak run read its
    pid): so the parent is taken once it is the home's template."""
    supervisor = _proc(registry, sid)["supervisor_pid"]
    return wait_until(lambda: (ppid := _stat(supervisor)[1]) in _templates(home) and ppid, timeout=10)


def test_the_first_spawn_goes_through_a_template_that_adopts_and_reaps(registry, home):
    job = registry.spawn("sleep 1.5 >/dev/null 2>&1 & echo started")  # the sleep outlives job and supervisor
    assert job["status"] == "running", job
    proc = _proc(registry, job["session_id"])
    assert proc["launch"] == "template"  # not started cold, whose exit nobody would collect
    tpl = _template_of(registry, home, job["session_id"])  # the template adopted its supervisor
    assert tpl not in (0, os.getpid(), 1)
    assert registry.wait(job["session_id"], timeout=30)["exit_code"] == 0
    wait_until(lambda: _stat(proc["supervisor_pid"])[0] == "", timeout=10)  # reaped, no zombie
    leftover = [p for p in map(int, filter(str.isdigit, os.listdir("/proc"))) if _stat(p)[1] == tpl
                and open(f"/proc/{p}/cmdline", "rb").read().startswith(b"sleep")]
    assert leftover, "the job's leftover was adopted by the template"
    wait_until(lambda: _stat(leftover[0])[0] == "", timeout=10)  # and collected when it ended
    time.sleep(1.5)  # past its idle time (1 s): a reaper stays
    assert pid_alive(tpl)


def test_it_leaves_after_what_it_adopted_has_ended(registry, home):
    job = registry.spawn("sleep 2.5")
    tpl = _template_of(registry, home, job["session_id"])
    (home / template.sock_name()).unlink()  # as an upgrade or a new template would
    time.sleep(1.3)  # it noticed (within its 1 s look), stopped serving, waits for its adopted supervisor
    assert pid_alive(tpl) and registry.poll(job["session_id"])["status"] in ("running", "exited")
    wait_until(lambda: not pid_alive(tpl), timeout=15)
    assert registry.poll(job["session_id"])["exit_code"] == 0
    again = registry.spawn("true")  # and a new one serves
    assert _proc(registry, again["session_id"])["launch"] == "template"
