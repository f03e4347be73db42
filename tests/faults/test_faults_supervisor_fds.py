"""Issue 8 class 6: running out of file descriptors never kills the supervisor. It serves a
bounded number of clients, tells the others clearly, and keeps serving the ones it has."""

from __future__ import annotations

import json
import socket
import subprocess
import sys

from conftest import pid_alive, wait_until

from hermes_procs.core import ProcessRegistry

SPAWN = ("import json, sys; from hermes_procs.core import ProcessRegistry; "
         "print(json.dumps(ProcessRegistry(sys.argv[1]).spawn('read x; exit 4')))")


def test_many_clients_under_a_low_fd_limit(tmp_path):
    home = tmp_path / "home"
    out = subprocess.run(["bash", "-c", 'ulimit -n 64 && exec "$0" -c "$1" "$2"', sys.executable, SPAWN, str(home)],
                         capture_output=True, text=True, check=True).stdout
    sid = json.loads(out)["session_id"]
    reg = ProcessRegistry(home=home)
    try:
        _storm(reg, sid)
    finally:
        reg.kill(sid, grace=0)


def _storm(reg, sid) -> None:
    jobdir = reg.job_dir(sid)
    sup = json.loads((jobdir / "proc.json").read_text())["supervisor_pid"]
    wait_until(lambda: (jobdir / "sock").exists())

    socks = []
    try:
        for _ in range(150):  # more than 64 descriptors' worth, all connected at once
            sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            sock.connect(str(jobdir / "sock"))  # blocking: waits while the backlog is full
            sock.settimeout(20)
            try:
                sock.sendall(b'{"op": "status"}\n')
            except (BrokenPipeError, ConnectionResetError):
                pass  # turned away at once: the reply is waiting to be read
            socks.append(sock)
        replies = [_reply(sock) for sock in socks]
    finally:
        for sock in socks:
            sock.close()
    served = [r for r in replies if r and r.get("ok")]
    refused = [r for r in replies if r and not r.get("ok")]
    assert len(served) + len(refused) == 150, replies  # every client got an answer
    assert served and refused
    assert all("too many clients" in r["error"] or "descriptors" in r["error"] for r in refused), refused
    assert pid_alive(sup)
    assert reg.poll(sid)["status"] == "running"
    assert reg.submit(sid, "go")["status"] == "ok"
    assert reg.wait(sid, timeout=20)["exit_code"] == 4


def _reply(sock: socket.socket) -> dict | None:
    buf = b""
    while b"\n" not in buf:
        try:
            chunk = sock.recv(4096)
        except OSError:
            return None
        if not chunk:
            return None
        buf += chunk
    return json.loads(buf.split(b"\n", 1)[0])
