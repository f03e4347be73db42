"""Remote hosts over loopback SSH (a real sshd started here), against the local figures of
the same run: spawn, keystroke round trip, list() of 100 jobs, live-stream throughput.

Needs /usr/sbin/sshd and root (as the tests do); otherwise the rows say why they are missing.
"""

from __future__ import annotations

import os
import statistics
import sys
import time

from hermes_procs.core import ProcessRegistry

from .common import ROOT, Config, Row, interleave, kill_supervisors, temp_home

sys.path.insert(0, str(ROOT / "tests"))
import sshd


def run(cfg: Config) -> list[Row]:
    why = sshd.available()
    if why:
        return [Row("remote (ssh)", "", error=why)]
    server = sshd.start()
    rhome = server.home_dir()
    old = os.environ.get("HERMES_PROCS_SSH_ARGS")
    os.environ["HERMES_PROCS_SSH_ARGS"] = server.ssh_args
    try:
        with temp_home() as home:
            local = ProcessRegistry(home=home)
            remote = ProcessRegistry(host=server.url(rhome))
            if remote.connect()["state"] != "connected":
                return [Row("remote (ssh)", "", error=str(remote.status()))]
            return [*_spawn(cfg, local, remote), *_keys(cfg, local, remote), *_list(cfg, local, remote),
                    *_stream(cfg, local, remote)]
    finally:
        kill_supervisors(rhome)
        server.stop()
        if old is None:
            os.environ.pop("HERMES_PROCS_SSH_ARGS", None)
        else:
            os.environ["HERMES_PROCS_SSH_ARGS"] = old


def _ms(fn) -> float:
    t0 = time.perf_counter()
    fn()
    return (time.perf_counter() - t0) * 1000


def _spawn(cfg: Config, local, remote) -> list[Row]:
    def spawn(reg):
        res = reg.spawn("sleep 0.1")
        if res.get("status") != "running":
            raise RuntimeError(res)

    r, loc = interleave(cfg.runs * 2, lambda: _ms(lambda: spawn(remote)), lambda: _ms(lambda: spawn(local)))
    return [Row("13 remote spawn -> pid (ssh loopback)", "ms", r, "local spawn", loc, "", None)]


def _echo(stream, byte: bytes, timeout: float = 5.0) -> None:
    buf = b""
    deadline = time.monotonic() + timeout
    while byte not in buf:
        data = stream.read(max(0.0, deadline - time.monotonic()))
        if data == b"" or time.monotonic() > deadline:
            raise RuntimeError("no echo")
        buf += data or b""


def _keys(cfg: Config, local, remote) -> list[Row]:
    streams = []
    for reg in (remote, local):
        job = reg.spawn("cat", pty=True)
        st = reg.stream(job["session_id"], input=True)
        time.sleep(0.2)
        st.read(0.1)
        streams.append(st)
    keys = iter(b"abcdefghijklmnopqrstuvwxyz" * 100)

    def key(st):
        b = bytes([next(keys)])
        return _ms(lambda: (st.send(b), _echo(st, b)))

    r, loc = interleave(cfg.runs * 4, lambda: key(streams[0]), lambda: key(streams[1]), warmup=3)
    for st in streams:
        st.close()
    med = statistics.median(r)
    return [Row("13 remote keystroke round trip (attached stream)", "ms", r, "local stream", loc, "< 5 ms",
                med < 5)]


def _list(cfg: Config, local, remote) -> list[Row]:
    for reg in (remote, local):
        have = len(reg.list())
        for _ in range(max(0, 100 - have)):
            reg.spawn("true")
    time.sleep(1.0)
    r, loc = interleave(cfg.runs, lambda: _ms(remote.list), lambda: _ms(local.list))
    return [Row(f"13 remote list() of {len(remote.list())} jobs", "ms", r, "local list()", loc, "< 300 ms",
                statistics.median(r) < 300)]


def _stream(cfg: Config, local, remote) -> list[Row]:
    size = cfg.size(20, 100)  # MB

    def rate(reg) -> float:
        job = reg.spawn(f"sleep 0.3; head -c {size << 20} /dev/zero")
        st = reg.stream(job["session_id"])
        got = 0
        t0 = None
        while True:
            data = st.read(10.0)
            if not data:
                break
            t0 = t0 or time.perf_counter()
            got += len(data)
        st.close()
        return got / (1 << 20) / max(1e-6, time.perf_counter() - (t0 or time.perf_counter()))

    r, loc = interleave(max(3, cfg.runs // 2), lambda: rate(remote), lambda: rate(local))
    return [Row(f"13 remote live stream ({size} MB)", "MB/s", r, "local stream", loc, "", None)]
