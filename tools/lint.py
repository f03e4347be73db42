"""`make lint`: ruff, import-linter (the layer contracts) and mypy, as configured in pyproject.toml.
`python tools/lint.py import-linter` runs only the named tools.

The installed package maps `hermes_procs.core`, `.cli` and `.tui` onto the top-level folders
core/, cli/ and tui/. import-linter (grimp) and mypy find packages by walking folders, so they
run on a copy laid out as the installed package (build/lint/hermes_procs/{core,cli,tui}); the
paths in what they report are mapped back to the real files. Exits non-zero when any fails.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
TREE = ROOT / "build" / "lint"
PACKAGE = TREE / "hermes_procs"
SUBPACKAGES = ("core", "cli", "tui")


def build_tree() -> None:
    """build/lint/hermes_procs: the top-level package with core/, cli/ and tui/ inside it."""
    shutil.rmtree(TREE, ignore_errors=True)
    shutil.copytree(ROOT / "hermes_procs", PACKAGE, ignore=shutil.ignore_patterns("__pycache__"))
    for name in SUBPACKAGES:
        shutil.copytree(ROOT / name, PACKAGE / name, ignore=shutil.ignore_patterns("__pycache__"))


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
        "mypy": lambda: run("mypy", [sys.executable, "-m", "mypy", "build/lint/hermes_procs"], env),
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
