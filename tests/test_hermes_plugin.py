"""hermes-procs as a plugin of the real Hermes agent: hermes-agent 0.19.0 from the package
registry (tests/hermes_agent.py), enabled with Hermes' own `hermes plugins enable hermes-procs`,
driven through Hermes' own tools (tests/hermes_driver.py), and compared with stock Hermes (the
plugin not enabled) in the same run. Public behaviour is compared, never private fields.
"""

from __future__ import annotations

import json
import os
import re
import signal
import textwrap
from pathlib import Path

import pytest
from hermes_agent import DB_PASSWORD, Hermes, both, last_json, prepare_runs, runs_paths

pytestmark = pytest.mark.timeout(900)

SCENARIOS = ["log_paging", "consumed_by_wait", "consumed_by_log", "not_consumed_by_a_page_before_the_end",
             "notified_once", "poll_observed", "completion_queue_consumer", "wait_clamp", "shell_and_environment",
             "secret_value_in_output", "pty_input", "kill", "list_and_activity", "watch_pattern",
             "kill_all_notifies", "close_terminal", "live_output", "missing_workdir",
             "gateway_watcher"]  # the last: it binds a gateway session to the driver's context
DIFFERENT_ON_PURPOSE = {"secret_value_in_output"}


@pytest.fixture(scope="session")
def runs(tmp_path_factory):
    """Every scenario, once by stock Hermes and once with the plugin (at the same time): made in
    the background from the start of the session (tests/conftest.py), or here if it was not."""
    worker = os.environ.get("PYTEST_XDIST_WORKER")
    root = tmp_path_factory.getbasetemp().parent if worker else tmp_path_factory.getbasetemp()
    record = prepare_runs(root, SCENARIOS)
    if "error" in record:
        pytest.fail(f"the comparison runs failed: {record['error']}")
    return {**record, "hermes": Hermes(runs_paths(root)[0] / "plugin", plugin=False)}


# Stock Hermes races itself when it kills a job: its reader thread may see the end of the
# output first and record a plain exit (by SIGTERM) before kill_process records the kill.
KILL_RACE = ("exited (exit code -15, SIGTERM)", "terminated by kill_all (exit code -15, SIGTERM)")


def _both(runs, name):
    stock, plugin = runs["stock"]["results"][name], runs["plugin"]["results"][name]
    for side in (stock, plugin):
        assert "driver_error" not in side, side.get("driver_error")
    # the DB password: the plugin masks it (test_a_secret_kept_for_the_job_is_masked_for_the_agent)
    return json.loads(json.dumps(stock).replace(*KILL_RACE).replace(DB_PASSWORD, "***")), plugin


def test_enabled_with_hermes_own_command(runs):
    """`hermes plugins enable hermes-procs` is all it takes: Hermes' registry is the adapter."""
    assert runs["stock"]["registry"] == "tools.process_registry"
    assert runs["plugin"]["registry"] == "hermes_procs.core.agents.compat"
    listed = runs["hermes"].hermes("plugins", "list", "--plain").stdout
    assert re.search(r"^enabled\s+entrypoint\s+\S+\s+hermes-procs$", listed, re.MULTILINE), listed


def _differences(stock, plugin, path="") -> list[str]:
    """Where two answers differ, one line each (pytest's diff of nested dicts is cut short)."""
    if isinstance(stock, dict) and isinstance(plugin, dict):
        return [d for key in sorted(set(stock) | set(plugin), key=str)
                for d in _differences(stock.get(key, "<missing>"), plugin.get(key, "<missing>"), f"{path}.{key}")]
    if isinstance(stock, list) and isinstance(plugin, list) and len(stock) == len(plugin):
        pairs = enumerate(zip(stock, plugin, strict=True))
        return [d for i, (a, b) in pairs for d in _differences(a, b, f"{path}[{i}]")]
    return [] if stock == plugin else [f"{path}: stock {stock!r} != plugin {plugin!r}"]


@pytest.mark.parametrize("name", [n for n in SCENARIOS if n not in DIFFERENT_ON_PURPOSE])
def test_same_as_stock(runs, name):
    stock, plugin = _both(runs, name)
    differences = _differences(stock, plugin)
    assert not differences, "\n".join(differences)


def test_log_without_offset_is_the_tail(runs):
    _, got = _both(runs, "log_paging")
    assert (got["default"]["first"], got["default"]["last"], got["default"]["showing"]) == \
        ("line101", "line300", "200 lines")
    assert (got["offset10"]["first"], got["offset10"]["last"]) == ("line11", "line15")
    assert (got["offset290"]["showing"], got["limit3"]["first"]) == ("10 lines", "line298")


def test_consumed_results_are_not_notified_again(runs):
    _, waited = _both(runs, "consumed_by_wait")
    assert waited["consumed"] is True and waited["drain"] == [] and waited["queued"] == 0
    _, logged = _both(runs, "consumed_by_log")
    assert logged["consumed"] is True and logged["drain"] == []
    _, partial = _both(runs, "not_consumed_by_a_page_before_the_end")
    assert partial["consumed"] is False and len(partial["drain"]) == 1
    _, once = _both(runs, "notified_once")
    assert len(once["first"]) == 1 and once["again"] == []
    assert once["first"][0][1].startswith("[IMPORTANT: Background process SID0 exited (exit code 3).")
    _, polled = _both(runs, "poll_observed")
    assert polled["cli_drain"] == [] and polled["consumed"] is False
    _, queue = _both(runs, "completion_queue_consumer")
    assert [e["exit_code"] for e in queue["events"]] == [2]


def test_wait_is_clamped_by_terminal_timeout(runs):
    _, got = _both(runs, "wait_clamp")
    assert got["about_2s"] and got["wait"]["status"] == "timeout"
    assert got["wait"]["timeout_note"] == "Requested wait of 6s was clamped to configured limit of 2s"


def test_shell_and_environment_as_stock(runs):
    """rc files ran (a tool on PATH, a variable), Hermes' own variables and VIRTUAL_ENV are gone,
    the DB password reached the job, masking kept `GITHUB_TOKEN: present`, and no noise."""
    _, got = _both(runs, "shell_and_environment")
    assert got["lines"][:7] == ["rctool-ran", "rc=profile", "venv=unset conda=unset", "openai=unset aux=unset",
                                f"pwlen={len(DB_PASSWORD)}", "GITHUB_TOKEN: present", "interactive=i"]
    assert "MY_DB_PASSWORD" in got["env_names"] and "VIRTUAL_ENV" not in got["env_names"]
    assert runs["plugin"]["noise_lines"] == 0, "bash's job-control complaints in the plugin's answers"


def test_a_secret_kept_for_the_job_is_masked_for_the_agent(runs):
    """Differs on purpose: stock Hermes shows the job's DB password to the agent."""
    stock, plugin = runs["stock"]["results"]["secret_value_in_output"], _both(runs, "secret_value_in_output")[1]
    assert DB_PASSWORD in stock["output"]
    assert plugin["output"] == "pw=***\n"


def test_a_killed_job_is_reported_killed(runs):
    _, got = _both(runs, "kill_all_notifies")
    assert got["count"] == 1 and got["drain"] == [
        "[IMPORTANT: Background process SID0 terminated by kill_all (exit code -15, SIGTERM).\nCommand: echo ready; "
        "sleep 30\nOutput:\nready\n]"]
    _, killed = _both(runs, "kill")
    assert killed["kill"]["status"] == "killed" and killed["poll"]["exit_code"] == -15
    assert killed["again"]["status"] == "already_exited" and killed["missing"]["status"] == "not_found"


def test_wiring(runs):
    _, closing = _both(runs, "close_terminal")
    assert closing["without"]["status"] == "error" and closing["with"]["status"] == "ok"
    assert closing["seen"] == [["SID0", "SID0"]]  # tools.close_terminal_tool imported the registry at import
    _, live = _both(runs, "live_output")
    assert live["ids"] == ["SID0"] and "chunk1\nchunk2\nchunk3\nchunk4\nchunk5\n" in live["text"]
    _, pty = _both(runs, "pty_input")
    assert pty["got"] and pty["submit"] == {"status": "ok", "bytes_written": 4}


# ---- across processes: durability, restarts, disabling, failing to start ------------------

START = textwrap.dedent("""
    import json, model_tools
    from tools.terminal_tool import terminal_tool
    for command, notify in {jobs!r}:
        print(json.loads(terminal_tool(command, background=True, task_id="t1",
                                       notify_on_complete=notify))["session_id"])
""")


def _start(hermes, *jobs):
    got = hermes.run(START.format(jobs=list(jobs)))
    assert got.returncode == 0, got.stderr
    return got.stdout.split()


def _ls(hermes):
    got = hermes.procs("ls", "--all", "--json")
    assert got.returncode == 0, got.stderr
    return {row["session_id"]: row for row in json.loads(got.stdout)}


def test_jobs_outlive_hermes_and_show_their_owner(tmp_path):
    hermes = Hermes(tmp_path, plugin=True)
    sid, = _start(hermes, ("sleep 60", False))
    row = _ls(hermes)[sid]  # Hermes has exited; its job runs on, visible to the human
    assert row["status"] == "running" and row["name"] == "hermes t1" and row["command"] == "sleep 60"
    assert "hermes t1: sleep 60" in hermes.procs("ls").stdout
    assert hermes.procs("kill", sid).returncode == 0


RECOVER = textwrap.dedent("""
    import json, os, time
    from hermes_cli.plugins import discover_plugins
    discover_plugins()   # the gateway's order: plugins first, then the recovery
    from tools.process_registry import process_registry as pr, _handle_process
    out = {{"recovered": pr.recover_from_checkpoint(), "watchers": len(pr.pending_watchers)}}
    short, long = {ids!r}
    out["poll"] = json.loads(_handle_process({{"action": "poll", "session_id": long}}))
    open(os.environ["DRIVER_TMP"] + "/done", "w").close()   # the short one may end now
    out["wait"] = json.loads(_handle_process({{"action": "wait", "session_id": short, "timeout": 30}}))
    out["kill"] = json.loads(_handle_process({{"action": "kill", "session_id": long}}))
    out["after"] = json.loads(_handle_process({{"action": "poll", "session_id": long}}))
    print(json.dumps(out))
""")


UNTIL_DONE = 'while [ ! -e "$DRIVER_TMP/done" ]; do sleep 0.1; done'  # ends when RECOVER says so


def _trimmed(out):
    for key in ("poll", "wait", "kill", "after"):
        out[key] = {k: v for k, v in out[key].items() if k not in ("pid", "uptime_seconds", "session_id")}
    return out


def _recover(hermes, ids):
    got = hermes.run(RECOVER.format(ids=ids))
    assert got.returncode == 0, got.stderr
    return _trimmed(json.loads(got.stdout.splitlines()[-1]))


def test_a_restarted_hermes_takes_its_jobs_back_with_their_output(tmp_path):
    hermes = Hermes(tmp_path, plugin=True)
    ids = _start(hermes, (f"echo early; {UNTIL_DONE}; echo late; exit 3", True), ("echo hi; sleep 60", False))
    got = _recover(hermes, ids)
    assert got["recovered"] == 2
    assert got["poll"]["status"] == "running" and got["poll"]["detached"] is True
    assert "note" not in got["poll"]  # the output is all there: nothing "unavailable" about it
    assert got["wait"]["exit_code"] == 3 and "early\nlate" in got["wait"]["output"]
    assert got["kill"]["status"] == "killed" and got["after"]["completion_reason"] == "killed"


def test_processes_of_a_stock_hermes_are_adopted(tmp_path):
    """A gateway that ran without hermes-procs left processes.json: with the plugin, the live
    processes become jobs (listed, waitable, killable; the exit code nobody saw stays None),
    answering as stock Hermes answers after the same restart."""
    installs = {mode: Hermes(tmp_path / mode, plugin=mode == "plugin") for mode in ("stock", "plugin")}
    # stock Hermes started them (HERMES_SAFE_MODE=1: Hermes loads no plugin)
    starts = {mode: h.start(START.format(jobs=[(UNTIL_DONE, True), ("sleep 60", False)]), HERMES_SAFE_MODE="1")
              for mode, h in installs.items()}
    ids = {mode: proc.communicate(timeout=120)[0].split() for mode, proc in starts.items()}
    recovering = {mode: h.start(RECOVER.format(ids=ids[mode])) for mode, h in installs.items()}
    answers = {mode: _trimmed(last_json(proc)) for mode, proc in recovering.items()}
    assert _differences(answers["stock"], answers["plugin"]) == []
    got = answers["plugin"]
    assert got["recovered"] == 2 and got["poll"]["status"] == "running"
    assert got["poll"]["note"] == "Process recovered after restart -- output history unavailable"
    assert got["wait"]["status"] == "exited" and got["wait"]["exit_code"] is None
    assert got["kill"]["status"] == "killed"
    rows = _ls(installs["plugin"])
    short, long = ids["plugin"]
    assert rows[long]["name"] == "hermes t1" and rows[long]["status"] == "exited"
    # nobody could see how they ended: no exit code, to a human either
    assert rows[short]["exit_code"] is None and rows[long]["exit_code"] is None


def test_disable_returns_to_stock_and_the_jobs_stay(tmp_path):
    hermes = Hermes(tmp_path, plugin=True)
    sid, = _start(hermes, ("sleep 60", False))
    hermes.hermes("plugins", "disable", "hermes-procs")
    got = hermes.run("import model_tools\nfrom tools.process_registry import process_registry as p\n"
                     "print(type(p).__module__)")
    assert got.stdout.strip() == "tools.process_registry"
    assert _ls(hermes)[sid]["status"] == "running"  # still in the dashboard and `hermes-procs ls`
    assert hermes.procs("kill", sid).returncode == 0


LOGGED = textwrap.dedent("""
    import hermes_logging, json
    hermes_logging.setup_logging()      # as the CLI does at start
    import model_tools
    from tools.terminal_tool import terminal_tool
    from tools.process_registry import process_registry, _handle_process
    sid = json.loads(terminal_tool("echo still-works", background=True))["session_id"]
    waited = json.loads(_handle_process({"action": "wait", "session_id": sid}))
    print(type(process_registry).__module__, "still-works" in waited["output"])
    hermes_logging.flush_log_queue()
""")


def test_a_home_it_refuses_leaves_hermes_working(tmp_path):
    """hermes-procs cannot start (its home is another user's kind of folder: group-writable):
    Hermes runs on its own registry, and its log says why in one line."""
    hermes = Hermes(tmp_path, plugin=True)
    bad = tmp_path / "shared"
    bad.mkdir(mode=0o777)
    bad.chmod(0o777)
    got = hermes.run(LOGGED, HERMES_PROCS_HOME=str(bad))
    assert got.returncode == 0, got.stderr
    assert got.stdout.split() == ["tools.process_registry", "True"]
    lines = [line for line in hermes.log().splitlines() if "hermes-procs is not active" in line]
    assert lines and all(str(bad) in line for line in lines), hermes.log()[-3000:]


def test_when_active_the_log_says_where_the_jobs_are(tmp_path):
    hermes = Hermes(tmp_path, plugin=True)
    got = hermes.run(LOGGED)
    assert got.stdout.split() == ["hermes_procs.core.agents.compat", "True"], got.stderr
    assert f"hermes-procs is active: background processes are durable jobs in {hermes.procs_home}" in hermes.log()


def test_restored_async_delegation_results_reach_the_agent(tmp_path):
    """A subagent finished while Hermes was down: the next Hermes restores its result (the
    registry Hermes makes at import does it; the plugin takes the queue over)."""
    installs = {mode: Hermes(tmp_path / mode, plugin=mode == "plugin") for mode in ("stock", "plugin")}
    for hermes in installs.values():
        record = hermes.run(DELEGATION)  # the Hermes that was down: its subagent's result is in the ledger
        assert record.returncode == 0, record.stderr
    draining = {mode: h.start(DRAIN) for mode, h in installs.items()}
    answers = {mode: last_json(proc) for mode, proc in draining.items()}
    assert answers["plugin"] == answers["stock"]
    assert answers["plugin"]["unfiltered"] == [] and len(answers["plugin"]["owned"]) == 1
    assert answers["plugin"]["owned"][0].startswith("[ASYNC DELEGATION COMPLETE — deleg_test1]")


DELEGATION = textwrap.dedent("""
    import time
    from tools import async_delegation as ad
    ad._persist_dispatch({"delegation_id": "deleg_test1", "session_key": "s1", "dispatched_at": time.time(),
                          "goal": "count the files"})
    ad._persist_completion({"type": "async_delegation", "delegation_id": "deleg_test1", "session_key": "s1",
                            "status": "completed", "summary": "42 files", "goal": "count the files"},
                           {"status": "completed"})
""")
DRAIN = textwrap.dedent("""
    import json, model_tools  # a new Hermes: its registry restores the ledger's results
    from tools.process_registry import process_registry as pr
    unfiltered = [t for _, t in pr.drain_notifications()]   # no proof of ownership: left queued
    owned = [t for _, t in pr.drain_notifications(owns_event=lambda e: e.get("session_key") == "s1")]
    print(json.dumps({"unfiltered": unfiltered, "owned": owned}))
""")


# ---- a sandbox backend: Hermes' SSH environment, against a real sshd ------------------------

SANDBOX = textwrap.dedent("""
    import json, time, model_tools
    from tools.terminal_tool import terminal_tool
    from tools.process_registry import process_registry as pr, _handle_process
    def call(**args):
        return json.loads(_handle_process(args))
    started = json.loads(terminal_tool("echo on-the-box $(whoami) $PWD; sleep 3; echo done; exit 4",
                                       background=True, notify_on_complete=True))
    sid = started["session_id"]
    out = {"started": sorted(started), "poll": call(action="poll", session_id=sid)}
    out["wait"] = call(action="wait", session_id=sid, timeout=60)
    other = json.loads(terminal_tool("sleep 60", background=True))["session_id"]
    time.sleep(2.5)  # stock Hermes learns of a sandbox process every 2 s
    out["kill"] = call(action="kill", session_id=other)
    out["list"] = sorted(p["status"] for p in pr.list_sessions())
    out["pid_scope"] = pr.get(sid).pid_scope
    out["ids"] = [sid, other]
    print(json.dumps(out))
""")


def _remote_jobs(home):
    jobs = home / ".hermes" / "procs" / "jobs"
    return sorted(p.name for p in jobs.iterdir()) if jobs.is_dir() else []


def _end_remote_processes(user_home):
    """What the remote side of these tests left running as the ssh user (its warm template, a
    supervisor that lingers): the processes whose command line names that user's state home."""
    for entry in os.listdir("/proc"):
        try:
            with open(f"/proc/{entry}/cmdline", "rb") as fh:
                cmdline = fh.read()
        except OSError:
            continue
        if entry.isdigit() and str(user_home / ".hermes" / "procs").encode() in cmdline:
            try:
                os.kill(int(entry), signal.SIGKILL)
            except ProcessLookupError:
                pass


def test_ssh_sandbox_jobs_run_on_the_box(tmp_path, server):
    """TERMINAL_ENV=ssh: stock Hermes runs the process on the box and reads its log file; with
    the plugin it is a job on the box (under its supervisor there, output durable there), and
    Hermes' answers are the same."""
    import pwd
    import shutil

    import sshd

    user_home = Path(pwd.getpwnam(sshd.USER).pw_dir)
    config = {"TERMINAL_ENV": "ssh", "TERMINAL_SSH_HOST": "127.0.0.1", "TERMINAL_SSH_USER": sshd.USER,
              "TERMINAL_SSH_PORT": str(server.port), "TERMINAL_SSH_KEY": str(server.dir / "user_key")}
    before = _remote_jobs(user_home)
    try:
        answers = both(tmp_path, SANDBOX, **config)
        made = sorted(set(_remote_jobs(user_home)) - set(before))
    finally:
        _end_remote_processes(user_home)
        shutil.rmtree(user_home / ".hermes" / "procs", ignore_errors=True)
    stock, plugin = answers["stock"], answers["plugin"]
    assert made == sorted(plugin.pop("ids")) and stock.pop("ids")  # the plugin's jobs are on the box
    for side in (stock, plugin):
        for key in ("poll", "wait", "kill"):
            side[key] = {k: v for k, v in side[key].items() if k not in ("pid", "uptime_seconds", "session_id")}
        # polled at once: whether the first line is in over ssh yet is a race on either side
        # (wait's output below is compared whole)
        side["poll"].pop("output_preview", None)
    assert plugin["wait"]["exit_code"] == 4 and f"on-the-box {sshd.USER}" in plugin["wait"]["output"]
    assert plugin["pid_scope"] == "sandbox" and plugin["kill"]["status"] == "killed"
    assert _differences(stock, plugin) == []


# ---- a sandbox backend: Hermes' Docker environment, against a real dockerd --------------------

@pytest.fixture
def daemon(request):
    """The session's private dockerd with the test image (tests/dockerd.py)."""
    try:
        return request.getfixturevalue("docker_daemon")
    except pytest.FixtureLookupError:
        pytest.skip("needs the private dockerd of tests/dockerd.py (the docker_daemon fixture)")


DOCKER = textwrap.dedent("""
    import json, model_tools
    from tools.terminal_tool import terminal_tool
    from tools.process_registry import process_registry as pr, _handle_process
    def call(**args):
        return json.loads(_handle_process(args))
    sid = json.loads(terminal_tool("echo in-the-container $(cat /etc/hostname | wc -c); sleep 3; echo done; exit 5",
                                   background=True))["session_id"]
    out = {"wait": call(action="wait", session_id=sid, timeout=60), "pid_scope": pr.get(sid).pid_scope,
           "sid": sid}
    from tools.terminal_tool import _active_environments
    env = next(iter(_active_environments.values()))
    out["jobs"] = env.execute("ls /root/.hermes/procs/jobs 2>/dev/null")["output"].split()
    out["kill"] = call(action="kill", session_id=json.loads(terminal_tool("sleep 60", background=True))["session_id"])
    env.cleanup()
    print(json.dumps(out))
""")


def test_docker_sandbox_jobs_run_in_the_container(tmp_path, daemon):
    """TERMINAL_ENV=docker: with the plugin the process is a job in Hermes' container
    (docker://CONTAINER); Hermes' answers are those of stock Hermes."""
    config = {"TERMINAL_ENV": "docker", "TERMINAL_DOCKER_IMAGE": daemon.image, "TERMINAL_DOCKER_NETWORK": "false",
              "DOCKER_HOST": daemon.host, "TERMINAL_CWD": "/root"}
    answers = both(tmp_path, DOCKER, together=False, **config)
    stock, plugin = answers["stock"], answers["plugin"]
    assert stock["jobs"] == [] and plugin["jobs"] == [plugin["sid"]], answers  # a job in the container
    assert plugin["wait"]["exit_code"] == 5 and "in-the-container" in plugin["wait"]["output"]
    for side in (stock, plugin):
        for key in ("jobs", "sid"):
            side.pop(key)
        side["kill"] = {k: v for k, v in side["kill"].items() if k != "session_id"}
    assert _differences(stock, plugin) == []
