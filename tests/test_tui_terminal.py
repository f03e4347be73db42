"""Pilot tests of the terminal pane against real PTY jobs in a temporary home."""

from __future__ import annotations

import json
import os
import signal
import sys
import textwrap
import time

import pytest
from conftest import until_async, wait_until
from textual import events, on
from textual.app import App, ComposeResult

from hermes_procs.tui.fullattach import full_attach
from hermes_procs.tui.terminal import TerminalPane

PY = sys.executable
pytestmark = pytest.mark.anyio


wait_sync = wait_until


class PaneApp(App):
    def __init__(self, registry, session_id: str) -> None:
        super().__init__()
        self.registry = registry
        self.session_id = session_id
        self.messages: list = []

    def compose(self) -> ComposeResult:
        yield TerminalPane(self.registry, self.session_id)

    def on_mount(self) -> None:
        self.query_one(TerminalPane).focus()

    @on(TerminalPane.Leave)
    @on(TerminalPane.FullAttach)
    @on(TerminalPane.Ended)
    def record(self, message) -> None:
        self.messages.append(message)


async def until(predicate, timeout: float = 20.0):  # a loaded 2-core machine; a hang still fails
    return await until_async(predicate, timeout)


def spawn(registry, command: str, **kw) -> str:
    result = registry.spawn(command, pty=True, **kw)
    assert result["status"] == "running", result
    return result["session_id"]


def script(tmp_path, name: str, body: str) -> str:
    path = tmp_path / name
    path.write_text(textwrap.dedent(body))
    return f"{PY} -u {path}"


async def test_repl_prompt_type_and_see_answer(registry):
    sid = spawn(registry, f"{PY} -q -i")
    app = PaneApp(registry, sid)
    async with app.run_test(size=(100, 30)) as pilot:
        pane = app.query_one(TerminalPane)
        await until(lambda: ">>>" in pane.screen_text())
        await pilot.press(*"print(6*7)", "enter")
        await until(lambda: "\n42\n" in pane.screen_text())
        assert [i["source"] for i in registry.inputs(sid)] and all(
            i["source"] == "human" for i in registry.inputs(sid))
        # Tab goes to the job, not to the focus chain.
        await pilot.press("tab")
        assert app.focused is pane
        await pilot.press("ctrl+u")
        await pilot.press(*"exit(3)", "enter")
        await until(lambda: app.messages and isinstance(app.messages[-1], TerminalPane.Ended))
        ended = app.messages[-1]
        assert ended.status["exit_code"] == 3
        await until(lambda: "[process exited with code 3]" in pane.screen_text())


async def test_resize_propagates_to_job(registry):
    sid = spawn(registry, "sh", rows=10, cols=40)
    app = PaneApp(registry, sid)
    async with app.run_test(size=(90, 20)) as pilot:
        pane = app.query_one(TerminalPane)
        await until(lambda: "$" in pane.screen_text() or "#" in pane.screen_text())
        await pilot.press(*"stty size", "enter")
        await until(lambda: "20 90" in pane.screen_text())
        await pilot.resize_terminal(70, 16)
        await until(lambda: (pane.engine.rows, pane.engine.cols) == (16, 70))
        await pilot.press(*"clear; stty size", "enter")
        await until(lambda: "16 70" in pane.screen_text())


async def test_alternate_screen_in_and_out(registry, tmp_path):
    cmd = script(tmp_path, "alt.py", r"""
        import sys
        print("main-screen")
        sys.stdin.readline()
        sys.stdout.write("\x1b[?1049h\x1b[H\x1b[2JALT-SCREEN\x1b[5;3Hdrawn"); sys.stdout.flush()
        sys.stdin.readline()
        sys.stdout.write("\x1b[?1049l"); print("back"); sys.stdout.flush()
        sys.stdin.readline()
    """)
    sid = spawn(registry, cmd)
    app = PaneApp(registry, sid)
    async with app.run_test(size=(60, 12)) as pilot:
        pane = app.query_one(TerminalPane)
        await until(lambda: "main-screen" in pane.screen_text())
        await pilot.press("enter")
        await until(lambda: "ALT-SCREEN" in pane.screen_text())
        assert pane.engine.modes.alt_screen
        assert "main-screen" not in pane.screen_text()
        assert pane.engine.line_text(4) == "  drawn"
        await pilot.press("enter")
        await until(lambda: "back" in pane.screen_text())
        assert not pane.engine.modes.alt_screen
        assert "main-screen" in pane.screen_text() and "ALT-SCREEN" not in pane.screen_text()


async def test_attach_rebuilds_screen_then_nudges(registry, tmp_path):
    # A full-screen program drawn before the pane attached; it redraws on SIGWINCH.
    cmd = script(tmp_path, "tui.py", r"""
        import os, signal, sys, time
        n = [0]
        def draw(*_):
            cols, rows = os.get_terminal_size()
            sys.stdout.write(f"\x1b[H\x1b[2J\x1b[31mFRAME {n[0]}\x1b[0m size {rows}x{cols}")
            sys.stdout.flush()
            n[0] += 1
        signal.signal(signal.SIGWINCH, draw)
        sys.stdout.write("\x1b[?1049h"); draw()
        while True:
            time.sleep(1)
    """)
    sid = spawn(registry, cmd, rows=12, cols=50)
    wait_sync(lambda: "FRAME 0" in registry.poll(sid)["output_preview"])
    app = PaneApp(registry, sid)
    async with app.run_test(size=(50, 12)):
        pane = app.query_one(TerminalPane)
        # The first thing shown is the screen rebuilt from the log, not a blank.
        await until(lambda: pane._attached)
        first = pane.screen_text()
        assert first.startswith("FRAME"), first
        assert pane.engine.modes.alt_screen
        assert pane.engine.cell_style(0, 0).color.number == 1
        # Then the resize nudge makes the program repaint at the pane's size.
        await until(lambda: "size 12x50" in pane.screen_text() and "FRAME 0" not in pane.screen_text())


async def test_cursor_keys_follow_decckm_and_bracketed_paste(registry, tmp_path):
    cmd = script(tmp_path, "keys.py", r"""
        import os, sys, termios, tty
        tty.setraw(0)
        def show(label):
            data = os.read(0, 64)
            sys.stdout.write(label + repr(data) + "\r\n"); sys.stdout.flush()
        sys.stdout.write("ready\r\n"); sys.stdout.flush()
        show("normal ")
        sys.stdout.write("\x1b[?1h\x1b[?2004hset\r\n"); sys.stdout.flush()
        show("app ")
        show("paste ")
    """)
    sid = spawn(registry, cmd)
    app = PaneApp(registry, sid)
    async with app.run_test(size=(80, 12)) as pilot:
        pane = app.query_one(TerminalPane)
        await until(lambda: "ready" in pane.screen_text())
        await pilot.press("up")
        await until(lambda: "normal b'\\x1b[A'" in pane.screen_text())
        await until(lambda: pane.engine.modes.app_cursor and pane.engine.modes.bracketed_paste)
        await pilot.press("up")
        await until(lambda: "app b'\\x1bOA'" in pane.screen_text())
        pane.post_message(events.Paste("hi\nthere"))
        await until(lambda: "paste b'\\x1b[200~hi\\rthere\\x1b[201~'" in pane.screen_text())


async def test_chords_post_messages(registry):
    sid = spawn(registry, "cat")
    app = PaneApp(registry, sid)
    async with app.run_test(size=(60, 10)) as pilot:
        pane = app.query_one(TerminalPane)
        await until(lambda: pane._attached)
        await pilot.press("ctrl+right_square_bracket")
        await pilot.press("ctrl+t")
        await until(lambda: len(app.messages) == 2)
        assert isinstance(app.messages[0], TerminalPane.Leave)
        assert isinstance(app.messages[1], TerminalPane.FullAttach)
        assert app.messages[0].session_id == sid
        # The chords never reached the job.
        await pilot.press(*"abc", "enter")
        await until(lambda: pane.screen_text().count("abc") == 2)
        assert "^]" not in pane.screen_text()
        # Headless: full-screen attach is refused politely, the app keeps running.
        assert full_attach(app, registry, sid) is None


async def test_flood_renders_final_screen(registry):
    sid = spawn(registry, "sh")
    app = PaneApp(registry, sid)
    async with app.run_test(size=(80, 20)) as pilot:
        pane = app.query_one(TerminalPane)
        await until(lambda: pane._attached)
        start = time.monotonic()
        await pilot.press(*"seq 1 300000; echo done-$((6*7))", "enter")
        await until(lambda: "done-42" in pane.screen_text(), timeout=20)
        elapsed = time.monotonic() - start
        lines = pane.screen_text().split("\n")
        assert "300000" in lines
        # At most ~30 repaints a second (plus a few for the attach and typing).
        assert pane.frames <= 30 * elapsed + 40


async def test_job_exit_while_attached_and_dead_supervisor(registry):
    sid = spawn(registry, "sleep 30")
    app = PaneApp(registry, sid)
    async with app.run_test(size=(60, 10)):
        pane = app.query_one(TerminalPane)
        await until(lambda: pane._attached)
        proc = json.loads((registry.job_dir(sid) / "proc.json").read_text())
        os.kill(proc["supervisor_pid"], signal.SIGKILL)
        await until(lambda: pane.ended is not None, timeout=8)
        assert "[" in pane.screen_text().split("\n")[-1]
        # Typing after the end does nothing and does not raise.
        await app.query_one(TerminalPane).on_key(events.Key("a", "a"))
    os.kill(proc["pid"], signal.SIGKILL)


async def test_attach_to_exited_job_shows_its_output(registry):
    sid = spawn(registry, "printf 'last words\\n'; exit 5")
    wait_sync(lambda: registry.poll(sid)["status"] == "exited")
    app = PaneApp(registry, sid)
    async with app.run_test(size=(60, 10)):
        pane = app.query_one(TerminalPane)
        await until(lambda: pane.ended is not None)
        text = pane.screen_text()
        assert "last words" in text
        assert "code 5" in text


async def test_pane_answers_terminal_queries_while_attached(registry, tmp_path):
    cmd = script(tmp_path, "query.py", r"""
        import os, sys, tty
        tty.setraw(0)
        sys.stdout.write("go\r\n"); sys.stdout.flush()
        os.read(0, 1)
        sys.stdout.write("\x1b[3;5H\x1b[6n"); sys.stdout.flush()
        reply = os.read(0, 32)
        sys.stdout.write("\x1b[5;1Hreply " + repr(reply)); sys.stdout.flush()
        os.read(0, 1)
    """)
    sid = spawn(registry, cmd)
    app = PaneApp(registry, sid)
    async with app.run_test(size=(60, 10)) as pilot:
        pane = app.query_one(TerminalPane)
        await until(lambda: "go" in pane.screen_text() and pane._attached)
        await pilot.press("x")
        await until(lambda: "reply b'\\x1b[3;5R'" in pane.screen_text())


@pytest.mark.skipif(not os.path.exists("/usr/bin/less"), reason="less not installed")
async def test_less_pages_and_quits_back_to_main_screen(registry, tmp_path):
    (tmp_path / "f.txt").write_text("".join(f"line number {i}\n" for i in range(200)))
    sid = spawn(registry, "echo before-less; less f.txt; echo after-less; sleep 30",
                cwd=str(tmp_path), env={"TERM": "xterm-256color", "LESS": ""})
    app = PaneApp(registry, sid)
    async with app.run_test(size=(80, 24)) as pilot:
        pane = app.query_one(TerminalPane)
        await until(lambda: "line number 0" in pane.screen_text() and pane.engine.modes.alt_screen)
        assert pane.engine.modes.app_cursor  # less asked for application cursor keys
        await pilot.press("space")
        await until(lambda: "line number 30" in pane.screen_text())
        await pilot.press("q")
        await until(lambda: "after-less" in pane.screen_text())
        assert not pane.engine.modes.alt_screen
        assert "before-less" in pane.screen_text() and "line number" not in pane.screen_text()


async def test_mouse_reports_only_when_the_program_asks(registry, tmp_path):
    cmd = script(tmp_path, "mouse.py", r"""
        import os, sys, tty
        tty.setraw(0)
        sys.stdout.write("\x1b[?1000h\x1b[?1006hmouse on\r\n"); sys.stdout.flush()
        data = b""
        while b"M" not in data:
            data += os.read(0, 64)
        sys.stdout.write("got " + repr(data) + "\r\n"); sys.stdout.flush()
        os.read(0, 64)
    """)
    sid = spawn(registry, cmd)
    app = PaneApp(registry, sid)
    async with app.run_test(size=(60, 10)) as pilot:
        pane = app.query_one(TerminalPane)
        await until(lambda: "mouse on" in pane.screen_text() and pane.engine.modes.mouse)
        await pilot.mouse_down(TerminalPane, offset=(4, 3))
        await until(lambda: "got b'\\x1b[<0;5;4M'" in pane.screen_text())


async def test_unknown_id_and_pipe_job(registry):
    app = PaneApp(registry, "proc_0123456789ab")
    async with app.run_test(size=(60, 10)):
        pane = app.query_one(TerminalPane)
        await until(lambda: pane.ended is not None)
        assert "[cannot attach: No process with ID" in pane.screen_text()
    sid = registry.spawn("read x; echo got:$x")["session_id"]  # a pipe job
    app = PaneApp(registry, sid)
    async with app.run_test(size=(60, 10)) as pilot:
        pane = app.query_one(TerminalPane)
        await until(lambda: pane._attached)
        await pilot.press(*"hi", "enter")  # Enter is a newline for a pipe job
        await until(lambda: "got:hi" in pane.screen_text())
