"""A private Docker daemon for the container tests: the real `dockerd`, no registry, no network.

`shared(root, owner)` gives every pytest worker of one test session the same daemon: the
first to ask starts it (under a lock in `root`, the session's shared temporary folder), the
others find it in `root/dockerd.json`. It runs with its own data root, exec root, pid file
and socket in a short folder under /tmp, `--bridge=none --iptables=false`, so it touches
neither the machine's network nor a system daemon. Clients reach it through DOCKER_HOST.

The daemon is the child of a watchdog (`python dockerd.py watch OWNER TICKS BASE`): when
the session's main pytest process ends for any reason (or `stop_shared` asks), the watchdog
removes every container, stops the daemon, unmounts what it left and deletes its folder,
so a failing or killed test run leaves no daemon, container or mount behind.

The image (`image()`) is made from this machine's own files, nothing pulled: the Python
interpreter the tests give remote hosts, its standard library (without its test suite, tkinter,
idle...), bash, dash, coreutils, the shared libraries they load, and a minimal /etc. Its tag is
the digest of that file list (paths, sizes, modification times): about 30 MB, imported in
a few seconds once per session. Containers run with `--network none`.
"""

from __future__ import annotations

import fcntl
import hashlib
import io
import json
import os
import shutil
import signal
import subprocess
import sys
import tarfile
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

DOCKERD = "/usr/sbin/dockerd"
PYTHON = "/usr/bin/python3"  # the interpreter of the image (the test sshd's remote python too)
START_TIMEOUT = 60.0
# Parts of the standard library no remote side needs: left out of the image.
STDLIB_SKIP = {"test", "idlelib", "tkinter", "turtledemo", "ensurepip", "lib2to3", "pydoc_data", "distutils",
               "unittest", "sqlite3", "venv", "dbm", "curses", "xmlrpc", "wsgiref", "asyncio", "email", "xml",
               "http", "multiprocessing", "html", "site-packages", "dist-packages"}
# Extension modules left out with them, or for the big libraries they load (hashlib falls back to
# its built-in digests without _hashlib's OpenSSL).
DYNLOAD_SKIP = ("_ssl", "_hashlib", "_sqlite3", "_dbm", "_gdbm", "_tkinter", "_curses", "readline", "_test",
                "_xxtestfuzz", "xxlimited", "nis", "_crypt", "_decimal", "_ctypes_test", "_asyncio",
                "_multiprocessing", "_posixshmem", "_elementtree", "pyexpat")
EXTRA_BINARIES = ("bash", "dash", "sh")


def available() -> str | None:
    """None when a private dockerd can be started here, else why not."""
    if sys.platform != "linux":
        return "the container tests need Linux"
    if os.geteuid() != 0:
        return "the container tests start their own dockerd, which needs root (CI runs as root)"
    if not os.path.exists(DOCKERD) or not shutil.which("docker"):
        return "docker.io not installed (make test installs it as root)"
    if not os.path.exists(PYTHON):
        return f"no {PYTHON} to put in the test image"
    if not os.path.isdir("/sys/fs/cgroup") or not os.listdir("/sys/fs/cgroup"):
        return "no cgroup file system: dockerd cannot run containers here"
    return None


class Unavailable(Exception):
    """The daemon could not be started here (the reason is the message)."""


@dataclass
class Daemon:
    base: Path
    watchdog: int
    image: str = ""

    @property
    def sock(self) -> Path:
        return self.base / "docker.sock"

    @property
    def host(self) -> str:
        return f"unix://{self.sock}"

    def env(self) -> dict[str, str]:
        return {**os.environ, "DOCKER_HOST": self.host}

    def docker(self, *args: str, check: bool = True, timeout: float = 60, input: bytes | None = None,
               ) -> subprocess.CompletedProcess[str]:
        res = subprocess.run(["docker", *args], capture_output=True, timeout=timeout, env=self.env(),
                             input=input.decode() if input is not None else None, text=True)
        if check and res.returncode != 0:
            raise RuntimeError(f"docker {' '.join(args)}: {res.stderr.strip() or res.stdout.strip()}")
        return res

    def run(self, name: str, *command: str, init: bool = False) -> str:
        """Start a container `name` of the test image (detached, --network none); its name."""
        cmd = command or ("sleep", "infinity")
        self.docker("rm", "-f", name, check=False)
        self.docker("run", "-d", "--name", name, "--network", "none", *(["--init"] if init else []),
                    self.image, *cmd)
        return name

    def exec(self, name: str, *command: str, check: bool = True) -> str:
        """The output of `command` run in container `name`."""
        return self.docker("exec", name, *command, check=check).stdout

    def processes(self, name: str) -> list[dict[str, object]]:
        """Every process of the container: pid, ppid, state letter and name (from its /proc)."""
        script = ("import os,json\nout=[]\nfor p in os.listdir('/proc'):\n if p.isdigit():\n  try:\n"
                  "   s=open('/proc/%s/stat'%p).read()\n  except OSError:\n   continue\n"
                  "  head,rest=s.rsplit(')',1)\n  f=rest.split()\n"
                  "  out.append({'pid':int(p),'ppid':int(f[1]),'state':f[0],'comm':head.split('(',1)[1]})\n"
                  "print(json.dumps(out))")
        return json.loads(self.exec(name, PYTHON, "-c", script))


# ---- the daemon shared by the session's workers ------------------------------------------

def shared(root: Path, owner: int) -> Daemon:
    """The session's daemon (started by the first worker that asks, with the image built);
    `owner`: the pid of the session's main pytest process (the daemon goes when it does).
    Raises Unavailable with the reason when it cannot run here."""
    why = available()
    if why:
        raise Unavailable(why)
    record = root / "dockerd.json"
    with open(root / "dockerd.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if record.exists():
            data = json.loads(record.read_text())
            if "error" in data:
                raise Unavailable(data["error"])
            return Daemon(Path(data["base"]), data["watchdog"], data["image"])
        try:
            daemon = start(owner)
            daemon.image = build_image(daemon)
            _can_run(daemon)
        except Unavailable as exc:
            record.write_text(json.dumps({"error": str(exc)}))
            raise
        record.write_text(json.dumps({"base": str(daemon.base), "watchdog": daemon.watchdog, "image": daemon.image}))
        return daemon


def stop_shared(root: Path) -> None:
    """Stop the session's daemon, if one was started (the main pytest process calls this last)."""
    record = root / "dockerd.json"
    try:
        data = json.loads(record.read_text())
    except (OSError, ValueError):
        return
    if "watchdog" in data:
        stop(data["watchdog"])
    record.unlink(missing_ok=True)


def start(owner: int) -> Daemon:
    """A new daemon under its watchdog; waits until it answers."""
    base = Path(tempfile.mkdtemp(prefix="hpd-", dir="/tmp"))  # short: sockets live below it
    watchdog = subprocess.Popen([sys.executable, __file__, "watch", str(owner), str(_ticks(owner)), str(base)],
                                stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                stderr=open(base / "watchdog.log", "ab"), start_new_session=True)
    daemon = Daemon(base, watchdog.pid)
    deadline = time.monotonic() + START_TIMEOUT
    while True:
        if daemon.sock.exists() and daemon.docker("version", check=False, timeout=10).returncode == 0:
            return daemon
        if watchdog.poll() is not None or time.monotonic() > deadline:
            stop(watchdog.pid)
            log = _tail(base / "dockerd.log") or _tail(base / "watchdog.log")
            shutil.rmtree(base, ignore_errors=True)
            raise Unavailable(f"dockerd did not start: {log}")
        time.sleep(0.1)


def _can_run(daemon: Daemon) -> None:
    """Unavailable (and the daemon stopped) when this kernel cannot run a container: no
    namespaces, no cgroups, no overlay or seccomp support... dockerd says which."""
    res = daemon.docker("run", "--rm", "--network", "none", daemon.image, "true", check=False)
    if res.returncode != 0:
        stop(daemon.watchdog)
        raise Unavailable(f"dockerd cannot run a container here: {res.stderr.strip()[-400:]}")


def stop(watchdog: int, timeout: float = 60) -> None:
    """Ask the watchdog to clean up (containers, daemon, mounts, folder) and wait for it."""
    try:
        os.kill(watchdog, signal.SIGTERM)
    except ProcessLookupError:
        return
    deadline = time.monotonic() + timeout
    while _alive(watchdog) and time.monotonic() < deadline:
        time.sleep(0.05)
        try:
            os.waitpid(watchdog, os.WNOHANG)  # our child when this process started it
        except ChildProcessError:
            pass


def _tail(path: Path) -> str:
    try:
        lines = [line for line in path.read_text(errors="replace").splitlines() if line.strip()]
    except OSError:
        return ""
    errors = [line for line in lines if "level=error" in line or "level=fatal" in line]
    return (errors or lines or [""])[-1][-400:]


# ---- the watchdog process ------------------------------------------------------------------

def watch(owner: int, ticks: int, base: Path) -> int:
    """Run the daemon until the owner process ends or SIGTERM comes, then clean everything up."""
    stopping = []
    for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        signal.signal(sig, lambda *_: stopping.append(1))
    with open(base / "dockerd.log", "ab") as log:
        proc = subprocess.Popen([DOCKERD, "--bridge=none", "--iptables=false", "--ip6tables=false",
                                 f"--data-root={base}/data", f"--exec-root={base}/exec",
                                 f"--pidfile={base}/dockerd.pid", f"-H=unix://{base}/docker.sock",
                                 "--log-level=warn"],
                                stdin=subprocess.DEVNULL, stdout=log, stderr=log, start_new_session=True)
    while not stopping and proc.poll() is None and _ticks(owner) == ticks:
        time.sleep(0.25)
    cleanup(base, proc)
    return 0


def cleanup(base: Path, proc: subprocess.Popen[bytes]) -> None:
    env = {**os.environ, "DOCKER_HOST": f"unix://{base}/docker.sock"}
    if proc.poll() is None:
        try:
            ids = subprocess.run(["docker", "ps", "-aq"], capture_output=True, text=True, env=env, timeout=20).stdout
            if ids.split():
                subprocess.run(["docker", "rm", "-f", *ids.split()], capture_output=True, env=env, timeout=60)
        except subprocess.TimeoutExpired:
            pass
        proc.terminate()
        try:
            proc.wait(30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
    try:
        os.killpg(proc.pid, signal.SIGKILL)  # its containerd, if it outlived it
    except OSError:
        pass
    for mount in sorted(_mounts_under(base), key=len, reverse=True):
        subprocess.run(["umount", "-l", mount], capture_output=True)
    shutil.rmtree(base, ignore_errors=True)


def _mounts_under(base: Path) -> list[str]:
    with open("/proc/self/mountinfo") as fh:
        points = [line.split()[4] for line in fh]
    return [p for p in points if p == str(base) or p.startswith(f"{base}/")]


def _ticks(pid: int) -> int:
    """The start time of process `pid` (0 when it is gone): with the pid, its identity."""
    try:
        with open(f"/proc/{pid}/stat") as fh:
            return int(fh.read().rsplit(")", 1)[1].split()[19])
    except (OSError, IndexError, ValueError):
        return 0


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as fh:
            return fh.read().rsplit(")", 1)[1].split()[0] not in ("Z", "X")
    except OSError:
        return False


# ---- the image -------------------------------------------------------------------------------

def image_files() -> list[str]:
    """Every path the image holds (files and the symlinks on the way to them)."""
    info = json.loads(subprocess.run(
        [PYTHON, "-I", "-c", "import json, sys, sysconfig; print(json.dumps([sys.executable, "
         "sysconfig.get_paths()['stdlib'], sysconfig.get_config_var('DESTSHARED')]))"],
        capture_output=True, text=True, check=True).stdout)
    executable, stdlib, dynload = info
    binaries = [executable, *(shutil.which(b) or "" for b in EXTRA_BINARIES), *_coreutils()]
    files = [b for b in binaries if b]
    for top, dirs, names in os.walk(stdlib):
        rel = os.path.relpath(top, stdlib)
        if rel == ".":
            dirs[:] = [d for d in dirs if d not in STDLIB_SKIP and not d.startswith("config-")]
        dirs[:] = [d for d in dirs if d not in ("tests", "test", "idle_test")]
        files += [os.path.join(top, n) for n in names if ".opt-" not in n and not
                  (top == dynload and n.startswith(DYNLOAD_SKIP))]
    libs = set()
    modules = [os.path.join(dynload, n) for n in os.listdir(dynload)
               if n.endswith(".so") and not n.startswith(DYNLOAD_SKIP)]
    for path in [*binaries, *modules]:
        libs |= _libraries(path)
    return sorted(set(files) | libs)


def _coreutils() -> list[str]:
    listed = subprocess.run(["dpkg", "-L", "coreutils"], capture_output=True, text=True)
    found = [p for p in listed.stdout.split() if "/bin/" in p and os.path.isfile(p)]
    return found or [p for p in (shutil.which(n) for n in ("cat", "sleep", "echo", "env", "ls", "seq", "head",
                                                           "tail", "true", "false", "yes", "id")) if p]


def _libraries(path: str) -> set[str]:
    res = subprocess.run(["ldd", path], capture_output=True, text=True)
    out = set()
    for line in res.stdout.splitlines():
        words = line.split()
        for word in words:
            if word.startswith("/") and os.path.exists(word):
                out.add(word)
    return out


def image_tag(files: list[str]) -> str:
    digest = hashlib.sha256()
    for path in files:
        st = os.stat(path)
        digest.update(f"{path}\0{st.st_size}\0{st.st_mtime_ns}\n".encode())
    return f"hermes-procs-test:{digest.hexdigest()[:16]}"


def build_image(daemon: Daemon) -> str:
    """Import the test image into the daemon (once: its tag names its content)."""
    files = image_files()
    tag = image_tag(files)
    if daemon.docker("image", "inspect", tag, check=False).returncode == 0:
        return tag
    proc = subprocess.Popen(["docker", "import", "-", tag], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, env=daemon.env())
    assert proc.stdin is not None
    try:
        _write_rootfs(proc.stdin, files)
    finally:
        proc.stdin.close()
    assert proc.stderr is not None
    err = proc.stderr.read()
    if proc.wait(timeout=120) != 0:
        raise Unavailable(f"docker import failed: {err.decode(errors='replace').strip()}")
    return tag


def _write_rootfs(out: io.BufferedIOBase, files: list[str]) -> None:
    added: set[str] = set()
    with tarfile.open(fileobj=out, mode="w|") as tar:
        for name, mode in (("tmp", 0o1777), ("root", 0o700), ("etc", 0o755), ("proc", 0o555), ("dev", 0o755),
                           ("sys", 0o555)):
            _add_dir(tar, name, mode)
            added.add("/" + name)
        for name, text in (("etc/passwd", "root:x:0:0:root:/root:/bin/sh\nnobody:x:65534:65534:nobody:/nonexistent:"
                                          "/usr/sbin/nologin\n"),
                           ("etc/group", "root:x:0:\nnogroup:x:65534:\n"),
                           ("etc/hostname", "hp-test\n")):
            data = text.encode()
            info = tarfile.TarInfo(name)
            info.size, info.mode = len(data), 0o644
            tar.addfile(info, io.BytesIO(data))
        for path in files:
            _add_path(tar, path, added)


def _add_dir(tar: tarfile.TarFile, name: str, mode: int) -> None:
    info = tarfile.TarInfo(name)
    info.type, info.mode = tarfile.DIRTYPE, mode
    tar.addfile(info)


def _add_path(tar: tarfile.TarFile, path: str, added: set[str]) -> None:
    """Add `path` as the image will see it: each symlink on the way (/lib -> usr/lib), then the
    file it leads to; folders on the way are made as plain folders."""
    parts = Path(path).parts[1:]
    current = "/"
    for i, part in enumerate(parts):
        current = os.path.join(current, part)
        if current in added:
            if os.path.islink(current):
                return _add_path(tar, os.path.join(os.path.realpath(current), *parts[i + 1:]), added)
            continue
        added.add(current)
        st = os.lstat(current)
        if os.path.islink(current):
            info = tarfile.TarInfo(current.lstrip("/"))
            info.type, info.linkname = tarfile.SYMTYPE, os.readlink(current)
            tar.addfile(info)
            target = os.path.join(os.path.dirname(current), os.readlink(current))
            return _add_path(tar, os.path.normpath(os.path.join(target, *parts[i + 1:])), added)
        if i < len(parts) - 1:
            _add_dir(tar, current.lstrip("/"), 0o755)
        else:
            info = tar.gettarinfo(current, current.lstrip("/"))
            info.uid = info.gid = 0
            info.uname = info.gname = "root"
            with open(current, "rb") as fh:
                tar.addfile(info, fh)
        del st
    return None


if __name__ == "__main__":
    if sys.argv[1:2] == ["watch"]:
        sys.exit(watch(int(sys.argv[2]), int(sys.argv[3]), Path(sys.argv[4])))
    sys.exit(f"usage: {sys.argv[0]} watch OWNER TICKS BASE")
