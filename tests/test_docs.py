"""The documentation names only things that exist: every test file, module, example and
screenshot a doc cites is in the checkout (docs/terminal.md cited a deleted test file)."""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
# docs/hermes.md also cites the hermes-agent package's own files (tools/process_registry.py, ...)
DOCS = [ROOT / "README.md", *sorted(p for p in (ROOT / "docs").glob("*.md") if p.name != "hermes.md")]
CITED = re.compile(r"\b((?:tests|tui|cli|core|examples|bench|tools|screenshots|docs)/[\w/.-]+\.(?:py|md|svg|png|sh))\b")


def test_every_cited_file_exists():
    missing = [(doc.name, path) for doc in DOCS for path in CITED.findall(doc.read_text())
               if not (ROOT / path).exists() and not (doc.parent / path).exists()]
    assert not missing, missing


def test_the_readmes_first_session_is_what_the_command_prints(tmp_path):
    """The README's first `$ hermes-procs ...` block, run: each command's output as shown
    (its job id and prefix stand for the real ones; `...` stands for the rest of a line)."""
    readme = (ROOT / "README.md").read_text()
    block = readme.split("\n$ hermes-procs run", 1)[1].split("```", 1)[0]
    steps: list[tuple[str, list[str]]] = []
    for line in ("$ hermes-procs run" + block).strip().splitlines():
        if line.startswith("$ "):
            steps.append((line[2:].split("  #")[0].strip(), []))
        else:
            steps[-1][1].append(line)
    env = dict(os.environ, HERMES_PROCS_HOME=str(tmp_path / "home"))
    try:
        _run_session(steps, env)
    finally:  # the REPL, when a step failed before the README's kill
        from hermes_procs.core import ProcessRegistry

        registry = ProcessRegistry(home=tmp_path / "home")
        for job in registry.list():
            if job["status"] == "running":
                registry.kill(job["session_id"], grace=0.2)


def _run_session(steps: list[tuple[str, list[str]]], env: dict[str, str]) -> None:
    shown_id = steps[0][1][0]
    real_id = ""
    for command, expected in steps:
        argv = [sys.executable, "-m", "hermes_procs", *shlex.split(command)[1:]]
        if real_id:
            argv = [real_id[5:9] if a == shown_id[5:9] else a for a in argv]
        deadline = time.monotonic() + 20
        while True:  # the REPL answers in its own time
            out = subprocess.run(argv, capture_output=True, text=True, timeout=30, env=env).stdout
            real_id = real_id or out.strip()
            got = out.replace(real_id, shown_id).rstrip("\n").splitlines()
            if _same(got, expected) or time.monotonic() > deadline:
                break
            time.sleep(0.2)
        assert _same(got, expected), (command, got, expected)
        if command.startswith("hermes-procs run"):  # as a person would: type once it prompts
            subprocess.run([sys.executable, "-m", "hermes_procs", "wait", real_id, "--until", "input",
                            "--timeout", "20"], capture_output=True, timeout=30, env=env, check=True)


def _same(got: list[str], expected: list[str]) -> bool:
    """Line by line, trailing blanks ignored; an expected line ending in `...}` matches any
    line that starts with what comes before the `...`."""
    if len(got) != len(expected):
        return False
    for g, e in zip(got, expected, strict=True):
        g, e = g.rstrip(), e.rstrip()
        if not (g == e or (e.endswith("...}") and g.startswith(e[:-4]))):
            return False
    return True
