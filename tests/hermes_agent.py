"""The real Hermes agent for the plugin tests: hermes-agent 0.19.0 from the package registry, in a
cached virtual environment, with this checkout installed next to it (editable).

The environment is built once per version, checkout and pyproject.toml, under
``$HERMES_PROCS_TEST_CACHE`` (default ``~/.cache/hermes-procs-tests``), with a lock so parallel
test workers build it once: ``python -m venv`` and one ``pip install hermes-agent==0.19.0 -e
CHECKOUT`` (about 45 s on a fresh machine; afterwards nothing). Code changes need no rebuild (the
install is editable); a changed pyproject.toml (dependencies, the entry point) makes a new one.

:class:`Hermes` is one Hermes installation's state: its own ``HERMES_HOME``, hermes-procs home,
``HOME`` (with a login profile that puts a tool on PATH and sets a variable, as nvm or pyenv
do), working folder, and an environment with secrets of every kind.
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import os
import pwd
import shutil
import subprocess
import sys
import time
from pathlib import Path

VERSION = "0.19.0"
ROOT = Path(__file__).resolve().parent.parent
DB_PASSWORD = "pw-Hunter2-for-the-db"
SECRETS = {"MY_DB_PASSWORD": DB_PASSWORD, "OPENAI_API_KEY": "sk-" + "Q" * 40,
           "AUXILIARY_VISION_API_KEY": "aux-secret-123456", "VIRTUAL_ENV": "/opt/hermes-venv",
           "CONDA_PREFIX": "/opt/conda"}


def cache_dir() -> Path:
    # the user's own home, not $HOME: tests/conftest.py points HOME into the session's temporary
    # folder, and a worker that looked there built a second environment (~45 s) at every run
    user_home = pwd.getpwuid(os.getuid()).pw_dir
    base = os.environ.get("HERMES_PROCS_TEST_CACHE") or os.path.join(
        os.environ.get("XDG_CACHE_HOME") or os.path.join(user_home, ".cache"), "hermes-procs-tests")
    key = hashlib.sha256(str(ROOT).encode() + b"\0" + (ROOT / "pyproject.toml").read_bytes()).hexdigest()[:12]
    return Path(base) / f"hermes-agent-{VERSION}-{key}"


def venv() -> Path:
    """The cached environment (built if missing); raises RuntimeError saying why it cannot be."""
    target = cache_dir()
    if (target / ".ready").exists():
        return target
    target.parent.mkdir(parents=True, exist_ok=True)
    with open(f"{target}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # another worker may be building it
        if not (target / ".ready").exists():
            _build(target)
    return target


def _build(target: Path) -> None:
    """venv + pip into `target` (what a failed or interrupted build left there goes first);
    `.ready` marks it complete."""
    shutil.rmtree(target, ignore_errors=True)
    began = time.monotonic()
    subprocess.run([sys.executable, "-m", "venv", str(target)], check=True, capture_output=True)
    pip = [str(target / "bin" / "python"), "-m", "pip", "install", "--quiet", "--no-compile",
           "--disable-pip-version-check"]
    got = subprocess.run([*pip, f"hermes-agent=={VERSION}", "-e", str(ROOT)], capture_output=True, text=True)
    if got.returncode != 0:
        raise RuntimeError(f"pip could not install hermes-agent=={VERSION}: {got.stderr.strip()[-2000:]}")
    (target / ".ready").write_text(f"built in {time.monotonic() - began:.0f} s\n")


class Hermes:
    """One Hermes installation's state under `base`, run with the cached environment."""

    def __init__(self, base: Path, plugin: bool) -> None:
        self.venv = venv()
        self.base = base
        self.hermes_home = base / "hermes"
        self.procs_home = base / "procs"
        self.home = base / "home"
        self.work = base / "work"
        for path in (self.hermes_home, self.home / "rcbin", self.work):
            path.mkdir(parents=True, exist_ok=True)
        # Hermes' check of the first command downloads its command scanner (tirith) from GitHub,
        # synchronously: with no route there it held the stock run 5 min 45 s (1 full run in 7).
        # Its own marker of a failed download (fresh for 24 h) skips that; the scanner stays
        # enabled, as in the runs before (with TIRITH_ENABLED=0 instead, a job of the scenario
        # secret_value_in_output stayed counted as running in 2 full runs of 3, none in 8 before).
        (self.hermes_home / ".tirith-install-failed").write_text("download_failed")
        (self.home / ".bash_profile").write_text('export PATH="$HOME/rcbin:$PATH"\nexport FROM_RC=profile\n')
        tool = self.home / "rcbin" / "rctool"
        tool.write_text("#!/bin/sh\necho rctool-ran\n")
        tool.chmod(0o755)
        if plugin:
            self.hermes("plugins", "enable", "hermes-procs")

    @property
    def python(self) -> str:
        return str(self.venv / "bin" / "python")

    def env(self, **extra: str) -> dict[str, str]:
        env = {"PATH": f"{self.venv / 'bin'}:/usr/local/bin:/usr/bin:/bin", "HOME": str(self.home),
               "LANG": "C.UTF-8", "SHELL": "/bin/bash", "HERMES_HOME": str(self.hermes_home),
               "HERMES_PROCS_HOME": str(self.procs_home), "HERMES_PROCS_TEMPLATE_IDLE": "30",
               "DRIVER_TMP": str(self.work), **SECRETS, **extra}
        return env

    def hermes(self, *args: str, **extra: str) -> subprocess.CompletedProcess[str]:
        """The `hermes` command (stdin closed: it never waits for an answer)."""
        got = subprocess.run([str(self.venv / "bin" / "hermes"), *args], env=self.env(**extra), cwd=self.work,
                             stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=120)
        assert got.returncode == 0, got.stdout + got.stderr
        return got

    def run(self, code: str, timeout: float = 120, **extra: str) -> subprocess.CompletedProcess[str]:
        """Python code in Hermes' environment (cwd: the work folder)."""
        return subprocess.run([self.python, "-c", code], env=self.env(**extra), cwd=self.work,
                              stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=timeout)

    def start(self, code: str, **extra: str) -> subprocess.Popen[str]:
        """As :meth:`run`, without waiting: read it with :func:`last_json`."""
        return subprocess.Popen([self.python, "-c", code], env=self.env(**extra), cwd=self.work,
                                stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)

    def driver(self, *scenarios: str) -> subprocess.Popen[str]:
        """tests/hermes_driver.py running `scenarios`; read it with :func:`results`."""
        script = str(Path(__file__).with_name("hermes_driver.py"))
        return subprocess.Popen([self.python, script, *scenarios], env=self.env(), cwd=self.work,
                                stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                text=True)

    def procs(self, *args: str) -> subprocess.CompletedProcess[str]:
        """The `hermes-procs` command of Hermes' environment, on this installation's home."""
        return subprocess.run([str(self.venv / "bin" / "hermes-procs"), *args], env=self.env(), cwd=self.work,
                              stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=60)

    def log(self) -> str:
        """Hermes' own log files, as one text."""
        logs = self.hermes_home / "logs"
        return "".join(p.read_text(errors="replace") for p in sorted(logs.glob("*.log"))) if logs.is_dir() else ""


def results(proc: subprocess.Popen[str], timeout: float = 300) -> dict[str, object]:
    try:
        out, err = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        _, err = proc.communicate()
        raise AssertionError(f"the driver took over {timeout:g}s; its stderr (scenarios begun, stacks):\n"
                             f"{err[-6000:]}") from None
    if proc.returncode != 0 or not out.strip():
        raise AssertionError(f"the driver failed ({proc.returncode}):\n{err[-4000:]}")
    data: dict[str, object] = json.loads(out.strip().splitlines()[-1])
    return data


def last_json(proc: subprocess.Popen[str], timeout: float = 240) -> dict[str, object]:
    """The JSON object a :meth:`Hermes.start` program printed last (it must have succeeded)."""
    out, err = proc.communicate(timeout=timeout)
    assert proc.returncode == 0, err[-3000:]
    data: dict[str, object] = json.loads(out.strip().splitlines()[-1])
    return data


def both(base: Path, code: str, timeout: float = 240, together: bool = True,
         **extra: str) -> dict[str, dict[str, object]]:
    """`code` run by a stock Hermes and one with the plugin, each in its own installation under
    `base`: {"stock": what it printed last, "plugin": ...}. At the same time unless `together`
    is false (Hermes' Docker environment reuses a running container of the same task and
    profile across processes: two at once would share one)."""
    if not together:
        return {mode: last_json(Hermes(base / mode, plugin=mode == "plugin").start(code, **extra), timeout)
                for mode in ("stock", "plugin")}
    procs = {mode: Hermes(base / mode, plugin=mode == "plugin").start(code, **extra) for mode in ("stock", "plugin")}
    return {mode: last_json(proc, timeout) for mode, proc in procs.items()}


# ---- the comparison runs, prepared in the background --------------------------------------------
#
# Every scenario of tests/hermes_driver.py runs once by stock Hermes and once with the plugin
# (about two minutes with the environment's build on a fresh machine). The main pytest process
# starts `python tests/hermes_agent.py ROOT SCENARIO...` when the session begins, so the runs
# go on while the other tests do; the tests of test_hermes_plugin.py run last and read the record
# (`runs`), waiting on the lock only for what is left.

def runs_paths(root: Path) -> tuple[Path, Path, Path]:
    """(the runs' folder, their record, the lock held while they are made) under `root`."""
    return root / "hermes-runs", root / "hermes-runs.json", root / "hermes-runs.lock"


def prepare_runs(root: Path, scenarios: list[str]) -> dict[str, object]:
    """The record of the comparison runs under `root`, made now unless it exists; a failure is
    recorded as {"error": ...} so every test reports it instead of trying again."""
    base, record, lock_path = runs_paths(root)
    with open(lock_path, "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not record.exists():
            try:
                stock, plugin = Hermes(base / "stock", plugin=False), Hermes(base / "plugin", plugin=True)
                procs = stock.driver(*scenarios), plugin.driver(*scenarios)
                data: dict[str, object] = {"stock": results(procs[0]), "plugin": results(procs[1])}
            except Exception as exc:  # noqa: BLE001 - recorded for the tests to report
                data = {"error": f"{type(exc).__name__}: {exc}"}
            record.write_text(json.dumps(data))
    loaded: dict[str, object] = json.loads(record.read_text())
    return loaded


if __name__ == "__main__":  # tests/conftest.py: python tests/hermes_agent.py ROOT
    from test_hermes_plugin import SCENARIOS

    began = time.monotonic()
    made = prepare_runs(Path(sys.argv[1]), SCENARIOS)
    print(f"{sorted(made)} in {time.monotonic() - began:.1f}s", flush=True)
