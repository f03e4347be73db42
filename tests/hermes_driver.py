"""Drives the real Hermes agent (hermes-agent 0.19.0) through its own tools, without an LLM.

Run with the Python of Hermes' environment (tests/hermes_agent.py builds it), once with the
hermes-procs plugin enabled in $HERMES_HOME and once without; each scenario prints what Hermes'
public surface answered, in a form two runs can be compared in (ids, pids and times replaced):

    python hermes_driver.py SCENARIO [SCENARIO...]     one JSON object {scenario: observations}

Hermes is set up as its CLI sets itself up: `import model_tools` imports its tools and loads the
enabled plugins. The tools are called as the model's tool calls reach them:
`tools.terminal_tool.terminal_tool(...)` for `terminal(background=true)` and
`tools.process_registry._handle_process(args)` for `process(action=...)`; the CLI's, TUI's and
gateway's calls on the registry (drain_notifications, completion_queue, list_sessions, kill_all,
recover_from_checkpoint, ...) are made as they make them.
"""

from __future__ import annotations

import faulthandler
import json
import os
import re
import sys
import time
import traceback

import model_tools  # noqa: F401 - imports Hermes' tools and loads the enabled plugins, as the CLI does
from tools.process_registry import _handle_process
from tools.terminal_tool import terminal_tool

from tools import process_registry as pr_module

SCENARIOS = {}


def scenario(fn):
    SCENARIOS[fn.__name__] = fn
    return fn


def registry():
    return pr_module.process_registry  # looked up at each call, as Hermes' call sites do


def start(command, **kw):
    """terminal(background=true). A job with notify_on_complete sleeps a second first: stock
    Hermes sets the flag after starting the job and misses the exit of a job that ends sooner."""
    kw.setdefault("task_id", "t1")
    result = json.loads(terminal_tool(command, background=True, **kw))
    assert result.get("session_id"), result
    return result, result["session_id"]


def process(**args):
    return json.loads(_handle_process(args, task_id=args.pop("task_id", "t1")))


def until(predicate, timeout=15.0):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(0.05)
    raise AssertionError(f"not within {timeout}s: {predicate}")


def exited(sid):
    until(lambda: registry().get(sid) is not None and registry().get(sid).exited)


def past_the_rc_files(sid):
    """Until a job started as `echo ready; ...` printed `ready`: its login shell has read
    /etc/profile. A kill sooner races it in stock Hermes: `$(id -u)` killed there makes bash (an
    interactive one ignores SIGTERM) print `[: : integer expression expected` as the output."""
    until(lambda: "ready" in process(action="poll", session_id=sid).get("output_preview", ""))


IDS = re.compile(r"proc_[0-9a-f]{12}")
# bash's complaints when it starts interactive without a terminal. Stock Hermes strips them from
# the first chunk it reads from a job, so they leak when they come in the second: `clean` takes
# them out (both runs), and the run reports whether it met any (the plugin must never).
NOISE = re.compile(r"^.*(no job control in this shell|cannot set terminal process group|"
                   r"Inappropriate ioctl for device).*\n?", re.MULTILINE)
noisy = []


# a preview (the last N characters) may start inside a noise line: "is shell\n..."
NOISE_ENDS = ("no job control in this shell", "Inappropriate ioctl for device")


def clean(text):
    found = len(NOISE.findall(text))
    first, newline, rest = text.partition("\n")
    if newline and len(first) >= 4 and any(end.endswith(first) for end in NOISE_ENDS):
        found, text = found + 1, rest
    if found:
        noisy.append(found)
    return NOISE.sub("", text)


def noise_lines(sid):
    """How many noise lines head the job's log (stock Hermes only): pages are read past them."""
    full = process(action="log", session_id=sid, offset=0, limit=100000)["output"]
    return len(NOISE.findall(full))


def norm(obj, ids):
    """`obj` with session ids replaced by SID0, SID1, ... (in order of appearance), the work
    folder by WORK, and the fields that differ from run to run (pid, uptime, started_at) dropped."""
    if isinstance(obj, str):
        obj = clean(obj.replace(os.environ["DRIVER_TMP"], "WORK"))
        return IDS.sub(lambda m: ids.setdefault(m.group(0), f"SID{len(ids)}"), obj)
    if isinstance(obj, dict):
        return {k: norm(v, ids) for k, v in obj.items() if k not in ("pid", "uptime_seconds", "started_at")}
    if isinstance(obj, (list, tuple)):
        return [norm(v, ids) for v in obj]
    return obj


# ---- scenarios ---------------------------------------------------------------------------

@scenario
def log_paging():
    """process(action="log") of a 300-line job: no offset (the tail), offsets, the end."""
    _, sid = start("for i in $(seq 1 300); do echo line$i; done")
    out = {"wait": process(action="wait", session_id=sid, timeout=20)}
    skip = noise_lines(sid)
    for name, args in {"default": {}, "offset10": {"offset": 10 + skip, "limit": 5},
                       "offset290": {"offset": 290 + skip, "limit": 50}, "limit3": {"limit": 3}}.items():
        page = process(action="log", session_id=sid, **args)
        lines = page["output"].split("\n")
        out[name] = {**{k: v for k, v in page.items() if k != "output"}, "first": lines[0], "last": lines[-1],
                     "total_lines": page["total_lines"] - skip}
    out["wait"]["output"] = out["wait"]["output"].split("\n")[-3:]
    return out


@scenario
def consumed_by_wait():
    """A notify_on_complete job the agent waited for is not notified again."""
    _, sid = start("sleep 1; echo done; exit 4", notify_on_complete=True)
    waited = process(action="wait", session_id=sid, timeout=20)
    time.sleep(0.8)
    return {"wait": waited, "consumed": registry().is_completion_consumed(sid),
            "drain": registry().drain_notifications(), "queued": registry().completion_queue.qsize()}


@scenario
def consumed_by_log():
    """...nor one whose log the agent read after it ended."""
    _, sid = start("sleep 1; echo one; echo two", notify_on_complete=True)
    exited(sid)
    page = process(action="log", session_id=sid)
    time.sleep(0.8)
    return {"log": page["output"], "consumed": registry().is_completion_consumed(sid),
            "drain": registry().drain_notifications()}


@scenario
def not_consumed_by_a_page_before_the_end():
    _, sid = start("sleep 1; for i in $(seq 1 50); do echo l$i; done", notify_on_complete=True)
    exited(sid)
    process(action="log", session_id=sid, offset=1, limit=5)
    time.sleep(0.8)
    return {"consumed": registry().is_completion_consumed(sid),
            "drain": [text for _, text in registry().drain_notifications()]}


@scenario
def notified_once():
    """A notify_on_complete job nobody looked at: one notification, Hermes' text."""
    _, sid = start("sleep 1; echo result-line; exit 3", notify_on_complete=True)
    exited(sid)
    time.sleep(0.8)
    first = registry().drain_notifications()
    time.sleep(0.5)
    return {"first": first, "again": registry().drain_notifications()}


@scenario
def poll_observed():
    """poll() of an exited job: the CLI's drain skips it, a gateway-style drain still gets it."""
    _, one = start("sleep 1; exit 0", notify_on_complete=True)
    _, two = start("sleep 1; exit 1", notify_on_complete=True)
    exited(one)
    exited(two)
    time.sleep(0.8)
    polled = [process(action="poll", session_id=s) for s in (one, two)]
    cli = [e["session_id"] for e, _ in registry().drain_notifications(skip_poll_observed=True)]
    return {"poll": polled, "cli_drain": cli, "consumed": registry().is_completion_consumed(one)}


@scenario
def completion_queue_consumer():
    """The TUI/gateway way: take events off completion_queue, skip the consumed ones."""
    _, quiet = start("sleep 1; exit 0", notify_on_complete=True)
    process(action="wait", session_id=quiet, timeout=20)
    _, loud = start("sleep 1; echo hi; exit 2", notify_on_complete=True)
    exited(loud)
    time.sleep(0.8)
    got = []
    q = registry().completion_queue
    while not q.empty():
        event = q.get_nowait()
        if event.get("type") == "completion" and registry().is_completion_consumed(event["session_id"]):
            continue
        got.append(event)
    return {"events": got}


@scenario
def wait_clamp():
    """wait(timeout=6) with TERMINAL_TIMEOUT=2 returns after about 2 s, saying so."""
    _, sid = start("sleep 30")
    os.environ["TERMINAL_TIMEOUT"] = "2"
    try:
        began = time.monotonic()
        waited = process(action="wait", session_id=sid, timeout=6)
        took = time.monotonic() - began
    finally:
        del os.environ["TERMINAL_TIMEOUT"]
    killed = process(action="kill", session_id=sid)
    return {"wait": waited, "about_2s": 1.5 < took < 4.5, "kill": killed}


@scenario
def shell_and_environment():
    """The job's shell reads the rc files; Hermes' own variables and VIRTUAL_ENV are stripped,
    a DB password is kept for the job; no job-control noise in the output."""
    command = ("rctool; echo rc=$FROM_RC; echo venv=${VIRTUAL_ENV:-unset} conda=${CONDA_PREFIX:-unset}; "
               "echo openai=${OPENAI_API_KEY:-unset} aux=${AUXILIARY_VISION_API_KEY:-unset}; "
               "echo pwlen=${#MY_DB_PASSWORD}; echo 'GITHUB_TOKEN: present'; echo interactive=${-//[^i]/}")
    _, sid = start(command)
    lines = clean(process(action="wait", session_id=sid, timeout=20)["output"]).split("\n")
    _, env = start("env | cut -d= -f1 | sort")
    names = clean(process(action="wait", session_id=env, timeout=20)["output"]).split()
    return {"lines": lines, "env_names": sorted(set(names) - {"_", "SHLVL", "OLDPWD", "PWD"})}


@scenario
def secret_value_in_output():
    _, sid = start("echo pw=$MY_DB_PASSWORD")
    return {"output": process(action="wait", session_id=sid, timeout=20)["output"]}


@scenario
def pty_input():
    # the job lingers after its line: stock Hermes's PTY reader, behind on a loaded machine,
    # lost the line of a job that closed its terminal at once (1 full run in 2)
    _, sid = start("read x; echo got-$x; sleep 0.5", pty=True)
    time.sleep(1.0)
    submitted = process(action="submit", session_id=sid, data="abc")
    waited = process(action="wait", session_id=sid, timeout=20)
    late = process(action="write", session_id=sid, data="x")
    return {"submit": submitted, "got": "got-abc" in waited["output"], "status": waited["status"],
            "exit_code": waited["exit_code"], "late": late}


@scenario
def kill():
    _, sid = start("echo ready; sleep 30")
    past_the_rc_files(sid)
    killed = process(action="kill", session_id=sid)
    polled = process(action="poll", session_id=sid)
    again = process(action="kill", session_id=sid)
    return {"kill": killed, "poll": polled, "again": again,
            "missing": process(action="poll", session_id="proc_000000000000")}


@scenario
def list_and_activity():
    """Hermes files every job under the task "default" and the caller's session key ("t1", "t2")."""
    start("sleep 30", task_id="t1")
    start("sleep 30", task_id="t2")
    _, c = start("sleep 1; exit 0", task_id="t1", notify_on_complete=True)
    exited(c)
    reg = registry()
    listed = process(action="list", task_id="default")["processes"]
    order = [row["status"] for row in listed]  # running ones first; finished ones as they ended
    out = {"list_tool": sorted(listed, key=lambda r: (r["status"], r["command"])), "order": order,
           "list_t2": reg.list_sessions(session_key="t2"),
           "has_default": reg.has_active_processes("default"), "has_t3": reg.has_active_processes("t3"),
           "any": reg.has_any_active(), "count": reg.count_running(), "for_session": reg.has_active_for_session("t2"),
           "all": len(reg.list_sessions())}
    out["kill_all"] = reg.kill_all()
    out["after"] = {"any": reg.has_any_active(), "count": reg.count_running()}
    return out


@scenario
def watch_pattern():
    _, sid = start("echo start; sleep 0.5; echo READY now; sleep 30", watch_patterns=["READY"])
    found = until(lambda: registry().drain_notifications())
    process(action="kill", session_id=sid)
    return {"events": found}


@scenario
def kill_all_notifies():
    _, sid = start("echo ready; sleep 30", notify_on_complete=True)
    past_the_rc_files(sid)
    count = registry().kill_all()
    time.sleep(0.8)
    return {"count": count, "drain": [text for _, text in registry().drain_notifications()]}


@scenario
def close_terminal():
    from tools.close_terminal_tool import close_terminal_tool

    _, sid = start("sleep 30")
    without = json.loads(close_terminal_tool(sid))
    seen = []
    registry().on_close = lambda session, pid: seen.append([getattr(session, "id", None), pid])
    with_sink = json.loads(close_terminal_tool(sid))
    registry().on_close = None
    process(action="kill", session_id=sid)
    return {"without": without, "with": with_sink, "seen": seen}


@scenario
def live_output():
    chunks = []
    registry().on_output = lambda session, chunk: chunks.append([session.id, chunk])
    _, sid = start("for i in 1 2 3 4 5; do echo chunk$i; sleep 0.1; done")
    process(action="wait", session_id=sid, timeout=20)
    until(lambda: "chunk5" in "".join(c for _, c in chunks), timeout=5)
    registry().on_output = None
    return {"ids": sorted({s for s, _ in chunks}), "text": "".join(c for _, c in chunks)}


@scenario
def missing_workdir():
    base = os.environ["DRIVER_TMP"]
    _, sid = start("pwd", workdir=os.path.join(base, "gone", "deeper"))
    return {"pwd": clean(process(action="wait", session_id=sid, timeout=20)["output"]).strip() == base}


@scenario
def gateway_watcher():
    """A gateway session: routing fields on the session, a pending watcher for the gateway."""
    from gateway.session_context import set_session_vars

    set_session_vars(platform="telegram", chat_id="42", user_id="7", user_name="ann", thread_id="",
                     message_id="m1", session_key="agent:main:telegram:42")
    _, sid = start("sleep 0.3; exit 0", notify_on_complete=True)
    watchers = list(registry().pending_watchers)
    registry().pending_watchers = []
    session = registry().get(sid)
    return {"watchers": watchers, "platform": session.watcher_platform, "chat": session.watcher_chat_id,
            "interval": session.watcher_interval}


def held_jobs(reg):
    """What `reg` counts as running: the adapter's sessions (and the replaced stock registry's
    count), or stock Hermes's own."""
    held = getattr(reg, "_running", {})
    running = held() if callable(held) else list(held.values())
    stock = getattr(reg, "_stock", None)
    return {"sessions": [(getattr(s, "id", "?"), getattr(s, "command", "?")) for s in running],
            "replaced_stock": stock.count_running() if stock is not None else None}


def drop_stock_double(reg):
    """Stock Hermes (spawn in tools/process_registry.py) starts a job's reader thread before it
    files the session as running: a job that ends in between (seen on a loaded machine) is moved
    to the finished ones by the reader, then filed as running for good, listed twice and counted
    running for ever, in every later scenario. An upstream race, not the plugin's to copy: the
    harness takes such a session out of stock's running ones."""
    running, finished = getattr(reg, "_running", None), getattr(reg, "_finished", None)
    if not (isinstance(running, dict) and isinstance(finished, dict)):
        return  # the plugin's adapter
    with reg._lock:
        for sid in [sid for sid in running if sid in finished]:
            running.pop(sid)
            print("stock filed an ended job as running too (its spawn race):", sid, file=sys.stderr, flush=True)


def clean_slate():
    """No job of an earlier scenario runs, and no event of one is pending."""
    drop_stock_double(registry())
    registry().kill_all()
    time.sleep(0.5)
    # stock Hermes keeps a killed job among the running ones until its reader thread sees the
    # end of the output, which may take seconds on a loaded machine: the next scenario's list
    # and counts would show it (list_and_activity failed so 1 run in 3)
    deadline = time.monotonic() + 15
    while registry().count_running() and time.monotonic() < deadline:
        time.sleep(0.05)
        drop_stock_double(registry())
    if registry().count_running():  # seen once with the plugin (1 full run in 12): say what is held
        print("still counted running after 15 s:", held_jobs(registry()), file=sys.stderr, flush=True)
    registry().drain_notifications(skip_poll_observed=False)
    while not registry().completion_queue.empty():
        registry().completion_queue.get_nowait()


def main(names):
    out = {}
    for name in names:
        ids = {}
        print(f"{time.monotonic():.1f} {name}", file=sys.stderr, flush=True)  # where a hang was (results())
        try:
            clean_slate()
            out[name] = norm(SCENARIOS[name](), ids)
        except Exception:  # noqa: BLE001 - reported to the test, which fails with it
            out[name] = {"driver_error": traceback.format_exc()}
    registry().kill_all()
    print(json.dumps({"registry": type(registry()).__module__, "results": out, "noise_lines": sum(noisy)}))


if __name__ == "__main__":
    faulthandler.dump_traceback_later(240, exit=False)  # the stacks on stderr, before results() gives up
    main(sys.argv[1:] or list(SCENARIOS))
