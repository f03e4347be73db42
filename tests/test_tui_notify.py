"""Notifications that reach the human: the bell and OSC 9 / OSC 777 written through the app's
driver (a real Textual headless driver; what it is asked to write is recorded) when a job starts
waiting for input or ends non-zero; once per episode; turned off by the config file."""

from __future__ import annotations

import sys

import pytest
from pilot import confirm, notes, spawn, until

from hermes_procs.tui.app import HermesApp
from hermes_procs.tui.config import Config, load_config
from hermes_procs.tui.exit_toasts import ExitToasts
from hermes_procs.tui.jobs_table import JobsTable
from hermes_procs.tui.notify import NotifySettings, alert, desktop_sequence

pytestmark = [pytest.mark.anyio, pytest.mark.timeout(60)]
PY = sys.executable
# asks, reads an answer, waits for the file `go` in its cwd, asks again
ASKER = """
import os, sys, time
print("Proceed with the install? [y/N]", flush=True)
sys.stdin.readline()
print("installing", flush=True)
while not os.path.exists("go"):
    time.sleep(0.05)
print("Overwrite config? [y/N]", flush=True)
sys.stdin.readline()
"""


@pytest.fixture(autouse=True)
def _not_in_tmux(monkeypatch):
    monkeypatch.delenv("TMUX", raising=False)  # the sequences unwrapped (the wrapping: its own test)


def record_writes(app) -> list[str]:
    """What the app asks its driver to write from now on (the driver still writes it)."""
    written: list[str] = []
    driver = app._driver
    original = driver.write

    def write(data: str) -> None:
        written.append(data)
        original(data)

    driver.write = write
    return written


def bells(written: list[str]) -> int:
    return sum(w.startswith("\a") for w in written)  # BEL also ends an OSC sequence


def app_with(registry, **notify) -> HermesApp:
    return HermesApp(registry, sample_interval=0.2, config=Config(notify=NotifySettings(**notify)))


async def started(pilot, app) -> list[str]:
    written = record_writes(app)
    await until(pilot, lambda: app.main.snapshot is not None, what="the first snapshot")
    return written


async def test_waiting_for_input_rings_and_notifies_once_per_episode(registry, tmp_path):
    app = app_with(registry)
    async with app.run_test(size=(120, 34)) as pilot:
        written = await started(pilot, app)
        sid = spawn(registry, f"{PY} -c '{ASKER}'", name="installer", cwd=str(tmp_path))
        first = "\x1b]9;hermes-procs: installer is waiting for input: Proceed with the install? [y/N]\x07"
        await until(pilot, lambda: first in "".join(written), what="the OSC 9 notification")
        assert "\a" + first in "".join(written)  # the bell, then the notification
        await until(pilot, lambda: "installer: waiting for input Proceed with the install? [y/N]" in notes(app),
                    what="the toast")
        table = app.query_one(JobsTable)
        n = len(table.rows_by_id)
        for _ in range(5):  # more samples of the same episode: nothing more
            await until(pilot, lambda: app.main.snapshot is not None and app.main.snapshot.jobs, what="sample")
            await pilot.pause(0.25)
        assert "".join(written).count("\x1b]9;") == 1 and bells(written) == 1
        # answered: the episode ends; the next question is a new one
        assert registry.submit(sid, "y")["status"] == "ok"
        await until(pilot, lambda: not table.rows_by_id[sid].waiting, what="no longer waiting")
        (tmp_path / "go").touch()
        await until(pilot, lambda: "Overwrite config?" in "".join(written), what="the second episode")
        assert "".join(written).count("\x1b]9;") == 2 and len(table.rows_by_id) == n


async def test_no_alert_for_the_job_the_human_is_typing_into(registry, tmp_path):
    script = "import os, sys, time\nwhile not os.path.exists('go'):\n    time.sleep(0.05)\ninput('Name? ')\n"
    app = app_with(registry)
    async with app.run_test(size=(120, 34)) as pilot:
        written = await started(pilot, app)
        sid = spawn(registry, f"{PY} -c \"{script}\"", name="chat", cwd=str(tmp_path))
        table = app.query_one(JobsTable)
        await until(pilot, lambda: sid in table.rows_by_id, what="listed")
        table.select_id(sid)
        await until(pilot, lambda: app.main.selected == sid, what="selected")
        await pilot.press("i")
        await until(pilot, lambda: app.main.input_bar.line.has_focus, what="the input bar focused")
        (tmp_path / "go").touch()
        await until(pilot, lambda: table.rows_by_id[sid].waiting, what="waiting")
        await pilot.pause(0.5)
        assert written == [] and "waiting for input" not in notes(app).lower()


async def test_failures_alert_and_successes_and_our_own_kills_do_not(registry):
    app = app_with(registry, desktop="osc777")
    async with app.run_test(size=(120, 34)) as pilot:
        written = await started(pilot, app)
        ok = spawn(registry, "sleep 0.3", name="fine")
        bad = spawn(registry, "sleep 0.3; exit 3", name="broken")
        table = app.query_one(JobsTable)
        await until(pilot, lambda: all(s in table.rows_by_id and not table.rows_by_id[s].running
                                       for s in (ok, bad)), what="both ended")
        await until(pilot, lambda: "\x1b]777;notify;hermes-procs;broken: exited 3\x07" in "".join(written),
                    what="the OSC 777 notification")
        assert "fine" not in "".join(written) and bells(written) == 1
        # killed from elsewhere (the CLI, an agent): an alert; killed from here: none
        other = spawn(registry, "sleep 60", name="victim")
        ours = spawn(registry, "sleep 60", name="mine")
        await until(pilot, lambda: other in table.rows_by_id and ours in table.rows_by_id, what="listed")
        registry.kill(other, grace=0.2)
        await until(pilot, lambda: "victim: killed" in "".join(written), what="the killed alert")
        table.select_id(ours)
        await until(pilot, lambda: app.main.selected == ours, what="selected")
        await pilot.press("k")
        await confirm(pilot)
        await until(pilot, lambda: not table.rows_by_id[ours].running, what="our kill")
        await pilot.pause(0.5)
        assert "mine" not in "".join(written)


async def test_the_config_turns_alerts_off_and_toasts_stay(registry, tmp_path):
    path = tmp_path / "config.toml"
    path.write_text('[notify]\non = []\nbell = false\ndesktop = "off"\n')
    config = load_config(path)
    assert not config.problems and config.notify == NotifySettings(on=frozenset(), bell=False, desktop="off")
    app = HermesApp(registry, sample_interval=0.2, config=config)
    async with app.run_test(size=(120, 34)) as pilot:
        written = await started(pilot, app)
        bad = spawn(registry, "sleep 0.3; exit 5", name="broken")
        await until(pilot, lambda: "exited 5" in notes(app), what="the toast")
        asker = spawn(registry, f"{PY} -c 'input(\"Sure? \")'", name="asker")
        await until(pilot, lambda: "Waiting for input" in notes(app) or "asker: waiting" in notes(app),
                    what="the waiting toast")
        assert "\a" not in "".join(written) and "\x1b]" not in "".join(written)
        assert bad and asker
    # an alert after the app has gone raises nothing (its driver has left application mode)
    assert isinstance(alert(app, NotifySettings(), "failure", "hermes-procs", "late"), str)


def test_notify_settings_from_the_config_file(tmp_path):
    path = tmp_path / "config.toml"
    path.write_text("")
    assert load_config(path).notify == NotifySettings()  # input and failure, bell, OSC 9
    path.write_text('[notify]\non = ["failure"]\ndesktop = "osc777"\n')
    cfg = load_config(path)
    assert cfg.notify == NotifySettings(on=frozenset({"failure"}), bell=True, desktop="osc777")
    path.write_text("notify_bell = false\n")  # the older spelling
    assert load_config(path).notify.bell is False
    path.write_text('[notify]\non = ["exit"]\nbell = "loud"\ndesktop = "growl"\n')
    cfg = load_config(path)
    assert cfg.notify == NotifySettings() and len(cfg.problems) == 3
    assert any("notify.desktop must be one of 'osc9', 'osc777', 'off'" in p for p in cfg.problems)


def test_sequences_drop_control_characters_and_wrap_for_tmux():
    # the one sanitiser: a job's escapes shown as text, never sent
    assert desktop_sequence("osc9", "t", "a\x1b]52;c;evil\x07b\nc\x9b") == "\x1b]9;t: a\\x1b]52;c;evil\\x07b c\\x9b\x07"
    assert desktop_sequence("osc777", "a;b", "x") == "\x1b]777;notify;a,b;x\x07"
    assert desktop_sequence("off", "t", "x") == ""
    assert desktop_sequence("osc9", "t", "x", in_tmux=True) == "\x1bPtmux;\x1b\x1b]9;t: x\x07\x1b\\"


async def test_many_exits_at_once_are_one_summary_toast(registry):
    """Ten jobs ending together: the first three toasted one by one, the rest summed up in one
    toast naming the failures, and one alert for them (not one per job)."""
    app = app_with(registry)
    async with app.run_test(size=(120, 34)) as pilot:
        written = await started(pilot, app)
        app.main._exit_toasts = ExitToasts(window=1.5)  # a shorter window than the 5 s default
        gate = f"{registry.home}/go"
        sids = [spawn(registry, f"while [ ! -e {gate} ]; do sleep 0.02; done; exit {2 if i % 3 == 0 else 0}",
                      name=f"job{i}") for i in range(10)]
        table = app.query_one(JobsTable)
        await until(pilot, lambda: all(s in table.rows_by_id for s in sids), what="all listed")
        open(gate, "w").close()
        await until(pilot, lambda: "more jobs ended" in notes(app), what="the summary toast")
        one_by_one = [n for n in notes(app).splitlines() if n.startswith("Job ")]
        assert 1 <= len(one_by_one) <= 3, notes(app)
        summary = next(n for n in notes(app).splitlines() if "more jobs ended" in n)
        held = 10 - len(one_by_one)
        assert summary.startswith(f"{held} more jobs ended"), summary
        failed_held = 4 - sum("exited 2" in n for n in one_by_one)
        assert f"{held - failed_held} exit 0" in summary
        if failed_held:
            assert f"{failed_held} failed: job" in summary and "(exited 2)" in summary
        assert bells(written) == (4 - failed_held) + (1 if failed_held else 0)  # failures alone ring


def test_exit_toasts_hold_past_the_limit_and_open_a_new_window_after_a_flush():
    now = [100.0]
    toasts = ExitToasts(limit=2, window=5.0, clock=lambda: now[0])
    rows = [object() for _ in range(5)]
    assert [toasts.ended(r) for r in rows] == [True, True, False, False, False]
    assert toasts.wait() == 5.0
    now[0] += 5.0
    assert toasts.flush() == rows[2:] and toasts.flush() == []
    assert toasts.ended(rows[0]) is True  # the summary counted as the window's first toast
    assert toasts.ended(rows[1]) is False
    now[0] += 5.0
    assert toasts.ended(rows[2]) is False  # something is held: it joins the next summary, in order
    assert toasts.flush() == rows[1:3]
