"""lines.idx (core/supervisor/linecounts.py): line numbers from kept counts give the same answers as
counting, across appends, rotations, damaged or planted files."""

from __future__ import annotations

import json
import os
import random
from pathlib import Path

import pytest

from hermes_procs.core.registry import logstore
from hermes_procs.core.registry.logstore import read_lines
from hermes_procs.core.supervisor import linecounts
from hermes_procs.core.supervisor.text import looks_plain


@pytest.fixture(autouse=True)
def small_steps(monkeypatch):
    """Records every 97 bytes, a 50-byte window and compaction past 3 dropped records, so
    small logs exercise every path."""
    monkeypatch.setattr(linecounts, "STEP", 97)
    monkeypatch.setattr(linecounts, "WINDOW", 50)
    monkeypatch.setattr(linecounts, "COMPACT_AFTER", 3)


def _random_log(rng: random.Random, n: int) -> bytes:
    lines = []
    for _ in range(n):
        kind = rng.random()
        size = 0 if kind < 0.1 else rng.randint(200, 700) if kind < 0.15 else rng.randint(1, 40)
        lines.append(bytes(rng.choice(b"abc xyz\r") for _ in range(size)))
    return b"\n".join(lines) + (b"\n" if rng.random() < 0.5 else b"")


def _expected(data: bytes, base: int) -> tuple[list[tuple[int, int]], int]:
    spans, pos = [], 0
    while pos < len(data):
        nl = data.find(b"\n", pos)
        end = len(data) if nl < 0 else nl
        spans.append((base + pos, base + end))
        pos = end + 1
    return spans, len(spans)


def _check(jobdir: Path, retained: bytes, base: int, rng: random.Random) -> None:
    spans, total = _expected(retained, base)
    with logstore.snapshot(jobdir) as layout:
        counts = logstore.line_counts(jobdir, layout)
        assert counts.line_count == total
        for first in {0, 1, total // 2, max(0, total - 3), total - 1, total, rng.randrange(total + 1)}:
            for count in (1, 2, 7):
                assert counts.spans(first, count) == spans[max(0, first):max(0, first) + count], (first, count)
        for _ in range(30):
            a = base + rng.randrange(len(retained) + 1)
            b = min(base + len(retained), a + rng.randrange(300))
            if counts.plain(a, b):  # never claimed for bytes that are not
                assert looks_plain(retained[a - base:b - base])
        for offset in range(base, base + len(retained) + 1):
            assert counts.newlines(offset) == retained.count(b"\n", 0, offset - base)
            assert counts.line_at(offset) == (total if offset >= base + len(retained)
                                              else retained.count(b"\n", 0, offset - base))


def _job(tmp_path: Path) -> Path:
    d = tmp_path / "proc_0123456789ab"
    d.mkdir(exist_ok=True)
    (d / "output.log").write_bytes(b"")
    return d


def test_counts_match_counting_as_the_log_grows_and_rotates(tmp_path: Path) -> None:
    rng = random.Random(26)
    d = _job(tmp_path)
    whole = b""  # everything written; the retained part is whole[dropped:]
    dropped = 0
    for round_ in range(12):
        chunk = _random_log(rng, rng.randint(0, 60))
        with open(d / "output.log", "ab") as f:
            f.write(chunk)
        whole += chunk
        if round_ % 4 == 3:  # the supervisor's rotation: output.log -> output.log.1 (dropping the older one)
            old = d / "output.log.1"
            if old.exists():
                dropped += old.stat().st_size
            os.replace(d / "output.log", old)
            (d / "output.log").write_bytes(b"")
            (d / "logstate.json").write_text(json.dumps({"dropped_bytes": dropped}))
        _check(d, whole[dropped:], dropped, rng)
        assert (d / "lines.idx").exists() or not whole
    body = (d / "lines.idx").read_bytes()[16:]
    offsets = [linecounts.RECORD.unpack_from(body, i)[0] for i in range(0, len(body), 16)]
    assert dropped > 0 and offsets[0] == dropped  # records of dropped output were let go
    assert linecounts.RECORD.unpack_from(body, 0)[1] == 0


def test_the_counts_note_which_spans_are_plain(tmp_path: Path) -> None:
    d = _job(tmp_path)
    (d / "output.log").write_bytes(b"plain line\n" * 100 + b"\x1b[31mred\x1b[0m\n" + b"plain again\n" * 100)
    with logstore.snapshot(d) as layout:
        counts = logstore.line_counts(d, layout)
        assert not counts.plain(0, 50)  # nothing counted yet: not known
        counts.newlines(layout.end)
        assert counts.plain(0, 1000) and counts.plain(1200, 2000)
        assert not counts.plain(1000, 1200)  # the escape sequence at 1100
        assert not counts.plain(1200, layout.end)  # the last span was not counted
    with logstore.snapshot(d) as layout:  # the same from the stored file
        counts = logstore.line_counts(d, layout)
        assert counts.plain(0, 1000) and not counts.plain(1000, 1200)


def test_read_lines_from_counts_matches_a_fresh_count(tmp_path: Path) -> None:
    rng = random.Random(5)
    d = _job(tmp_path)
    (d / "output.log").write_bytes(_random_log(rng, 300))
    for offset in (None, 0, 17, 150, 290, 299, 400):
        for limit in (1, 5, 50):
            (d / "lines.idx").unlink(missing_ok=True)
            fresh = read_lines(d, offset, limit)
            assert read_lines(d, offset, limit) == fresh  # the second from the stored counts


@pytest.mark.parametrize("damage", ["garbage", "short", "backwards", "too many", "past the end", "other origin"])
def test_a_damaged_index_is_never_believed(tmp_path: Path, damage: str) -> None:
    rng = random.Random(9)
    d = _job(tmp_path)
    data = _random_log(rng, 200)
    (d / "output.log").write_bytes(data)
    read_lines(d, None, 5)
    path = d / "lines.idx"
    raw = path.read_bytes()
    head, body = raw[:16], raw[16:]
    records = [linecounts.RECORD.unpack_from(body, i) for i in range(0, len(body), 16)]
    pack = linecounts.RECORD.pack
    if damage == "garbage":
        path.write_bytes(os.urandom(len(raw)))
    elif damage == "short":
        path.write_bytes(raw[:-5])
    elif damage == "backwards":
        records[3] = (records[3][0], records[3][1] + 1000)
        path.write_bytes(head + b"".join(pack(*r) for r in records))
    elif damage == "too many":  # more line ends than bytes between two records
        records[2] = (records[2][0], records[1][1] + 500)
        path.write_bytes(head + b"".join(pack(*r) for r in records))
    elif damage == "past the end":
        path.write_bytes(raw + pack(len(data) + 10_000, 1))
    else:  # counts of some other origin than the first retained byte
        path.write_bytes(head + b"".join(pack(o + 1, c) for o, c in records))
    _check(d, data, 0, rng)


@pytest.mark.parametrize("target_holds", ["other data", "a valid index"])
def test_a_link_planted_as_the_index_is_neither_followed_nor_written_through(tmp_path: Path, target_holds) -> None:
    d = _job(tmp_path)
    (d / "output.log").write_bytes(b"a\nb\nc\n" * 100)
    target = tmp_path / "victim"
    if target_holds == "a valid index":
        read_lines(d, None, 2)
        os.replace(d / "lines.idx", target)
    else:
        target.write_bytes(b"precious")
    precious = target.read_bytes()
    (d / "lines.idx").symlink_to(target)
    with open(d / "output.log", "ab") as f:
        f.write(b"d\n" * 100)
    assert read_lines(d, None, 2)["total_lines"] == 400
    assert target.read_bytes() == precious
    assert not (d / "lines.idx").is_symlink()  # replaced by a real index


def test_an_index_rewritten_elsewhere_is_not_appended_to(tmp_path: Path) -> None:
    """Two readers: one rewrote the file from another origin (after a rotation) while the
    other, holding counts from the old origin, has records to add: it must not add them."""
    d = _job(tmp_path)
    (d / "output.log").write_bytes(b"x\n" * 100)
    read_lines(d, None, 1)
    with open(d / "output.log", "ab") as f:
        f.write(b"y\n" * 300)
    with logstore.snapshot(d) as layout:
        reader = logstore.line_counts(d, layout)
        assert not reader.fresh
        other = linecounts.MAGIC + linecounts.RECORD.pack(10, 0)
        (d / "lines.idx").write_bytes(other)
        assert reader.newlines(layout.end) == 400  # counted, but not stored
    assert (d / "lines.idx").read_bytes() == other
