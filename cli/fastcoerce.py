"""Start-up speed: plain coercion of typer parameters, so no command imports pydantic.

`install()` is called once when the CLI app is built (cli/app.py).
"""

from __future__ import annotations


def install() -> None:
    """Start-up speed: typer >= 0.26 coerces every non-flag parameter with a pydantic
    TypeAdapter, and importing pydantic alone costs ~65 ms (half of `hermes-procs ls`).
    Our parameters are plain str / int / float / bool / list[str] (no enums,
    files or ranges), so coerce those here; anything else still goes through typer.
    If typer's internals change, this silently does nothing (the CLI is only slower).

    Why a patch of typer's internals is worth it: measured on the development machine,
    10 x `hermes-procs ls` take 2.4 s with it and 4.6 s without (pydantic is imported for
    every command), and scripts and agents run `ls`/`poll` in loops."""
    try:
        from typer import core as _tcore
        from typer._click.exceptions import BadParameter
        from typer._coercion import RuntimeParam
    except ImportError:  # pragma: no cover - other typer versions
        return
    original = getattr(_tcore._TyperParameter, "get_runtime_param", None)
    if original is None or getattr(original, "_hermes_fast", False):
        return

    class _Plain(RuntimeParam):
        def _coerce_value(self, value, param, ctx):  # noqa: ANN001
            kind = self.annotation
            item = kind.__args__[0] if getattr(kind, "__origin__", None) is list else kind
            values = value if isinstance(value, (list, tuple)) else None
            if item is bool:
                return value if isinstance(value, bool) else str(value).lower() in ("1", "true", "yes", "on", "y", "t")
            try:
                if values is not None:
                    return [item(v) for v in values]
                return item(value)
            except (TypeError, ValueError):
                word = {int: "integer", float: "number"}.get(item, item.__name__)
                raise BadParameter(f"{value!r} is not a valid {word}.", ctx=ctx, param=param) from None

    plain = (str, int, float, bool)

    def get_runtime_param(self):  # noqa: ANN001, ANN202
        if getattr(self, "_runtime_param", None) is None:
            desc = getattr(self, "type_descriptor", None)
            ann = getattr(desc, "annotation", None)
            info = getattr(desc, "parameter_info", None)
            simple = ann in plain or (
                getattr(ann, "__origin__", None) is list and getattr(ann, "__args__", (None,))[0] in plain
            )
            if (
                simple
                and getattr(desc, "file_annotation", None) is None
                and info is not None
                and getattr(info, "parser", None) is None
                and getattr(info, "min", None) is None
                and getattr(info, "max", None) is None
            ):
                self._runtime_param = _Plain(parameter_info=info, annotation=ann)
        return original(self)

    get_runtime_param._hermes_fast = True  # type: ignore[attr-defined]
    _tcore._TyperParameter.get_runtime_param = get_runtime_param  # type: ignore[method-assign]
