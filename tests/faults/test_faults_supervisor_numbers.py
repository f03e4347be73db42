"""Issue 8 class 10: every numeric input is finite and in range, or a clear error; on the socket
a bad request gets {"ok": false} and the connection serves the requests behind it."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from hermes_procs.core.agents import tool

from .conftest import raw_exchange

BAD_SECONDS = [float("nan"), float("inf"), -1.0, 1e300, 10**400, "10", True, None]


@pytest.mark.parametrize("value", [v for v in BAD_SECONDS if v is not None])
def test_spawn_rejects_bad_max_runtime(registry, home, value):
    result = registry.spawn("true", max_runtime=value)
    assert result["status"] == "error" and "max_runtime" in result["error"], result
    assert list((home / "jobs").iterdir()) == []


@pytest.mark.parametrize("value", [float("nan"), float("inf"), -1.0, 1e300, "3"])
def test_kill_rejects_bad_grace(registry, value):
    sid = registry.spawn("sleep 30")["session_id"]
    result = registry.kill(sid, grace=value)
    assert result["status"] == "error" and "grace" in result["error"], result
    assert registry.poll(sid)["status"] == "running"


@pytest.mark.parametrize("rows, cols", [(0, 80), (10**6, 80), (24, 1.5), (24, float("nan")), (True, 80)])
def test_resize_and_spawn_reject_bad_sizes(registry, home, rows, cols):
    assert registry.spawn("true", pty=True, rows=rows, cols=cols)["status"] == "error"
    assert list((home / "jobs").iterdir()) == []


@pytest.mark.parametrize("kwargs", [{"offset": -1}, {"offset": 1.5}, {"limit": 0}, {"limit": float("inf")},
                                    {"offset": True}])
def test_read_log_rejects_bad_window(registry, kwargs):
    sid = registry.spawn("echo hi")["session_id"]
    result = registry.read_log(sid, **kwargs)
    assert result["status"] == "error" and ("offset" in result["error"] or "limit" in result["error"])


@pytest.mark.parametrize("value", [float("nan"), float("inf"), -5, "x"])
def test_wait_rejects_bad_timeout(registry, value):
    sid = registry.spawn("true")["session_id"]
    assert registry.wait(sid, timeout=value)["status"] == "error"


def test_tool_passes_bad_numbers_back_as_errors(home):
    out = json.loads(tool.handle_process({"action": "start", "command": "true", "max_runtime": 1e300}))
    assert out.get("status") == "error" and "max_runtime" in out["error"], out


def test_cli_rejects_a_huge_max_runtime(home):
    proc = subprocess.run([sys.executable, "-m", "hermes_procs", "run", "--home", str(home), "--max-runtime", "1e300",
                           "--", "true"], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 1 and "--max-runtime must be" in proc.stderr, proc.stderr
    assert "Traceback" not in proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1


@pytest.mark.parametrize("request_line", [
    b'{"op": "kill", "grace": Infinity}', b'{"op": "kill", "grace": NaN}', b'{"op": "kill", "grace": 1e999}',
    b'{"op": "kill", "grace": -1}', b'{"op": "kill", "grace": "soon"}', b'{"op": "resize", "rows": 1e300, "cols": 5}',
    b'{"op": "resize", "rows": -3, "cols": 5}', b'{"op": "resize", "rows": 99999999999999999999, "cols": 5}',
    b'[1, 2]', b'"status"', b'{"op": 5}', b'{"op": "write", "data": 12}', b'[' * 100000 + b']' * 100000,
    b'\xff\xfe not json',
])
def test_socket_bad_request_is_answered_and_the_next_is_served(registry, request_line):
    sid = registry.spawn("sleep 30", pty=True)["session_id"]
    jobdir = registry.job_dir(sid)
    replies = raw_exchange(jobdir, request_line + b"\n" + b'{"op": "status"}\n', replies=2)
    assert len(replies) == 2, replies
    assert replies[0]["ok"] is False and replies[0]["error"], replies
    assert replies[1]["ok"] is True and replies[1]["running"] is True
