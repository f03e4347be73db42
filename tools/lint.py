"""`make lint`: ruff, import-linter (the layer contracts), mypy and the size rule, as configured
in pyproject.toml. `python tools/lint.py import-linter mypy` runs only the named checks; exits
non-zero when any fails. `python tools/lint.py graph` prints the import graph between the
packages and core's rooms (docs/internals.md).

The package is one real tree under src/ (src/hermes_procs/{core,cli,tui} link to the top-level
folders), so import-linter and mypy read it as installed; nothing is copied. One thing needs
help: the supervisor program runs as a script (`python -I -S core/supervisor/supervisor.py`)
and imports its siblings by plain name (`import wire`). For mypy, build/lint/plain holds one
stub per such sibling that re-exports the package module (`wire.pyi`: `from
hermes_procs.core.supervisor.wire import ...`), so both spellings are checked as the same code.

The size rule: no function over MAX_FUNCTION lines and no class over MAX_CLASS lines in product
code (core/, cli/, tui/, src/), unless the comment right above it (or above its decorators) says
why, in a line starting `# size:`.
"""

from __future__ import annotations

import ast
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PROGRAM = ROOT / "core" / "supervisor"  # the supervisor program's folder: its plain-name imports
PLAIN = ROOT / "build" / "lint" / "plain"
PRODUCT = ("core", "cli", "tui", "src")  # src/hermes_procs/ itself: its links lead to the others
MAX_FUNCTION = 60
MAX_CLASS = 400
SIZE_MARK = "# size:"


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
    """The program's modules a file imports by plain name (`import wire`, `from bounds import x`)."""
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names if alias.name in siblings)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module in siblings:
            found.add(node.module)
    return found


def write_plain_stubs() -> None:
    """build/lint/plain/NAME.pyi for every module of the program imported by plain name (see the top)."""
    shutil.rmtree(PLAIN, ignore_errors=True)
    PLAIN.mkdir(parents=True)
    trees = {path.stem: ast.parse(path.read_text(), str(path)) for path in PROGRAM.glob("*.py")}
    plain: set[str] = set()
    for tree in trees.values():
        plain |= _plain_imports(tree, set(trees))
    for name in sorted(plain):
        exports = ", ".join(f"{n} as {n}" for n in _top_level_names(trees[name].body))
        stub = f"from hermes_procs.core.supervisor.{name} import {exports}\n" if exports else ""
        (PLAIN / f"{name}.pyi").write_text(stub)


def _says_why(lines: list[str], first: int) -> bool:
    """Whether the comment lines right above line `first` (1-based) hold a `# size:` reason."""
    i = first - 2
    while i >= 0 and lines[i].strip().startswith("#"):
        if lines[i].strip().startswith(SIZE_MARK):
            return True
        i -= 1
    return False


def oversized(path: Path) -> Iterator[str]:
    """`path:line: what` for each function or class of `path` over the size rule without a reason."""
    source = path.read_text()
    lines = source.splitlines()
    for node in ast.walk(ast.parse(source, str(path))):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            kind, limit = "function", MAX_FUNCTION
        elif isinstance(node, ast.ClassDef):
            kind, limit = "class", MAX_CLASS
        else:
            continue
        length = (node.end_lineno or node.lineno) - node.lineno + 1
        first = min([node.lineno, *(d.lineno for d in node.decorator_list)])
        if length > limit and not _says_why(lines, first):
            yield (f"{path.relative_to(ROOT)}:{node.lineno}: {kind} {node.name} has {length} lines "
                   f"(over {limit}): split it, or say why above it with `{SIZE_MARK} ...`")


def check_sizes() -> bool:
    print("--- sizes", flush=True)
    files = [path for folder in PRODUCT for path in sorted((ROOT / folder).rglob("*.py"))
             if not path.is_relative_to(ROOT / "src") or path.parent == ROOT / "src" / "hermes_procs"]
    found = [line for path in files for line in oversized(path)]
    print("\n".join(found) if found else "All functions and classes within the size rule.")
    return not found


def graph() -> bool:
    """Print the import graph between the packages and core's rooms (docs/internals.md shows it):
    `A -> B  N` for N imports from modules of A of modules of B. Not a check: run by name only."""
    import grimp

    def place(module: str) -> str:
        parts = module.split(".")
        if parts[:2] == ["hermes_procs", "core"] and len(parts) > 2 and (ROOT / "core" / parts[2]).is_dir():
            return f"core/{parts[2]}"
        return parts[1] if len(parts) > 1 and parts[1] in ("cli", "tui", "core") else "hermes_procs"

    graph = grimp.build_graph("hermes_procs", cache_dir=None)
    edges: dict[tuple[str, str], int] = {}
    for module in graph.modules:
        for imported in graph.find_modules_directly_imported_by(module):
            edge = (place(module), place(imported))
            if edge[0] != edge[1]:
                edges[edge] = edges.get(edge, 0) + 1
    for (importer, imported), count in sorted(edges.items()):
        print(f"{importer:16} -> {imported:16} {count:3}")
    return True


def run(title: str, argv: list[str], env: dict[str, str] | None = None) -> bool:
    """Run one tool from the checkout's root; print its report (paths as in the checkout)."""
    print(f"--- {title}", flush=True)
    proc = subprocess.run(argv, cwd=ROOT, env=env, capture_output=True, text=True)
    sys.stdout.write(proc.stdout.replace("src/hermes_procs/core/", "core/").replace("src/hermes_procs/cli/", "cli/")
                     .replace("src/hermes_procs/tui/", "tui/") + proc.stderr)
    return proc.returncode == 0


def main() -> int:
    bin_dir = Path(sys.executable).parent

    def mypy() -> bool:
        write_plain_stubs()
        return run("mypy", [sys.executable, "-m", "mypy"], dict(os.environ, MYPYPATH=str(PLAIN)))

    tools = {
        "ruff": lambda: run("ruff", [str(bin_dir / "ruff"), "check", "."]),
        "import-linter": lambda: run("import-linter", [str(bin_dir / "lint-imports"), "--no-cache"]),
        "mypy": mypy,
        "sizes": check_sizes,
    }
    chosen = sys.argv[1:] or list(tools)
    tools["graph"] = graph  # by name only: it prints, it checks nothing
    unknown = [name for name in chosen if name not in tools]
    if unknown:
        print(f"lint: unknown check {', '.join(unknown)}; choose from {', '.join(tools)}", file=sys.stderr)
        return 2
    results = [tools[name]() for name in chosen]
    return 0 if all(results) else 1


if __name__ == "__main__":
    sys.exit(main())
