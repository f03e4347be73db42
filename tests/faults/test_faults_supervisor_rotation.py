"""Issue 8 class 9: reading a log while a flood rotates it under a small cap never errors."""

from __future__ import annotations

from conftest import wait_until

from hermes_procs.core.registry import logstore


def test_read_log_during_rotation_never_errors(registry, monkeypatch):
    monkeypatch.setenv("HERMES_PROCS_LOG_CAP", "65536")  # a rotation every 32 KiB
    sid = registry.spawn("yes 'a line of flood output, long enough to fill the log quickly'")["session_id"]
    jobdir = registry.job_dir(sid)
    wait_until(lambda: logstore.dropped_bytes(jobdir) > 0)
    failures = []
    for i in range(400):
        result = registry.read_log(sid, offset=None if i % 2 else 0, limit=50)
        if result.get("status") == "error":
            failures.append(result["error"])
        tail = logstore.tail_bytes(jobdir, 4096)
        span = logstore.read_bytes(jobdir, logstore.dropped_bytes(jobdir), None)
        assert len(tail) <= 4096 and len(span) <= 65536 + 65536
    assert failures == []
    assert registry.kill(sid, grace=0)["status"] == "killed"
