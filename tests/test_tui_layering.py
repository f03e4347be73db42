"""Layers, checked at run time (import-linter checks the static imports in `make lint`): the core
loads no UI library, the CLI and the dashboard do not load each other, and the import paths
match the folders."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

import hermes_procs
import hermes_procs.cli
import hermes_procs.core
import hermes_procs.tui

ROOT = Path(__file__).resolve().parent.parent


def _loaded_after_importing(package: str, folder: Path, prefixes: tuple[str, ...]) -> list[str]:
    """Import every module of `package` in a fresh interpreter; the loaded modules under `prefixes`."""
    modules = sorted(".".join(p.relative_to(folder).with_suffix("").parts) for p in folder.rglob("*.py")
                     if p.stem not in ("__init__", "__main__"))
    code = (
        "import importlib, sys\n"
        f"import {package}\n"
        # the supervisor modules run as scripts and import their siblings by plain name
        f"sys.path.append({str(folder / 'supervisor')!r})\n"
        f"for name in {modules!r}:\n"
        f"    importlib.import_module({package!r} + '.' + name)\n"
        f"bad = sorted(m for m in sys.modules if any(m == p or m.startswith(p + '.') for p in {prefixes!r}))\n"
        "print(','.join(bad))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    return [m for m in out.stdout.strip().split(",") if m]


def test_import_paths_match_folders():
    for package, folder in ((hermes_procs, "src/hermes_procs"), (hermes_procs.core, "core"),
                            (hermes_procs.cli, "cli"), (hermes_procs.tui, "tui")):
        assert Path(package.__file__).resolve().parent == ROOT / folder


@pytest.mark.parametrize(("package", "forbidden"), [
    ("hermes_procs.core", ("textual", "typer", "rich", "hermes_procs.cli", "hermes_procs.tui")),
    ("hermes_procs.cli", ("textual", "hermes_procs.tui")),
    ("hermes_procs.tui", ("typer", "hermes_procs.cli")),
])
def test_layers_at_run_time(package, forbidden):
    folder = Path(sys.modules[package].__file__).parent
    assert _loaded_after_importing(package, folder, forbidden) == []
