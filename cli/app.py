"""The typer app every command module adds its commands to, and its root options.

Start-up cost matters (`hermes-procs ls` is run in loops by scripts): the CLI imports only
typer, the standard library and the registry core at import time; rich, the dashboard, the MCP
server and the text helpers are imported inside the commands that need them.
"""

from __future__ import annotations

import os
from typing import Annotated

import typer

from . import fastcoerce
from .options import HomeOpt, HostOpt, JsonOpt
from .output import PROG

fastcoerce.install()


def _help_shows_metavars_only() -> None:
    """Typer (0.29) prints ``<bool>`` after every flag and ``<list[str]>`` after an argument
    that has a metavar, and wraps the usage line's arguments (``{ID} [[DATA]]``); the help
    shows the metavars we give (``--name N``, ``ID [DATA]``) and nothing else.
    If typer's internals change, this does nothing (the placeholders come back)."""
    from typer import core

    def option_type(self, ctx):  # noqa: ANN001, ANN202, ARG001 - typer's signature
        return self.metavar

    def argument_type(self, ctx):  # noqa: ANN001, ANN202, ARG001 - the metavar is the name column
        return None

    for cls, show in ((getattr(core, "TyperOption", None), option_type),
                      (getattr(core, "TyperArgument", None), argument_type)):
        if cls is not None and hasattr(cls, "display_type_rich"):
            cls.display_type_rich = show
    argument = getattr(core, "TyperArgument", None)
    usage_name = getattr(argument, "_usage_display_name", None)
    if argument is not None and usage_name is not None:  # `ID [DATA]`, `ID...` as given, not `{ID} [[DATA]]`
        def shown(self):  # noqa: ANN001, ANN202 - typer's signature
            name = self.metavar
            if not name:
                return usage_name(self)
            return name if self.required or name.startswith("[") else f"[{name}]"

        argument._usage_display_name = shown


_help_shows_metavars_only()

app = typer.Typer(
    name=PROG,
    add_completion=False,
    pretty_exceptions_enable=False,
    invoke_without_command=True,
    no_args_is_help=False,
    context_settings={"help_option_names": ["-h", "--help"]},
    help="Durable background jobs shared by AI agents and humans.\n\nWithout a subcommand: the dashboard.",
)


def prose(doc: str) -> str:
    """A docstring for the help screen: each paragraph one line, which rich wraps to the
    terminal (typer keeps the source's line breaks after the first paragraph: `use `--`` then a
    line break mid-sentence)."""
    return "\n\n".join(" ".join(paragraph.split("\n")) for paragraph in doc.split("\n\n"))


def _version(value: bool) -> None:
    if value:
        from hermes_procs.core.registry.version import version

        typer.echo(f"{PROG} {version()}")
        raise typer.Exit()


VersionOpt = Annotated[
    bool, typer.Option("--version", is_eager=True, callback=_version, help="Print the version and exit.")
]


@app.callback()
def _root(ctx: typer.Context, home: HomeOpt = None, as_json: JsonOpt = False, host: HostOpt = None,
          version: VersionOpt = False) -> None:
    if host is not None:  # every command's registry reads it: ProcessRegistry(host=None)
        os.environ["HERMES_PROCS_HOST"] = host
    ctx.obj = {"home": home, "json": as_json}
    if ctx.invoked_subcommand is None:  # the dashboard: the `tui` command (cli/cmd_dashboard.py adds it)
        for command in app.registered_commands:
            if command.name == "tui" and command.callback is not None:
                command.callback(ctx, home)
