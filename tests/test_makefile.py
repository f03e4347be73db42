"""The Makefile as a new user runs it (``make -n``: what each target would do on a fresh clone)."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
pytestmark = pytest.mark.skipif(shutil.which("make") is None, reason="make is not installed")


def dry_run(tmp_path: Path, target: str) -> str:
    """`make -n TARGET` in a fresh copy of the checkout's Makefile (no .venv yet)."""
    for name in ("Makefile", "pyproject.toml"):
        shutil.copy(ROOT / name, tmp_path / name)
    proc = subprocess.run(["make", "-n", target], cwd=tmp_path, capture_output=True, text=True, timeout=30)
    assert proc.returncode == 0, proc.stderr
    return proc.stdout


def test_make_run_installs_what_running_needs_only(tmp_path):
    out = dry_run(tmp_path, "run")
    assert "pip install --quiet -e '.[mcp]'\n" in out and "[test]" not in out
    assert "hermes-procs demo\n" in out and "hermes-procs web" in out and "examples/agent_loop.py" in out


def test_make_demo_is_the_same_as_run(tmp_path):
    assert dry_run(tmp_path, "demo") == dry_run(tmp_path, "run")


def test_make_test_installs_the_test_tools(tmp_path):
    assert "pip install --quiet -e '.[test]'" in dry_run(tmp_path, "test")
