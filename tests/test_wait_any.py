"""wait_any: the first of several jobs to end (pushed by inotify on the home, issue 11), in the
API and as `hermes-procs wait ID ID ...`."""

from __future__ import annotations

import json
import subprocess
import sys
import threading

CLI = [sys.executable, "-m", "hermes_procs"]


def test_the_first_job_to_end_is_returned_with_the_others_still_running(registry):
    slow = registry.spawn("sleep 60")["session_id"]
    asker = registry.spawn("read x; echo got $x; exit 3")["session_id"]
    other = registry.spawn("sleep 60")["session_id"]
    threading.Timer(0.3, lambda: registry.submit(asker, "go")).start()
    res = registry.wait_any([slow, asker[:10], other], timeout=30)
    assert (res["status"], res["session_id"], res["exit_code"]) == ("exited", asker, 3), res
    assert "got go" in res["output"]
    assert sorted(res["running"]) == sorted([slow, other])


def test_an_already_finished_job_returns_at_once(registry):
    done = registry.spawn("true")["session_id"]
    registry.wait(done, timeout=30)
    running = registry.spawn("sleep 60")["session_id"]
    res = registry.wait_any([running, done], timeout=30)
    assert res["status"] == "exited" and res["session_id"] == done and res["running"] == [running]


def test_timeout_and_interrupt_say_which_run_on(registry):
    a = registry.spawn("sleep 60")["session_id"]
    res = registry.wait_any([a], timeout=0.3)
    assert res["status"] == "timeout" and res["running"] == [a] and "still running" in res["timeout_note"]
    stop = threading.Event()
    threading.Timer(0.2, stop.set).start()
    res = registry.wait_any([a], timeout=30, interrupt=stop)
    assert res["status"] == "interrupted" and res["running"] == [a]


def test_bad_input_is_one_clear_error(registry):
    a = registry.spawn("sleep 60")["session_id"]
    assert "list of job ids" in registry.wait_any(a)["error"]
    assert "1 to 10000" in registry.wait_any([])["error"]
    assert registry.wait_any([a, "proc_000000000000"])["status"] == "not_found"
    assert registry.wait_any([a], timeout=-1)["status"] == "error"


def test_cli_wait_with_several_ids(registry, home):
    quick = registry.spawn("sleep 0.5; exit 4")["session_id"]
    slow = registry.spawn("sleep 60")["session_id"]
    run = subprocess.run([*CLI, "--home", str(home), "--json", "wait", slow, quick, "--timeout", "30"],
                         capture_output=True, text=True, timeout=60)
    out = json.loads(run.stdout)
    assert run.returncode == 0 and out["session_id"] == quick and out["exit_code"] == 4 and out["running"] == [slow]
    late = subprocess.run([*CLI, "--home", str(home), "wait", slow, quick, "--until", "input"],
                          capture_output=True, text=True, timeout=60)
    assert late.returncode == 1 and late.stderr.count("\n") == 1 and "--until works with one job id" in late.stderr
