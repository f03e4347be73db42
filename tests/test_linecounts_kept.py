"""The supervisor keeps lines.idx as it writes the log (issue 26 item 2: a tail that costs
nothing): in quiet moments and after the exit, so a reader's first tail is a lookup, not a pass.
Real jobs; the answers are checked against a count of the bytes on disk."""

from __future__ import annotations

import os
import shlex
import struct
from pathlib import Path

from conftest import supervisor_gone, wait_until

from hermes_procs.core.supervisor import linecounts

LINE = b"2024-05-01 12:00:00 INFO worker-3 handled request id=12345 in 12 ms\n"


def _writer(mib: int, then: str) -> str:
    """A job printing about `mib` MiB of lines and a last line without its line end, then `then`."""
    script = ("import os, sys, time; go = os.environ.get('GO')\nwhile go and not os.path.exists(go): time.sleep(0.01)\n"
              f"w = sys.stdout.buffer.write; [w({LINE!r} * 1000) for _ in range({mib} * 16)]; "
              f"w(b'last, unfinished'); sys.stdout.flush(); {then}")
    return f"python3 -c {shlex.quote(script)}"


def _last_record(jobdir: Path) -> tuple[int, int]:
    """The last record of lines.idx: (offset, line ends before it); (0, 0) without the file."""
    try:
        data = (jobdir / linecounts.NAME).read_bytes()
    except FileNotFoundError:
        return 0, 0
    body = data[len(linecounts.MAGIC):]
    if len(body) < 16:
        return 0, 0
    offset, newlines = struct.unpack_from("<QQ", body, len(body) - 16)
    return offset, newlines & linecounts.COUNT


def _counted_to(jobdir: Path) -> int:
    """The offset of the last record of lines.idx (0 without the file)."""
    return _last_record(jobdir)[0]


def _retained(jobdir: Path) -> bytes:
    return b"".join(p.read_bytes() for p in (jobdir / "output.log.1", jobdir / "output.log") if p.exists())


def _check_tail(registry, sid: str, jobdir: Path) -> None:
    data = _retained(jobdir)
    got = registry.read_log(sid, limit=3)
    assert got["total_lines"] == data.count(b"\n") + (not data.endswith(b"\n"))
    lines = data.split(b"\n")[:-1] if data.endswith(b"\n") else data.split(b"\n")
    assert got["output"].splitlines() == [t.decode() for t in lines[-3:]]
    os.unlink(jobdir / linecounts.NAME)  # the same answer from a count of its own
    assert registry.read_log(sid, limit=3) == got


def test_a_quiet_job_has_its_lines_counted_before_anyone_reads(registry):
    sid = registry.spawn(_writer(3, "time.sleep(60)"))["session_id"]
    jobdir = registry.job_dir(sid)
    wait_until(lambda: len(_retained(jobdir)) >= 3 << 20, timeout=20)
    size = (jobdir / "output.log").stat().st_size
    wait_until(lambda: _counted_to(jobdir) == size // linecounts.STEP * linecounts.STEP, timeout=5)
    _check_tail(registry, sid, jobdir)
    assert registry.poll(sid)["status"] == "running"
    registry.kill(sid, grace=0.2)


def test_a_job_that_never_pauses_has_its_lines_counted_as_it_writes(registry, monkeypatch):
    """Output every 6 ms, never COUNT_QUIET (0.1 s) apart, as a server logging all day: the
    supervisor counts a slice at a time anyway once it is COUNT_FAR (4 MiB) behind, so a reader's
    first tail never counts the whole log (it counted nothing until the job paused). lines.idx
    deleted meanwhile (a cache: that loses nothing) is counted anew, not given up on."""
    monkeypatch.setenv("HERMES_PROCS_LOG_CAP", str(1 << 30))  # one segment: no rotation meanwhile
    script = (f"import os, time\nchunk = {LINE!r} * 1000\n"
              "while True:\n    os.write(1, chunk)\n    time.sleep(0.006)")
    sid = registry.spawn(f"python3 -c {shlex.quote(script)}")["session_id"]
    jobdir = registry.job_dir(sid)
    log = jobdir / "output.log"
    wait_until(lambda: _counted_to(jobdir) >= 8 << 20, timeout=60)
    os.unlink(jobdir / linecounts.NAME)
    wait_until(lambda: log.stat().st_size >= 64 << 20, timeout=60)
    size = log.stat().st_size
    counted, newlines = _last_record(jobdir)
    assert counted >= size - (14 << 20), (counted, size)
    with open(log, "rb") as fh:
        assert newlines == fh.read(counted).count(b"\n")
    assert "not counting" not in (jobdir / "supervisor.log").read_text()
    assert registry.poll(sid)["status"] == "running"
    registry.kill(sid, grace=0.2)


def test_the_rest_is_counted_once_the_job_has_ended(registry):
    sid = registry.spawn(_writer(5, "pass"))["session_id"]
    assert registry.wait(sid, timeout=30)["exit_code"] == 0
    jobdir = registry.job_dir(sid)
    supervisor_gone(registry, sid)
    size = (jobdir / "output.log").stat().st_size
    assert size > 5 << 20
    assert _counted_to(jobdir) == size // linecounts.STEP * linecounts.STEP
    _check_tail(registry, sid, jobdir)


def test_counts_of_a_rotated_log_start_at_its_first_retained_byte(registry, monkeypatch):
    monkeypatch.setenv("HERMES_PROCS_LOG_CAP", str(4 << 20))  # segments of 2 MiB: the oldest dropped
    sid = registry.spawn(_writer(9, "pass"))["session_id"]
    registry.wait(sid, timeout=30)
    supervisor_gone(registry, sid)
    jobdir = registry.job_dir(sid)
    counted = _counted_to(jobdir)  # before any reader could count
    dropped = registry.read_log(sid, limit=1)["dropped_bytes"]
    assert 0 < dropped < counted
    _check_tail(registry, sid, jobdir)


def test_an_index_that_cannot_be_written_stops_the_counting_once(registry, tmp_path):
    """A directory where lines.idx goes: the supervisor says so once in supervisor.log and stops
    (no count over the same bytes in every quiet moment, no temporary files left); the job, its
    log and its readers carry on."""
    go = tmp_path / "go"
    sid = registry.spawn(_writer(12, "time.sleep(1)"), env={"GO": str(go)})["session_id"]
    jobdir = registry.job_dir(sid)
    (jobdir / linecounts.NAME).mkdir()
    go.touch()
    assert registry.wait(sid, timeout=30)["exit_code"] == 0
    supervisor_gone(registry, sid)
    said = (jobdir / "supervisor.log").read_text()
    assert said.count("not counting the log's lines") == 1, said
    assert not list(jobdir.glob(linecounts.NAME + ".new-*"))
    data = _retained(jobdir)
    got = registry.read_log(sid, limit=2)
    assert got["total_lines"] == data.count(b"\n") + 1 and got["output"].endswith("last, unfinished")
    assert (jobdir / linecounts.NAME).is_dir()


def test_readers_and_the_supervisor_counting_at_once_agree(registry, monkeypatch):
    """Bursts of 2 MiB with pauses (the supervisor counts in each), a 4 MiB cap (rotations),
    and a reader taking the tail all along: every answer it got was whole and numbered as the
    final count says, and lines.idx ends equal to a fresh count."""
    monkeypatch.setenv("HERMES_PROCS_LOG_CAP", str(4 << 20))
    burst = f"[w({LINE!r} * 1000) for _ in range(32)]; sys.stdout.flush(); time.sleep(0.15)"
    script = f"import sys, time; w = sys.stdout.buffer.write\nfor i in range(8):\n    {burst}\nw(b'end\\n')"
    sid = registry.spawn(f"python3 -c {shlex.quote(script)}")["session_id"]
    jobdir = registry.job_dir(sid)
    seen = 0
    while registry.poll(sid)["status"] == "running":
        got = registry.read_log(sid, limit=2)
        lines = got["output"].splitlines()
        for line in lines[:-1]:
            assert line == LINE.decode().rstrip("\n"), line
        assert not lines or LINE.decode().startswith(lines[-1]) or lines[-1] == "end", lines  # the last: partial
        assert got["total_lines"] >= 0
        seen += 1
    assert seen > 5
    supervisor_gone(registry, sid)
    got = registry.read_log(sid, limit=2)
    assert got["output"].splitlines() == [LINE.decode().rstrip("\n"), "end"]
    _check_tail(registry, sid, jobdir)
