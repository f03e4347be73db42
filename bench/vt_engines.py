"""Engine benchmark behind docs/terminal.md (pyte vs bittty vs VTEngine skip-ahead).

Run by hand (needs pyte too: .venv/bin/pip install pyte):
    .venv/bin/python -m pytest -s bench/vt_engines.py -p no:cacheprovider
"""

from __future__ import annotations

import random
import time

import pytest

pyte = pytest.importorskip("pyte")
bittty = pytest.importorskip("bittty")

from hermes_procs.tui.vt import VTEngine  # noqa: E402

ROWS, COLS = 30, 120


def gen_seq(n):
    return "".join(f"{i}\r\n" for i in range(n)).encode()


def gen_color(n):
    return "".join(f"\x1b[38;5;{i % 256}m{i:8d}\x1b[0m \x1b[1;32mok\x1b[0m "
                   f"\x1b[38;2;{i % 256};100;200mtruecolor line {i}\x1b[0m\r\n" for i in range(n)).encode()


def gen_fullscreen(frames):
    rnd = random.Random(1)
    out = []
    for f in range(frames):
        out.append("\x1b[H")
        for r in range(ROWS):
            text = ("%5d cpu %3d%% " % (f, rnd.randint(0, 100))) * 8
            out.append(f"\x1b[{r + 1};1H\x1b[3{r % 8}m{text[:COLS]}\x1b[0m\x1b[K")
    return "".join(out).encode()


def rate(feed, data, chunk=4096):
    t = time.perf_counter()
    for i in range(0, len(data), chunk):
        feed(data[i:i + chunk])
    return len(data) / (time.perf_counter() - t) / 1e6


def test_engine_throughput():
    for name, data in [("seq", gen_seq(300_000)), ("colour SGR", gen_color(40_000)),
                       ("full-screen redraw", gen_fullscreen(600))]:
        p = max(rate(pyte.ByteStream(pyte.Screen(COLS, ROWS)).feed, data) for _ in range(2))
        b = max(rate(bittty.Board(width=COLS, height=ROWS).feed_host_data, data) for _ in range(2))
        e = VTEngine(ROWS, COLS)
        t = time.perf_counter()
        e.feed(data)
        skip = len(data) / (time.perf_counter() - t) / 1e6
        print(f"\n{name:20s} {len(data) / 1e6:4.1f} MB  pyte {p:5.2f} MB/s  bittty {b:5.2f} MB/s"
              f"  VTEngine one chunk {skip:7.0f} MB/s")
    e = VTEngine(ROWS, COLS)
    e.feed(gen_color(100))
    t = time.perf_counter()
    for _ in range(50):
        for y in range(ROWS):
            e.render_line(y)
    print(f"render {ROWS}x{COLS} coloured screen: {(time.perf_counter() - t) / 50 * 1000:.2f} ms")
