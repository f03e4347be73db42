"""Reading the YAML formats (process-compose, mprocs): safe loading, one-line errors with the
line and column, and the warning every unsupported key gets.

Scalars are YAML 1.2's (its core schema), as the Go and Rust readers of process-compose and
mprocs have them: only true and false are booleans (PyYAML's YAML 1.1 would read a job named
`off`, `no` or `yes` as one, and `on: ...` too), `12:30` and `2024-01-02` are strings (1.1 read
a number of minutes and a date), and a number keeps the text it was written as (`18.10`), which
is what a variable set to it gets (schema.env_table). A key given twice in a mapping is an
error, as there."""

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


class WrittenInt(int):
    """An integer of a YAML file with the text it was written as (`0x1F`, `+5`)."""

    text = ""


class WrittenFloat(float):
    """A float of a YAML file with the text it was written as (`18.10`, `1e3`)."""

    text = ""


# YAML 1.2 core schema (https://yaml.org/spec/1.2.2/#1032-tag-resolution)
_RESOLVED = ("tag:yaml.org,2002:bool", "tag:yaml.org,2002:int", "tag:yaml.org,2002:float",
             "tag:yaml.org,2002:timestamp")
_BOOL_RE = re.compile(r"^(?:true|True|TRUE|false|False|FALSE)$")
_INT_RE = re.compile(r"^(?:[-+]?[0-9]+|0o[0-7]+|0x[0-9a-fA-F]+)$")
_FLOAT_RE = re.compile(r"^(?:[-+]?(?:\.[0-9]+|[0-9]+(?:\.[0-9]*)?)(?:[eE][-+]?[0-9]+)?|[-+]?\.(?:inf|Inf|INF)|"
                       r"\.(?:nan|NaN|NAN))$")


def _int(loader: Any, node: Any) -> WrittenInt:
    text = loader.construct_scalar(node)
    base = {"0o": 8, "0x": 16}.get(text[:2], 10)
    value = WrittenInt(int(text[2:] if base != 10 else text, base))
    value.text = text
    return value


def _float(loader: Any, node: Any) -> WrittenFloat:
    text = loader.construct_scalar(node)
    special = text.lstrip("+-").lower() in (".inf", ".nan")
    value = WrittenFloat(float(text.replace(".", "", 1) if special else text))  # float() reads "-inf", "NaN"
    value.text = text
    return value


def _loader(yaml: Any) -> Any:
    """A SafeLoader with YAML 1.2's booleans, integers and floats (no 1.1 timestamps, no
    sexagesimal numbers), numbers keeping their text; made once."""
    global _LOADER
    if _LOADER is None:
        class Loader(yaml.SafeLoader):  # type: ignore[misc]
            def construct_document(self, node: Any) -> Any:
                _refuse_duplicates(yaml, node)  # before `<<` merges flatten any mapping
                return super().construct_document(node)

        Loader.yaml_implicit_resolvers = {
            first: [(tag, regexp) for tag, regexp in resolvers if tag not in _RESOLVED]
            for first, resolvers in yaml.SafeLoader.yaml_implicit_resolvers.items()}
        Loader.add_implicit_resolver("tag:yaml.org,2002:bool", _BOOL_RE, list("tTfF"))
        Loader.add_implicit_resolver("tag:yaml.org,2002:int", _INT_RE, list("-+0123456789"))
        Loader.add_implicit_resolver("tag:yaml.org,2002:float", _FLOAT_RE, list("-+.0123456789"))
        Loader.add_constructor("tag:yaml.org,2002:int", _int)
        Loader.add_constructor("tag:yaml.org,2002:float", _float)
        _LOADER = Loader
    return _LOADER


_LOADER: Any = None


def _refuse_duplicates(yaml: Any, root: Any) -> None:
    """A key written twice in one mapping of the document is an error (the Go and Rust readers
    refuse it; PyYAML kept the last one silently); a key a `<<` merge brings may be overridden.
    Checked on the composed nodes, each once (an alias is the same node), before any merge."""
    seen_nodes: set[int] = set()
    todo = [root]
    while todo:
        node = todo.pop()
        if id(node) in seen_nodes or not isinstance(node, (yaml.MappingNode, yaml.SequenceNode)):
            continue
        seen_nodes.add(id(node))
        if isinstance(node, yaml.SequenceNode):
            todo.extend(node.value)
            continue
        keys: set[str] = set()
        for key, value in node.value:
            todo.extend((key, value))
            if isinstance(key, yaml.ScalarNode) and key.tag != "tag:yaml.org,2002:merge":
                if key.value in keys:
                    raise yaml.constructor.ConstructorError(
                        None, None, f"the key {key.value[:80]!r} is given twice", key.start_mark)
                keys.add(key.value)


def ignored(data: dict[str, Any], supported: tuple[str, ...], prefix: str, warnings: list[str],
            notes: dict[str, str] | None = None) -> None:
    """One warning line per key hermes-procs does not map (never dropped silently), with the
    supported key it may be a typo of, or the key's note in `notes` (a key that is no typo);
    `prefix` is where the keys are (`process-compose.yaml: processes.api.`)."""
    for key in data:
        if key not in supported:
            hint = (notes or {}).get(str(key)) or closest(str(key), supported)
            warnings.append(f"{prefix}{key}: not supported, ignored{hint}")
