"""The warm supervisor template (core/supervisor/template.py): spawns through it, and every way it can fail
(killed, stale or foreign socket, other users, racing starters) still starts each job once."""

from __future__ import annotations

import array
import contextlib
import json
import multiprocessing
import os
import shutil
import signal
import socket
import struct
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest
from conftest import pid_alive, wait_until

from hermes_procs.core import ProcessRegistry
from hermes_procs.core.supervisor import template


@pytest.fixture(autouse=True)
def _long_idle(monkeypatch):
    monkeypatch.setenv("HERMES_PROCS_TEMPLATE_IDLE", "120")


def _templates(home) -> list[int]:
    """Pids of the template processes serving `home` (the supervisors and spares it forks share
    its command line, not its name; a child of it has its name for a moment, but never leads a
    session under it)."""
    return _named(home, template.TEMPLATE_NAME)


def _spares(home) -> list[int]:
    """Pids of the spare supervisors waiting for the next spawn of `home`."""
    return _named(home, template.SPARE_NAME)


def _named(home, comm_name: bytes) -> list[int]:
    """Live session leaders of `home` named `comm_name`. Name, state and session come from one
    read of /proc/PID/stat: a child forked by the template is named like it until it renames
    itself and then leads a session of its own, and reading its name and its session apart
    could catch it between the two."""
    found = []
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/cmdline", "rb") as fh:
                argv = fh.read().split(b"\0")
            with open(f"/proc/{name}/stat", "rb") as fh:
                head, tail = fh.read().split(b" (", 1)[1].rsplit(b")", 1)
        except (OSError, ValueError):
            continue
        state, _ppid, _pgrp, sid = tail.split()[:4]
        if head == comm_name and os.fsencode(home) in argv and state not in (b"Z", b"X") and int(sid) == int(name) \
                and not _in_removed_folder(int(name)):
            found.append(int(name))
    return found


def _in_removed_folder(pid: int) -> bool:
    """A template (and its spare) works in its home: one whose home was removed belongs to an
    earlier run of the test in a folder of the same path, and leaves soon."""
    try:
        return os.readlink(f"/proc/{pid}/cwd").endswith(" (deleted)")
    except OSError:
        return True


def _warm(registry, home) -> int:
    """Spawn once (cold: it starts the template) and return the template's pid once it serves."""
    job = registry.spawn("true")
    assert job["status"] == "running", job
    wait_until(lambda: (home / template.sock_name()).exists() and _templates(home), timeout=15)
    return _templates(home)[0]


def _supervisor(registry, job) -> int:
    return json.loads((registry.job_dir(job["session_id"]) / "proc.json").read_text())["supervisor_pid"]


def _ppid_sid(pid: int) -> tuple[int, int]:
    with open(f"/proc/{pid}/stat") as fh:
        fields = fh.read().rsplit(")", 1)[1].split()
    return int(fields[1]), int(fields[3])


def _cold(registry, job) -> bool:
    """The supervisor says how it was started (proc.json's `launch`); a cold-started one is a child
    of this process (checked while it still runs), a forked one never is."""
    proc = json.loads((registry.job_dir(job["session_id"]) / "proc.json").read_text())
    try:
        assert (_ppid_sid(proc["supervisor_pid"])[0] == os.getpid()) == (proc["launch"] == "cold"), proc
    except (FileNotFoundError, ProcessLookupError):  # it has finished already
        pass
    return proc["launch"] == "cold"


def test_spawn_goes_through_the_template_and_detaches(registry, home):
    tpl = _warm(registry, home)
    job = registry.spawn("read line; echo got $line")
    assert job["status"] == "running", job
    sup = _supervisor(registry, job)
    ppid, sid = _ppid_sid(sup)
    assert ppid not in (os.getpid(), tpl) and sid == sup  # reparented away, its own session
    assert registry.submit(job["session_id"], "hi")["status"] == "ok"
    done = registry.wait(job["session_id"], timeout=30)
    assert done["exit_code"] == 0 and "got hi" in done["output"]
    assert (home / template.sock_name()).stat().st_mode & 0o777 == 0o600


def test_killed_template_leaves_jobs_running_and_spawns_working(registry, home):
    tpl = _warm(registry, home)
    job = registry.spawn("read line; echo got $line")
    assert not _cold(registry, job)
    os.kill(tpl, signal.SIGKILL)
    wait_until(lambda: not pid_alive(tpl))
    assert (home / template.sock_name()).exists()  # stale now: nobody holds the lock
    later = registry.spawn("echo later")
    assert later["status"] == "running" and _cold(registry, later)
    assert registry.wait(later["session_id"], timeout=30)["output"].strip() == "later"
    assert registry.poll(job["session_id"])["status"] == "running"
    registry.submit(job["session_id"], "still")
    assert "got still" in registry.wait(job["session_id"], timeout=30)["output"]
    wait_until(lambda: _templates(home) and _templates(home) != [tpl], timeout=15)  # a new one took over
    wait_until(lambda: (home / template.sock_name()).exists())
    assert not _cold(registry, registry.spawn("true"))


def test_stale_socket_file_is_replaced(registry, home):
    home.mkdir(exist_ok=True)
    stale = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    folder = os.open(home, os.O_PATH)  # through the folder's fd: the full path may pass 108 bytes
    try:
        stale.bind(f"/proc/self/fd/{folder}/{template.sock_name()}")
    finally:
        os.close(folder)
    stale.close()  # a socket file nobody listens on
    os.chmod(home / template.sock_name(), 0o600)
    job = registry.spawn("echo one")
    assert job["status"] == "running" and _cold(registry, job)
    tpl = wait_until(lambda: _templates(home), timeout=15)[0]
    wait_until(lambda: not _cold(registry, registry.spawn("true")), timeout=15)
    assert _templates(home) == [tpl]


@pytest.mark.parametrize("damage", ["mode", "owner", "not_a_socket"])
def test_foreign_or_open_socket_is_never_used(registry, home, damage):
    if damage == "owner" and os.getuid() != 0:
        pytest.skip("changing a file's owner needs root")
    _warm(registry, home)
    path = home / template.sock_name()
    if damage == "mode":
        os.chmod(path, 0o666)
    elif damage == "owner":
        os.chown(path, 65534, 65534)
    else:
        path.unlink()
        path.write_text("")
        os.chmod(path, 0o600)
    job = registry.spawn("echo cold")
    assert job["status"] == "running" and _cold(registry, job)
    assert registry.wait(job["session_id"], timeout=30)["output"].strip() == "cold"


@pytest.mark.skipif(os.getuid() != 0, reason="needs root to act as another user")
def test_template_refuses_another_user(tmp_path):
    home = Path(tempfile.mkdtemp(prefix="hp-tpl-", dir="/tmp"))  # reachable by another user
    try:
        registry = ProcessRegistry(home=home)
        tpl = _warm(registry, home)
        os.chmod(home, 0o755)
        os.chmod(home / template.sock_name(), 0o666)
        marker = tmp_path / "jobdir"
        marker.mkdir(mode=0o777)
        assert os.waitstatus_to_exitcode(_ask_as_nobody(home / template.sock_name(), marker)) == 0
        assert not (marker / "supervisor.log").exists() and not (marker / "proc.json").exists()
        assert pid_alive(tpl)
    finally:
        shutil.rmtree(home, ignore_errors=True)  # its template goes with its socket


def _ask_as_nobody(path: Path, jobdir: Path) -> int:
    """Fork, become nobody, ask the template for a supervisor; exit 0 if it was refused (no
    acknowledgement on the connection, the report pipe closed unwritten)."""
    limits = template.caller_limits()  # here: nobody may not read this interpreter's stdlib (resource)
    pid = os.fork()
    if pid == 0:
        code = 3
        try:
            os.setgroups([])
            os.setgid(65534)
            os.setuid(65534)
            sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            sock.connect(str(path))
            r, w = os.pipe()
            body = json.dumps({"args": [str(jobdir), "0", "30", "120", "/", "--", "/bin/true"], "env": {},
                               "umask": 0o22, "limits": limits}).encode()
            try:
                sock.sendmsg([struct.pack("!I", len(body)), body],
                             [(socket.SOL_SOCKET, socket.SCM_RIGHTS, array.array("i", [w]))])
                os.close(w)
                w = -1
                ack = sock.recv(64)
            except (BrokenPipeError, ConnectionResetError):  # closed before or without reading us
                ack = b""
            if w >= 0:
                os.close(w)
            code = 0 if ack == b"" and os.read(r, 64) == b"" else 1
        except BaseException as exc:
            os.write(2, f"as nobody: {exc!r}\n".encode())
        finally:
            os._exit(code)
    return os.waitpid(pid, 0)[1]


def _spawn_in_child(home: str, barrier, out) -> None:
    barrier.wait(30)
    job = ProcessRegistry(home=home).spawn("echo raced")
    out.put(job.get("status"))


def test_concurrent_first_spawns_start_one_template(home):
    ctx = multiprocessing.get_context("spawn")
    barrier, out = ctx.Barrier(4), ctx.Queue()
    procs = [ctx.Process(target=_spawn_in_child, args=(str(home), barrier, out)) for _ in range(4)]
    for p in procs:
        p.start()
    statuses = [out.get(timeout=60) for _ in procs]
    for p in procs:
        p.join(60)
    assert statuses == ["running"] * 4
    wait_until(lambda: (home / template.sock_name()).exists(), timeout=15)
    assert len(_templates(home)) == 1
    reg = ProcessRegistry(home=home)
    rows = reg.list()
    assert len(rows) == 4
    for row in rows:
        assert reg.wait(row["session_id"], timeout=30)["output"].strip() == "raced"


def test_each_spawn_gets_its_own_env_cwd_and_umask(registry, home, tmp_path, monkeypatch):
    _warm(registry, home)
    first_dir, second_dir = tmp_path / "a", tmp_path / "b"
    first_dir.mkdir()
    second_dir.mkdir()
    monkeypatch.setenv("HP_MARK", "first")
    old = os.umask(0o027)
    try:
        a = registry.spawn("echo $HP_ONLY_A $HP_MARK; pwd; umask", env={"HP_ONLY_A": "leak"}, cwd=str(first_dir))
    finally:
        os.umask(old)
    monkeypatch.setenv("HP_MARK", "second")
    b = registry.spawn("echo [$HP_ONLY_A] $HP_MARK; pwd; umask", cwd=str(second_dir))
    assert not _cold(registry, a) and not _cold(registry, b)
    out_a = registry.wait(a["session_id"], timeout=30)["output"].split()
    out_b = registry.wait(b["session_id"], timeout=30)["output"].split()
    assert out_a == ["leak", "first", str(first_dir), "0027"]
    assert out_b == ["[]", "second", str(second_dir), f"{old:04o}"]


def test_back_to_back_spawns_all_go_through_the_template(registry, home):
    # The request used to end with an empty send: when the forked supervisor had already
    # answered and closed the connection, it failed (EPIPE) and the spawn went cold (about 1
    # spawn in 200 on a loaded machine).
    _warm(registry, home)
    jobs = [registry.spawn("true") for _ in range(150)]
    assert [job["session_id"] for job in jobs if _cold(registry, job)] == []


def test_a_spare_supervisor_takes_the_next_spawn_and_is_replaced(registry, home):
    _warm(registry, home)
    wait_until(lambda: len(_spares(home)) == 1, timeout=15)
    spare = _spares(home)[0]
    job = registry.spawn("echo hi")
    assert _supervisor(registry, job) == spare and not _cold(registry, job)
    assert registry.wait(job["session_id"], timeout=30)["output"].strip() == "hi"
    wait_until(lambda: len(_spares(home)) == 1 and _spares(home)[0] != spare, timeout=15)


def test_spare_leaves_with_its_template_and_never_holds_the_lock(registry, home):
    tpl = _warm(registry, home)
    wait_until(lambda: len(_spares(home)) == 1, timeout=15)
    spare = _spares(home)[0]
    os.kill(tpl, signal.SIGKILL)
    wait_until(lambda: not pid_alive(spare), timeout=15)
    job = registry.spawn("echo after")  # cold: a new template can take the lock at once
    assert _cold(registry, job)
    assert registry.wait(job["session_id"], timeout=30)["output"].strip() == "after"
    wait_until(lambda: len(_templates(home)) == 1 and _templates(home)[0] != tpl, timeout=15)


@pytest.mark.parametrize("how", [signal.SIGSTOP, signal.SIGKILL])
def test_a_stopped_or_killed_spare_is_bypassed(registry, home, how):
    _warm(registry, home)
    wait_until(lambda: len(_spares(home)) == 1, timeout=15)
    spare = _spares(home)[0]
    os.kill(spare, how)
    try:
        for _ in range(3):  # each through the template (a stopped spare is waited for 0.25 s)
            job = registry.spawn("echo ok")
            assert not _cold(registry, job) and _supervisor(registry, job) != spare
            assert registry.wait(job["session_id"], timeout=30)["output"].strip() == "ok"
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.kill(spare, signal.SIGKILL)


@pytest.mark.parametrize("stopped", ["template", "template and spare"])
def test_a_stopped_template_is_bypassed_at_once_and_replaced(registry, home, stopped):
    # Each spawn used to wait 30 s for a template that could not answer (issue 19 item 7).
    tpl = _warm(registry, home)
    wait_until(lambda: len(_spares(home)) == 1, timeout=15)
    frozen = [tpl, *(_spares(home) if stopped == "template and spare" else [])]
    for pid in frozen:
        os.kill(pid, signal.SIGSTOP)
    try:
        for _ in range(3):
            t0 = time.monotonic()
            job = registry.spawn("echo ok")
            took = time.monotonic() - t0
            assert job["status"] == "running" and took < 5, (job, took)
            assert registry.wait(job["session_id"], timeout=30)["output"].strip() == "ok"
        # a new template took over from the stopped one: spawns are warm again
        wait_until(lambda: not _cold(registry, registry.spawn("true")), timeout=15)
        assert [pid for pid in _templates(home) if pid != tpl]
    finally:
        for pid in frozen:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)


PROBE = ("import os, resource as r; "
         "print(os.getpriority(0, 0), *r.getrlimit(r.RLIMIT_NOFILE), *r.getrlimit(r.RLIMIT_CORE))")
# A client process with its own nice value and limits (when given); it spawns PROBE and prints
# the job's answer and how its supervisor was started.
CALLER = f"""
import json, os, resource, sys
if len(sys.argv) > 2:
    os.nice(7)
    resource.setrlimit(resource.RLIMIT_NOFILE, (200, 300))
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
from hermes_procs.core import ProcessRegistry
reg = ProcessRegistry(home=sys.argv[1])
job = reg.spawn(sys.executable + " -c '{PROBE}'")
out = reg.wait(job["session_id"], timeout=30)["output"]
print(out.strip(), json.loads((reg.job_dir(job["session_id"]) / "proc.json").read_text())["launch"])
"""


def _call(home, limited: bool) -> list[str]:
    argv = [sys.executable, "-c", CALLER, str(home), *(["limited"] if limited else [])]
    return subprocess.run(argv, capture_output=True, text=True, check=True, timeout=60).stdout.split()


def _privileged() -> bool:
    """Whether this process may raise a hard limit and lower its nice value (root without
    CAP_SYS_RESOURCE, as in some containers, may not)."""
    probe = ("import os, resource as r; r.setrlimit(r.RLIMIT_NOFILE, (200, 300)); os.nice(7); "
             "r.setrlimit(r.RLIMIT_NOFILE, (200, 400)); os.setpriority(os.PRIO_PROCESS, 0, 0)")
    return subprocess.run([sys.executable, "-c", probe], capture_output=True).returncode == 0


@pytest.mark.parametrize("template_of", ["a limited process", "an ordinary process"])
def test_a_job_gets_its_callers_limits_and_nice_not_the_templates(home, template_of):
    # A job forked by the template used to get the nice value and resource limits of whoever
    # started the template, not its caller's (issue 19 item 12).
    _call(home, limited=template_of == "a limited process")  # cold: it starts the template
    wait_until(lambda: (home / template.sock_name()).exists() and _templates(home), timeout=15)
    limited = template_of == "an ordinary process"  # the caller differs from the template's starter
    *values, launch = _call(home, limited)
    expected = ["7", "200", "300", "0", "0"] if limited else \
        subprocess.run([sys.executable, "-c", PROBE], capture_output=True, text=True).stdout.split()
    assert values == expected
    # lowering is always allowed (warm); raising needs privileges, or the spawn goes cold
    assert launch == ("template" if limited or _privileged() else "cold")


def test_template_exits_when_idle_or_its_socket_is_removed(registry, home, monkeypatch):
    monkeypatch.setenv("HERMES_PROCS_TEMPLATE_IDLE", "2")
    tpl = _warm(registry, home)
    wait_until(lambda: not pid_alive(tpl), timeout=20)
    assert not (home / template.sock_name()).exists()
    monkeypatch.setenv("HERMES_PROCS_TEMPLATE_IDLE", "300")
    tpl = _warm(registry, home)
    (home / template.sock_name()).unlink()
    wait_until(lambda: not pid_alive(tpl), timeout=20)


def test_template_can_be_turned_off(registry, home, monkeypatch):
    monkeypatch.setenv("HERMES_PROCS_TEMPLATE_IDLE", "0")
    for _ in range(2):
        job = registry.spawn("true")
        assert _cold(registry, job)
    assert not (home / template.sock_name()).exists() and _templates(home) == []
