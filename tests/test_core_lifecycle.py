"""Spawn, poll, wait, read_log and list against real jobs: the everyday path of the API."""

import json
import os
import stat
import threading
import time
from pathlib import Path

from conftest import supervisor_gone, wait_until

from hermes_procs.core import ProcessRegistry


def test_spawn_poll_wait_log(registry):
    job = registry.spawn("echo hello; sleep 0.2; echo bye; exit 3", name="greeter")
    assert job["status"] == "running" and job["pid"] > 0 and job["session_id"].startswith("proc_")
    assert len(job["session_id"]) == 17
    polled = registry.poll(job["session_id"])
    assert polled["status"] == "running" and polled["command"].startswith("echo hello")
    done = registry.wait(job["session_id"], timeout=10)
    assert done["status"] == "exited" and done["exit_code"] == 3
    assert done["completion_reason"] == "exited" and "bye" in done["output"]
    log = registry.read_log(job["session_id"])
    assert log["output"] == "hello\nbye" and log["total_lines"] == 2
    polled = registry.poll(job["session_id"])
    assert polled["exit_code"] == 3 and polled["signal"] is None and polled["leftover_pids"] == []
    json.dumps(polled)


def test_read_log_paging(registry):
    job = registry.spawn("seq 1 1000")
    registry.wait(job["session_id"], timeout=10)
    tail = registry.read_log(job["session_id"], limit=5)
    assert tail["output"].splitlines() == ["996", "997", "998", "999", "1000"]
    page = registry.read_log(job["session_id"], offset=10, limit=3)
    assert page["output"].splitlines() == ["11", "12", "13"] and page["total_lines"] == 1000


def test_list_newest_first_and_filters(registry):
    first = registry.spawn("true", task_id="t1")
    second = registry.spawn("true", task_id="t2", session_key="s")
    rows = registry.list()
    assert [r["session_id"] for r in rows][:2] == [second["session_id"], first["session_id"]]
    assert [r["session_id"] for r in registry.list(task_id="t1")] == [first["session_id"]]
    assert [r["session_id"] for r in registry.list(session_key="s")] == [second["session_id"]]
    row = rows[0]
    for field in ("session_id", "name", "command", "cwd", "pid", "pty", "status", "started_at",
                  "uptime_seconds", "output_preview"):
        assert field in row


def test_prefix_ids(registry):
    job = registry.spawn("sleep 5")
    sid = job["session_id"]
    assert registry.poll(sid[5:9])["session_id"] == sid
    assert registry.poll("proc_" + sid[5:11])["session_id"] == sid
    other = registry.spawn("sleep 5")
    common = os.path.commonprefix([sid[5:], other["session_id"][5:]])  # noqa: RUF071 - characters wanted
    if len(common) >= 4:
        assert "ambiguous" in registry.poll(common)["error"]


def test_ambiguous_prefix_is_an_error(home):
    reg = ProcessRegistry(home=home)
    for suffix in ("abcd00000001", "abcd00000002"):
        (home / "jobs" / f"proc_{suffix}").mkdir()
    result = reg.poll("abcd")
    assert result == {"status": "error", "error": "Session id prefix abcd is ambiguous: it matches 2 processes "
                                                  "(proc_abcd00000001, proc_abcd00000002)"}


def test_wait_wakes_promptly_on_exit(registry):
    job = registry.spawn("sleep 0.3")
    start = time.monotonic()
    result = registry.wait(job["session_id"], timeout=30)
    elapsed = time.monotonic() - start
    assert result["status"] == "exited" and elapsed < 2.0


def test_wait_timeout_clamp_and_errors(registry, monkeypatch):
    job = registry.spawn("sleep 30")
    result = registry.wait(job["session_id"], timeout=0.2)
    assert result["status"] == "timeout" and "timeout_note" in result
    assert registry.wait(job["session_id"], timeout=0)["status"] == "error"
    assert registry.wait(job["session_id"], timeout=-1)["status"] == "error"
    monkeypatch.setenv("HERMES_PROCS_MAX_WAIT", "0.3")
    clamped = registry.wait(job["session_id"], timeout=100)
    assert clamped["status"] == "timeout" and "clamped" in clamped["timeout_note"]


def test_wait_interrupt(registry):
    job = registry.spawn("sleep 30")
    stop = threading.Event()
    threading.Timer(0.2, stop.set).start()
    result = registry.wait(job["session_id"], timeout=20, interrupt=stop)
    assert result["status"] == "interrupted"


def test_pty_repl_submit(registry):
    job = registry.spawn("python3 -i", pty=True)
    wait_until(lambda: ">>>" in registry.read_log(job["session_id"])["output"])
    assert registry.submit(job["session_id"], "print(6*7)")["status"] == "ok"
    # Ctrl-D only after the next prompt: an EOF typed while the REPL is busy can be lost
    def answered_and_prompting():
        after = registry.read_log(job["session_id"])["output"].split("print(6*7)")[-1]
        return after.rstrip().endswith("42\n>>>")

    wait_until(answered_and_prompting)
    assert registry.close_stdin(job["session_id"])["status"] == "ok"
    result = registry.wait(job["session_id"], timeout=30)
    assert result.get("exit_code") == 0, (result, registry.read_log(job["session_id"])["output"][-300:])


def test_pty_env_and_size(registry):
    job = registry.spawn("echo $TERM $PAGER $GIT_PAGER; stty size", pty=True, rows=33, cols=91)
    registry.wait(job["session_id"], timeout=10)
    out = registry.read_log(job["session_id"])["output"]
    assert "xterm-256color cat cat" in out and "33 91" in out


def test_pty_has_controlling_terminal(registry):
    job = registry.spawn("tty; python3 -c 'import os; print(os.getsid(0) == os.getpid())'", pty=True)
    registry.wait(job["session_id"], timeout=10)
    out = registry.read_log(job["session_id"])["output"]
    assert "/dev/pts/" in out and "not a tty" not in out


def test_resize_reaches_the_job(registry):
    job = registry.spawn("trap 'stty size' WINCH; echo ready; while true; do sleep 0.05; done", pty=True)
    wait_until(lambda: "ready" in registry.read_log(job["session_id"])["output"])  # the trap is set
    assert registry.resize(job["session_id"], 40, 100)["status"] == "ok"
    wait_until(lambda: "40 100" in registry.read_log(job["session_id"])["output"])


def test_pipe_stdin_write_and_close(registry):
    job = registry.spawn("cat")
    assert registry.write(job["session_id"], "abc")["bytes_written"] == 3
    assert registry.submit(job["session_id"], "def")["bytes_written"] == 4
    wait_until(lambda: registry.read_log(job["session_id"])["output"] == "abcdef")
    assert registry.close_stdin(job["session_id"])["status"] == "ok"
    assert registry.wait(job["session_id"], timeout=10)["exit_code"] == 0
    assert registry.write(job["session_id"], "late")["status"] == "already_exited"


def test_write_after_close_is_an_error(registry):
    job = registry.spawn("sleep 30")
    registry.close_stdin(job["session_id"])
    result = registry.write(job["session_id"], "x")
    assert result["status"] == "error" and "closed" in result["error"]


def test_input_history_records_source(registry):
    job = registry.spawn("cat")
    registry.submit(job["session_id"], "from agent")
    registry.submit(job["session_id"], "from human", source="human")
    history = registry.inputs(job["session_id"])
    assert [(h["source"], h["preview"]) for h in history] == [("agent", "from agent\n"), ("human", "from human\n")]


def test_state_home_is_private(registry, home):
    job = registry.spawn("echo x")
    registry.wait(job["session_id"], timeout=10)
    assert stat.S_IMODE(home.stat().st_mode) == 0o700
    jobdir = home / "jobs" / job["session_id"]
    assert stat.S_IMODE(jobdir.stat().st_mode) == 0o700
    for path in jobdir.iterdir():
        assert stat.S_IMODE(path.stat().st_mode) & 0o077 == 0, path


def test_environment_drops_secrets(registry, monkeypatch):
    monkeypatch.setenv("MY_API_KEY", "sekrit1")
    monkeypatch.setenv("GITHUB_TOKEN", "sekrit2")
    monkeypatch.setenv("PLAIN_VALUE", "visible")
    job = registry.spawn("env", env={"EXTRA": "given"})
    registry.wait(job["session_id"], timeout=10)
    out = registry.read_log(job["session_id"], limit=1000)["output"]
    assert "sekrit" not in out and "PLAIN_VALUE=visible" in out
    assert "EXTRA=given" in out and "PYTHONUNBUFFERED=1" in out


def test_given_environ_and_shell(registry, monkeypatch):
    """`environ` is the job's whole environment (nothing filtered or added, nothing on disk);
    `shell` is the argv the command is appended to, and a rerun keeps it."""
    monkeypatch.setenv("VISIBLE_ELSEWHERE", "1")
    environ = {"PATH": os.environ["PATH"], "MY_DB_PASSWORD": "pw-in-env-9", "KEEP": "k"}
    job = registry.spawn("env; echo \"shell=$0\"", environ=environ, env={"KEEP": "over"},
                         shell=["/bin/sh", "-c"])
    out = registry.wait(job["session_id"], timeout=10)["output"]
    names = {line.split("=", 1)[0] for line in out.splitlines() if "=" in line}
    assert "MY_DB_PASSWORD=pw-in-env-9" in out and "KEEP=over" in out and "shell=/bin/sh" in out
    assert "VISIBLE_ELSEWHERE" not in names and "PYTHONUNBUFFERED" not in names
    meta = (registry.job_dir(job["session_id"]) / "meta.json").read_text()
    assert "pw-in-env-9" not in meta and json.loads(meta)["shell"] == ["/bin/sh", "-c"]
    again = registry.restart(job["session_id"])
    assert "shell=/bin/sh" in registry.wait(again["session_id"], timeout=10)["output"]
    bad = registry.spawn("true", shell=["/no/such/shell", "-c"])
    assert bad["status"] == "error" and "Shell not found: /no/such/shell" in bad["error"]
    assert registry.spawn("true", shell="bash")["status"] == "error"
    assert registry.spawn("true", environ={"A": 1, "": "x"})["status"] == "error"


def test_home_resolution_order(tmp_path, monkeypatch):
    monkeypatch.delenv("HERMES_PROCS_HOME", raising=False)
    monkeypatch.setenv("HERMES_HOME", str(tmp_path / "hh"))
    assert ProcessRegistry().home == tmp_path / "hh" / "procs"
    monkeypatch.setenv("HERMES_PROCS_HOME", str(tmp_path / "hp"))
    assert ProcessRegistry().home == tmp_path / "hp"
    assert ProcessRegistry(home=tmp_path / "explicit").home == tmp_path / "explicit"


def test_long_home_path_socket(tmp_path):
    deep = tmp_path / ("d" * 60) / ("e" * 60)
    reg = ProcessRegistry(home=deep)
    job = reg.spawn("cat")
    assert len(str(deep / "jobs" / job["session_id"] / "sock")) > 108
    assert reg.submit(job["session_id"], "hi")["status"] == "ok"
    wait_until(lambda: "hi" in reg.read_log(job["session_id"])["output"])
    assert reg.kill(job["session_id"], grace=0.5)["status"] == "killed"


def test_max_runtime_times_out(registry):
    job = registry.spawn("sleep 30", max_runtime=0.3)
    result = registry.wait(job["session_id"], timeout=10)
    assert result["completion_reason"] == "timed_out"
    for bad in (0, -1, float("nan"), float("inf"), True, "5"):
        assert registry.spawn("true", max_runtime=bad)["status"] == "error"


def test_prune_keeps_running_and_newest(registry):
    done = []
    for _ in range(3):  # one after the other: "newest" is by end time
        done.append(registry.spawn("true"))
        registry.wait(done[-1]["session_id"], timeout=10)
        supervisor_gone(registry, done[-1]["session_id"])
    running = registry.spawn("sleep 30")
    result = registry.prune(keep_count=1)
    assert result["pruned"] == 2
    left = {r["session_id"] for r in registry.list()}
    assert left == {running["session_id"], done[-1]["session_id"]}


def test_prune_that_cannot_delete_says_so_and_counts_only_what_went():
    """A read-only jobs folder (for a second user, `nobody`, when the suite runs as root, who
    may delete anything): prune said `pruned 2` with status ok and left both folders."""
    import shutil
    import tempfile

    from hermes_procs.core.registry import events_compact, retention, stacking  # noqa: F401 - loaded before the fork

    base = Path(tempfile.mkdtemp(prefix="hp-ro-", dir="/tmp"))  # nobody can pass through it (pytest's is 0700)
    os.chmod(base, 0o711)
    home = base / "home"
    registry = ProcessRegistry(home=home)
    try:
        done = [registry.spawn("true")["session_id"] for _ in range(2)]
        for sid in done:
            registry.wait(sid, timeout=10)
            supervisor_gone(registry, sid)
        result = _prune_as_another_user(home, registry.jobs_dir)
        assert result.get("status") == "error" and result["pruned"] == 0 and result["pruned_ids"] == [], result
        assert sorted(result["not_pruned"]) == sorted(done)
        assert result["error"] == (f"could not delete 2 of 2 job folders ({result['not_pruned'][0]}: "
                                   "Permission denied); pruned 0")
        assert all((registry.jobs_dir / sid).is_dir() for sid in done)
        got = registry.prune(keep_count=0)  # writable again: they go, and it says so
        assert got["status"] == "ok" and sorted(got["pruned_ids"]) == sorted(done), got
    finally:
        shutil.rmtree(base, ignore_errors=True)


def _prune_as_another_user(home: Path, jobs_dir: Path) -> dict:
    """prune(keep_count=0) over `home` with `jobs_dir` read-only: as nobody when root (the home
    given to nobody for it, then back), else as ourselves."""
    import json as _json

    root = os.geteuid() == 0
    owner = 65534 if root else os.getuid()
    for folder, dirs, files in os.walk(home):
        for name in [folder, *(os.path.join(folder, n) for n in [*dirs, *files])]:
            os.lchown(name, owner, owner)
    os.chmod(jobs_dir, 0o555)
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:
        try:
            if root:
                os.setgroups([])
                os.setgid(65534)
                os.setuid(65534)
            os.write(w, _json.dumps(ProcessRegistry(home=home).prune(keep_count=0)).encode())
        except BaseException as exc:  # noqa: BLE001 - said through the pipe
            os.write(w, _json.dumps({"child": repr(exc)}).encode())
        finally:
            os._exit(0)
    os.close(w)
    with os.fdopen(r, "rb") as fh:
        result = _json.loads(fh.read())
    os.waitpid(pid, 0)
    os.chmod(jobs_dir, 0o700)
    for folder, dirs, files in os.walk(home):
        for name in [folder, *(os.path.join(folder, n) for n in [*dirs, *files])]:
            os.lchown(name, os.getuid(), os.getgid())
    return result


def test_terminal_queries_answered_while_nobody_attached(registry):
    code = "import os,tty; tty.setraw(0); os.write(1, b'\\x1b[6n'); print(repr(os.read(0, 32)))"
    job = registry.spawn(f'python3 -c "{code}"', pty=True)
    done = registry.wait(job["session_id"], timeout=10)
    assert done["exit_code"] == 0 and "1;1R" in registry.read_log(job["session_id"])["output"]


def test_stream_continues_the_log_without_gap_or_repeat(registry):
    from hermes_procs.core.registry import logstore

    go = registry.home / "go"  # the job cannot end before the stream is attached, however loaded
    job = registry.spawn(f"for i in $(seq 1 3000); do echo line-$i; done; while [ ! -e {go} ]; do sleep 0.01; done; "
                         "for i in $(seq 3001 4000); do echo line-$i; done")
    with registry.stream(job["session_id"]) as stream:
        go.touch()
        start = stream.offset
        before = logstore.read_bytes(registry.job_dir(job["session_id"]), 0, start)
        live = b""
        while (chunk := stream.read(5)) not in (b"", None):
            live += chunk
    full = (registry.job_dir(job["session_id"]) / "output.log").read_bytes()
    assert before + live == full and full.endswith(b"line-4000\n")


def test_wait_right_after_a_quick_job_does_not_stall(registry):
    # the job can exit before its supervisor has bound the socket: wait must not sit in retries
    for _ in range(3):
        job = registry.spawn("true")
        start = time.monotonic()
        assert registry.wait(job["session_id"], timeout=10)["status"] == "exited"
        assert time.monotonic() - start < 1.5


def test_spawn_applies_retention_when_jobs_pile_up(registry, monkeypatch):
    monkeypatch.setenv("HERMES_PROCS_KEEP_COUNT", "0")
    first = registry.spawn("true")
    registry.wait(first["session_id"], timeout=10)
    supervisor_gone(registry, first["session_id"])
    for _ in range(21):  # more folders than retention keeps (+20): the next spawn prunes
        (registry.jobs_dir / f"proc_{os.urandom(6).hex()}").mkdir()
    registry.spawn("true")
    assert registry.poll(first["session_id"])["status"] == "not_found"


def test_a_job_that_ends_at_once_is_not_pruned_by_its_own_spawn(registry, monkeypatch):
    monkeypatch.setenv("HERMES_PROCS_KEEP_COUNT", "0")  # keep no finished job at all
    for _ in range(5):
        (registry.home / ".last_prune").unlink(missing_ok=True)  # every spawn prunes
        sid = registry.spawn("true")["session_id"]
        assert registry.wait(sid, timeout=30)["status"] == "exited"  # still there to be read


def test_bad_retention_setting_does_not_break_spawn(registry, monkeypatch):
    """An unusable setting is the default (200), said once by unusable_settings (the CLI's warning)."""
    from hermes_procs.core.registry.envnumbers import unusable_settings

    monkeypatch.setenv("HERMES_PROCS_KEEP_COUNT", "-5")
    assert registry.spawn("true")["status"] == "running"
    assert registry.prune()["status"] == "ok"
    assert "HERMES_PROCS_KEEP_COUNT='-5' is not a number >= 0: 200 is used" in unusable_settings()
