"""The block search (core/registry/search.py, core/registry/linefind.py) finds what matching each line's text
alone finds: random logs (escapes, ``\\r`` redraws, long lines, blocks of a few bytes) and
patterns (literals, classes, anchors, branches, empty matches), with RE2 and with the worker."""

from __future__ import annotations

import os
import random
import re
from pathlib import Path

import pytest

from hermes_procs.core.registry import colourfind, search
from hermes_procs.core.registry.search import LINE_CHARS, Collector, search_log
from hermes_procs.core.registry.userregex import compile_user
from hermes_procs.core.supervisor import linecounts
from hermes_procs.core.supervisor.text import to_text

PATTERNS = [
    "ERROR", "abc", "x{3}", r"\bERROR\b", r"id=9+[0-9]", "^a", "c$", "^$", "a|zz", "(ab|xy)z",
    r"\d\d", r"[^a ]{4}", ".*", "b*", r"a\s+b", r"ERROR\s", "Err(?:or)?", "a.c", r"^\w+ \w+$",
    "(?i)error", "xyz|ERROR|id=", r"[a-c]{2,}z", "\u2192\u00e9", "\u2192|zz", "\u00e9+b", "\ufffd",
    "(?:ERROR|xyz)|abc", "(a|bcd)x|yz", "c$", r"\S+\s\S+", "R3", "Qc",
]


WORDS = [b"abc", b"ERROR", b"xyz", b"id=999", b"a b", b"  ", b"\x1b[31m", b"\x1b[0m", b"\r", b"12",
         b"\xe2\x86\x92", b"\xff", b"z", b"\t", b"ER\x01ROR", b"c\x0c"]
# coloured ASCII only (core/registry/colourfind.py), with literals cut by colours
COLOURED = [b"abc", b"ERROR", b"xyz", b"id=999", b"a b", b"\x1b[31m", b"\x1b[0m", b"\x1b[1;32m", b"12", b"z",
            b"\t", b"E\x1b[0mRROR", b"ERR\x1b[mOR", b"id=\x1b[2m99", b"zz"]
# a terminal's output: colours, other CSI sequences (erase, cursor, modes), UTF-8 (with literals
# cut by them), and now and then what makes a line more than its bytes without CSI sequences (a
# CSI cut short, a C1 control, an escape that is not CSI, a redraw, a backspace, a title ended by
# BEL, each also next to a byte that is not UTF-8: each hides a literal), a byte that is not
# UTF-8 and a NUL
TERMINAL = COLOURED * 3 + [b"\x1b[K", b"\x1b[2K\x1b[1G", b"\x1b[?25l", b"\x1b[1 q", b"\xe2\x86\x92", b"\xc3\xa9",
                           b"\xe2\x86\x92\x1b[31m\xc3\xa9", b"ER\x1b[KROR", b"\x1b[1 1m", b"\xc2\x85", b"\xff",
                           b"ERR\x1b(BOR", b"xy\x1b]0;t\x1b\\z", b"XRROR\rE", b"xy\x1b]0;t\x07z", b"ERQ\x08ROR",
                           b"\x00", b"ER\x07ROR", b"ER\xc2\x85ROR", b"ER\x00ROR", b"ERR\x1b[3\xff", b"Pbc\r\xffQ"]
# plain ASCII: as a terminal's output (crlf), plain once each line's \r is gone (but for a \x01 now and then)
PLAIN = [b"abc", b"ERROR", b"xyz", b"id=999", b"a b", b"  ", b"12", b"z", b"\t", b"c", b"a"] * 4 + [b"ab\x01c"]


def _random_log(rng: random.Random, n: int, words: list[bytes] = WORDS, crlf: float = 0.0) -> bytes:
    """``n`` random lines of ``words``; a share ``crlf`` of the line ends are a terminal's ``\r\n``."""
    lines = []
    for _ in range(n):
        size = 0 if rng.random() < 0.1 else rng.randint(1, 8) if rng.random() < 0.95 else rng.randint(50, 200)
        lines.append(b"".join(rng.choice(words) for _ in range(size)) + (b"\r" if rng.random() < crlf else b""))
    return b"\n".join(lines) + (b"\n" if rng.random() < 0.5 else b"")


def _expected(data: bytes, pattern: str, ignore_case: bool, context: int, limit: int,
              flags: int = 0) -> tuple[list, int]:
    raws = data.split(b"\n")
    if raws[-1] == b"":
        raws.pop()  # the log ends with a line end (or is empty): no line after it
    lines = [to_text(raw) for raw in raws]
    regex = re.compile(pattern, flags | (re.IGNORECASE if ignore_case else 0))
    hits = [i for i, line in enumerate(lines) if regex.search(line)]
    cut = [line[:LINE_CHARS] for line in lines]
    return [{"line_no": i, "line": cut[i], "before": cut[max(0, i - context):i], "after": cut[i + 1:i + 1 + context]}
            for i in hits[:limit]], len(hits)


@pytest.mark.parametrize(("engine", "words", "crlf"), [
    ("re2", WORDS, 0.0), ("re", WORDS, 0.0), ("re2", COLOURED, 0.0),
    ("re2", PLAIN, 0.97), ("re2", COLOURED, 0.97), ("re", PLAIN, 0.97), ("re2", TERMINAL, 0.9)],
    ids=["re2", "re", "re2-coloured", "re2-crlf", "re2-coloured-crlf", "re-crlf", "re2-terminal"])
def test_block_search_finds_what_each_line_alone_finds(tmp_path: Path, monkeypatch, engine: str,
                                                      words: list[bytes], crlf: float) -> None:
    monkeypatch.setattr(search, "CHUNK", 64)  # blocks of a few lines, long lines in pieces
    monkeypatch.setattr(colourfind, "MOST", 0)  # coloured blocks always searched for the literal first
    monkeypatch.setattr(search, "LONG_LINE", 1 << 20)
    monkeypatch.setattr(linecounts, "STEP", 97)
    if engine == "re":
        monkeypatch.setenv("HERMES_PROCS_REGEX_ENGINE", "re")
    rng = random.Random(26)
    for round_ in range(12 if engine == "re2" else 3):
        jobdir = tmp_path / f"job{round_}"
        jobdir.mkdir()
        data = _random_log(rng, rng.randint(1, 120), words, crlf)
        (jobdir / "output.log").write_bytes(data)
        for pattern in PATTERNS:
            ignore_case = rng.random() < 0.2
            context, limit = rng.choice([0, 1, 3]), rng.choice([1, 5, 1000])
            with compile_user(pattern, ignore_case=ignore_case) as regex:
                assert regex.engine == engine
                out = Collector(limit)
                total = search_log(jobdir, regex, context, out)
            # RE2's \b \w \d \s are ASCII classes (core/registry/userregex.py), next to é too
            want, want_total = _expected(data, pattern, ignore_case, context, limit, re.ASCII * (engine == "re2"))
            assert (out.matches, total) == (want, want_total), (pattern, data)


def test_a_literal_that_keeps_missing_gives_way_to_the_whole_pattern(tmp_path: Path) -> None:
    """``aaa`` occurs on every line but ``aaab`` on one line in a thousand: the answer is the same
    whether the finder keeps the literal or goes back to the whole pattern."""
    jobdir = tmp_path / "job"
    jobdir.mkdir()
    data = b"".join(b"aaab %d\n" % i if i % 1000 == 7 else b"aaa %d\n" % i for i in range(20000))
    (jobdir / "output.log").write_bytes(data)
    with compile_user("a{3}b") as regex:
        out = Collector(1000)
        assert search_log(jobdir, regex, 0, out) == 20
    assert [m["line_no"] for m in out.matches] == list(range(7, 20000, 1000))


def test_the_dashboard_filter_finds_what_each_line_alone_finds(tmp_path: Path, monkeypatch) -> None:
    """tui/log_filter.py on the same block functions: its matching rows, their context rows and
    its count are those of matching each line's text (escapes removed, redraws collapsed) alone."""
    from hermes_procs.tui.log_filter import filter_log

    monkeypatch.setattr(search, "CHUNK", 64)
    monkeypatch.setattr(linecounts, "STEP", 97)
    rng = random.Random(7)
    for round_ in range(12):
        jobdir = tmp_path / f"job{round_}"
        jobdir.mkdir()
        data = _random_log(rng, rng.randint(1, 120), PLAIN if round_ % 3 == 2 else WORDS, crlf=0.97 * (round_ % 3 > 0))
        (jobdir / "output.log").write_bytes(data)
        raws = data.split(b"\n")
        if raws[-1] == b"":
            raws.pop()
        for pattern in ("ERROR", "^$", r"id=9+\d", "a|zz"):
            hits = [i for i, raw in enumerate(raws) if re.search(pattern, to_text(raw))]
            context = rng.choice([0, 2])
            shown = sorted({j for i in hits for j in range(max(0, i - context), min(len(raws), i + context + 1))})
            got = []
            filter_log(jobdir, compile_user(pattern), context, got.append, lambda: False)
            rows = [row for progress in got for row in progress.rows]
            assert got[-1].done and got[-1].matches == len(hits), (pattern, data)
            assert [(row.line, row.raw, row.match) for row in rows] == [(j, raws[j], j in hits) for j in shown]


def test_a_followed_filter_stops_when_the_log_is_rotated(registry, monkeypatch) -> None:
    """Rotation moves the first retained line, so every line number: the filter says it stopped
    following rather than number new lines unlike the ones it shows."""
    import threading
    import time

    from hermes_procs.tui.log_filter import filter_log

    monkeypatch.setenv("HERMES_PROCS_LOG_CAP", str(256 << 10))
    sid = registry.spawn("echo ERROR first; read go; seq 1 200000; echo ERROR last; sleep 30")["session_id"]
    jobdir = registry.job_dir(sid)
    got: list = []
    scan = threading.Thread(target=filter_log, args=(jobdir, compile_user("ERROR"), 0, got.append, lambda: False),
                            kwargs={"follow": True}, daemon=True)
    scan.start()
    deadline = time.monotonic() + 10
    while not (got and got[-1].following and got[-1].matches) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert got and got[-1].following and got[-1].matches == 1
    registry.submit(sid, "")
    scan.join(timeout=20)
    assert not scan.is_alive()
    assert got[-1].done and got[-1].rotated and not got[-1].following
    registry.kill(sid, grace=0.2)


def _coloured_job(tmp_path: Path) -> Path:
    jobdir = tmp_path / "job"
    jobdir.mkdir()
    lines = [b"\x1b[2m12:00:%02d\x1b[0m \x1b[32mINFO\x1b[0m id=%d ok" % (i % 60, i) for i in range(400)]
    lines[123] = b"\x1b[31mER\x1b[0mROR\x1b[0m id=123"
    (jobdir / "output.log").write_bytes(b"\n".join(lines) + b"\n")
    return jobdir


def test_a_search_notes_clean_coloured_blocks_so_later_searches_skip_their_checks(tmp_path: Path, monkeypatch) -> None:
    """core/registry/colournotes.py: the first search checks each coloured block and notes the
    clean ones; the next, of any pattern, checks none of them and answers the same."""
    monkeypatch.setattr(search, "CHUNK", 512)
    jobdir = _coloured_job(tmp_path)
    odd_looks = []
    looks = colourfind.ColourFinder._lines

    def counted(self, find, *args):
        odd_looks.append(find in self.odd)
        return looks(self, find, *args)

    monkeypatch.setattr(colourfind.ColourFinder, "_lines", counted)

    def answer(pattern: str) -> tuple[list, int]:
        with compile_user(pattern) as regex:
            out = Collector(10)
            return out.matches, search_log(jobdir, regex, 1, out)

    first = answer("ERROR")
    assert first[1] == 1 and first[0][0]["line_no"] == 123 and any(odd_looks)
    noted = (jobdir / "coloured.idx").read_text().splitlines()
    assert len(noted) > 20 and all(len(line.split()) == 2 for line in noted)
    odd_looks.clear()
    assert answer("ERROR") == first and answer("id=12[0-9]")[1] == 10
    assert odd_looks and not any(odd_looks)  # only the literal was looked for
    assert (jobdir / "coloured.idx").read_text().splitlines() == noted  # nothing new to note
    (jobdir / "coloured.idx").unlink()  # a cache: the same answer without it
    assert answer("ERROR") == first


def test_colour_notes_that_are_damaged_or_planted_are_ignored(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setattr(search, "CHUNK", 512)
    jobdir = _coloured_job(tmp_path)
    with compile_user("ERROR") as regex:
        want = search_log(jobdir, regex, 0, Collector(10))
    notes = jobdir / "coloured.idx"
    notes.write_bytes(b"x y\n-1 5\n" + b"9" * 5000 + b" 1\n\xff\xfe\n1 2 3\n")  # garbage: ignored
    target = tmp_path / "elsewhere"
    target.write_text("keep me\n")
    for planted in ("garbage", "link", "fifo"):
        if planted != "garbage":
            notes.unlink()
            notes.symlink_to(target) if planted == "link" else os.mkfifo(notes)
        with compile_user("ERROR") as regex:
            assert search_log(jobdir, regex, 0, Collector(10)) == want, planted  # and no wait on the fifo
    assert target.read_text() == "keep me\n"  # never written through the link
