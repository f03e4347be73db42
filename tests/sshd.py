"""A real OpenSSH server on 127.0.0.1 for the remote-host tests.

Its own host key, a user key for the current user, its own config and known_hosts, so host-key
checking stays on (StrictHostKeyChecking=yes) exactly as a user's would. The client side is a
`-F CONFIG` file passed through HERMES_PROCS_SSH_ARGS. The remote "host" is this machine, so
the tests can also look at the remote state home directly.

The remote user is a dedicated account (USER, created here with /bin/sh as its shell), not
root: root's shell start-up files may do slow things on every SSH command (pyenv's rehash,
whose lock a killed session leaves behind), and a real host is reached as a plain user anyway.
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

SSHD = "/usr/sbin/sshd"
USER = "hpssh"
USER_HOME = "/var/lib/hermes-procs-test"


def available() -> str | None:
    """None when an sshd can be started here, else why not."""
    if not os.path.exists(SSHD) or not shutil.which("ssh") or not shutil.which("ssh-keygen"):
        return "OpenSSH server/client not installed (make test installs them as root)"
    if os.geteuid() != 0:
        return "sshd for the tests runs as root (CI does)"
    return None


@dataclass
class Sshd:
    port: int
    dir: Path
    proc: subprocess.Popen
    client_config: Path

    @property
    def ssh_args(self) -> str:
        return f"-F {self.client_config}"

    def url(self, home: Path | str | None = None) -> str:
        """The host URL; the remote side runs the system's python3 (without hermes-procs, so the
        code is sent over the connection as on a fresh host)."""
        python = "/usr/bin/python3" if os.path.exists("/usr/bin/python3") else "python3"
        base = f"ssh://{USER}@testbox:{self.port}"
        return f"{base}?python={python}" + (f"&home={home}" if home else "")

    def home_dir(self) -> Path:
        """A fresh folder the remote user owns, for a remote state home (root can read it)."""
        path = Path(tempfile.mkdtemp(prefix="hpssh-", dir="/tmp"))
        shutil.chown(path, USER, USER)
        return path / "home"

    def stop(self) -> None:
        self.drop_connections()  # `sshd -D` leaves its sessions running when it stops
        # what ran from this server's code cache (templates, supervisors), not another server's
        subprocess.run(["pkill", "-KILL", "-u", USER, "-f", str(self.dir)], capture_output=True)
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(5)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()

    def drop_connections(self) -> None:
        """Kill every session process of this sshd (what a network drop does to the client),
        keeping the listener and whatever the sessions started (jobs' supervisors)."""
        children: dict[int, list[int]] = {}
        comm: dict[int, str] = {}
        for entry in os.listdir("/proc"):
            if entry.isdigit():
                try:
                    with open(f"/proc/{entry}/stat") as fh:
                        head, rest = fh.read().rsplit(")", 1)
                except OSError:
                    continue
                comm[int(entry)] = head.split("(", 1)[1]
                children.setdefault(int(rest.split()[1]), []).append(int(entry))
        todo, doomed = [self.proc.pid], []
        while todo:
            for child in children.get(todo.pop(), []):
                if comm.get(child, "").startswith("sshd"):
                    doomed.append(child)
                    todo.append(child)
        for pid in doomed:
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _ensure_user() -> None:
    if subprocess.run(["id", USER], capture_output=True).returncode != 0:
        os.makedirs(USER_HOME, mode=0o755, exist_ok=True)
        subprocess.run(["useradd", "--create-home", "--home-dir", f"{USER_HOME}/{USER}", "--shell", "/bin/sh",
                        USER], capture_output=True)  # a concurrent worker may have won the race
        subprocess.run(["id", USER], check=True, capture_output=True)
    subprocess.run(["passwd", "-u", USER], capture_output=True)  # key login: not a locked account
    subprocess.run(["usermod", "-p", "*", USER], capture_output=True)


def start(base: Path | None = None, cache_home: Path | None = None) -> Sshd:
    """An sshd in `base` (default: a new folder under /tmp the remote user can read)."""
    _ensure_user()
    base = base or Path(tempfile.mkdtemp(prefix="hpsshd-", dir="/tmp"))
    cache_home = cache_home or base / "cache"
    base.mkdir(parents=True, exist_ok=True)
    os.makedirs("/run/sshd", mode=0o755, exist_ok=True)  # sshd's privilege separation directory
    os.chmod(base, 0o755)  # the remote user reads its authorized_keys here
    cache_home.mkdir(parents=True, exist_ok=True)
    shutil.chown(cache_home, USER, USER)
    for name in ("host_key", "user_key"):
        subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(base / name)], check=True)
    (base / "authorized_keys").write_text((base / "user_key.pub").read_text())
    os.chmod(base / "authorized_keys", 0o644)
    port = _free_port()
    (base / "sshd_config").write_text(
        f"Port {port}\nListenAddress 127.0.0.1\nHostKey {base}/host_key\nPidFile {base}/sshd.pid\n"
        f"AuthorizedKeysFile {base}/authorized_keys\nPasswordAuthentication no\n"
        "KbdInteractiveAuthentication no\nUsePAM no\nStrictModes no\nPermitRootLogin no\n"
        f"AllowUsers {USER}\n"
        "AcceptEnv XDG_CACHE_HOME\nMaxSessions 50\nMaxStartups 50\nLogLevel ERROR\n")
    host_pub = (base / "host_key.pub").read_text().split()
    (base / "known_hosts").write_text(f"testbox {host_pub[0]} {host_pub[1]}\n")
    (base / "ssh_config").write_text(
        f"Host testbox\n  HostName 127.0.0.1\n  HostKeyAlias testbox\n  IdentityFile {base}/user_key\n"
        "  IdentitiesOnly yes\n"
        f"  UserKnownHostsFile {base}/known_hosts\n  StrictHostKeyChecking yes\n"
        f"  SetEnv XDG_CACHE_HOME={cache_home}\n  LogLevel ERROR\n")
    proc = subprocess.Popen([SSHD, "-D", "-e", "-f", str(base / "sshd_config")], stdin=subprocess.DEVNULL,
                            stderr=open(base / "sshd.log", "ab"))
    deadline = time.monotonic() + 10
    while True:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            break
        except OSError:
            if proc.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"sshd did not start: {(base / 'sshd.log').read_text()[-500:]}") from None
            time.sleep(0.05)
    return Sshd(port, base, proc, base / "ssh_config")
