"""The dashboard's settings file (XDG), highlight rules, key bindings, themes and the command
palette."""

from __future__ import annotations

import json

import pytest
from pilot import notes, until

from hermes_procs.tui.app import HermesApp
from hermes_procs.tui.config import DEFAULT_HIGHLIGHTS, config_dir, load_config
from hermes_procs.tui.dialogs import KillScreen
from hermes_procs.tui.help import HelpScreen, help_entries
from hermes_procs.tui.jobs_table import JobsTable
from hermes_procs.tui.log_pane import LogPane

pytestmark = [pytest.mark.anyio, pytest.mark.timeout(40)]


@pytest.fixture
def xdg(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "xdg"))
    d = tmp_path / "xdg" / "hermes-procs"
    d.mkdir(parents=True)
    return d


def test_config_file_is_found_by_xdg_and_bad_entries_are_reported(xdg, monkeypatch, tmp_path):
    assert config_dir() == xdg
    monkeypatch.delenv("XDG_CONFIG_HOME")
    monkeypatch.setenv("HOME", str(tmp_path / "h"))
    assert config_dir() == tmp_path / "h" / ".config" / "hermes-procs"
    monkeypatch.setenv("XDG_CONFIG_HOME", str(xdg.parent))
    assert load_config().highlights == DEFAULT_HIGHLIGHTS  # no file: the defaults
    (xdg / "config.toml").write_text(
        'theme = "nord"\n[[highlight]]\npattern = "(unclosed"\n'
        '[[highlight]]\npattern = "deploy"\nstyle = "bold magenta"\n[keys]\nkill = "K"\n')
    cfg = load_config()
    assert cfg.theme == "nord" and cfg.keys == {"kill": "K"}
    assert len(cfg.highlights) == len(DEFAULT_HIGHLIGHTS) + 1
    assert len(cfg.problems) == 1 and "highlight #1 skipped" in cfg.problems[0]
    (xdg / "config.toml").write_text("this is = = not toml")
    cfg = load_config()
    assert cfg.problems and cfg.highlights == DEFAULT_HIGHLIGHTS


def test_misspelled_or_mistyped_settings_are_reported_not_ignored(xdg):
    # the README: "every entry is optional and a bad one is skipped with a warning toast"
    (xdg / "config.toml").write_text(
        'thme = "nord"\ndefault_highlights = "no"\n[notfy]\nbell = false\n[hosts]\nbox = "ssh://me@box"\n')
    problems = load_config().problems
    assert len(problems) == 3, problems
    assert "thme: no such setting (did you mean theme?); skipped" in problems[0]
    assert "default_highlights must be true or false" in problems[1]
    assert "notfy: no such setting (did you mean notify?); skipped" in problems[2]
    (xdg / "config.toml").write_text('theme = 5\nhighlight = "x"\n')
    cfg = load_config()
    assert cfg.theme is None and cfg.highlights == DEFAULT_HIGHLIGHTS
    assert ["theme must be" in p or "highlight must be" in p for p in cfg.problems] == [True, True], cfg.problems


def _styles_of(pane: LogPane, word: str) -> list:
    for y in range(pane.size.height):
        for seg in pane.render_line(y):
            if word in seg.text:
                return [seg.style]
    return []


async def test_highlight_rules_style_log_lines(registry, xdg):
    (xdg / "config.toml").write_text('[[highlight]]\npattern = "deploy"\nstyle = "bold magenta"\n')
    sid = registry.spawn("echo 'an ERROR here'; echo 'see https://example.com/x'; echo 'deploy done'; sleep 30")[
        "session_id"]
    app = HermesApp(registry, sample_interval=0.2)
    async with app.run_test(size=(100, 30)) as pilot:
        table = app.query_one(JobsTable)
        await until(pilot, lambda: sid in table.rows_by_id)
        table.select_id(sid)
        pane = app.query_one(LogPane)
        await until(pilot, lambda: _styles_of(pane, "deploy"), what="lines shown")
        (error,) = _styles_of(pane, "ERROR")
        assert error.bold and error.color.name == "red"
        (url,) = _styles_of(pane, "https://example.com/x")
        assert url.underline
        (deploy,) = _styles_of(pane, "deploy")
        assert deploy.bold and deploy.color.name == "magenta"


async def test_keys_from_the_config_rebind_actions_and_the_help_follows(registry, xdg):
    (xdg / "config.toml").write_text('[keys]\nkill = "K"\n')
    sid = registry.spawn("sleep 30")["session_id"]
    app = HermesApp(registry, sample_interval=0.2)
    async with app.run_test(size=(100, 30)) as pilot:
        table = app.query_one(JobsTable)
        await until(pilot, lambda: sid in table.rows_by_id and app.main.selected == sid)
        await pilot.press("k")
        await pilot.pause(0.2)
        assert not isinstance(app.screen, KillScreen)
        await pilot.press("K")
        await until(pilot, lambda: isinstance(app.screen, KillScreen), what="K kills")
        await pilot.press("n")
        assert any(e.keys == ("K",) and "kill" in e.does for e in help_entries(app.config.keys))
        await pilot.press("question_mark")
        await until(pilot, lambda: isinstance(app.screen, HelpScreen))


async def test_a_misspelled_key_action_is_a_warning_toast(registry, xdg):
    (xdg / "config.toml").write_text('[keys]\nkil = "K"\nsort = "O"\nnew_job = "N"\n')
    cfg = load_config()
    assert cfg.keys == {"new_job": "N"}
    assert [p.split(": ", 1)[1] for p in cfg.problems] == [
        "[keys] kil: no such action (did you mean kill?); skipped",
        "[keys] sort: no such action (did you mean cycle_sort?); skipped"]
    app = HermesApp(registry, sample_interval=0.2)
    async with app.run_test(size=(100, 30)) as pilot:
        await until(pilot, lambda: "kil: no such action" in notes(app), what="the warning toast")


async def test_theme_from_config_and_a_picked_theme_is_remembered(registry, xdg):
    (xdg / "config.toml").write_text('theme = "nord"\n')
    app = HermesApp(registry, sample_interval=0.2)
    async with app.run_test(size=(100, 30)) as pilot:
        await pilot.pause(0.1)
        assert app.theme == "nord"
        assert not (xdg / "state.json").exists()  # the config's theme is not copied
        app.theme = "gruvbox"
        await until(pilot, lambda: (xdg / "state.json").exists(), what="theme remembered")
    assert json.loads((xdg / "state.json").read_text()) == {"theme": "gruvbox"}
    assert (xdg / "state.json").stat().st_mode & 0o777 == 0o600  # private, as everything of ours
    app = HermesApp(registry, sample_interval=0.2)
    async with app.run_test(size=(100, 30)) as pilot:
        await pilot.pause(0.1)
        assert app.theme == "gruvbox"


async def test_every_action_is_in_the_command_palette(registry, xdg):
    app = HermesApp(registry, sample_interval=0.2)
    async with app.run_test(size=(100, 30)) as pilot:
        await pilot.pause(0.1)
        commands = {c.title: c for c in app.get_system_commands(app.screen)}
        for title in ("New (n)", "Kill (k)", "Sort (o)", "Filter log (&)", "Select (v)", "Save (Ctrl-S)"):
            assert title in commands, sorted(commands)
        assert any("theme" in t.lower() for t in commands)  # Textual's theme picker
        await commands["Sort (o)"].callback()
        assert app.main.sort_mode == "oldest"
        # and through the palette itself
        await pilot.press("ctrl+p")
        await until(pilot, lambda: app.screen.__class__.__name__ == "CommandPalette")
        await pilot.press(*"Sort (o)")
        await pilot.pause(0.5)
        await pilot.press("enter")
        await until(pilot, lambda: app.main.sort_mode == "cpu", what="palette ran the sort")
