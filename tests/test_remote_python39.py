"""The code sent to remote hosts runs on Python 3.9 (the oldest a host may have)."""

from __future__ import annotations

import ast
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
    assert (tmp_path / "ptyprocess" / "ptyprocess.py").exists()  # PTY jobs start with it
    files += sorted(str(p) for p in (tmp_path / "ptyprocess").glob("*.py"))
    res = subprocess.run([str(Path(sys.executable).with_name("vermin")), "-t=3.9-", "--no-tips", "--violations",
                          "--eval-annotations=no", *files], capture_output=True, text=True)
    assert res.returncode == 0, res.stdout + res.stderr


def _runtime_annotations(tree: ast.Module):
    """The annotations Python evaluates when it runs the module (all of them, unless the module
    has `from __future__ import annotations`)."""
    for node in tree.body:
        if isinstance(node, ast.ImportFrom) and node.module == "__future__" \
                and any(alias.name == "annotations" for alias in node.names):
            return
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            args = node.args
            for arg in [*args.posonlyargs, *args.args, *args.kwonlyargs, args.vararg, args.kwarg]:
                if arg is not None and arg.annotation is not None:
                    yield arg.annotation
            if node.returns is not None:
                yield node.returns
        elif isinstance(node, ast.AnnAssign):
            yield node.annotation


def _newer_than_3_9(annotation: ast.expr) -> bool:
    """`X | Y` in an annotation: Python 3.10 syntax at run time."""
    return any(isinstance(node, ast.BinOp) and isinstance(node.op, ast.BitOr) for node in ast.walk(annotation))


def test_shipped_annotations_evaluate_on_python_3_9(tmp_path):
    """vermin does not see `int | None` in an annotation Python evaluates at import (a module
    without `from __future__ import annotations`): on 3.9 that import raises TypeError."""
    _, data = shipped_code()
    zipfile.ZipFile(io.BytesIO(data)).extractall(tmp_path)
    bad = []
    for path in sorted((tmp_path / "hermes_procs").rglob("*.py")):
        tree = ast.parse(path.read_text(), str(path))
        bad += [f"{path.relative_to(tmp_path)}:{a.lineno}: {ast.unparse(a)}"
                for a in _runtime_annotations(tree) if _newer_than_3_9(a)]
    assert not bad, "needs Python 3.10 at import time:\n" + "\n".join(bad)
