"""The code sent to remote hosts runs on Python 3.9 (the oldest a host may have)."""

from __future__ import annotations

import ast
import glob
import io
import os
import pwd
import shutil
import stat
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from hermes_procs.core.remote.client import shipped_code


def test_shipped_code_needs_at_most_python_3_9(tmp_path):
    _, data = shipped_code()
    zipfile.ZipFile(io.BytesIO(data)).extractall(tmp_path)
    files = sorted(str(p) for p in (tmp_path / "hermes_procs").rglob("*.py"))
    assert any(f.endswith("core/supervisor/supervisor.py") for f in files)
    assert not any(f.endswith("mcp_server.py") or "/agents/" in f for f in files)
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


def _python39() -> str | None:
    """A working Python 3.9 on this machine (PATH or pyenv), else None."""
    user_home = pwd.getpwuid(os.getuid()).pw_dir  # not $HOME: the tests give jobs their own
    pyenv = sorted(glob.glob(os.path.join(user_home, ".pyenv/versions/3.9*/bin/python3.9")))
    candidates = [*pyenv, shutil.which("python3.9")]  # pyenv's own before its shim (which may stall)
    for exe in filter(None, candidates):
        try:
            res = subprocess.run([exe, "-c", "import sys; print(sys.version_info[:2])"], capture_output=True,
                                 text=True, timeout=20)
        except subprocess.TimeoutExpired:
            continue
        if res.returncode == 0 and res.stdout.strip() == "(3, 9)":
            return exe
    return None


def test_shipped_code_imports_on_python_3_9(tmp_path):
    """Every shipped module imports on a real Python 3.9 (when one is installed): what neither
    vermin nor the annotation check sees, e.g. a possessive regex quantifier (3.11)."""
    exe = _python39()
    if exe is None:
        pytest.skip("no Python 3.9 on this machine")
    _, data = shipped_code()
    zipfile.ZipFile(io.BytesIO(data)).extractall(tmp_path)
    core = tmp_path / "hermes_procs" / "core"
    names = sorted(".".join(p.relative_to(core).with_suffix("").parts) for p in core.rglob("*.py")
                   if p.stem != "__init__")
    # the package's modules, and the supervisor's folder on the path as for the supervisor (`import wire`)
    script = ("import importlib, sys\nsys.path[:0] = [sys.argv[1], sys.argv[1] + '/hermes_procs/core/supervisor']\n"
              "for name in sys.argv[2:]:\n    importlib.import_module('hermes_procs.core.' + name)\n")
    res = subprocess.run([exe, "-I", "-c", script, str(tmp_path), *names], capture_output=True, text=True)
    assert res.returncode == 0, res.stderr[-2000:]


def test_the_bootstrap_runs_isolated_on_python_3_9(tmp_path):
    """BOOT itself, as a host runs it (`python3 -I -c BOOT DIGEST HOME`), on a real Python 3.9:
    the code is asked for and stored, the stdio server answers; the next start finds it cached."""
    exe = _python39()
    if exe is None:
        pytest.skip("no Python 3.9 on this machine")
    import json

    from hermes_procs.core.remote.client import BOOT

    digest, data = shipped_code()
    env = {"PATH": os.environ["PATH"], "HOME": str(tmp_path), "XDG_CACHE_HOME": str(tmp_path / "cache")}

    def boot() -> dict:
        proc = subprocess.Popen([exe, "-I", "-c", BOOT, digest, str(tmp_path / "home")], stdin=subprocess.PIPE,
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env, cwd=tmp_path)
        first = json.loads(proc.stdout.readline())
        if first.get("need_code") == digest:
            proc.stdin.write(b"%d\n" % len(data) + data)
            proc.stdin.flush()
            first = json.loads(proc.stdout.readline())
        proc.stdin.write(b'{"id": 1, "call": "list", "args": [], "kwargs": {}}\n')
        proc.stdin.flush()
        reply = json.loads(proc.stdout.readline())
        proc.stdin.close()
        proc.wait(30)
        assert reply.get("result") == [], reply
        return first

    first = boot()
    assert first["hello"] == "hermes-procs" and first["code"] == "sent" and first["python"].startswith("3.9"), first
    assert boot()["code"] == "cached"
    code = tmp_path / "cache" / "hermes-procs" / "code" / digest
    assert stat.S_IMODE(code.stat().st_mode) == 0o700
