"""Tests of hermes_procs.core.registry.logstore over real files: segments, byte ranges, lines, rotation."""

from __future__ import annotations

import json
import os
import random
import time
from pathlib import Path

from hermes_procs.core.registry import logstore
from hermes_procs.core.registry.logstore import (
    LINE_CAP,
    LineIndex,
    dropped_bytes,
    read_bytes,
    read_lines,
    segments,
    tail_bytes,
    total_bytes,
)


def _job(tmp_path: Path, current: bytes | None = b"", older: bytes | None = None, dropped: int | None = None) -> Path:
    d = tmp_path / "proc_0123456789ab"
    d.mkdir(exist_ok=True)
    if older is not None:
        (d / "output.log.1").write_bytes(older)
    if current is not None:
        (d / "output.log").write_bytes(current)
    if dropped is not None:
        (d / "logstate.json").write_text(json.dumps({"dropped_bytes": dropped}))
    return d


def _append(d: Path, data: bytes) -> None:
    with open(d / "output.log", "ab") as f:
        f.write(data)


def _rotate(d: Path) -> None:
    """What the supervisor does at half the cap: output.log -> output.log.1, new output.log."""
    old = d / "output.log.1"
    dropped = dropped_bytes(d) + (old.stat().st_size if old.exists() else 0)
    os.replace(d / "output.log", old)
    (d / "output.log").write_bytes(b"")
    (d / "logstate.json").write_text(json.dumps({"dropped_bytes": dropped}))


# --- layout and bytes ------------------------------------------------------------------------


def test_missing_job_folder_reads_as_empty(tmp_path: Path) -> None:
    d = tmp_path / "nope"
    assert segments(d) == []
    assert dropped_bytes(d) == 0
    assert total_bytes(d) == 0
    assert read_bytes(d, 0, None) == b""
    assert tail_bytes(d, 100) == b""
    r = read_lines(d, None, 200)
    assert r == {"output": "", "total_lines": 0, "showing": "no output yet", "dropped_bytes": 0}


def test_folder_without_log_and_empty_log(tmp_path: Path) -> None:
    d = _job(tmp_path, current=None)
    assert read_lines(d)["total_lines"] == 0
    (d / "output.log").write_bytes(b"")
    r = read_lines(d, None, 10)
    assert r["output"] == "" and r["total_lines"] == 0
    assert read_lines(d, 0, 10)["total_lines"] == 0


def test_dropped_bytes_corrupt_or_odd_state(tmp_path: Path) -> None:
    d = _job(tmp_path)
    for content in ("{not json", "[]", '{"dropped_bytes": -5}', '{"dropped_bytes": "12"}', '{"dropped_bytes": true}'):
        (d / "logstate.json").write_text(content)
        assert dropped_bytes(d) == 0
    (d / "logstate.json").write_text('{"dropped_bytes": 77}')
    assert dropped_bytes(d) == 77


def test_bytes_across_two_segments_with_dropped_offset(tmp_path: Path) -> None:
    d = _job(tmp_path, current=b"NEWER-SEGMENT", older=b"older-segment|", dropped=1000)
    assert segments(d) == [d / "output.log.1", d / "output.log"]
    assert total_bytes(d) == 1000 + 14 + 13
    assert read_bytes(d, 0, None) == b"older-segment|NEWER-SEGMENT"  # clamped to retained
    assert read_bytes(d, 1010, 1019) == b"ent|NEWER"  # crosses the boundary
    assert read_bytes(d, 1014, None) == b"NEWER-SEGMENT"
    assert read_bytes(d, 5000, None) == b""
    assert read_bytes(d, 1020, 1010) == b""
    assert tail_bytes(d, 16) == b"nt|NEWER-SEGMENT"
    assert tail_bytes(d, 10**9) == b"older-segment|NEWER-SEGMENT"
    assert tail_bytes(d, 0) == b""


def _pinned_tail(d: Path, n: int) -> tuple[int, bytes]:
    """tail_span the long way: a pinned layout of every segment."""
    layout = logstore._Layout.of_jobdir(d)
    try:
        start = max(layout.base, layout.end - n)
        return start, layout.read(start, layout.end)
    finally:
        layout.close()


def test_tail_span_of_a_never_rotated_log_matches_the_pinned_layout(tmp_path: Path) -> None:
    d = _job(tmp_path, current=b"")
    assert logstore._unrotated_tail(d, 100) == (0, b"") == _pinned_tail(d, 100)
    _append(d, b"0123456789" * 50)
    for n in (0, 7, 500, 10_000):
        assert logstore._unrotated_tail(d, n) == _pinned_tail(d, n) == logstore.tail_span(d, n)
    _rotate(d)  # now output.log.1 and logstate.json exist: the pinned layout answers
    _append(d, b"after")
    assert logstore._unrotated_tail(d, 8) is None
    assert logstore.tail_span(d, 8) == _pinned_tail(d, 8) == (497, b"789after")
    (d / "output.log.1").unlink()  # a logstate.json alone (dropped bytes) still counts
    assert logstore._unrotated_tail(d, 8) is None
    assert logstore.tail_span(d, 3) == _pinned_tail(d, 3)


# --- read_lines ---------------------------------------------------------------------------------


def test_read_lines_tail_offset_and_partial_line(tmp_path: Path) -> None:
    body = b"".join(b"line %d\n" % i for i in range(500)) + b"partial"
    d = _job(tmp_path, current=body)
    r = read_lines(d, None, 3)
    assert r["output"] == "line 498\nline 499\npartial"
    assert r["total_lines"] == 501
    assert r["showing"] == "lines 498-500 of 501"
    assert r["dropped_bytes"] == 0
    r = read_lines(d, 0, 2)
    assert r["output"] == "line 0\nline 1" and r["showing"] == "lines 0-1 of 501"
    r = read_lines(d, 130, 200)
    assert r["output"].split("\n") == [f"line {i}" for i in range(130, 330)]
    r = read_lines(d, 499, 200)
    assert r["output"] == "line 499\npartial"
    r = read_lines(d, 501, 10)
    assert r["output"] == "" and r["total_lines"] == 501 and "501" in r["showing"]
    # the partial line grows, then completes
    _append(d, b" done\nnext\n")
    r = read_lines(d, None, 2)
    assert r["output"] == "partial done\nnext" and r["total_lines"] == 502


def test_read_lines_text_conversion_crlf_ansi_progress(tmp_path: Path) -> None:
    body = (
        b"\x1b]0;title\x07\x1b[1;32mgreen\x1b[0m\r\n"
        b"  0%\r 50%\r100%\r\n"
        b"\xff bad\r\n"
        b"\r\n"
        b"last\r\n"
    )
    d = _job(tmp_path, current=body)
    r = read_lines(d, None, 10)
    assert r["output"] == "green\n100%\n\ufffd bad\n\nlast"
    assert r["total_lines"] == 5


def test_read_lines_huge_single_line_is_capped(tmp_path: Path) -> None:
    d = _job(tmp_path, current=b"head\n" + b"y" * 50_000_000)
    t = time.thread_time()  # CPU time: a loaded machine's other processes do not count
    r = read_lines(d, None, 5)
    elapsed = time.thread_time() - t
    assert r["total_lines"] == 2
    head, big = r["output"].split("\n")
    assert head == "head"
    assert big.startswith("y" * 1000)
    assert big.endswith(f"… [{50_000_000 - LINE_CAP} bytes truncated]")
    assert len(big) < LINE_CAP + 100
    assert elapsed < 1.5, f"read_lines on a 50 MB line took {elapsed:.2f}s"


def test_read_lines_answer_is_capped_and_says_where_the_rest_is(tmp_path: Path) -> None:
    lines = [b"%05d " % i + b"x" * 994 for i in range(3000)]  # 1,000 bytes a line: 3 MB
    d = _job(tmp_path, current=b"\n".join(lines) + b"\n")
    tail = read_lines(d, None, 5000)
    shown = tail["output"].split("\n")
    assert tail["capped"] and tail["shown_lines"] == len(shown) and len(tail["output"]) <= logstore.MAX_ANSWER_CHARS
    assert shown[-1] == lines[-1].decode() and tail["first_line"] == 3000 - len(shown)
    assert tail["left_out"] == tail["first_line"]  # all 3,000 were asked for
    assert "read them with offset=0" in tail["showing"] and tail["note"] in tail["showing"]
    ahead = read_lines(d, 0, 5000)
    assert ahead["capped"] and ahead["first_line"] == 0 and ahead["output"].startswith("00000 ")
    assert ahead["left_out"] == 3000 - ahead["shown_lines"]
    assert f"read on with offset={ahead['shown_lines']}" in ahead["showing"]
    assert "capped" not in read_lines(d, None, 100)  # within the cap: the answer as before


def test_read_lines_huge_progress_line_keeps_its_end(tmp_path: Path) -> None:
    body = b"".join(b"\rdownloading %07d" % i for i in range(400_000)) + b"\r\n"
    d = _job(tmp_path, current=body)
    r = read_lines(d, None, 1)
    assert r["total_lines"] == 1
    assert r["output"].endswith("downloading 0399999")
    assert "bytes truncated" in r["output"]
    assert len(r["output"]) < LINE_CAP + 100


def test_read_lines_after_rotation_across_segments(tmp_path: Path) -> None:
    older = b"tail of a dropped line\n" + b"".join(b"old %d\n" % i for i in range(100)) + b"split-"
    current = b"line\n" + b"".join(b"new %d\n" % i for i in range(100))
    d = _job(tmp_path, current=current, older=older, dropped=12 * 1024 * 1024)
    r = read_lines(d, 0, 3)
    assert r["output"] == "tail of a dropped line\nold 0\nold 1"
    assert r["total_lines"] == 1 + 100 + 1 + 100
    assert r["dropped_bytes"] == 12 * 1024 * 1024
    assert r["showing"] == "lines 0-2 of 202 (12.0 MiB of older output dropped by the log cap)"
    r = read_lines(d, 100, 3)  # a line split across the two files reads as one
    assert r["output"] == "old 99\nsplit-line\nnew 0"
    r = read_lines(d, None, 2)
    assert r["output"] == "new 98\nnew 99"


def test_read_lines_follows_live_rotation(tmp_path: Path) -> None:
    d = _job(tmp_path, current=b"".join(b"a%d\n" % i for i in range(300)))
    assert read_lines(d, None, 1)["total_lines"] == 300
    _rotate(d)  # first rotation: nothing dropped yet, offsets unchanged
    _append(d, b"b0\nb1\n")
    r = read_lines(d, None, 3)
    assert r["output"] == "a299\nb0\nb1" and r["total_lines"] == 302 and r["dropped_bytes"] == 0
    size1 = (d / "output.log.1").stat().st_size
    _rotate(d)  # second rotation drops the a-lines
    _append(d, b"c0\n")
    r = read_lines(d, 0, 10)
    assert r["dropped_bytes"] == size1
    assert r["output"] == "b0\nb1\nc0" and r["total_lines"] == 3
    assert "dropped by the log cap" in r["showing"]


def test_read_lines_500_limit_and_zero_limit(tmp_path: Path) -> None:
    d = _job(tmp_path, current=b"".join(b"%d\n" % i for i in range(1000)))
    r = read_lines(d, None, 0)
    assert r["output"] == "" and r["total_lines"] == 1000
    r = read_lines(d, -5, 3)
    assert r["output"] == "0\n1\n2"


# --- LineIndex -------------------------------------------------------------------------------


def _reference_spans(data: bytes, base: int = 0) -> list[tuple[int, int]]:
    spans = []
    pos = 0
    while pos < len(data):
        nl = data.find(b"\n", pos)
        end = len(data) if nl == -1 else nl
        spans.append((base + pos, base + end))
        pos = end + 1
    return spans


def test_line_index_incremental_growth_matches_reference(tmp_path: Path) -> None:
    rng = random.Random(7)
    d = _job(tmp_path, current=b"")
    idx = LineIndex(d)
    assert idx.line_count == 0
    data = bytearray()
    for step in range(40):
        # lines of varied length, sometimes empty, sometimes leaving a partial line
        piece = b"".join(b"x" * rng.choice((0, 1, 5, 80, 300, 5000)) + b"\n" for _ in range(rng.randint(0, 200)))
        if step % 3 == 0:
            piece += b"partial" * rng.randint(1, 10)
        _append(d, piece)
        data += piece
        idx.refresh()
        ref = _reference_spans(bytes(data))
        assert idx.line_count == len(ref)
        if ref:
            for i in {0, len(ref) - 1, rng.randrange(len(ref)), min(len(ref) - 1, 64), min(len(ref) - 1, 63)}:
                assert idx.line_span(i) == ref[i]
    assert len(data) > 1 << 20  # crossed several scan chunks
    ref = _reference_spans(bytes(data))
    assert idx.spans(0, len(ref)) == ref
    first = len(ref) // 2
    assert idx.read_raw_lines(first, 3) == [bytes(data[s:e]) for s, e in ref[first : first + 3]]
    s0, e0 = ref[first]
    assert idx.read_raw_lines(first, 1, max_bytes=2) == [bytes(data[s0 : min(e0, s0 + 2)])]
    assert idx.refresh() is False  # nothing new


def test_line_index_over_paths_and_rebuild_on_truncate(tmp_path: Path) -> None:
    a = tmp_path / "a.log"
    b = tmp_path / "b.log"
    a.write_bytes(b"one\ntw")
    b.write_bytes(b"o\nthree\n")
    idx = LineIndex([a, b])
    assert idx.line_count == 3
    assert idx.read_raw_lines(0, 5) == [b"one", b"two", b"three"]
    b.write_bytes(b"X\n")  # replaced with shorter content: rebuild
    idx.refresh()
    assert idx.read_raw_lines(0, 5) == [b"one", b"twX"]


def test_line_index_rebuilds_when_dropped_bytes_change(tmp_path: Path) -> None:
    d = _job(tmp_path, current=b"".join(b"a%d\n" % i for i in range(200)))
    idx = LineIndex(d)
    assert idx.line_count == 200
    _rotate(d)
    _append(d, b"b\n")
    idx.refresh()
    assert idx.line_count == 201 and idx.dropped_bytes == 0
    _rotate(d)
    _append(d, b"c\n")
    idx.refresh()
    assert idx.dropped_bytes > 0
    assert idx.line_count == 2
    assert idx.read_raw_lines(0, 5) == [b"b", b"c"]
    assert idx.line_span(0)[0] == idx.dropped_bytes


def _bytes_read() -> int:
    """Bytes this process has read through read()/pread() so far (the kernel's count)."""
    with open("/proc/self/io") as f:
        return int(next(line for line in f if line.startswith("rchar:")).split()[1])


def test_read_lines_reads_the_tail_only_once_the_log_is_counted(tmp_path: Path) -> None:
    line = b"\x1b[32m[ok]\x1b[0m compiling a module of the big build ............\r\n"
    d = _job(tmp_path, current=line * 200_000)  # ~14 MB
    r = read_lines(d, None, 200)
    assert r["total_lines"] == 200_000
    assert (d / "lines.idx").exists()
    _append(d, b"fresh\n")
    before = _bytes_read()
    r = read_lines(d, None, 2)  # as a new process would: nothing kept in memory
    assert r["total_lines"] == 200_001 and r["output"].endswith("fresh")
    assert _bytes_read() - before < 2 << 20  # a MiB around the end, not the 14 MB
    before = _bytes_read()
    r = read_lines(d, 123_456, 2)
    assert r["output"].split("\n") == ["[ok] compiling a module of the big build ............"] * 2
    assert r["showing"] == "lines 123456-123457 of 200001"
    assert _bytes_read() - before < 2 << 20


def test_line_index_waits_for_logstate_during_rotation(tmp_path: Path) -> None:
    import threading

    d = _job(tmp_path, current=b"")
    _append(d, b"a\n" * 10)
    _rotate(d)
    _append(d, b"b\n" * 10)
    idx = LineIndex(d)
    assert idx.line_count == 20
    # the supervisor's order: rename, new output.log, then logstate.json a moment later
    dropped = (d / "output.log.1").stat().st_size
    os.replace(d / "output.log", d / "output.log.1")
    (d / "output.log").write_bytes(b"c\n")
    timer = threading.Timer(0.01, lambda: (d / "logstate.json").write_text(json.dumps({"dropped_bytes": dropped})))
    timer.start()
    try:
        idx.refresh()
    finally:
        timer.join()
    assert idx.dropped_bytes == dropped
    assert idx.read_raw_lines(0, 100) == [b"b"] * 10 + [b"c"]
