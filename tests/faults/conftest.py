"""Fault-injection helpers: a small tmpfs home that can be filled, a pids cgroup that makes
fork fail, raw socket requests. Root-only pieces skip cleanly elsewhere (CI runs as root)."""

from __future__ import annotations

import errno
import json
import os
import subprocess
import uuid
from pathlib import Path

import pytest

from hermes_procs.core import ProcessRegistry
from hermes_procs.core.registry import protocol


def need_root() -> None:
    if os.geteuid() != 0:
        pytest.skip("needs root (mount, cgroups)")


@pytest.fixture
def tmpfs(tmp_path):
    """A 4 MiB tmpfs; jobs on it are killed and it is unmounted afterwards."""
    need_root()
    mnt = tmp_path / "tmpfs"
    mnt.mkdir()
    done = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=4m,mode=0700", "tmpfs", str(mnt)],
                          capture_output=True, text=True)
    if done.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {done.stderr.strip()}")
    yield mnt
    reg = ProcessRegistry(home=mnt / "home") if (mnt / "home").is_dir() else None
    for job in (reg.list() if reg else []):
        if job.get("status") == "running":
            reg.kill(job["session_id"], grace=0)
    subprocess.run(["umount", "-l", str(mnt)], capture_output=True)


def fill(directory: Path) -> Path:
    """Fill the file system of `directory` to the last byte; delete the returned file to free it."""
    path = directory / f"filler-{uuid.uuid4().hex}"
    fd = os.open(path, os.O_WRONLY | os.O_CREAT, 0o600)
    try:
        for size in (1 << 16, 4096, 1):
            block = b"x" * size
            while True:
                try:
                    os.write(fd, block)
                except OSError as exc:
                    if exc.errno != errno.ENOSPC:
                        raise
                    break
    finally:
        os.close(fd)
    return path


@pytest.fixture
def pids_cgroup():
    """Make a process fail to fork: returns enter(pid, max_pids) for a v1 pids cgroup."""
    need_root()
    base = Path("/sys/fs/cgroup/pids")
    if not (base / "cgroup.procs").exists():
        pytest.skip("no pids cgroup (v1) to limit forks with")
    group = base / f"hermes-procs-test-{uuid.uuid4().hex[:8]}"
    try:
        group.mkdir()
    except OSError as exc:
        pytest.skip(f"cannot create a pids cgroup: {exc}")

    def enter(pid: int, max_pids: int) -> None:
        (group / "pids.max").write_text(str(max_pids))
        (group / "cgroup.procs").write_text(str(pid))

    yield group, enter
    for pid in (group / "cgroup.procs").read_text().split():
        (base / "cgroup.procs").write_text(pid)
    group.rmdir()


def raw_exchange(jobdir: Path, payload: bytes, replies: int, timeout: float = 10.0) -> list:
    """Send raw bytes to a job's supervisor; return up to `replies` reply objects (fewer when
    it closes the connection)."""
    sock = protocol.connect(jobdir, retry_for=5.0)  # the socket appears just after the job starts
    sock.settimeout(timeout)
    try:
        sock.sendall(payload)
        buf, out = b"", []
        while len(out) < replies:
            while b"\n" not in buf:
                chunk = sock.recv(65536)
                if not chunk:
                    return out
                buf += chunk
            line, buf = buf.split(b"\n", 1)
            out.append(json.loads(line))
        return out
    finally:
        sock.close()
