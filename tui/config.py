"""The dashboard's user settings: ``$XDG_CONFIG_HOME/hermes-procs/config.toml`` (default
``~/.config/hermes-procs/config.toml``), read once at start with :mod:`tomllib`.

::

    theme = "nord"                 # a Textual theme (Ctrl-P "theme" lists them)
    default_highlights = true      # keep the built-in rules below yours

    [notify]                       # when a job waits for input or ends non-zero (tui/notify.py)
    on = ["input", "failure"]      # which events ring / notify ([] = only the toasts)
    bell = true                    # the terminal bell
    desktop = "osc9"               # "osc9" | "osc777" | "off": a desktop notification

    [[highlight]]                  # a regex (Python syntax, run by RE2) and a Rich style
    pattern = "\\bdeploy(ed)?\\b"
    style = "bold magenta"

    [keys]                         # action = key(s), comma-separated (Textual key names)
    kill = "X"
    new_job = "ctrl+n"

A theme picked in the app (the command palette) is remembered in ``state.json`` beside the
config file (0600) and wins over ``theme``; delete the file to go back to ``theme``.  A bad
file or entry never stops the dashboard: it is skipped and :attr:`Config.problems` says why
(the app shows them as a toast).
"""

from __future__ import annotations

import difflib
import json
import re
import tomllib
from dataclasses import dataclass, field
from pathlib import Path

from rich.errors import StyleSyntaxError
from rich.style import Style

from hermes_procs.core.registry.userregex import PatternError, UserRegex, compile_user
from hermes_procs.core.remote.config import config_path

from .files import Files
from .notify import DESKTOP_MODES, KINDS, NotifySettings

__all__ = ["DEFAULT_HIGHLIGHTS", "Config", "HighlightRule", "config_dir", "load_config", "remember_theme"]


@dataclass(frozen=True)
class HighlightRule:
    """A regex and its style. The built-in rules are `re` patterns of ours; a user's rule runs
    in RE2 (core/registry/userregex.py): rules run on every line drawn, in the screen's thread, so a
    user's pattern that only Python's backtracking `re` could run is refused."""

    pattern: re.Pattern[str] | UserRegex
    style: Style

    def spans(self, text: str) -> list[tuple[int, int]]:
        """(start, end) of each non-empty match in one line."""
        if isinstance(self.pattern, re.Pattern):
            return [m.span() for m in self.pattern.finditer(text) if m.end() > m.start()]
        return self.pattern.spans(text)


def _rule(pattern: str, style: str) -> HighlightRule:
    return HighlightRule(re.compile(pattern), Style.parse(style))


def _user_rule(pattern: str, style: str) -> HighlightRule:
    regex = compile_user(pattern, what="pattern")
    if regex.engine != "re2":
        raise PatternError(f"pattern {pattern!r} cannot run in RE2: {regex.why_not_re2}; highlights take RE2 "
                           "patterns only (a match there takes time linear in the line)")
    return HighlightRule(regex, Style.parse(style))


DEFAULT_HIGHLIGHTS = (
    _rule(r"(?i)\b(error|errors|fatal|failed|failure|exception|traceback|panic)\b", "bold red"),
    _rule(r"(?i)\b(warn|warning|warnings|deprecated)\b", "yellow"),
    _rule(r"\bhttps?://[^\s\"'<>)\]]+", "underline cyan"),
)


@dataclass
class Config:
    highlights: tuple[HighlightRule, ...] = DEFAULT_HIGHLIGHTS
    keys: dict[str, str] = field(default_factory=dict)  # binding id (= action name) -> keys
    theme: str | None = None
    notify: NotifySettings = field(default_factory=NotifySettings)
    path: Path | None = None
    problems: list[str] = field(default_factory=list)


def config_dir() -> Path:
    """The folder of the config file (core.config.config_path: one rule for every reader)."""
    return config_path().parent


def load_config(path: Path | None = None) -> Config:
    """The settings in ``path`` (default: the XDG location); defaults where it says nothing."""
    path = path or config_path()
    cfg = Config(path=path)
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        data = {}
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
        cfg.problems.append(f"{path}: {exc}")
        data = {}
    data = _known_settings(data, path, cfg.problems)
    rules = list(DEFAULT_HIGHLIGHTS) if data.get("default_highlights", True) is not False else []
    for i, entry in enumerate(data.get("highlight", [])):
        try:
            rules.append(_user_rule(str(entry["pattern"]), str(entry.get("style", "bold"))))
        except (KeyError, TypeError, PatternError, StyleSyntaxError) as exc:
            cfg.problems.append(f"{path}: highlight #{i + 1} skipped: {exc}")
    cfg.highlights = tuple(rules)
    cfg.keys = _keys(data, path, cfg.problems)
    if isinstance(data.get("theme"), str):
        cfg.theme = data["theme"]
    cfg.notify = _notify(data, path, cfg.problems)
    remembered = _state(path).get("theme")
    if isinstance(remembered, str):
        cfg.theme = remembered
    return cfg


# every setting of the file, with the type it must have ([hosts] is read by core/remote/config.py)
_SETTINGS = {"theme": (str, "a theme name"), "default_highlights": (bool, "true or false"),
             "highlight": (list, "a list of [[highlight]] tables"), "keys": (dict, "a table"),
             "notify": (dict, "a table"), "hosts": (dict, "a table"),
             "notify_bell": (bool, "true or false")}  # the older spelling of [notify] bell


def _known_settings(data: dict, path: Path, problems: list[str]) -> dict:
    """The settings of ``data`` whose name and type are right; each other one is reported
    (a misspelled name with the closest known one) and left out."""
    kept = {}
    for name, value in data.items():
        if name not in _SETTINGS:
            close = difflib.get_close_matches(name, list(_SETTINGS), n=1, cutoff=0.5)
            hint = f" (did you mean {close[0]}?)" if close else ""
            problems.append(f"{path}: {name}: no such setting{hint}; skipped")
        elif not isinstance(value, _SETTINGS[name][0]):
            problems.append(f"{path}: {name} must be {_SETTINGS[name][1]}; skipped")
        else:
            kept[name] = value
    return kept


def _keys(data: dict, path: Path, problems: list[str]) -> dict[str, str]:
    """The ``[keys]`` table: action id -> key(s); an action the dashboard does not have (a typo)
    or a value that is not a key is skipped with a warning naming the closest action."""
    from .help import help_entries  # the bindings' ids: the names the README's keys table lists

    table = data.get("keys", {})
    if not isinstance(table, dict):
        problems.append(f"{path}: [keys] must be a table")
        return {}
    known = sorted({i for entry in help_entries() for i in entry.ids})
    keys: dict[str, str] = {}
    for action, value in table.items():
        if action not in known:
            close = difflib.get_close_matches(action, known, n=1, cutoff=0.5)
            hint = f" (did you mean {close[0]}?)" if close else " (the actions: the ids in the help, ?)"
            problems.append(f"{path}: [keys] {action}: no such action{hint}; skipped")
        elif not isinstance(value, str) or not value.strip():
            problems.append(f"{path}: [keys] {action}: the key(s) must be a string like \"K\" or \"ctrl+k,K\"; "
                            "skipped")
        else:
            keys[action] = value
    return keys


def _notify(data: dict, path: Path, problems: list[str]) -> NotifySettings:
    """The ``[notify]`` table (``notify_bell = false`` at the top, an older spelling, still
    turns the bell off); a bad entry keeps its default."""
    default = NotifySettings()
    table = data.get("notify", {})
    if not isinstance(table, dict):
        problems.append(f"{path}: [notify] must be a table")
        table = {}
    on = table.get("on", sorted(default.on))
    if not (isinstance(on, list) and all(k in KINDS for k in on)):
        problems.append(f"{path}: notify.on must be a list of {', '.join(map(repr, KINDS))}")
        on = sorted(default.on)
    bell = table.get("bell", data.get("notify_bell", default.bell))
    if not isinstance(bell, bool):
        problems.append(f"{path}: notify.bell must be true or false")
        bell = default.bell
    desktop = table.get("desktop", default.desktop)
    if desktop is False:
        desktop = "off"
    if desktop not in DESKTOP_MODES:
        problems.append(f"{path}: notify.desktop must be one of {', '.join(map(repr, DESKTOP_MODES))}")
        desktop = default.desktop
    return NotifySettings(on=frozenset(on), bell=bell, desktop=desktop)


def _state(config_path: Path) -> dict:
    try:
        data = json.loads((config_path.parent / "state.json").read_text())
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def remember_theme(config_path: Path, theme: str, files: Files) -> None:
    """Keep the theme the user picked for the next start in ``state.json`` beside the config
    file, private and written atomically (tui/files.py). Never fails the app; a read-only
    dashboard's ``files`` refuse, and the theme lasts for this session only."""
    state = _state(config_path)
    if state.get("theme") == theme:
        return
    state["theme"] = theme
    try:
        files.replace(config_path.parent / "state.json", json.dumps(state))
    except OSError:
        pass
