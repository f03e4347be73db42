"""The core package never imports the UI (harlequin-style layering check)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import hermes_procs.core


def test_core_does_not_import_textual():
    core_dir = Path(hermes_procs.core.__file__).parent
    modules = sorted(p.stem for p in core_dir.glob("*.py") if p.stem != "__init__")
    assert "registry" in modules
    code = (
        "import importlib, sys\n"
        "import hermes_procs.core\n"
        # the supervisor modules run as scripts and import their siblings by plain name
        f"sys.path.append({str(core_dir)!r})\n"
        f"for name in {modules!r}:\n"
        "    importlib.import_module('hermes_procs.core.' + name)\n"
        "bad = sorted(m for m in sys.modules if m == 'textual' or m.startswith('textual.'))\n"
        "print(','.join(bad))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=30)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "", f"core imported textual: {out.stdout.strip()}"
