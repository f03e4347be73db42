"""The code sent to remote hosts runs on Python 3.9 (the oldest a host may have)."""

from __future__ import annotations

import io
import subprocess
import sys
import zipfile
from pathlib import Path

from hermes_procs.core.remote import shipped_code


def test_shipped_code_needs_at_most_python_3_9(tmp_path):
    _, data = shipped_code()
    zipfile.ZipFile(io.BytesIO(data)).extractall(tmp_path)
    files = sorted(str(p) for p in (tmp_path / "hermes_procs").rglob("*.py"))
    assert any(f.endswith("core/supervisor.py") for f in files)
    assert not any(f.endswith("mcp_server.py") for f in files)
    res = subprocess.run([str(Path(sys.executable).with_name("vermin")), "-t=3.9-", "--no-tips", "--violations",
                          "--eval-annotations=no", *files], capture_output=True, text=True)
    assert res.returncode == 0, res.stdout + res.stderr
