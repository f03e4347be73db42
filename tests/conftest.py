"""Shared fixtures: a private temporary state home and a registry over it, real processes only."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

import pytest

from hermes_procs.core import ProcessRegistry


@pytest.fixture(autouse=True, scope="session")
def _private_defaults(tmp_path_factory):
    """Nothing a test does reaches the user's own state home, config file or home folder: the
    defaults point into the session's temporary folder (tests that need their own set the
    variables again). HOME too: the REPLs and pagers the jobs run write their history there
    (~/.python_history, ~/.lesshst), not into the home of the user running `make test`."""
    base = tmp_path_factory.mktemp("defaults")
    saved = {k: os.environ.get(k) for k in ("HERMES_PROCS_HOME", "XDG_CONFIG_HOME", "HERMES_PROCS_HOST", "HOME")}
    os.environ["HERMES_PROCS_HOME"] = str(base / "home")
    os.environ["XDG_CONFIG_HOME"] = str(base / "config")
    (base / "user").mkdir(mode=0o700)
    os.environ["HOME"] = str(base / "user")
    os.environ.pop("HERMES_PROCS_HOST", None)
    yield
    for key, value in saved.items():
        if value is None:
            os.environ.pop(key, None)
        else:
            os.environ[key] = value


@pytest.fixture
def home(tmp_path, monkeypatch):
    path = tmp_path / "home"
    monkeypatch.setenv("HERMES_PROCS_HOME", str(path))
    return path


@pytest.fixture
def login_shell_home(tmp_path, monkeypatch):
    """A HOME without start-up files for the jobs of the Hermes adapter: they run in a login
    interactive shell, as Hermes runs them, which reads the user's rc files (a user's may be
    slow: root's here runs `pyenv init`, which waits on a stale lock some killed shell left)."""
    path = tmp_path / "login-home"
    path.mkdir()
    monkeypatch.setenv("HOME", str(path))
    monkeypatch.setenv("SHELL", "/bin/bash")
    return path


@pytest.fixture
def hermes(home, login_shell_home):
    """A Hermes adapter (core/agents/compat.py) over the temporary home; kills its jobs afterwards."""
    from hermes_procs.core.agents.compat import HermesProcessRegistry

    reg = HermesProcessRegistry(home=home)
    yield reg
    reg.kill_all(grace=0.2, source="process.kill")
    reg.close()


@pytest.fixture
def registry(home):
    reg = ProcessRegistry(home=home)
    yield reg
    for job in reg.list():
        if job.get("status") == "running" or job.get("leftover_pids"):
            reg.kill(job["session_id"], grace=0.2)


def wait_until(predicate, timeout: float = 5.0, interval: float = 0.01):
    """Poll `predicate` until it returns something truthy; fail the test after `timeout`."""
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"condition not met within {timeout}s: {predicate}")
        time.sleep(interval)


async def until_async(predicate, timeout: float = 6.0, what: str = "", pause=None):
    """`wait_until` for async tests: `pause()` (default a 20 ms sleep) yields to the app."""
    import asyncio

    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"not within {timeout}s: {what or predicate}")
        await (pause() if pause else asyncio.sleep(0.02))


def pid_alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as fh:
            return fh.read().rsplit(")", 1)[1].split()[0] not in ("Z", "X")
    except (FileNotFoundError, ProcessLookupError):  # ESRCH: reaped between the open and the read
        return False


def supervisor_gone(registry, session_id: str, timeout: float = 5.0) -> None:
    """Wait until the job's supervisor has exited (it outlives the exit record by a moment)."""
    import json

    proc = json.loads((registry.job_dir(session_id) / "proc.json").read_text())
    wait_until(lambda: not pid_alive(proc["supervisor_pid"]), timeout)


@pytest.fixture
def alive():
    return pid_alive


@pytest.fixture(autouse=True)
def _no_stray_env(monkeypatch):
    monkeypatch.delenv("HERMES_PROCS_MAX_WAIT", raising=False)
    monkeypatch.delenv("HERMES_PROCS_LOG_CAP", raising=False)
    monkeypatch.delenv("HERMES_PROCS_REDACT", raising=False)
    # each test home's warm supervisor template (core/supervisor/template.py) goes soon after its test
    monkeypatch.setenv("HERMES_PROCS_TEMPLATE_IDLE", "30")
    # and is no subreaper staying for good where pid 1 collects no exits (core/supervisor/reaper.py: a CI
    # container's may not; tests/test_template_reaper.py and the container tests cover that;
    # jobs and servers started with an environment of their own may still get one there)
    monkeypatch.setenv("HERMES_PROCS_REAPER", "off")


@pytest.fixture
def anyio_backend():
    """The pilot tests (`pytest.mark.anyio`) run on asyncio, what Textual runs on."""
    return "asyncio"


# ---- a real sshd on 127.0.0.1 (tests/sshd.py) for the remote-host tests ------------------

@pytest.fixture(scope="module")
def server():
    """One sshd per test module; the tests that use it skip where sshd.available() says why."""
    import shutil

    import sshd

    srv = sshd.start()
    yield srv
    srv.stop()
    shutil.rmtree(srv.dir, ignore_errors=True)


@pytest.fixture
def hostset():
    """HostSet(local, hosts), its log mirrors stopped after the test (a mirror copies a remote
    job's log for 30 s after the last look: it would reconnect after the test's host is gone)."""
    from hermes_procs.core.remote.hosts import HostSet

    made = []

    def make(local, hosts):
        made.append(HostSet(local, hosts))
        return made[-1]

    yield make
    for view in made:
        view.close()


@pytest.fixture
def remote(server, monkeypatch):
    """A RemoteRegistry over ssh with its own remote home (a folder of this machine); its
    running jobs are killed afterwards."""
    monkeypatch.setenv("HERMES_PROCS_SSH_ARGS", server.ssh_args)
    rhome = server.home_dir()
    reg = ProcessRegistry(host=server.url(rhome))
    reg.test_home = rhome
    yield reg
    rows = reg.list()
    for job in rows if isinstance(rows, list) else []:
        if job.get("status") == "running":
            reg.kill(job["session_id"], grace=0.2)
    reg.conn.close()


# ---- a private tmux server (tests/tmux.py) for the end-to-end tests in a real terminal ------

@pytest.fixture
def tmux():
    """A tmux server of this test's own (skips where tmux is not installed), killed afterwards."""
    import shutil

    from tmux import Tmux

    if shutil.which("tmux") is None:
        pytest.skip("tmux is not installed")
    server = Tmux()
    yield server
    server.close()


# ---- a private Docker daemon (tests/dockerd.py) for the container tests ---------------------

def _session_root(factory) -> tuple[object, int]:
    """The folder every worker of this pytest session shares, and the session's main process."""
    if os.environ.get("PYTEST_XDIST_WORKER"):
        return factory.getbasetemp().parent, os.getppid()
    return factory.getbasetemp(), os.getpid()


@pytest.fixture(scope="session")
def docker_daemon(tmp_path_factory):
    """The session's dockerd with the test image (started once for all workers; it stops when
    the session ends, even a failed or killed one). Skips, saying why, where it cannot run."""
    import dockerd

    root, owner = _session_root(tmp_path_factory)
    try:
        return dockerd.shared(root, owner)
    except dockerd.Unavailable as exc:
        pytest.skip(str(exc))


@pytest.fixture
def docker_env(docker_daemon, monkeypatch):
    """DOCKER_HOST pointing at the session's daemon, for this test and what it starts."""
    monkeypatch.setenv("DOCKER_HOST", docker_daemon.host)
    return docker_daemon


# ---- the Hermes comparison runs (tests/hermes_agent.py), made while the other tests run -------

HERMES_TESTS = "test_hermes_plugin.py"


def pytest_sessionstart(session):
    """The main process starts the Hermes comparison runs in the background when the session
    includes tests/test_hermes_plugin.py (its tests run last and read what the runs recorded)."""
    config = session.config
    if hasattr(config, "workerinput") or config.getoption("collectonly"):
        return
    args = [str(a) for a in config.args]
    if not any(a.rstrip("/").endswith("tests") or HERMES_TESTS in a for a in args):
        return
    script = os.path.join(os.path.dirname(__file__), "hermes_agent.py")
    root = str(config._tmp_path_factory.getbasetemp())
    log = open(os.path.join(root, "hermes-runs.log"), "w")  # noqa: SIM115 - the child's for its life
    config._hermes_runs = subprocess.Popen([sys.executable, script, root], stdout=log, stderr=subprocess.STDOUT,
                                           stdin=subprocess.DEVNULL, start_new_session=True)


def pytest_collection_modifyitems(items):
    """The Hermes plugin's tests last (stable otherwise): by then the runs are made."""
    items.sort(key=lambda item: HERMES_TESTS in item.nodeid)


def pytest_sessionfinish(session):
    """The main process stops the Hermes runs if still going, and the session's dockerd (its
    watchdog would, a moment later)."""
    if hasattr(session.config, "workerinput"):
        return
    runs = getattr(session.config, "_hermes_runs", None)
    if runs is not None and runs.poll() is None:
        os.killpg(runs.pid, signal.SIGKILL)
        runs.wait()
    factory = getattr(session.config, "_tmp_path_factory", None)
    if factory is not None and factory._basetemp is not None:
        import dockerd

        dockerd.stop_shared(factory.getbasetemp())
