"""`hermes-procs web --read-only`: the dashboard refuses every change to a job and writes no file
on the server, in the app process itself (a modified browser client only sends keys; the
server-side app decides)."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import until_async
from pilot import notes

from hermes_procs.core import ProcessRegistry
from hermes_procs.core.registry.interface import Registry, changes, marked, reads
from hermes_procs.tui import files as files_module
from hermes_procs.tui.app import HermesApp
from hermes_procs.tui.dialogs import KillScreen, NewJobScreen, SaveLogScreen
from hermes_procs.tui.jobs_table import JobsTable
from hermes_procs.tui.log_export import save_log

pytestmark = [pytest.mark.anyio, pytest.mark.timeout(30)]


async def selected(pilot, app, sid: str):
    """Wait until job `sid` is listed and selected; returns the wait function used."""
    async def until(predicate, what=""):
        return await until_async(predicate, 6.0, what, pause=lambda: pilot.pause(0.03))

    table = app.query_one(JobsTable)
    await until(lambda: sid in table.rows_by_id, "listed")
    table.select_id(sid)
    await until(lambda: app.main.selected == sid, "selected")
    return until


async def test_read_only_refuses_kill_new_job_and_input(registry, alive):
    sid = registry.spawn("sleep 60", name="keeper")["session_id"]
    app = HermesApp(registry, sample_interval=0.2, read_only=True)
    async with app.run_test(size=(100, 30)) as pilot:
        until = await selected(pilot, app, sid)
        pid = app.query_one(JobsTable).rows_by_id[sid].pid
        await pilot.press("k")
        await until(lambda: "read-only" in notes(app), "read-only toast")
        assert not isinstance(app.screen, KillScreen)
        for key in ("n", "i", "s", "t"):
            await pilot.press(key)
        await pilot.pause(0.1)
        assert not isinstance(app.screen, NewJobScreen)
        bar = app.main.input_bar
        assert not bar.has_class("shown") or not bar.line.has_focus
        # what a modified client could reach: the registry the app holds refuses too
        assert app.registry.kill(sid) == {"status": "error", "error": "read-only"}
        assert app.registry.submit(sid, "x")["error"] == "read-only"
        assert app.registry.spawn("true")["error"] == "read-only"
        with pytest.raises(PermissionError):
            app.registry.stream(sid, input=True)
    assert alive(pid)
    assert registry.poll(sid)["status"] == "running"


def test_a_changing_method_added_later_is_refused_without_being_listed(registry, alive, monkeypatch):
    """The read-only view knows no list of names: a method the interface marks `changes` (added
    here, as a later change to the registry would), or marks not at all, is refused; one marked
    `reads` passes."""
    sid = registry.spawn("sleep 60", name="keeper")["session_id"]
    calls = []

    def pause(self, session_id: str) -> dict:  # what a new changing method would do
        calls.append(session_id)
        return {"status": "ok"}

    def peek(self, session_id: str) -> dict:
        return {"status": "ok", "peeked": session_id}

    monkeypatch.setattr(Registry, "pause", changes(lambda self, session_id: None), raising=False)
    monkeypatch.setattr(Registry, "peek", reads(lambda self, session_id: None), raising=False)
    for name, method in (("pause", pause), ("peek", peek), ("unmarked", pause)):
        monkeypatch.setattr(ProcessRegistry, name, method, raising=False)
    app = HermesApp(registry, sample_interval=0.2, read_only=True)  # as `web --read-only` builds it
    assert app.registry.pause(sid) == {"status": "error", "error": "read-only"}
    assert app.registry.unmarked(sid) == {"status": "error", "error": "read-only"}
    assert app.registry.peek(sid) == {"status": "ok", "peeked": sid}
    assert calls == [] and registry.poll(sid)["status"] == "running"
    assert HermesApp(registry, sample_interval=0.2).registry.pause(sid) == {"status": "ok"}  # not read-only
    assert calls == [sid]


def test_every_method_of_the_interface_is_let_through_or_refused_by_its_mark(registry):
    sid = registry.spawn("sleep 60", name="keeper")["session_id"]
    view = HermesApp(registry, sample_interval=0.2, read_only=True).registry
    assert {"spawn", "kill", "write", "set_watch_patterns", "prune", "restart", "stream"} <= marked("changes")
    assert {"list", "poll", "read_log", "tree", "drain_events"} <= marked("reads")
    for name in marked("changes") - {"stream"}:
        assert getattr(view, name)(sid) == {"status": "error", "error": "read-only"}, name
    assert view.set_watch_patterns(sid, ["x"])["error"] == "read-only"  # the hand-kept list missed it
    assert view.poll(sid)["status"] == "running" and view.tree(sid)["status"] != "error"
    with view.stream(sid) as stream:  # without input, a read
        assert stream.offset >= 0
    assert registry.poll(sid)["status"] == "running"


async def test_read_only_writes_no_file_on_the_server(registry, tmp_path, monkeypatch):
    """Saving the log (l, Ctrl-S, a path, Enter) and picking a theme write files on the machine
    the dashboard runs on: a read-only viewer may do neither. The write itself refuses, not only
    the key."""
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "xdg"))
    sid = registry.spawn("echo secret-ish; sleep 60", name="logger")["session_id"]
    target = tmp_path / "authorized_keys"
    app = HermesApp(registry, sample_interval=0.2, read_only=True)
    async with app.run_test(size=(100, 30)) as pilot:
        until = await selected(pilot, app, sid)
        await pilot.press("l", "ctrl+s")
        await until(lambda: "read-only" in notes(app), "read-only toast")
        if isinstance(app.screen, SaveLogScreen):  # (were the dialog shown, its Enter must write nothing)
            app.screen.query_one("#save-path").value = str(target)
            await pilot.press("enter")
        # what the key would reach: the write refuses by itself
        with pytest.raises(PermissionError, match="writes no files"):
            save_log(registry.job_dir(sid), target, True, app.files)
        app.main._save_log(registry.job_dir(sid), target, True)
        await until(lambda: f"{target}: read-only" in notes(app), "the refused save said so")
        app.theme = "gruvbox"  # the palette's theme picker sets this
        await pilot.pause(0.5)
        assert app.theme == "gruvbox"  # the viewer sees it ...
    assert not target.exists()
    assert not (tmp_path / "xdg").exists()  # ... and it is not remembered on the server


_WRITING_FLAGS = {"O_WRONLY", "O_RDWR", "O_CREAT", "O_APPEND", "O_TRUNC"}
_PATH_WRITES = {"write_text", "write_bytes", "mkdir", "touch", "unlink", "rmdir", "rename", "symlink_to",
                "hardlink_to", "chmod"}
_OS_WRITES = {"replace", "rename", "remove", "unlink", "makedirs", "mkdir", "rmdir", "chmod", "symlink", "link",
              "truncate", "mkfifo"}
_SHUTIL_WRITES = {"copy", "copy2", "copyfile", "copytree", "move", "rmtree"}


def _writes(tree: ast.AST) -> list[int]:
    """Lines of `tree` that write to the file system: open() for writing, os.open with a writing
    flag, the Path, os and shutil calls that create, change or remove files."""
    found = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call):
            continue
        func = node.func
        if isinstance(func, ast.Name) and func.id == "open":
            modes = node.args[1:2] + [k.value for k in node.keywords if k.arg == "mode"]
            mode = modes[0] if modes else None
            if isinstance(mode, ast.Constant) and set(str(mode.value)) & set("wax+"):
                found.append(node.lineno)
        elif isinstance(func, ast.Attribute):
            owner = func.value.id if isinstance(func.value, ast.Name) else ""
            flags = {n.attr for n in ast.walk(node) if isinstance(n, ast.Attribute)}
            if owner == "os":
                writes = func.attr in _OS_WRITES or (func.attr == "open" and bool(flags & _WRITING_FLAGS))
            else:
                writes = func.attr in (_SHUTIL_WRITES if owner == "shutil" else _PATH_WRITES)
            if writes:
                found.append(node.lineno)
    return found


def test_only_files_py_writes_files_in_the_dashboard_process():
    """Every module the browser's dashboard process loads (`hermes_procs.tui.web_app` and what it
    imports, found by importing it) writes files only through tui/files.py, so read-only covers
    every write there is."""
    out = subprocess.run([sys.executable, "-c", "import sys, hermes_procs.tui.web_app; print('\\n'.join("
                          "m.__file__ for n, m in sys.modules.items() if n.startswith('hermes_procs.tui.')))"],
                         capture_output=True, text=True, check=True, timeout=60).stdout.split()
    loaded = {Path(f) for f in out}
    assert Path(files_module.__file__) in loaded and len(loaded) > 10
    offenders = {f.name: lines for f in loaded if f.name != "files.py"
                 for lines in [_writes(ast.parse(f.read_text()))] if lines}
    assert offenders == {}, f"files written outside tui/files.py (read-only would not stop them): {offenders}"
    assert _writes(ast.parse(Path(files_module.__file__).read_text()))  # the scan does see writes
