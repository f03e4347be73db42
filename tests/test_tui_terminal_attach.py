"""The full-screen attach proxy (tui/fullattach.py) driven through a real pseudo-terminal."""

from __future__ import annotations

import fcntl
import os
import select
import struct
import subprocess
import sys
import termios
import time

import pytest

pytest.importorskip("bittty")

PY = sys.executable

PROXY = """
import sys
from hermes_procs.core import ProcessRegistry
from hermes_procs.tui.fullattach import proxy_terminal
sys.exit(proxy_terminal(ProcessRegistry(home=sys.argv[1]), sys.argv[2]))
"""


def run_proxy(home, sid, rows=20, cols=70):
    master, slave = os.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", rows, cols, 0, 0))

    def controlling_tty():
        os.setsid()
        fcntl.ioctl(0, termios.TIOCSCTTY, 0)

    proc = subprocess.Popen([PY, "-c", PROXY, str(home), sid], stdin=slave, stdout=slave,
                            stderr=slave, preexec_fn=controlling_tty, close_fds=True)
    os.close(slave)
    return proc, master


def read_until(fd, needle: bytes, timeout: float = 8.0) -> bytes:
    out = b""
    deadline = time.monotonic() + timeout
    while needle not in out:
        left = deadline - time.monotonic()
        if left <= 0:
            raise AssertionError(f"{needle!r} not seen; got {out[-500:]!r}")
        ready, _, _ = select.select([fd], [], [], left)
        if ready:
            try:
                chunk = os.read(fd, 65536)
            except OSError:
                break
            if not chunk:
                break
            out += chunk
    return out


def test_proxy_types_sees_output_and_detaches_with_ctrl_bracket(registry, home):
    sid = registry.spawn(f"{PY} -q -i", pty=True)["session_id"]
    proc, master = run_proxy(home, sid)
    try:
        read_until(master, b">>> ")
        os.write(master, b"import os; print(6*7, os.get_terminal_size())\r")
        out = read_until(master, b"columns=70, lines=20")
        assert b"42" in out
        os.write(master, b"\x1d")  # Ctrl-]
        out = read_until(master, b"\x1b[?1049l")  # terminal restored on the way out
        assert proc.wait(timeout=5) == 0
        assert registry.poll(sid)["status"] == "running"  # detaching never stops the job
    finally:
        if proc.poll() is None:
            proc.kill()
        os.close(master)


def test_proxy_returns_job_exit_code(registry, home):
    sid = registry.spawn("read x; exit 4", pty=True)["session_id"]
    proc, master = run_proxy(home, sid)
    try:
        read_until(master, b"\x1b[2J")  # the proxy is up and the terminal raw
        os.write(master, b"\r")
        read_until(master, b"code 4")
        assert proc.wait(timeout=5) == 4
    finally:
        if proc.poll() is None:
            proc.kill()
        os.close(master)
