"""Item 5: keystroke round trip: one byte to a PTY `cat` and its echo seen on the output stream.

Through hermes-procs two ways: registry.write() (a request on a new socket connection, what an
agent or the CLI does) and an attached stream's send() (what the dashboard does), each seen on an
attached stream. Baseline: the same byte through a raw openpty master to a `cat` on the slave.
"""

from __future__ import annotations

import os
import select
import subprocess
import time

from hermes_procs.core import ProcessRegistry

from .common import Config, Row, interleave, temp_home

KEYS = b"abcdefghijklmnopqrstuvwxyz"


class Echo:
    def __init__(self, reader) -> None:
        self.read = reader
        self.buf = b""

    def until(self, byte: bytes, timeout: float = 5.0) -> None:
        deadline = time.perf_counter() + timeout
        while byte not in self.buf:
            left = deadline - time.perf_counter()
            if left <= 0:
                raise RuntimeError("echo not seen within 5 s")
            data = self.read(left)
            if data == b"":
                raise RuntimeError("stream ended")
            if data:
                self.buf += data
        self.buf = self.buf[self.buf.index(byte) + 1:]


def run(cfg: Config) -> list[Row]:
    n = cfg.runs * (10 if cfg.full else 4)
    with temp_home() as home:
        reg = ProcessRegistry(home=home)
        job = reg.spawn("cat", pty=True)
        sid = job["session_id"]
        stream = reg.stream(sid, input=True)
        echo = Echo(stream.read)
        time.sleep(0.2)
        echo.buf = b""
        master, slave = os.openpty()
        cat = subprocess.Popen(["cat"], stdin=slave, stdout=slave, stderr=slave, start_new_session=True)
        os.close(slave)

        def raw_read(timeout):
            ready, _, _ = select.select([master], [], [], timeout)
            return os.read(master, 4096) if ready else None

        raw = Echo(raw_read)
        k = [0]

        def key():
            k[0] += 1
            return KEYS[k[0] % len(KEYS): k[0] % len(KEYS) + 1]

        def via_write():
            b = key()
            t0 = time.perf_counter()
            res = reg.write(sid, b)
            if res.get("status") != "ok":
                raise RuntimeError(f"write: {res}")
            echo.until(b)
            return (time.perf_counter() - t0) * 1000

        def via_stream():
            b = key()
            t0 = time.perf_counter()
            stream.send(b)
            echo.until(b)
            return (time.perf_counter() - t0) * 1000

        def via_raw():
            b = key()
            t0 = time.perf_counter()
            os.write(master, b)
            raw.until(b)
            return (time.perf_counter() - t0) * 1000

        try:
            w, s, r = interleave(n, via_write, via_stream, via_raw, warmup=3)
        finally:
            stream.close()
            reg.kill(sid, grace=0.5)
            cat.kill()
            cat.wait()
            os.close(master)
    return [
        Row("5 keystroke round trip, registry.write", "ms", w, "raw PTY", r, "< 2 ms", _med(w) < 2,
            note=f"{n} keys"),
        Row("5 keystroke round trip, attached stream", "ms", s, "raw PTY", r, "< 2 ms", _med(s) < 2),
    ]


def _med(vals):
    import statistics

    return statistics.median(vals)
