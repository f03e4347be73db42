"""Pilot tests of the dashboard against real jobs in a temporary home (no mocks)."""

from __future__ import annotations

import asyncio
import io
import shlex
import sys
import time
from pathlib import Path

import pytest
from pilot import confirm, notes, select, settle, spawn, until
from rich.console import Console
from rich.text import Text
from textual.widgets import Footer
from textual.widgets._footer import FooterKey

from hermes_procs.tui.app import HermesApp
from hermes_procs.tui.bars import DetailTitle, fit_title
from hermes_procs.tui.dialogs import KillScreen, NewJobScreen, SignalScreen
from hermes_procs.tui.help import HelpScreen, help_entries, markdown_table
from hermes_procs.tui.jobs_table import JobsTable
from hermes_procs.tui.log_pane import LogPane

pytestmark = [pytest.mark.anyio, pytest.mark.timeout(60)]  # a hang fails; a loaded 2-core machine does not
PY = sys.executable
FLOOD = """
import sys, time
out, n = sys.stdout.buffer, 1
while True:
    t = time.monotonic()
    out.write(b"".join(b"%d\\n" % i for i in range(n, n + 40000)))
    out.flush()
    n += 40000
    time.sleep(max(0.0, 0.01 - (time.monotonic() - t)))
"""


def make_app(registry) -> HermesApp:
    return HermesApp(registry, sample_interval=0.2)


def table_ids(app) -> list[str]:
    t = app.query_one(JobsTable)
    return [row.key.value for row in t.ordered_rows]


def screen_text(app) -> str:
    """Everything the log pane shows right now, as plain text."""
    pane = app.query_one(LogPane)
    lines = []
    for y in range(pane.size.height):
        lines.append("".join(seg.text for seg in pane.render_line(y)).rstrip())
    return "\n".join(lines)


async def test_table_lists_jobs_and_updates_in_place(registry):
    a = spawn(registry, "sleep 30", name="sleeper")
    app = make_app(registry)
    async with app.run_test(size=(120, 40)) as pilot:
        table = app.query_one(JobsTable)
        await until(pilot, lambda: a in table.rows_by_id)
        row_obj = table.rows[(table.get_row_index(a) and a) or a]
        b = spawn(registry, f"{PY} -c \"print('hi')\"")
        await until(pilot, lambda: b in table.rows_by_id and not table.rows_by_id[b].running)
        # the new job is first (newest), the old row object was kept, not rebuilt
        assert table_ids(app)[0] == b
        assert table.rows[a] is row_obj
        cells = [str(c) for c in table.get_row(a)]
        assert "sleeper" in cells[2] and "running" in cells[3]
        assert "exited 0" in str(table.get_row(b)[3])
        # exit toast
        await until(pilot, lambda: "exit 0" in notes(app), what="exit toast")


async def test_exit_code_toast_and_status(registry):
    app = make_app(registry)
    async with app.run_test(size=(100, 30)) as pilot:
        await pilot.pause(0.3)
        sid = spawn(registry, "sleep 0.5; exit 3", name="failing")
        table = app.query_one(JobsTable)
        await until(pilot, lambda: sid in table.rows_by_id)
        await until(pilot, lambda: not table.rows_by_id[sid].running)
        assert table.rows_by_id[sid].label == "exited 3"
        await until(pilot, lambda: "exited 3" in notes(app), what="toast with the exit code")


async def test_an_empty_log_says_no_output_yet_while_the_job_runs_and_no_output_once_it_ended(registry):
    sid = spawn(registry, "sleep 1.5", name="silent")
    app = make_app(registry)
    async with app.run_test(size=(100, 30)) as pilot:
        await select(pilot, app, sid)
        await until(pilot, lambda: screen_text(app).startswith(" (no output yet)"), what="the running job's note")
        await until(pilot, lambda: screen_text(app).startswith(" (no output)\n"), timeout=15, what="the ended job's")


async def test_log_pane_renders_colours_safely_and_collapses_cr(registry):
    script = (
        "import sys\n"
        "w = sys.stdout.write\n"
        "w('\\x1b[31mred alert\\x1b[0m plain\\n')\n"
        "w('\\x1b]52;c;SGVsbG8=\\x07clipboard-attempt\\n')\n"
        "w('\\x1b]0;evil title\\x07title-attempt\\n')\n"
        "w('\\x1b]8;;http://x.example\\x1b\\\\link text\\x1b]8;;\\x1b\\\\\\n')\n"
        "w('\\x1b[2J\\x1b[H\\x1b[?1049hcursor-moves\\n')\n"
        "w('progress 10%\\rprogress 50%\\rprogress 100%\\n')\n"
        "w('\\x9b31mc1-csi\\n')\n"
        "w('bidi \\u202etxt.exe \\u2066iso\\u2069\\n')\n"
    )
    sid = spawn(registry, f"{PY} -c {__import__('shlex').quote(script)}")
    app = make_app(registry)
    async with app.run_test(size=(100, 30)) as pilot:
        await select(pilot, app, sid)
        await until(pilot, lambda: "c1-csi" in screen_text(app), what="log lines")
        text = screen_text(app)
        assert "red alert plain" in text
        assert "clipboard-attempt" in text and "SGVsbG8" not in text
        assert "title-attempt" in text and "evil title" not in text
        assert "link text" in text and "x.example" not in text
        assert "progress 100%" in text and "progress 10%" not in text
        assert "bidi \\u202etxt.exe \\u2066iso\\u2069" in text  # shown, never sent
        pane = app.query_one(LogPane)
        segments = [seg for y in range(pane.size.height) for seg in pane.render_line(y)]
        for seg in segments:
            assert "\x1b" not in seg.text and "\x9b" not in seg.text and "\x07" not in seg.text
            assert not set(seg.text) & {"\u202e", "\u2066", "\u2069"}
            assert not (seg.style and seg.style.link)
        red = [seg for seg in segments if "red alert" in seg.text]
        assert red and red[0].style.color is not None and red[0].style.color.name in ("red", "color(1)")


async def test_log_follow_scroll_up_stops_end_resumes(registry):
    sid = spawn(registry, "for i in $(seq 1 400); do echo line $i; done; sleep 30")
    app = make_app(registry)
    async with app.run_test(size=(100, 30)) as pilot:
        await select(pilot, app, sid)
        pane = app.query_one(LogPane)
        await until(pilot, lambda: "line 400" in screen_text(app), what="tail shown")
        assert pane.follow
        pane.focus()
        await until(pilot, lambda: app.focused is pane, what="log focused")
        for _ in range(20):
            await pilot.press("pageup")
            if not pane.follow:
                break
            await pilot.pause(0.1)
        await until(pilot, lambda: not pane.follow, what="scrolling up stops following")
        await until(pilot, lambda: "line 400" not in screen_text(app) and "line 3" in screen_text(app))
        await pilot.press("home")
        await until(pilot, lambda: screen_text(app).startswith("line 1\n"), what="top of the log")
        await pilot.press("end")
        await until(pilot, lambda: pane.follow and "line 400" in screen_text(app), what="End resumes")


async def test_a_paused_view_stays_paused_when_the_line_count_shrinks(registry):
    # a flood's line count is an estimate: corrected down while the view is paused a page above
    # the bottom, the clamp to the new bottom must not follow again (CI saw PageUp undone so for 40 s)
    sid = spawn(registry, "seq 1 400; sleep 30")
    app = make_app(registry)
    async with app.run_test(size=(100, 30)) as pilot:
        await select(pilot, app, sid)
        pane = app.query_one(LogPane)
        await until(pilot, lambda: "400" in screen_text(app).split(), what="tail shown")
        pane.focus()
        await until(pilot, lambda: app.focused is pane, what="log focused")
        await pilot.press("pageup")
        await until(pilot, lambda: not pane.follow, what="paused")
        height = pane.virtual_size.height
        pane._set_virtual(height - 50)  # as a smaller estimate does: the layout clamps the view
        await until(pilot, lambda: pane.scroll_y <= height - 50, what="the view pulled to the new bottom")
        # the reader's next answer restores the real count: the view stays where it was pulled
        await until(pilot, lambda: pane.virtual_size.height == height, what="the count restored")
        assert not pane.follow and pane.scroll_y < pane.max_scroll_y
        for _ in range(8):  # scrolled down to the bottom: following again
            await pilot.press("pagedown")
            await pilot.pause(0.05)
        await until(pilot, lambda: pane.follow, what="PageDown to the bottom follows")
        pane.follow = False  # paused at the bottom (as a clamp leaves it)
        await pilot.press("down")  # one key down there follows (as End does)
        await until(pilot, lambda: pane.follow, what="a key down at the bottom follows")


async def test_log_follow_keeps_up_with_new_output(registry):
    sid = spawn(registry, "cat", name="echo-back")
    app = make_app(registry)
    async with app.run_test(size=(100, 30)) as pilot:
        await select(pilot, app, sid)
        for i in range(3):
            registry.submit(sid, f"fresh line {i}")
        await until(pilot, lambda: "fresh line 2" in screen_text(app), what="new output followed")


def _needles(registry, lines: int) -> str:
    """A job printing `hay N` lines with `needle N` every 100th, then waiting."""
    return spawn(registry, f"for i in $(seq 1 {lines}); do if [ $((i % 100)) = 0 ]; then echo \"needle $i\"; "
                           "else echo hay $i; fi; done; sleep 30")


async def test_log_search_next_and_previous(registry):
    app = make_app(registry)
    sid = _needles(registry, 300)
    async with app.run_test(size=(100, 30)) as pilot:
        await select(pilot, app, sid)
        pane = app.query_one(LogPane)
        await until(pilot, lambda: "needle 300" in screen_text(app))
        pane.focus()
        await until(pilot, lambda: app.focused is pane, what="log focused")
        await pilot.press("home")
        await until(pilot, lambda: not pane.follow)
        await pilot.press("ctrl+f")
        await pilot.press(*"NEEDLE")
        await pilot.press("enter")
        await until(pilot, lambda: pane.match_line == 99, what="first match (line 100)")
        await pilot.press("down")
        await until(pilot, lambda: pane.match_line == 199, what="next match")
        await pilot.press("f3")
        await until(pilot, lambda: pane.match_line == 299, what="F3 next match")
        await pilot.press("up")
        await until(pilot, lambda: pane.match_line == 199, what="previous match")
        assert "needle 200" in screen_text(app)


async def test_find_while_following_the_tail_finds_the_latest_match_above(registry):
    # following a live log, everything is above: a find that searched down from the view said
    # "no more matches" for a word printed a screen earlier
    app = make_app(registry)
    sid = _needles(registry, 330)
    async with app.run_test(size=(100, 30)) as pilot:
        await select(pilot, app, sid)
        pane = app.query_one(LogPane)
        await until(pilot, lambda: "hay 330" in screen_text(app) and pane.follow, what="following the tail")
        assert "needle 300" not in screen_text(app)
        await pilot.press("ctrl+f")
        await pilot.press(*"needle", "enter")
        await until(pilot, lambda: pane.match_line == 299, what="the latest match (line 300)")
        await pilot.press("up")
        await until(pilot, lambda: pane.match_line == 199, what="the one before")


async def test_big_log_opens_at_once(registry, tmp_path, monkeypatch):
    monkeypatch.setenv("HERMES_PROCS_LOG_CAP", str(1 << 30))
    big = tmp_path / "big.txt"
    with open(big, "wb") as fh:
        block = b"".join(b"%08d some log text to make the line longer\n" % i for i in range(100_000))
        for _ in range(12):  # ~57 MB, 1.2 M lines
            fh.write(block)
        fh.write(b"THE LAST LINE\n")
    sid = spawn(registry, f"cat {big}; sleep 30")
    jobdir = registry.job_dir(sid)
    size = big.stat().st_size
    deadline = time.monotonic() + 20

    def logged() -> int:
        try:
            return (jobdir / "output.log").stat().st_size
        except FileNotFoundError:
            return 0

    while logged() < size and time.monotonic() < deadline:
        await asyncio.sleep(0.05)
    app = make_app(registry)
    async with app.run_test(size=(100, 30)) as pilot:
        table = app.query_one(JobsTable)
        await until(pilot, lambda: sid in table.rows_by_id)
        t0 = time.monotonic()
        table.select_id(sid)
        await until(pilot, lambda: "THE LAST LINE" in screen_text(app), what="tail of a big log")
        assert time.monotonic() - t0 < 5.0  # the tail shows before the whole log is indexed
        pane = app.query_one(LogPane)
        await until(pilot, lambda: pane.total >= 1_200_001, timeout=15, what="index built")
        pane.focus()
        await until(pilot, lambda: app.focused is pane, what="log focused")
        await pilot.press("home")
        await until(pilot, lambda: screen_text(app).startswith("00000000 some"), what="top of a big log")


async def test_input_bar_submit_raw_eof_and_history(registry):
    sid = spawn(registry, "cat", name="cat")
    registry.submit(sid, "from the agent", source="agent")
    app = make_app(registry)
    async with app.run_test(size=(100, 30)) as pilot:
        await select(pilot, app, sid)
        await pilot.press("i")
        bar = app.query_one("#input")
        assert bar.has_class("shown")
        await pilot.press(*"hello human", "enter")
        await until(pilot, lambda: "hello human" in screen_text(app), what="submitted line echoed")
        inputs = registry.inputs(sid)
        assert inputs[-1]["source"] == "human"
        history = app.query_one("#history")
        await until(pilot, lambda: "human" in str(history.render()) and "agent" in str(history.render()),
                    what="history with sources")
        await pilot.press(*"raw-bytes", "ctrl+r")
        await until(pilot, lambda: "raw-bytes" in screen_text(app), what="raw write")
        await pilot.press("ctrl+d")
        table = app.query_one(JobsTable)
        await until(pilot, lambda: not table.rows_by_id[sid].running, what="EOF ends cat")
        assert table.rows_by_id[sid].label == "exited 0"


async def test_kill_with_confirmation(registry, alive):
    sid = spawn(registry, "sleep 60", name="victim")
    app = make_app(registry)
    async with app.run_test(size=(100, 30)) as pilot:
        await select(pilot, app, sid)
        pid = app.query_one(JobsTable).rows_by_id[sid].pid
        await pilot.press("k")
        await until(pilot, lambda: isinstance(app.screen, KillScreen))
        shown = " ".join(str(w.render()) for w in app.screen.query("Static"))
        assert "victim" in shown and sid in shown
        await pilot.press("n")  # cancel first
        await until(pilot, lambda: not isinstance(app.screen, KillScreen))
        assert alive(pid)
        await pilot.press("k")
        await until(pilot, lambda: isinstance(app.screen, KillScreen))
        await confirm(pilot)
        table = app.query_one(JobsTable)
        await until(pilot, lambda: table.rows_by_id[sid].label == "killed", what="killed")
        assert not alive(pid)
        assert "Killed" in notes(app)


async def test_kill_dialog_of_an_exited_job_says_what_it_kills(registry):
    sid = spawn(registry, "exit 3", name="done-already")
    registry.wait(sid, timeout=10)
    app = make_app(registry)
    async with app.run_test(size=(100, 30)) as pilot:
        await select(pilot, app, sid, indexed=False)
        await pilot.press("k")
        await until(pilot, lambda: isinstance(app.screen, KillScreen))
        shown = " ".join(str(w.render()) for w in app.screen.query("Label, Static"))
        assert "Kill what this job left running?" in shown and "It has ended (exited 3)" in shown
        assert "Its whole process tree gets SIGTERM" not in shown
        await pilot.press("escape")


async def test_kill_dialog_shows_survivors(registry):
    sid = spawn(registry, "sleep 60", name="stubborn")
    app = make_app(registry)
    async with app.run_test(size=(100, 30)) as pilot:
        await select(pilot, app, sid)
        await pilot.press("k")
        await until(pilot, lambda: isinstance(app.screen, KillScreen))
        # the result a failed kill returns (unkillable processes cannot be made on purpose here)
        app.screen.show_result({"status": "error", "survivors": [4242, 4343],
                            "error": "could not kill 2 process(es) of the job: [4242, 4343]"})
        await pilot.pause(0.05)
        status = str(app.screen.query_one("#kill-status").render())
        assert "4242" in status and "4343" in status
        await pilot.press("escape")


async def test_signal_chooser(registry):
    sid = spawn(registry, "trap 'echo got INT; exit 5' INT; while true; do sleep 0.1; done")
    app = make_app(registry)
    async with app.run_test(size=(100, 30)) as pilot:
        await select(pilot, app, sid)
        await pilot.press("s")
        await until(pilot, lambda: isinstance(app.screen, SignalScreen))
        await settle(pilot)
        await pilot.press("i")  # INT
        table = app.query_one(JobsTable)
        await until(pilot, lambda: not table.rows_by_id[sid].running, what="INT handled")
        assert "got INT" in registry.read_log(sid)["output"]
        # choose from the list: TERM on another job
        other = spawn(registry, "sleep 60")
        await select(pilot, app, other)
        await pilot.press("s")
        await until(pilot, lambda: isinstance(app.screen, SignalScreen))
        await settle(pilot)
        await pilot.press("down", "enter")  # second entry: TERM
        await until(pilot, lambda: not table.rows_by_id[other].running, what="TERM")
        assert table.rows_by_id[other].exit_code == -15


async def test_job_actions_say_why_they_do_nothing(registry):
    """The one preamble of the job actions (MainScreen._job_for): no job selected, the job has
    exited, a read-only dashboard. Each case is a toast and no dialog."""
    app = make_app(registry)
    async with app.run_test(size=(100, 30)) as pilot:
        table = app.query_one(JobsTable)
        await pilot.pause(0.3)
        assert app.main.selected is None
        for key in ("k", "s", "r", "p", "c", "C", "ampersand"):
            before = notes(app).count("Select a job first.")
            await pilot.press(key)
            await until(pilot, lambda n=before + 1: notes(app).count("Select a job first.") == n, what=key)
            assert app.screen is app.main, key
        await pilot.press("i")
        await until(pilot, lambda: "Select a running job to type into it." in notes(app), what="i")
        sid = spawn(registry, "true", name="done")
        await until(pilot, lambda: sid in table.rows_by_id and not table.rows_by_id[sid].running, what="exited")
        await select(pilot, app, sid)
        await pilot.press("s")
        await until(pilot, lambda: "The job has exited." in notes(app), what="signal on an exited job")
        await pilot.press("a")
        await until(pilot, lambda: "nothing to attach to" in notes(app), what="attach to an exited job")
        assert app.screen is app.main
        app.main.registry.read_only = True  # what web --read-only's registry says
        try:
            for key in ("k", "s", "r", "t", "a", "i", "n"):
                before = notes(app).count("read-only")
                await pilot.press(key)
                await until(pilot, lambda n=before + 1: notes(app).count("read-only") == n, what=key)
                assert app.screen is app.main, key
            await pilot.press("p")  # looking is allowed
            await until(pilot, lambda: app.screen is not app.main, what="the tree opens")
        finally:
            del app.main.registry.read_only


async def test_new_job_dialog(registry, tmp_path):
    app = make_app(registry)
    async with app.run_test(size=(100, 30)) as pilot:
        await pilot.press("n")
        await until(pilot, lambda: isinstance(app.screen, NewJobScreen))
        await pilot.press(*"echo made-in-dialog; pwd; sleep 30")
        app.screen.query_one("#new-cwd").value = str(tmp_path)
        app.screen.query_one("#new-name").value = "from dialog"
        app.screen.query_one("#new-pty").value = True
        await pilot.press("enter")
        table = app.query_one(JobsTable)
        await until(pilot, lambda: any(r.name == "from dialog" for r in table.rows_by_id.values()))
        row = next(r for r in table.rows_by_id.values() if r.name == "from dialog")
        assert row.pty and row.cwd == str(tmp_path)
        await until(pilot, lambda: app.main.selected == row.session_id, what="new job selected")
        await until(pilot, lambda: "made-in-dialog" in screen_text(app))
        assert str(tmp_path) in screen_text(app)


async def test_new_job_dialog_validates(registry):
    app = make_app(registry)
    async with app.run_test(size=(100, 30)) as pilot:
        await pilot.press("n")
        await until(pilot, lambda: isinstance(app.screen, NewJobScreen))
        await pilot.press("enter")
        assert isinstance(app.screen, NewJobScreen)
        assert "command" in str(app.screen.query_one("#new-error").render())
        await pilot.press("escape")
        await until(pilot, lambda: not isinstance(app.screen, NewJobScreen))


async def test_copy_command_and_id(registry):
    sid = spawn(registry, "sleep 31")
    app = make_app(registry)
    async with app.run_test(size=(100, 30)) as pilot:
        await select(pilot, app, sid)
        await pilot.press("c")
        assert app.clipboard == "sleep 31"
        await pilot.press("C")
        assert app.clipboard == sid


async def test_filter_sort_and_search(registry):
    done = spawn(registry, "true", name="finished-one")
    live = spawn(registry, "sleep 30", name="alpha-runner")
    live2 = spawn(registry, "sleep 31", name="beta-runner")
    app = make_app(registry)
    async with app.run_test(size=(100, 30)) as pilot:
        table = app.query_one(JobsTable)
        await until(pilot, lambda: len(table.rows_by_id) == 3 and not table.rows_by_id[done].running)
        await until(pilot, lambda: len(table_ids(app)) == 3)
        assert table_ids(app) == [live2, live, done]  # newest first
        await pilot.press("f")
        await until(pilot, lambda: done not in table_ids(app), what="finished hidden")
        await pilot.press("f")
        await until(pilot, lambda: done in table_ids(app))
        await pilot.press("o")  # oldest
        assert table.sort_mode == "oldest"
        assert table_ids(app) == [done, live, live2]
        while table.sort_mode != "name":
            await pilot.press("o")
        assert table_ids(app) == [live, live2, done]
        await pilot.press("slash", *"beta")
        await until(pilot, lambda: table_ids(app) == [live2], what="search by name")
        await pilot.press("escape")
        await until(pilot, lambda: len(table_ids(app)) == 3, what="search cleared")
        await pilot.press("slash", *"sleep 30")
        await until(pilot, lambda: table_ids(app) == [live], what="search by command")


async def test_sort_by_cpu_and_status_put_what_needs_a_look_first(registry):
    ok = spawn(registry, "true", name="ok")
    failed = spawn(registry, "exit 3", name="failed")
    running = spawn(registry, "sleep 60", name="running")
    asks = spawn(registry, "read x", name="asks")
    killed = spawn(registry, "sleep 61", name="killed")  # the newest
    registry.kill(killed, grace=0.1)
    app = make_app(registry)
    async with app.run_test(size=(120, 30)) as pilot:
        table = app.query_one(JobsTable)
        await until(pilot, lambda: len(table.rows_by_id) == 5 and table.rows_by_id[asks].waiting
                    and not table.rows_by_id[ok].running and not table.rows_by_id[failed].running,
                    what="every job in its final state")
        while table.sort_mode != "cpu":
            await pilot.press("o")
        await until(pilot, lambda: set(table_ids(app)[:2]) == {running, asks}, what="running jobs first")
        while table.sort_mode != "status":
            await pilot.press("o")
        await until(pilot, lambda: table_ids(app) == [asks, running, failed, killed, ok], what="the status order")


async def test_help_screen_and_footer(registry):
    app = make_app(registry)
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.press("question_mark")
        await until(pilot, lambda: isinstance(app.screen, HelpScreen))
        await until(pilot, lambda: len(app.screen.query("Static")) >= 3, what="help composed")
        console = Console(width=100, record=True, file=io.StringIO())
        for w in app.screen.query("Static"):
            console.print(w.content)
        shown = " ".join(console.export_text().split())
        entries = help_entries()
        assert len(entries) > 20
        for entry in entries:  # generated from the bindings: every one is on the screen
            assert entry.shown in shown and " ".join(entry.does.split()) in shown, entry
            assert entry.section in shown, entry.section  # titles whole ("Log pane (l, Tab)")
        # snapshots keep arriving while a dialog is open
        table = app.screen_stack[0].query_one(JobsTable)
        sid = spawn(registry, "sleep 30", name="while-help")
        await until(pilot, lambda: sid in table.rows_by_id, what="table updated under the dialog")
        await pilot.press("escape")
        await until(pilot, lambda: not isinstance(app.screen, HelpScreen))


async def test_waiting_for_input_and_stats(registry):
    reader = spawn(registry, "read answer; echo got $answer", name="asks")
    repl = spawn(registry, f"{PY} -q -i", pty=True, name="repl")
    busy = spawn(registry, "while :; do :; done", name="busy")
    quiet = spawn(registry, "sleep 60", name="quiet")
    app = make_app(registry)
    async with app.run_test(size=(100, 30)) as pilot:
        table = app.query_one(JobsTable)
        def row(sid):
            return table.rows_by_id.get(sid)

        await until(pilot, lambda: row(reader) and row(reader).waiting, what="read on a pipe")
        await until(pilot, lambda: row(repl) and row(repl).waiting, what="REPL in a PTY", timeout=8)
        await until(pilot, lambda: row(busy) and (row(busy).cpu or 0) > 10, what="CPU of a busy loop")
        assert not row(quiet).waiting and not row(busy).waiting
        assert row(quiet).rss and row(quiet).rss > 100_000
        await until(pilot, lambda: (row(quiet).silence or 0) >= 0.5, what="silence timer")
        assert "P?" in str(table.get_row(repl)[1])


async def open_repl_terminal(pilot, app, registry):
    """A Python REPL job, selected, its terminal pane opened (t) and focused at the prompt."""
    sid = spawn(registry, f"{PY} -q -i", pty=True, name="repl")
    await select(pilot, app, sid)
    await pilot.press("t")
    term = await until(pilot, lambda: app.main.terminal)
    await until(pilot, lambda: app.focused is term and ">>>" in term.screen_text(), what="the pane at the prompt")
    return term


async def test_terminal_pane_types_into_pty_job(registry):
    app = make_app(registry)
    async with app.run_test(size=(100, 30)) as pilot:
        term = await open_repl_terminal(pilot, app, registry)
        await pilot.press(*"6*7", "enter")
        await until(pilot, lambda: "42" in term.screen_text(), what="REPL answer")
        # the table's refreshes leave the log pane hidden: the terminal has the area (and the
        # job's terminal its height) alone
        snap = app.main.snapshot
        await until(pilot, lambda: app.main.snapshot is not snap, what="a refresh of the table")
        await pilot.pause(0.2)
        assert not app.main.log_pane.display
        await until(pilot, lambda: registry.screen(term.session_id).get("rows") == term.size.height,
                    what="the job's terminal as tall as the pane")
        await pilot.press("ctrl+right_square_bracket")
        await until(pilot, lambda: app.main.terminal is None and app.focused is app.query_one(JobsTable))


async def test_the_table_gets_the_focus_back_when_the_job_typed_into_ends(registry):
    older = spawn(registry, "sleep 60", name="older")
    asks = spawn(registry, "read x; echo got $x", name="asks")
    app = make_app(registry)
    async with app.run_test(size=(100, 30)) as pilot:
        await select(pilot, app, asks)
        await pilot.press("i", "y", "enter")  # the answer ends the job: its input bar goes
        table = app.query_one(JobsTable)
        await until(pilot, lambda: not table.rows_by_id[asks].running, what="the job ended")
        await until(pilot, lambda: app.focused is table, what="the table focused again")
        await pilot.press("down")
        await until(pilot, lambda: app.main.selected == older, what="the arrows work at once")


async def test_the_footer_of_the_terminal_pane_and_ctrl_q_there(registry):
    """In the terminal pane every key goes to the job: the footer shows no key of the table
    (/ Search, k Kill), and Ctrl-Q still quits the dashboard."""
    app = make_app(registry)
    async with app.run_test(size=(100, 30)) as pilot:
        await open_repl_terminal(pilot, app, registry)
        footer = app.screen.query_one(Footer)
        await until(pilot, lambda: {k.key_display for k in footer.query(FooterKey)} == {"^]", "^t"},
                    what="only the pane's own keys in the footer")
        await pilot.press("ctrl+q")
        await until(pilot, lambda: not app.is_running, what="Ctrl-Q quits")


async def test_watch_pattern_toast(registry):
    app = make_app(registry)
    async with app.run_test(size=(100, 30)) as pilot:
        await pilot.pause(0.4)  # the first drain primes this dashboard's cursor
        spawn(registry, "sleep 0.3; echo 'deploy READY now'; sleep 30", watch_patterns=["READY"])
        await until(pilot, lambda: "READY" in notes(app), what="watch toast")


async def test_small_terminal_80x24(registry):
    for i in range(12):
        spawn(registry, f"sleep {40 + i}", name=f"job {i}")
    app = make_app(registry)
    async with app.run_test(size=(80, 24)) as pilot:
        table = app.query_one(JobsTable)
        await until(pilot, lambda: len(table.rows_by_id) == 12)
        assert table.size.height >= 5
        assert app.query_one(LogPane).size.height >= 5
        await pilot.click(JobsTable, offset=(10, 3))  # mouse selects a row
        await until(pilot, lambda: app.main.selected == table_ids(app)[2])


@pytest.mark.parametrize("width,height", [(80, 24), (140, 45)])
async def test_footer_and_job_header_fit_the_width(registry, width, height):
    """The footer keeps q Quit and ? Help, the header its state (waiting for input, the log's
    state), whatever the width and however long the job's name and command."""
    long = "echo " + "a-very-long-argument " * 12 + "&& read -p 'Continue? [y/N] ' answer"
    sid = spawn(registry, long, name="installer with a long name", pty=True)
    app = make_app(registry)
    async with app.run_test(size=(width, height)) as pilot:
        await select(pilot, app, sid, indexed=False)
        table = app.query_one(JobsTable)
        await until(pilot, lambda: table.rows_by_id[sid].waiting, what="waiting for input")
        footer = app.screen.query_one(Footer)
        await until(pilot, lambda: len(footer.query(FooterKey)) > 3, what="the footer's keys")
        shown = {f"{k.key_display} {k.description}": k.region for k in footer.query(FooterKey)}
        assert {"q Quit", "? Help"} <= set(shown), shown
        assert all(region.right <= width for region in shown.values()), shown
        title = app.query_one(DetailTitle)
        await until(pilot, lambda: "waiting for input" in title.render().plain, what="the header's state")
        text = title.render()
        assert text.cell_len <= title.content_size.width, text.plain
        assert text.plain.endswith("· log following") and "PTY  waiting for input" in text.plain, text.plain
        if width >= 140:
            assert "installer with a long name  echo a-very-long-argument" in text.plain


def test_a_job_header_whose_state_is_longer_than_the_width_keeps_the_short_id():
    state = Text("  · running 12m  · log filter /icmp_seq=1/ ±1: 111 matching lines · & edits, Esc clears")
    title = fit_title(Text("proc_b663442625e0  ping"), "bash ping.sh", state, 80, Text("b66344  ping"))
    assert title.plain.startswith("b66344  · running 12m  · log filter")


async def test_home_and_end_in_the_jobs_table(registry):
    ids = [spawn(registry, f"sleep {60 + i}", name=f"row {i}") for i in range(30)]
    app = make_app(registry)
    async with app.run_test(size=(100, 30)) as pilot:
        table = app.query_one(JobsTable)
        await until(pilot, lambda: len(table_ids(app)) == 30, what="every job listed")
        await pilot.press("end")
        await until(pilot, lambda: app.main.selected == ids[0], what="the last row (the oldest job)")
        assert table.cursor_row == 29
        await pilot.press("home")
        await until(pilot, lambda: app.main.selected == ids[-1], what="the first row (the newest job)")
        await pilot.press("pagedown")
        await until(pilot, lambda: table.cursor_row > 5, what="a page down")


async def test_closing_the_app_never_stops_jobs(registry, alive):
    sid = spawn(registry, "sleep 60")
    app = make_app(registry)
    async with app.run_test(size=(100, 30)) as pilot:
        await select(pilot, app, sid)
        await pilot.press("q")
    pid = registry.poll(sid)["pid"]
    await asyncio.sleep(0.3)
    assert registry.poll(sid)["status"] == "running" and alive(pid)


@pytest.mark.timeout(120)  # a flood on 2 loaded cores: several 20 s waits in a row
async def test_flood_keeps_keys_responsive_and_repaints_bounded(registry):
    # numbered lines at ~40 MB/s (over the pane's 16 MB/s flood threshold), paced so the test
    # leaves CPU to the rest of a 2-core machine: `seq` alone writes ~1 GB/s and ends early
    sid = spawn(registry, f"{PY} -c {shlex.quote(FLOOD)}", name="flood")
    app = make_app(registry)
    async with app.run_test(size=(100, 30)) as pilot:
        await select(pilot, app, sid, indexed=False)
        pane = app.query_one(LogPane)
        # measured once the log is past its first seconds: while it is small the line count
        # estimate doubles several times a second, and each doubling is a resize (by design)
        await until(pilot, lambda: pane.updates > 3 and pane.total > 4_000_000, timeout=30, what="flood shown")
        u0, r0, t0 = pane.updates, pane.resizes, time.monotonic()
        table = app.query_one(JobsTable)
        slowest = 0.0
        for _ in range(5):
            before = table.sort_mode
            k0 = time.monotonic()
            await pilot.press("o")
            await until(pilot, lambda b=before: table.sort_mode != b, timeout=2, what="key handled")
            slowest = max(slowest, time.monotonic() - k0)
            await pilot.pause(0.3)
        rate = (pane.updates - u0) / (time.monotonic() - t0)
        assert rate <= 30, rate
        # the estimated line count is not pushed into the virtual size (a layout pass of the
        # whole screen) on every update: about once a second at most
        resizes = (pane.resizes - r0) / (time.monotonic() - t0)
        assert resizes <= 3.5 and pane.updates - u0 > 3 * (pane.resizes - r0), (resizes, pane.updates - u0)
        assert slowest < 5.0, slowest  # a key never waits behind the flood (latency: make bench)
        assert len(pane._strips) <= 600 and len(pane._raw) <= pane.size.height + 2
        assert pane.follow and pane.total > 1000
        # scrolling back during the flood pauses on a frozen snapshot; End follows again
        pane.focus()
        await until(pilot, lambda: app.focused is pane)
        # PageUp until the view leaves the flood's tail (on a loaded machine a PageUp can land
        # before the first tail lines have given the pane its height: press again then)
        deadline = time.monotonic() + 40
        while pane.follow:  # paused: on a frozen snapshot, or on the index if the flood slowed
            assert time.monotonic() < deadline, (f"scrolled back: {pane.follow=} {pane._tail_mode=} "
                                                 f"{pane.virtual_size=} {pane.scroll_y=}")
            await pilot.press("pageup")
            await pilot.pause(0.2)
        await until(pilot, lambda: screen_text(app).strip() and all(
            line.strip().isdigit() for line in screen_text(app).splitlines() if line.strip()),
            timeout=40, what="lines of the snapshot")
        shown = [int(x) for x in screen_text(app).split()]
        assert shown == list(range(shown[0], shown[0] + len(shown)))  # consecutive lines, no gaps
        await pilot.press("end")
        try:
            await until(pilot, lambda: pane.follow and not pane._snapshot_mode, timeout=20)
        except AssertionError:
            raise AssertionError(f"End follows the flood again {pane.follow=} {pane._tail_mode=} "
                                 f"{pane._snapshot_mode=} {pane.reader._rate=} {pane.reader._req=} "
                                 f"{screen_text(app)[-200:]!r}") from None


async def test_full_attach_key_reports_when_unavailable(registry):
    sid = spawn(registry, f"{PY} -q -i", pty=True, name="repl")
    app = make_app(registry)
    async with app.run_test(size=(100, 30)) as pilot:
        await select(pilot, app, sid, indexed=False)
        await pilot.press("a")  # a headless app cannot suspend: the attach says so
        await until(pilot, lambda: "Attach" in notes(app), what="attach notification")
        assert app.is_running and registry.poll(sid)["status"] == "running"


async def test_a_corrupt_job_folder_does_not_break_the_table(registry, home):
    good = spawn(registry, "sleep 30", name="good")
    bad = home / "jobs" / "proc_0123456789ab"
    bad.mkdir(mode=0o700)
    (bad / "meta.json").write_text("{not json")
    app = make_app(registry)
    async with app.run_test(size=(100, 30)) as pilot:
        table = app.query_one(JobsTable)
        await until(pilot, lambda: good in table.rows_by_id and "proc_0123456789ab" in table.rows_by_id)
        assert table.rows_by_id["proc_0123456789ab"].label == "corrupt"
        await select(pilot, app, "proc_0123456789ab", indexed=False)
        await pilot.press("k")  # the dialog opens; the core answers with an error, nothing crashes
        await until(pilot, lambda: isinstance(app.screen, KillScreen))
        await confirm(pilot)
        await pilot.pause(0.5)
        assert app.is_running


async def test_table_cell_cache_renders_like_datatable(registry):
    """JobsTable keeps rendered cells across update_cell/sort (DataTable drops them all): the
    lines it paints, mouse metadata included, must be the ones DataTable itself would paint."""
    from textual.widgets import DataTable

    ids = [spawn(registry, f"sleep {30 + i}", name=f"job-{i}") for i in range(4)]
    done = spawn(registry, "true", name="finished")
    app = make_app(registry)
    async with app.run_test(size=(110, 30)) as pilot:
        table = app.query_one(JobsTable)
        await until(pilot, lambda: len(table_ids(app)) == 5 and not table.rows_by_id[done].running)

        def lines():
            return [list(table.render_line(y)) for y in range(table.size.height)]

        def reference():
            table._clear_caches()
            table._render_cell = lambda *a, **k: DataTable._render_cell(table, *a, **k)
            try:
                return lines()
            finally:
                del table._render_cell
                table._clear_caches()

        for _ in range(len(("newest", "oldest", "cpu", "memory", "quiet", "status", "name")) + 1):
            lines()  # fill the cache in this order, then move the rows
            await pilot.press("o")
            await pilot.pause(0.25)  # a snapshot or two: changed cells
            cached = lines()
            metas = {seg.style.meta.get("row") for line in cached for seg in line if seg.style and seg.style.meta}
            assert metas >= {-1, 0, 1, 2, 3, 4}, metas  # header and every row, at their new places
            assert cached == reference(), table.sort_mode
        assert len(table._cell_lines) <= table.CELL_CACHE_MAX
        assert set(ids) <= set(table_ids(app))


def test_readme_keys_table_matches_the_bindings():
    readme = (Path(__file__).resolve().parent.parent / "README.md").read_text()
    start = readme.index("| where | key | does |")
    end = readme.find("\n\n", start)
    assert readme[start:end].strip() == markdown_table(), (
        "README keys table is out of date: paste `python -m hermes_procs.tui.screenshots --keys`")


def test_every_binding_has_help():
    """A key that does something is documented (tooltip = its help text)."""
    from hermes_procs.tui.help import OWNERS

    assert JobsTable in OWNERS and HermesApp in OWNERS  # the app lists the key map's owners
    for cls in OWNERS:
        for binding in cls.__dict__.get("BINDINGS", []):
            assert binding.tooltip, f"{cls.__name__}: {binding.key} has no help text"


async def test_filter_and_sort_are_reactives_bound_to_table_and_top_bar(registry):
    live = spawn(registry, "sleep 30", name="alpha")
    app = make_app(registry)
    async with app.run_test(size=(100, 30)) as pilot:
        table = app.query_one(JobsTable)
        await until(pilot, lambda: live in table.rows_by_id)
        app.main.sort_mode = "cpu"
        app.main.search = "alp"
        await pilot.pause(0.1)
        assert (table.sort_mode, table.search) == ("cpu", "alp")
        topbar = str(app.query_one("#topbar").render())
        assert "sort:cpu" in topbar and "search:alp" in topbar
        app.main.show_finished = False
        await pilot.pause(0.1)
        assert "show:running" in str(app.query_one("#topbar").render())


async def test_input_bar_only_for_running_jobs_and_table_height(registry):
    done = spawn(registry, "true", name="done")
    app = make_app(registry)
    async with app.run_test(size=(100, 30)) as pilot:
        table = app.query_one(JobsTable)
        await until(pilot, lambda: done in table.rows_by_id and not table.rows_by_id[done].running)
        await select(pilot, app, done, indexed=False)
        assert not app.query_one("#input").display  # the screen's CSS applies
        assert 10 <= table.outer_size.height <= 12  # 40 % of the screen (the CSS applies)
        live = spawn(registry, "sleep 30", name="live")
        await select(pilot, app, live, indexed=False)
        await until(pilot, lambda: app.query_one("#input").display, what="input bar for a running job")


async def test_a_three_digit_exit_code_keeps_a_gap_before_the_next_column(registry):
    """" exited 137" filled the 11-cell STATUS column: the PID (or TIME) touched it."""
    sid = spawn(registry, "exit 137", name="oom")
    registry.wait(sid, timeout=10)
    for size in ((120, 30), (90, 30)):  # PID follows STATUS when wide, TIME when narrow
        app = make_app(registry)
        async with app.run_test(size=size) as pilot:
            table = app.query_one(JobsTable)
            await until(pilot, lambda: sid in table.rows_by_id, what="listed")  # noqa: B023 - runs within the iteration
            await pilot.pause(0.2)
            lines = ["".join(seg.text for seg in table.render_line(y)) for y in range(table.size.height)]
            row = next(line for line in lines if "exited 137" in line)
            assert "exited 137 " in row, row


MARKUP_NAME = "build [/] [red on white]X[/] [@click=app.quit]CLICK[/] [link=https://evil.example]y[/link]"


async def test_markup_in_a_job_name_is_shown_as_text_everywhere(registry):
    """A name such as ``build [/]`` crashed the signal dialog (a MarkupError) and others styled it;
    every dialog label and toast shows it as it is."""
    sid = spawn(registry, "sleep 60", name=MARKUP_NAME)
    app = make_app(registry)
    async with app.run_test(size=(140, 30)) as pilot:
        await select(pilot, app, sid)
        await pilot.press("s")
        await until(pilot, lambda: isinstance(app.screen, SignalScreen), what="the signal dialog")
        title = app.screen.query_one(".title")
        shown = str(title.render())
        assert shown == f"Send a signal to {MARKUP_NAME}"[:60], shown
        assert not any(span.style and "@click" in str(span.style) for span in title.render().spans)
        await pilot.press("escape")
        app.notify(f"{MARKUP_NAME} [/]")  # a toast of a job's name, a prompt, an error
        await until(pilot, lambda: MARKUP_NAME in notes(app), what="the toast as text")
        assert app.is_running
