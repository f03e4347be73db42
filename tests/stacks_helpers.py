"""Helpers of the stack tests: free ports, stack files, a stack's job rows, and teardown that
downs every stack of a test home (their supervisors and jobs are real processes)."""

from __future__ import annotations

import socket
import sys
import textwrap
from pathlib import Path

PY = sys.executable

# a TCP server that starts listening after DELAY seconds and answers every connection
LISTENER = """
import socket, sys, time
time.sleep(float(sys.argv[2]))
s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(("127.0.0.1", int(sys.argv[1]))); s.listen()
print("listening", flush=True)
while True:
    c, _ = s.accept(); c.sendall(b"ok"); c.close()
"""

# a client that exits 1 unless the port accepts at once, then runs until stopped
NEEDS_PORT = """
import socket, sys, time
socket.create_connection(("127.0.0.1", int(sys.argv[1])), timeout=1).close()
print("connected", flush=True)
time.sleep(300)
"""


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def stack_file(folder: Path, text: str, name: str = "hermes-procs.toml") -> str:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "listener.py").write_text(LISTENER)
    (folder / "needs_port.py").write_text(NEEDS_PORT)
    path = folder / name
    path.write_text(textwrap.dedent(text).replace("{py}", PY))
    return str(path)


def jobs_of(registry, stack: str) -> dict[str, dict]:
    """The stack's jobs by name as `stacks()` shows them."""
    rows = registry.stacks(stack)
    assert isinstance(rows, list), rows
    return {job["name"]: job for job in rows[0]["jobs"]}


def state_of(registry, stack: str) -> str:
    rows = registry.stacks(stack)
    return rows[0]["state"] if isinstance(rows, list) and rows else "?"


def down_all(registry) -> None:
    rows = registry.stacks()
    for row in rows if isinstance(rows, list) else []:
        registry.down(row["stack"])
