"""The distribution as a new user gets it: the wheel `pip install .` builds from this checkout
(with build isolation, as pip does), installed without the checkout's editable finder, and
`python -m hermes_procs` run from it."""

from __future__ import annotations

import os
import subprocess
import sys
import sysconfig
import zipfile
from pathlib import Path

import pytest

from hermes_procs import __version__

pytestmark = pytest.mark.timeout(300)
ROOT = Path(__file__).resolve().parent.parent
BUILD_WARNINGS = ("Warning", "deprecated", "!!")


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    """(pip's output, the wheel) of `pip wheel .`: setuptools from the index, as `pip install .` does."""
    out = tmp_path_factory.mktemp("wheel")
    proc = subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "-w", str(out), str(ROOT)],
                          capture_output=True, text=True, timeout=280)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return proc.stdout + proc.stderr, next(out.glob("*.whl"))


@pytest.fixture(scope="module")
def installed(built, tmp_path_factory):
    """The wheel installed into a folder of its own (the dependencies come from this venv)."""
    target = tmp_path_factory.mktemp("site")
    proc = subprocess.run([sys.executable, "-m", "pip", "install", "--no-deps", "--no-index", "--target",
                           str(target), str(built[1])], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return target


def run_installed(installed: Path, cwd: Path, *args: str) -> subprocess.CompletedProcess:
    """`python -m hermes_procs ARGS` in `cwd` with the installed wheel and no site processing:
    this venv's editable install (a .pth finder) plays no part, as after a plain `pip install .`."""
    path = os.pathsep.join([str(installed), sysconfig.get_paths()["purelib"], sysconfig.get_paths()["platlib"]])
    env = dict(os.environ, PYTHONPATH=path)
    return subprocess.run([sys.executable, "-S", "-m", "hermes_procs", *args], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=60)


def test_the_build_says_nothing_alarming(built):
    """No setuptools warnings (the deprecated license table, a data folder outside `packages`)."""
    output, _ = built
    noise = [line for line in output.splitlines()
             if any(w in line for w in BUILD_WARNINGS) and not line.startswith("WARNING: Location")]
    assert not noise, "\n".join(noise)


def test_the_wheel_holds_the_page_template_and_the_metadata(built):
    with zipfile.ZipFile(built[1]) as whl:
        names = whl.namelist()
        meta = next(whl.read(n).decode() for n in names if n.endswith(".dist-info/METADATA"))
    assert "hermes_procs/tui/web_templates/app_index.html" in names
    assert f"Version: {__version__}\n" in meta and "License-Expression: MIT\n" in meta


def test_python_m_hermes_procs_from_elsewhere(installed, tmp_path):
    proc = run_installed(installed, tmp_path, "--version")
    assert (proc.returncode, proc.stdout) == (0, f"hermes-procs {__version__}\n"), proc.stderr


def test_python_m_hermes_procs_from_the_checkout_root(installed):
    proc = run_installed(installed, ROOT, "--help")
    assert proc.returncode == 0 and "Usage: hermes-procs" in proc.stdout, proc.stderr


CONTRACT = """
import importlib.metadata as md
from hermes_procs.core import ProcessRegistry
from hermes_procs.core.tool import PROCESS_TOOL_SCHEMA, handle_process
from hermes_procs.core.compat import HermesProcessRegistry
plugin = [e for e in md.entry_points(group="hermes_agent.plugins") if e.name == "hermes-procs"][0].load()
script = [e for e in md.entry_points(group="console_scripts") if e.name == "hermes-procs"][0].load()
print(ProcessRegistry.__name__, PROCESS_TOOL_SCHEMA["name"], callable(handle_process),
      HermesProcessRegistry.__name__, callable(plugin.register), script.__module__)
"""


def test_the_contract_import_paths_and_entry_points(installed, tmp_path):
    """CONTRACT.md's import paths, the `hermes-procs` script and the Hermes plugin's entry point
    resolve in the installed wheel, wherever the modules behind them live in core/."""
    path = os.pathsep.join([str(installed), sysconfig.get_paths()["purelib"], sysconfig.get_paths()["platlib"]])
    proc = subprocess.run([sys.executable, "-S", "-c", CONTRACT], cwd=tmp_path, env=dict(os.environ, PYTHONPATH=path),
                          capture_output=True, text=True, timeout=60)
    assert proc.stdout.split() == ["ProcessRegistry", "process", "True", "HermesProcessRegistry", "True",
                                   "hermes_procs"], proc.stderr
