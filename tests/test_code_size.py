"""The size rule of `make lint` (tools/lint.py sizes): a function over 60 lines or a class over
400 lines in product code needs a `# size:` comment saying why; the product code keeps it."""

from __future__ import annotations

import importlib.util
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
spec = importlib.util.spec_from_file_location("lint", ROOT / "tools" / "lint.py")
lint = importlib.util.module_from_spec(spec)
spec.loader.exec_module(lint)


def test_a_long_function_is_reported_unless_a_comment_says_why(tmp_path, monkeypatch):
    monkeypatch.setattr(lint, "ROOT", tmp_path)
    body = "".join(f"    x{i} = {i}\n" for i in range(60))
    path = tmp_path / "mod.py"
    path.write_text(f"def short():\n    return 1\n\n\ndef long():\n{body}")
    assert [line.split(": ", 1)[1] for line in lint.oversized(path)] == [
        "function long has 61 lines (over 60): split it, or say why above it with `# size: ...`"]
    path.write_text(f"# size: a table that reads best in one piece\n# (and a second line)\n@staticmethod\n"
                    f"def long():\n{body}")
    assert list(lint.oversized(path)) == []


def test_the_product_code_keeps_the_rule():
    assert lint.check_sizes()
