"""Reading the YAML formats (process-compose, mprocs): safe loading, one-line errors with the
line and column, and the warning every unsupported key gets.

Booleans are YAML 1.2's, as the Go and Rust readers of process-compose and mprocs have them:
only true and false. PyYAML's YAML 1.1 would read a job named `off`, `no` or `yes` as a
boolean (and `on: ...` too)."""

from __future__ import annotations

import re
from typing import Any

from .model import StackError, closest
from .schema import table


def load_yaml(data: bytes, label: str) -> dict[str, Any]:
    """The document as a table; StackError for bad YAML or another kind of document."""
    try:
        import yaml
    except ImportError:  # pragma: no cover - a dependency of the package
        raise StackError(f"{label}: reading YAML needs PyYAML (pip install pyyaml)") from None
    try:
        doc = yaml.load(data.decode("utf-8"), Loader=_loader(yaml))  # noqa: S506 - a SafeLoader
    except UnicodeDecodeError as exc:
        raise StackError(f"{label}: not UTF-8 text (byte {exc.start})") from None
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" (line {mark.line + 1}, column {mark.column + 1})" if mark is not None else ""
        problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
        raise StackError(f"{label}: invalid YAML: {problem}{where}") from None
    return table(doc, label)


def _loader(yaml: Any) -> Any:
    """A SafeLoader whose booleans are YAML 1.2's (true, false in any case), made once."""
    global _LOADER
    if _LOADER is None:
        class Loader(yaml.SafeLoader):  # type: ignore[misc]
            pass

        Loader.yaml_implicit_resolvers = {
            first: [(tag, regexp) for tag, regexp in resolvers if tag != "tag:yaml.org,2002:bool"]
            for first, resolvers in yaml.SafeLoader.yaml_implicit_resolvers.items()}
        Loader.add_implicit_resolver("tag:yaml.org,2002:bool", re.compile(r"^(?:true|True|TRUE|false|False|FALSE)$"),
                                     list("tTfF"))
        _LOADER = Loader
    return _LOADER


_LOADER: Any = None


def ignored(data: dict[str, Any], supported: tuple[str, ...], prefix: str, warnings: list[str],
            notes: dict[str, str] | None = None) -> None:
    """One warning line per key hermes-procs does not map (never dropped silently), with the
    supported key it may be a typo of, or the key's note in `notes` (a key that is no typo);
    `prefix` is where the keys are (`process-compose.yaml: processes.api.`)."""
    for key in data:
        if key not in supported:
            hint = (notes or {}).get(str(key)) or closest(str(key), supported)
            warnings.append(f"{prefix}{key}: not supported, ignored{hint}")
