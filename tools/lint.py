"""`make lint`: ruff, import-linter (the layer contracts) and mypy, as configured in pyproject.toml.
`python tools/lint.py import-linter` runs only the named tools.

The installed package maps `hermes_procs.core`, `.cli` and `.tui` onto the top-level folders
core/, cli/ and tui/. import-linter (grimp) and mypy find packages by walking folders, so they
run on a copy laid out as the installed package (build/lint/hermes_procs/{core,cli,tui}); the
paths in what they report are mapped back to the real files. Exits non-zero when any fails.

The supervisor runs as a script (`python -I -S core/supervisor/supervisor.py`) and imports its siblings by
plain name (`import wire`). For mypy, build/lint/plain holds one stub per such sibling that
re-exports the package module (`wire.pyi`: `from hermes_procs.core.supervisor.wire import ...`), so both
spellings are checked as the same code.
"""

from __future__ import annotations

import ast
import os
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
TREE = ROOT / "build" / "lint"
PACKAGE = TREE / "hermes_procs"
PLAIN = TREE / "plain"
SUBPACKAGES = ("core", "cli", "tui")


def build_tree() -> None:
    """build/lint/hermes_procs: the top-level package with core/, cli/ and tui/ inside it."""
    shutil.rmtree(TREE, ignore_errors=True)
    shutil.copytree(ROOT / "src" / "hermes_procs", PACKAGE, ignore=shutil.ignore_patterns("__pycache__"), symlinks=True)
    for name in SUBPACKAGES:
        (PACKAGE / name).unlink()
    for name in SUBPACKAGES:
        shutil.copytree(ROOT / name, PACKAGE / name, ignore=shutil.ignore_patterns("__pycache__"))
    write_plain_stubs()


def _top_level_names(body: list[ast.stmt]) -> list[str]:
    """The names a module's own statements define (not the ones it imports), in order."""
    names: list[str] = []
    for node in body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.append(node.name)
        elif isinstance(node, ast.Assign):
            names += [t.id for t in node.targets if isinstance(t, ast.Name)]
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            names.append(node.target.id)
        elif isinstance(node, (ast.If, ast.Try)):
            names += _top_level_names(node.body) + _top_level_names(node.orelse)
    return list(dict.fromkeys(names))


def _plain_imports(tree: ast.Module, siblings: set[str]) -> set[str]:
    """The core modules a file imports by plain name (`import wire`, `from bounds import x`)."""
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names if alias.name in siblings)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module in siblings:
            found.add(node.module)
    return found


def write_plain_stubs() -> None:
    """build/lint/plain/NAME.pyi for every core module imported by plain name (see the top)."""
    PLAIN.mkdir(parents=True)
    trees = {path.stem: ast.parse(path.read_text(), str(path)) for path in (ROOT / "core" / "supervisor").glob("*.py")}
    plain: set[str] = set()
    for tree in trees.values():
        plain |= _plain_imports(tree, set(trees))
    for name in sorted(plain):
        exports = ", ".join(f"{n} as {n}" for n in _top_level_names(trees[name].body))
        stub = f"from hermes_procs.core.supervisor.{name} import {exports}\n" if exports else ""
        (PLAIN / f"{name}.pyi").write_text(stub)


def run(title: str, argv: list[str], env: dict[str, str] | None = None, cwd: Path = ROOT) -> bool:
    """Run one tool; print its report with paths mapped back to the real files."""
    print(f"--- {title}", flush=True)
    proc = subprocess.run(argv, cwd=cwd, env=env, capture_output=True, text=True)
    for prefix in (f"{PACKAGE}/", "build/lint/hermes_procs/"):
        for name in SUBPACKAGES:
            proc.stdout = proc.stdout.replace(f"{prefix}{name}/", f"{name}/")
        proc.stdout = proc.stdout.replace(prefix, "hermes_procs/")
    sys.stdout.write(proc.stdout + proc.stderr)
    return proc.returncode == 0


def main() -> int:
    bin_dir = Path(sys.executable).parent
    build_tree()
    env = dict(os.environ, PYTHONPATH=str(TREE))
    tools = {
        "ruff": lambda: run("ruff", [str(bin_dir / "ruff"), "check", "."]),
        # what `make test` runs until the whole tree is ruff-clean: syntax errors, undefined
        # names, misused comparisons (the checks that find real breakage)
        "ruff-critical": lambda: run("ruff-critical", [str(bin_dir / "ruff"), "check", ".", "--select",
                                                       "E9,F63,F7,F82"]),
        # from the copy's folder: lint-imports puts its working folder first on sys.path
        "import-linter": lambda: run("import-linter", [str(bin_dir / "lint-imports"), "--no-cache",
                                                       str(ROOT / "pyproject.toml")], env, cwd=TREE),
        "mypy": lambda: run("mypy", [sys.executable, "-m", "mypy", "build/lint/hermes_procs"],
                            dict(env, MYPYPATH=str(PLAIN))),
    }
    chosen = sys.argv[1:] or list(tools)
    unknown = [name for name in chosen if name not in tools]
    if unknown:
        print(f"lint: unknown tool {', '.join(unknown)}; choose from {', '.join(tools)}", file=sys.stderr)
        return 2
    results = [tools[name]() for name in chosen]
    return 0 if all(results) else 1


if __name__ == "__main__":
    sys.exit(main())
