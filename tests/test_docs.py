"""The documentation names only things that exist: every test file, module, example and
screenshot a doc cites is in the checkout (docs/terminal.md cited a deleted test file)."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
# docs/hermes.md also cites the hermes-agent package's own files (tools/process_registry.py, ...)
DOCS = [ROOT / "README.md", *sorted(p for p in (ROOT / "docs").glob("*.md") if p.name != "hermes.md")]
CITED = re.compile(r"\b((?:tests|tui|cli|core|examples|bench|tools|screenshots|docs)/[\w/.-]+\.(?:py|md|svg|png|sh))\b")


def test_every_cited_file_exists():
    missing = [(doc.name, path) for doc in DOCS for path in CITED.findall(doc.read_text())
               if not (ROOT / path).exists() and not (doc.parent / path).exists()]
    assert not missing, missing
