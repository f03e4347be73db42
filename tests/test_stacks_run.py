"""Stacks with real processes, ports and files (core/stacks/): dependency order with each kind of
probe, a probe that times out, restart policies with their backoff, file watching, `down` in
reverse order, the supervisor working with no client, and bad files that start nothing."""

from __future__ import annotations

import itertools
import os
import signal
import subprocess
import time

import pytest
from conftest import wait_until
from stacks_helpers import PY, down_all, free_port, jobs_of, stack_file, state_of


@pytest.fixture
def stacks(registry):
    yield registry
    down_all(registry)


def test_jobs_start_in_dependency_order_once_ready(stacks, tmp_path):
    port, http = free_port(), free_port()
    path = stack_file(tmp_path / "shop", f"""
        [jobs.api]
        command = "{{py}} needs_port.py {port}"
        depends_on = {{ db = "ready", migrate = "completed_successfully" }}
        ready = {{ output = "connected" }}
        [jobs.db]
        command = "{{py}} listener.py {port} 0.7"
        ready = {{ port = {port}, timeout = 20 }}
        [jobs.migrate]
        command = "echo migrated"
        depends_on = ["db"]
        [jobs.web]
        command = "{{py}} -m http.server {http} --bind 127.0.0.1"
        depends_on = {{ api = "ready" }}
        ready = {{ http = "http://127.0.0.1:{http}/", timeout = 20 }}
        [jobs.check]
        command = "sleep 300"
        depends_on = {{ web = "started" }}
        ready = {{ exec = "{{py}} -c 'import socket; socket.create_connection((\\"127.0.0.1\\", {http}))'" }}
        """)
    result = stacks.up(path, wait=True, timeout=60)
    assert result["status"] == "ok" and result["state"] == "up", result
    jobs = jobs_of(stacks, "shop")
    assert {n: j["state"] for n, j in jobs.items()} == {"api": "ready", "db": "ready", "migrate": "exited",
                                                        "web": "ready", "check": "ready"}
    rows = {r["name"]: r for r in stacks.list() if r.get("stack") == "shop"}
    assert set(rows) == set(jobs) and all(r["restarts"] == 0 for r in rows.values())
    assert rows["api"]["session_id"] == jobs["api"]["session_id"] and rows["api"]["status"] == "running"
    assert stacks.poll(jobs["api"]["session_id"])["stack"] == "shop"
    started = {n: r["started_at"] for n, r in rows.items()}
    assert started["db"] <= started["migrate"] <= started["api"] <= started["web"] <= started["check"]
    assert "connected" in stacks.read_log(jobs["api"]["session_id"])["output"]


def test_a_probe_that_times_out_blocks_its_dependents_and_says_which(stacks, tmp_path):
    port = free_port()
    path = stack_file(tmp_path / "slow", f"""
        [jobs.db]
        command = "sleep 300"
        ready = {{ port = {port}, timeout = 1, interval = 0.1 }}
        [jobs.api]
        command = "sleep 300"
        depends_on = {{ db = "ready" }}
        """)
    result = stacks.up(path, wait=True, timeout=30)
    assert result["status"] == "error" and "db" in result["error"], result
    jobs = jobs_of(stacks, "slow")
    assert jobs["db"]["state"] == "unready" and f"port {port}" in jobs["db"]["message"], jobs
    assert "not ready after 1s" in jobs["db"]["message"]
    assert jobs["api"]["state"] == "blocked" and jobs["api"]["session_id"] is None, jobs
    assert "db" in jobs["api"]["message"] and f"port {port}" in jobs["api"]["message"], jobs
    assert state_of(stacks, "slow") == "degraded"


def test_up_wait_says_a_blocked_job_once(stacks, tmp_path):
    path = stack_file(tmp_path / "off", """
        [jobs.a]
        command = "sleep 300"
        autostart = false
        [jobs.b]
        command = "sleep 300"
        depends_on = ["a"]
        """)
    result = stacks.up(path, wait=True, timeout=30)
    assert result["error"] == "stack off: b blocked: a is not started automatically", result


def test_a_long_chain_of_blocked_jobs_keeps_short_messages(stacks, home, tmp_path):
    # each job's "blocked:" message held its dependency's: a chain of 200 made a state of 1.5 MB,
    # read as no state at all (the stack shown down, `down` leaving its jobs running)
    port = free_port()
    chain = "".join(f'[jobs.j{i}]\ncommand = "sleep 300"\ndepends_on = ["j{i - 1}"]\n' for i in range(1, 40))
    path = stack_file(tmp_path / "chain", f"""
        [jobs.j0]
        command = "sleep 300"
        ready = {{ port = {port}, timeout = 1, interval = 0.1 }}
        """ + chain)
    assert stacks.up(path, wait=True, timeout=30)["status"] == "error"
    jobs = jobs_of(stacks, "chain")
    assert jobs["j1"]["message"].startswith("blocked: j0 not ready after 1s")
    assert jobs["j39"]["state"] == "blocked" and jobs["j39"]["message"] == "blocked: j38 is blocked", jobs["j39"]
    assert (home / "stacks" / "chain" / "state.json").stat().st_size < 40 * 1000


def _up_then_kill_its_supervisor(stacks, tmp_path, name: str) -> tuple[str, str]:
    """(the stack file, its one job's session id): a stack of one `sleep 300` job whose
    supervisor was then SIGKILLed."""
    path = stack_file(tmp_path / name, """
        [jobs.app]
        command = "sleep 300"
        """)
    stacks.up(path, wait=True, timeout=30)
    app = jobs_of(stacks, name)["app"]["session_id"]
    os.kill(stacks.stacks(name)[0]["pid"], signal.SIGKILL)
    wait_until(lambda: not stacks.stacks(name)[0]["supervised"], timeout=10)
    return path, app


def test_a_stack_whose_state_cannot_be_read_is_not_taken_for_down(stacks, home, tmp_path):
    _, app = _up_then_kill_its_supervisor(stacks, tmp_path, "unread")
    (home / "stacks" / "unread" / "state.json").write_text("{not json")
    row = stacks.stacks("unread")[0]
    assert row["state"] == "unknown" and "cannot be read" in row["note"], row
    refused = stacks.down("unread")
    assert refused["status"] == "error" and "its jobs are left running" in refused["error"], refused
    assert stacks.poll(app)["status"] == "running"
    stacks.kill(app, grace=0.2)


def test_down_stops_a_job_its_dead_supervisor_started_but_never_wrote_down(stacks, tmp_path):
    # a supervisor SIGKILLed between starting a job and writing its state: down left it running
    path, a = _up_then_kill_its_supervisor(stacks, tmp_path, "race")
    stray = stacks.spawn("sleep 300", stack="race")["session_id"]  # what it started unrecorded
    assert stacks.down("race")["state"] == "down"
    for sid in (a, stray):
        assert stacks.poll(sid)["status"] == "exited", sid
    # and through a new supervisor, which does not know it either
    stacks.up(path, wait=True, timeout=30)
    stray = stacks.spawn("sleep 300", stack="race")["session_id"]
    assert stacks.down("race")["state"] == "down"
    assert stacks.poll(stray)["status"] == "exited"


def test_on_failure_restarts_with_a_doubling_backoff_then_gives_up(stacks, tmp_path):
    path = stack_file(tmp_path / "crash", """
        [jobs.crashy]
        command = "{py} -c 'import time; print(\\"at\\", time.time())'; exit 3"
        restart = "on-failure"
        max_restarts = 3
        backoff = 0.3
        [jobs.fine]
        command = "exit 0"
        restart = "on-failure"
        """)
    stacks.up(path)
    wait_until(lambda: jobs_of(stacks, "crash")["crashy"]["state"] == "failed", timeout=30, interval=0.1)
    jobs = jobs_of(stacks, "crash")
    assert jobs["crashy"]["restarts"] == 3 and "gave up after 3 restarts" in jobs["crashy"]["message"], jobs
    assert jobs["fine"]["state"] == "exited" and jobs["fine"]["restarts"] == 0, jobs
    rows = sorted((r for r in stacks.list() if r.get("stack") == "crash" and r["name"] == "crashy"),
                  key=lambda r: r["restarts"])
    assert [r["restarts"] for r in rows] == [0, 1, 2, 3] and all(r["exit_code"] == 3 for r in rows)
    starts = [float(stacks.read_log(r["session_id"])["output"].split()[-1]) for r in rows]
    gaps = [b - a for a, b in itertools.pairwise(starts)]
    assert gaps[0] >= 0.25 and gaps[1] >= 0.55 and gaps[2] >= 1.1, gaps  # 0.3, 0.6, 1.2 s
    # a restart by hand gives the policy a fresh budget (it ran once and gave up again at once)
    assert stacks.restart_stack("crash", "crashy")["status"] != "error"
    wait_until(lambda: jobs_of(stacks, "crash")["crashy"]["restarts"] == 7
               and jobs_of(stacks, "crash")["crashy"]["state"] == "failed", timeout=30, interval=0.1)
    assert "gave up after 3 restarts" in jobs_of(stacks, "crash")["crashy"]["message"]  # the hand's 1 + 3 more


def test_a_crash_loop_with_no_backoff_still_waits_between_starts(stacks, tmp_path):
    # backoff = 0 and backoff_max = 0: a job that exits at once was started 56 times a second
    path = stack_file(tmp_path / "loop", """
        [jobs.c]
        command = "exit 1"
        restart = "always"
        backoff = 0
        backoff_max = 0
        """)
    stacks.up(path)
    time.sleep(1.5)
    assert jobs_of(stacks, "loop")["c"]["restarts"] <= 5  # 0.1 + 0.2 + 0.4 + 0.8 s: 4 by 1.5 s (was ~80)


def test_up_takes_a_timeout_it_can_keep_and_down_takes_the_folder_up_took(stacks, tmp_path):
    path = stack_file(tmp_path / "folder", """
        [jobs.app]
        command = "sleep 300"
        """)
    for bad in (float("nan"), -1, 0, 1e308):
        refused = stacks.up(path, wait=True, timeout=bad)
        assert refused["status"] == "error" and refused["error"].startswith("timeout must be"), refused
    assert not stacks.stacks()  # nothing started
    assert stacks.up(str(tmp_path / "folder"), wait=True, timeout=30)["state"] == "up"
    assert stacks.down(path=str(tmp_path / "folder"))["state"] == "down"  # a folder, as up took it
    stacks.up(path, name="one")
    stacks.up(path, name="two")
    both = stacks.down(path=path)
    assert both["status"] == "error" and "was brought up as one, two: name the one to stop" in both["error"], both
    stacks.down("one")
    os.unlink(path)  # a file deleted since still names its stack
    assert stacks.down(path=path)["state"] == "down"


def test_always_restarts_a_job_that_crashed_but_not_one_someone_killed(stacks, tmp_path):
    path = stack_file(tmp_path / "keep", """
        [jobs.server]
        command = "sleep 300"
        restart = "always"
        backoff = 0.1
        """)
    stacks.up(path, wait=True, timeout=30)
    first = jobs_of(stacks, "keep")["server"]["session_id"]
    os.kill(stacks.poll(first)["pid"], signal.SIGKILL)  # a crash: not the registry's kill
    wait_until(lambda: jobs_of(stacks, "keep")["server"]["session_id"] not in (first, None)
               and jobs_of(stacks, "keep")["server"]["state"] == "ready", timeout=20, interval=0.1)
    job = jobs_of(stacks, "keep")["server"]
    assert job["restarts"] == 1 and stacks.poll(job["session_id"])["restarts"] == 1
    assert job["message"] == "restarted (killed by signal 9)", job
    stacks.kill(job["session_id"], grace=0.2)  # someone's kill: stopped, not restarted
    wait_until(lambda: jobs_of(stacks, "keep")["server"]["state"] == "stopped", timeout=20, interval=0.1)
    time.sleep(0.5)
    stopped = jobs_of(stacks, "keep")["server"]
    assert stopped["session_id"] == job["session_id"]
    assert stopped["message"].endswith("(restart it with: hermes-procs restart keep server)"), stopped
    again = stacks.restart_stack("keep", "server")
    assert again["status"] == "ok", again
    wait_until(lambda: jobs_of(stacks, "keep")["server"]["state"] == "ready", timeout=20, interval=0.1)
    assert jobs_of(stacks, "keep")["server"]["session_id"] != job["session_id"]


def test_editing_a_watched_file_restarts_its_job(stacks, tmp_path):
    folder = tmp_path / "watched"
    (folder / "src").mkdir(parents=True)
    (folder / "src" / "app.py").write_text("print('v1', flush=True)\n")
    path = stack_file(folder, """
        debounce = 0.2
        watch_interval = 0.2
        [jobs.app]
        command = "{py} src/app.py; sleep 300"
        watch = ["src/**/*.py"]
        [jobs.other]
        command = "sleep 300"
        """)
    stacks.up(path, wait=True, timeout=30)
    before = jobs_of(stacks, "watched")
    (folder / "src" / "notes.txt").write_text("not watched")
    (folder / "src" / "app.py").write_text("print('v2', flush=True)\n")
    wait_until(lambda: jobs_of(stacks, "watched")["app"]["session_id"] != before["app"]["session_id"]
               and jobs_of(stacks, "watched")["app"]["state"] == "ready", timeout=20, interval=0.1)
    after = jobs_of(stacks, "watched")
    assert after["app"]["restarts"] == 1 and "app.py changed" in after["app"]["message"], after
    assert after["other"]["session_id"] == before["other"]["session_id"]  # only the watching job
    wait_until(lambda: "v2" in stacks.read_log(after["app"]["session_id"])["output"])
    old = stacks.poll(before["app"]["session_id"])
    assert old["status"] != "running" and "v1" in stacks.read_log(before["app"]["session_id"])["output"]


def test_a_glob_that_backtracks_is_matched_in_linear_time(stacks, tmp_path):
    # *a*a*...*b against a name of 60 a's: a backtracking regex took minutes a look (up hung, the
    # stack's supervisor spun a core); RE2 answers at once, and the glob still matches what it says
    folder = tmp_path / "greedy"
    folder.mkdir()
    (folder / ("a" * 60)).write_text("x")
    (folder / os.fsdecode(b"odd-\xff-name")).write_text("x")  # not UTF-8: RE2 cannot take it as it is
    path = stack_file(folder, """
        debounce = 0.2
        watch_interval = 0.2
        [jobs.app]
        command = "sleep 300"
        watch = ["*a*a*a*a*a*a*a*a*a*a*a*a*b"]
        """)
    started = time.monotonic()
    assert stacks.up(path, wait=True, timeout=30)["status"] == "ok"
    assert time.monotonic() - started < 15
    before = jobs_of(stacks, "greedy")["app"]["session_id"]
    (folder / ("a" * 59 + "ab")).write_text("matches")
    wait_until(lambda: jobs_of(stacks, "greedy")["app"]["session_id"] != before, timeout=20, interval=0.1)
    assert stacks.stacks("greedy")[0]["supervised"]  # the odd name killed the supervisor


def test_down_stops_dependents_first(stacks, tmp_path):
    order = tmp_path / "order.txt"
    record = "trap 'echo {name} >> %s; exit 0' TERM; while true; do sleep 0.05; done" % order
    path = stack_file(tmp_path / "layers", f"""
        [jobs.db]
        command = "{record.format(name='db')}"
        [jobs.api]
        command = "{record.format(name='api')}"
        depends_on = ["db"]
        [jobs.web]
        command = "{record.format(name='web')}"
        depends_on = ["api"]
        """)
    stacks.up(path, wait=True, timeout=30)
    sessions = {n: j["session_id"] for n, j in jobs_of(stacks, "layers").items()}
    result = stacks.down("layers")
    assert result["status"] == "down" and result["state"] == "down", result
    assert order.read_text().split() == ["web", "api", "db"]
    assert all(stacks.poll(s)["status"] != "running" for s in sessions.values())
    assert {j["state"] for j in jobs_of(stacks, "layers").values()} == {"stopped"}
    assert not stacks.stacks("layers")[0]["supervised"]


def test_the_stack_runs_on_with_every_client_gone(registry, tmp_path, home):
    """`hermes-procs up` exits at once; the stack's supervisor brings the dependency up, starts
    its dependent when it is ready and restarts a crash, with no client running."""
    port = free_port()
    folder = tmp_path / "alone"
    stack_file(folder, f"""
        [jobs.db]
        command = "{{py}} listener.py {port} 1.0"
        ready = {{ port = {port}, timeout = 20 }}
        [jobs.api]
        command = "{{py}} needs_port.py {port}"
        depends_on = {{ db = "ready" }}
        restart = "on-failure"
        backoff = 0.1
        """)
    cli = [PY, "-m", "hermes_procs", "--home", str(home), "up"]
    done = subprocess.run(cli, cwd=folder, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0 and "stack alone:" in done.stdout, done.stdout + done.stderr
    try:
        wait_until(lambda: jobs_of(registry, "alone")["api"]["state"] == "ready", timeout=30, interval=0.1)
        api = jobs_of(registry, "alone")["api"]["session_id"]
        os.kill(registry.poll(api)["pid"], signal.SIGTERM)
        wait_until(lambda: jobs_of(registry, "alone")["api"]["restarts"] == 1
                   and jobs_of(registry, "alone")["api"]["state"] == "ready", timeout=30, interval=0.1)
    finally:
        down_all(registry)


def test_a_bad_file_starts_nothing(registry, tmp_path, home):
    path = stack_file(tmp_path / "bad", """
        [jobs.a]
        command = "sleep 300"
        [jobs.b]
        command = "sleep 300"
        depends_on = ["c"]
        """)
    result = registry.up(path)
    assert result == {"status": "error",
                      "error": "hermes-procs.toml: jobs.b.depends_on: no job named 'c' in this stack"}
    assert registry.list() == [] and registry.stacks() == []
    assert not (home / "stacks").exists()  # looking at stacks (the dashboard does, every second) makes nothing


def test_a_stack_up_twice_is_already_up_and_a_second_file_of_the_same_name_is_refused(stacks, tmp_path):
    path = stack_file(tmp_path / "one" / "x", '[jobs.a]\ncommand = "sleep 300"\n')
    other = stack_file(tmp_path / "two" / "x", '[jobs.a]\ncommand = "sleep 300"\n')
    assert stacks.up(path, wait=True)["state"] == "up"
    again = stacks.up(path)
    assert again["status"] == "already_up" and len([r for r in stacks.list() if r.get("stack") == "x"]) == 1
    refused = stacks.up(other)
    assert refused["status"] == "error" and "already up from" in refused["error"], refused
    # once down, the name may go to the other file: `up` says whose it was
    assert stacks.down("x").get("status") != "error"
    taken = stacks.up(other)
    assert taken.get("status") != "error" and any(
        f"was last brought up from {path}" in w for w in taken["warnings"]), taken
    assert not any("last brought up" in w for w in stacks.up(other)["warnings"])  # said once
    stacks.down("x")


@pytest.mark.parametrize("kind", ["Procfile", "process-compose.yaml", "mprocs.yaml"])
def test_every_format_comes_up_and_goes_down(stacks, tmp_path, kind):
    port = free_port()
    texts = {
        "Procfile": f"db: {PY} listener.py {port} 0\nworker: sleep 300\n",
        "process-compose.yaml": f"""
processes:
  db:
    command: {PY} listener.py {port} 0.3
    readiness_probe:
      exec: {{command: "{PY} -c 'import socket; socket.create_connection((\\"127.0.0.1\\", {port}))'"}}
      period_seconds: 0.2
      failure_threshold: 100
  off:
    command: {PY} needs_port.py {port}
    depends_on:
      db: {{condition: process_healthy}}
""",
        "mprocs.yaml": f"procs:\n  db:\n    cmd: [{PY}, listener.py, '{port}', '0']\n  manual:\n"
                       "    shell: sleep 300\n    autostart: false\n",
    }
    path = stack_file(tmp_path / "fmt", texts[kind], name=kind)
    result = stacks.up(path, wait=True, timeout=60)
    assert result["status"] == "ok" and result["state"] == "up", result
    jobs = jobs_of(stacks, "fmt")
    assert jobs["db"]["state"] == "ready", jobs
    if kind == "mprocs.yaml":
        assert jobs["manual"]["state"] == "off" and jobs["manual"]["session_id"] is None
    if kind == "process-compose.yaml":
        assert jobs["off"]["state"] == "ready"
    assert stacks.down("fmt")["state"] == "down"
    assert not any(r["status"] == "running" for r in stacks.list())


def test_a_new_supervisor_takes_over_the_running_jobs_when_the_old_one_died(stacks, tmp_path):
    path = stack_file(tmp_path / "orphan", """
        [jobs.db]
        command = "sleep 300"
        [jobs.api]
        command = "sleep 300"
        depends_on = ["db"]
        restart = "always"
        backoff = 0.1
        """)
    stacks.up(path, wait=True, timeout=30)
    before = stacks.stacks("orphan")[0]
    os.kill(before["pid"], signal.SIGKILL)
    wait_until(lambda: not stacks.stacks("orphan")[0]["supervised"], timeout=10)
    orphaned = stacks.stacks("orphan")[0]
    assert orphaned["state"] == "degraded" and orphaned["note"].endswith(
        f"(hermes-procs up -f {path} --name orphan takes over the running jobs; restart orphan restarts them)"
    ), orphaned
    sessions = {j["name"]: j["session_id"] for j in before["jobs"]}
    assert all(stacks.poll(s)["status"] == "running" for s in sessions.values())  # the jobs run on
    assert stacks.up(path, name="orphan", wait=True, timeout=30)["status"] == "ok"
    after = stacks.stacks("orphan")[0]
    assert after["supervised"] and after["pid"] != before["pid"]
    assert {j["name"]: j["session_id"] for j in after["jobs"]} == sessions  # taken over, not restarted
    os.kill(stacks.poll(sessions["api"])["pid"], signal.SIGKILL)  # and its policies work again
    wait_until(lambda: jobs_of(stacks, "orphan")["api"]["restarts"] == 1
               and jobs_of(stacks, "orphan")["api"]["state"] == "ready", timeout=20, interval=0.1)


def test_restart_after_the_supervisor_died_restarts_the_jobs(stacks, tmp_path):
    """It took them over as `up` does: the failed job stayed failed, the others kept their runs."""
    path = stack_file(tmp_path / "crashed", """
        [jobs.web]
        command = "sleep 300"
        [jobs.bad]
        command = "exit 3"
        """)
    stacks.up(path, wait=True, timeout=30)
    before = {j["name"]: j["session_id"] for j in stacks.stacks("crashed")[0]["jobs"]}
    wait_until(lambda: jobs_of(stacks, "crashed")["bad"]["state"] == "failed", timeout=10)
    os.kill(stacks.stacks("crashed")[0]["pid"], signal.SIGKILL)
    wait_until(lambda: not stacks.stacks("crashed")[0]["supervised"], timeout=10)
    restarted = stacks.restart_stack("crashed")
    web = next(j for j in restarted["jobs"] if j["name"] == "web")  # not the old run, said to be ready
    assert restarted["status"] == "ok" and (web["session_id"], web["state"]) != (before["web"], "ready"), restarted
    wait_until(lambda: all(jobs_of(stacks, "crashed")[n]["session_id"] not in (None, before[n]) for n in before),
               timeout=20, interval=0.1)
    assert stacks.poll(before["web"])["status"] == "exited"  # stopped, then started again


def test_up_after_the_supervisor_died_applies_the_edited_file(stacks, tmp_path):
    # the new supervisor adopted the old runs: a removed job ran on, orphaned (down left it), a
    # changed one kept its old command; and another file under the name was taken
    folder = tmp_path / "edited"
    path = stack_file(folder, """
        name = "edited"
        [jobs.a]
        command = "sleep 301"
        [jobs.b]
        command = "sleep 302"
        [jobs.c]
        command = "sleep 303"
        """)
    stacks.up(path, wait=True, timeout=30)
    before = {name: job["session_id"] for name, job in jobs_of(stacks, "edited").items()}
    os.kill(stacks.stacks("edited")[0]["pid"], signal.SIGKILL)
    wait_until(lambda: not stacks.stacks("edited")[0]["supervised"], timeout=10)
    other = stack_file(tmp_path / "other", 'name = "edited"\n[jobs.x]\ncommand = "sleep 300"\n')
    refused = stacks.up(other)
    assert refused["status"] == "error" and "its jobs may run on" in refused["error"], refused
    stack_file(folder, """
        name = "edited"
        [jobs.a]
        command = "sleep 304"
        [jobs.c]
        command = "sleep 303"
        """)
    again = stacks.up(path, wait=True, timeout=30)
    assert again["status"] == "ok" and again["reloaded"] == {"started": [], "restarted": ["a"], "stopped": ["b"]}
    after = jobs_of(stacks, "edited")
    assert set(after) == {"a", "c"} and after["c"]["session_id"] == before["c"]  # adopted, not restarted
    assert stacks.poll(after["a"]["session_id"])["command"] == "sleep 304"
    assert stacks.poll(before["a"])["status"] == "exited" and stacks.poll(before["b"])["status"] == "exited"


def test_a_rerun_by_id_of_a_stack_job_becomes_its_run(stacks, tmp_path):
    """`hermes-procs restart ID` (the dashboard's `r`) on a stack's job: the stack adopts the new job."""
    path = stack_file(tmp_path / "rerun", """
        [jobs.app]
        command = "sleep 300"
        restart = "always"
        backoff = 0.1
        """)
    stacks.up(path, wait=True, timeout=30)
    first = jobs_of(stacks, "rerun")["app"]["session_id"]
    again = stacks.restart(first)
    assert again["status"] == "running", again
    wait_until(lambda: jobs_of(stacks, "rerun")["app"]["session_id"] == again["session_id"], timeout=20,
               interval=0.1)
    job = jobs_of(stacks, "rerun")["app"]
    assert job["state"] == "ready" and job["restarts"] == 1, job
    assert stacks.poll(again["session_id"])["stack"] == "rerun" and stacks.poll(again["session_id"])["restarts"] == 1
    time.sleep(0.5)  # and the stack did not start a second one of its own
    assert [r["session_id"] for r in stacks.list() if r.get("stack") == "rerun" and r["status"] == "running"] \
        == [again["session_id"]]


def test_a_rerun_by_hand_passes_its_probe_before_its_dependents_go_on(stacks, tmp_path):
    # the adopted rerun was called ready without its probe, and a dependent waiting on it then
    # waited for ever (the ready flag stayed unset)
    path = stack_file(tmp_path / "rerun2", """
        [jobs.db]
        command = "sleep 1; echo db-ready; sleep 300"
        ready = {output = "db-ready", timeout = 20}
        [jobs.api]
        command = "sleep 300"
        depends_on = ["db"]
        """)
    stacks.up(path, wait=False)
    wait_until(lambda: jobs_of(stacks, "rerun2")["db"]["session_id"], timeout=10, interval=0.05)
    again = stacks.restart(jobs_of(stacks, "rerun2")["db"]["session_id"])  # before db was ready
    assert again["status"] == "running", again
    wait_until(lambda: jobs_of(stacks, "rerun2")["db"]["session_id"] == again["session_id"], timeout=20,
               interval=0.05)
    assert jobs_of(stacks, "rerun2")["db"]["state"] in ("starting", "ready")
    wait_until(lambda: jobs_of(stacks, "rerun2")["api"]["state"] == "ready", timeout=20, interval=0.1)
    assert "db-ready" in stacks.read_log(again["session_id"])["output"]  # the probe passed on the rerun


def test_up_again_after_editing_the_file_applies_it(stacks, tmp_path):
    """A new job starts, a changed one restarts, a removed one stops; the others run on."""
    path = stack_file(tmp_path / "edit", """
        [jobs.db]
        command = "sleep 300"
        [jobs.api]
        command = "sleep 300"
        depends_on = ["db"]
        [jobs.old]
        command = "sleep 300"
        """)
    stacks.up(path, wait=True, timeout=30)
    before = {n: j["session_id"] for n, j in jobs_of(stacks, "edit").items()}
    assert stacks.up(path)["status"] == "already_up"  # the same file: nothing to do
    stack_file(tmp_path / "edit", """
        [jobs.db]
        command = "sleep 300"
        [jobs.api]
        command = "sleep 301"
        depends_on = ["db"]
        [jobs.new]
        command = "sleep 300"
        depends_on = ["api"]
        """)
    result = stacks.up(path, wait=True, timeout=30)
    assert result["status"] == "ok" and result["state"] == "up", result
    assert result["reloaded"] == {"started": ["new"], "restarted": ["api"], "stopped": ["old"]}, result
    after = jobs_of(stacks, "edit")
    assert set(after) == {"db", "api", "new"} and after["db"]["session_id"] == before["db"]
    assert after["api"]["session_id"] != before["api"] and after["api"]["restarts"] == 1
    assert stacks.poll(after["api"]["session_id"])["command"] == "sleep 301"
    assert stacks.poll(before["old"])["status"] != "running"
    assert after["new"]["state"] == "ready"


@pytest.mark.parametrize("probe", ["port = {port}", 'http = "http://127.0.0.1:{port}/"'])
def test_a_port_held_by_another_process_fails_the_job_instead_of_making_it_ready(stacks, tmp_path, probe):
    """The port probe alone would pass at once on someone else's listener (an http probe on this
    machine too, when it answers); the job is started with spawn's port guard instead, which names
    the holder."""
    import socket

    holder = socket.socket()
    holder.bind(("127.0.0.1", 0))
    holder.listen()
    port = holder.getsockname()[1]
    ready = probe.format(port=port)
    try:
        path = stack_file(tmp_path / "taken", f"""
            [jobs.db]
            command = "{{py}} listener.py {port} 0"
            ready = {{ {ready}, timeout = 10 }}
            [jobs.api]
            command = "sleep 300"
            depends_on = ["db"]
            """)
        result = stacks.up(path, wait=True, timeout=30)
        assert result["status"] == "error", result
        jobs = jobs_of(stacks, "taken")
        assert jobs["db"]["state"] == "failed", jobs
        assert f"port {port} is in use by pid {os.getpid()}" in jobs["db"]["message"], jobs
        assert jobs["api"]["state"] == "blocked" and jobs["api"]["session_id"] is None, jobs
    finally:
        holder.close()


def test_down_right_after_up_stops_the_jobs(stacks, tmp_path):
    """A supervisor handles SIGUSR1 before it says it runs: `up` and at once `down` (a script)
    once killed it (SIGUSR1's default action), leaving the stack degraded and its jobs running."""
    path = stack_file(tmp_path / "quick", """
        [jobs.idle]
        command = "sleep 300"
        """)
    for _ in range(3):
        assert stacks.up(path)["status"] == "ok"
        result = stacks.down("quick")
        assert result["state"] == "down" and result["supervised"] is False, result
        assert not [r for r in stacks.list() if r["status"] == "running"], stacks.list()


SLOW_STOP = """
    [jobs.db]
    command = "trap '' TERM; exec sleep 300"
    stop_grace = 3

    [jobs.quick]
    command = "sleep 300"
    """


def test_a_stack_going_down_says_stopping_and_restart_brings_it_up_after(stacks, tmp_path):
    """While `down` stops the jobs the state says `stopping`; a `restart` (or `up`) then waits
    for the end of it and starts the stack again, instead of asking a supervisor that no longer
    listens (it hung 60 s and left the stack down)."""
    path = stack_file(tmp_path / "slow", SLOW_STOP)
    assert stacks.up(path, wait=True, timeout=30)["status"] == "ok"
    down = subprocess.Popen([PY, "-m", "hermes_procs", "--home", str(stacks.home), "down", "slow"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        wait_until(lambda: state_of(stacks, "slow") == "stopping", timeout=10, interval=0.05)
        # each job shows stopped as it ends, not only once the slowest one has
        wait_until(lambda: jobs_of(stacks, "slow")["quick"]["state"] == "stopped", timeout=10, interval=0.05)
        assert state_of(stacks, "slow") == "stopping"
        began = time.monotonic()
        result = stacks.restart_stack("slow")
        assert result["status"] == "ok" and result["supervised"], result
        assert time.monotonic() - began < 20
    finally:
        down.wait(timeout=60)
    wait_until(lambda: state_of(stacks, "slow") == "up", timeout=20)
    assert not os.listdir(stacks.home / "stacks" / "slow" / "requests")


def test_up_wait_again_still_says_which_job_failed(stacks, tmp_path):
    path = stack_file(tmp_path / "bad", """
        [jobs.broken]
        command = "exit 3"
        """)
    for _ in range(2):  # the second: the stack is already up from the same file
        result = stacks.up(path, wait=True, timeout=30)
        assert result["status"] == "error" and "broken" in result["error"], result
