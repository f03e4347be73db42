"""Regenerate the dashboard screenshots (SVG) in ``./screenshots/`` from the real app running the
demo jobs in a temporary home: ``python -m hermes_procs.tui.screenshots [OUTDIR]``.

Shots: ``dashboard.svg`` (table + log of a build), ``filter.svg`` (the build's log filtered),
``times.svg`` (the log with the time each line arrived), ``terminal.svg`` (terminal pane with a
Python REPL), ``scrollback.svg`` (the terminal pane scrolled back), ``input.svg`` (a pipe job
waiting for an answer, with the input bar and its history), ``kill.svg`` (kill confirmation),
``rerun.svg`` (rerun confirmation of a running job), ``help.svg`` (the key map), ``tree.svg`` (the
process tree of a job with workers, one asking a question), ``sparklines.svg`` (that job's CPU,
RSS and output rate under the detail title).  Every job started is killed at the
end.
"""

from __future__ import annotations

import asyncio
import shutil
import sys
import tempfile
import time
from pathlib import Path

from textual.widgets import Input

from hermes_procs.core import ProcessRegistry

from .app import HermesApp
from .demo import PY, start_demo
from .dialogs import KillScreen, RerunScreen
from .help import HelpScreen
from .jobs_table import JobsTable
from .log_pane import LogPane
from .proc_tree import TreeScreen
from .sparklines import TrendBar

SIZE = (120, 34)


async def _until(pilot, predicate, timeout: float = 15.0) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            raise RuntimeError(f"screenshot setup timed out waiting for {predicate}")
        await pilot.pause(0.05)


def _id_by_name(reg: ProcessRegistry, name: str) -> str:
    jobs = reg.list()
    for job in jobs if isinstance(jobs, list) else []:
        if job.get("name") == name:
            return job["session_id"]
    raise KeyError(name)


async def _shoot(reg: ProcessRegistry, out: Path) -> list[Path]:
    shots: list[Path] = []
    app = HermesApp(reg, sample_interval=0.5, home_label="~/.hermes/procs")  # not the temporary home
    async with app.run_test(size=SIZE) as pilot:
        table = app.query_one(JobsTable)
        await _until(pilot, lambda: len(table.rows_by_id) >= 5)

        async def select(name: str) -> None:
            sid = _id_by_name(reg, name)
            table.select_id(sid)
            pane = app.query_one(LogPane)
            await _until(pilot, lambda: app.main.selected == sid and pane.reader is not None
                         and pane.reader.index is not None and not pane._tail_mode)
            await pilot.pause(0.3)

        def save(name: str) -> None:
            shots.append(Path(app.save_screenshot(filename=name, path=str(out))))

        # 1. the table and the log of the build (colours, \r progress collapsed)
        await select("build")
        await pilot.pause(0.6)
        save("dashboard.svg")

        # 1b. the filter: only the lines of the build that match, with a line of context
        await pilot.press("ampersand")
        await pilot.press(*r"warning|tui/\w+")
        app.query_one("#filter-context", Input).value = "1"
        app.query_one("#filter-re").focus()
        await pilot.press("enter")
        pane = app.query_one(LogPane)
        await _until(pilot, lambda: pane._filter is not None and pane._filter.done)
        await pilot.pause(0.3)
        save("filter.svg")
        await pilot.press("ampersand", "escape")
        await _until(pilot, lambda: pane._filter is None)
        table.focus()

        # 1c. the log of the ping job with the time each line arrived (T)
        await select("ping")
        await _until(pilot, lambda: pane.total >= 8)
        pane.focus()
        await pilot.press("T")
        await _until(pilot, lambda: pane._times and all(t is not None for t in pane._times))
        await pilot.pause(0.3)
        save("times.svg")
        await pilot.press("T")
        table.focus()

        # 2. a pipe job asking a question: the input bar and its history
        await select("reset staging")
        await pilot.press("i")
        await pilot.press(*"maybe later")
        await pilot.pause(0.2)
        save("input.svg")
        await pilot.press("escape")
        app.main.input_bar.line.value = ""

        # 3. the terminal pane with the Python REPL
        table.focus()
        await select("python REPL")
        await pilot.press("t")
        await _until(pilot, lambda: app.main.terminal is not None and ">>>" in app.main.terminal.screen_text())
        term = app.main.terminal
        assert term is not None  # the wait above saw it
        for line in ("import sys, platform", "platform.python_version()",
                     "[n * n for n in range(12)]", "{'jobs': 5, 'waiting': True}"):
            await pilot.press(*line, "enter")
            await pilot.pause(0.25)
        await _until(pilot, lambda: "121" in term.screen_text())
        await pilot.pause(0.3)
        save("terminal.svg")
        # 3b. scrolled back through the REPL's history (Shift-PgUp)
        await pilot.press(*"print('\\n'.join(f'{n:>2} squared is {n * n}' for n in range(1, 41)))", "enter")
        await _until(pilot, lambda: "40 squared is 1600" in term.screen_text())
        await pilot.pause(0.3)
        await pilot.press("shift+pageup", "shift+pageup")
        await _until(pilot, lambda: term.back > term.engine.rows)
        await pilot.pause(0.2)
        save("scrollback.svg")
        await pilot.press("shift+pagedown", "shift+pagedown", "shift+pagedown")
        await _until(pilot, lambda: term.back == 0)
        await pilot.press("ctrl+right_square_bracket")
        await _until(pilot, lambda: app.main.terminal is None)

        # 4. the kill confirmation
        await select("ping")
        await pilot.press("k")
        await _until(pilot, lambda: isinstance(app.screen, KillScreen))
        await pilot.pause(0.2)
        save("kill.svg")
        await pilot.press("n")
        await _until(pilot, lambda: not isinstance(app.screen, KillScreen))

        # 4b. the rerun confirmation of a running job
        await pilot.press("r")
        await _until(pilot, lambda: isinstance(app.screen, RerunScreen))
        await pilot.pause(0.2)
        save("rerun.svg")
        await pilot.press("n")
        await _until(pilot, lambda: not isinstance(app.screen, RerunScreen))

        # 5. help
        await pilot.press("question_mark")
        await _until(pilot, lambda: isinstance(app.screen, HelpScreen))
        await pilot.pause(0.2)
        save("help.svg")
        await pilot.press("escape")

        # 6, 7. the process tree of a job with workers, one of them asking a question; its sparklines
        await _tree_shot(pilot, app, reg, select, save)
    return shots


# a job with a few processes for the tree shot: a watcher, a busy worker and the script itself
# asking a question (started last, so the other shots do not show it)
_DEPLOY = r"""
echo 'deploying hermes-demo 1.4.2'
(while true; do sleep 0.3; done) &
(exec -a python3 {py} worker.py --jobs 4) &
read -p 'Deploy to production? [y/N] ' answer
"""
_WORKER = r"""
import random, time
held, n = [], 0
while True:
    n += 1
    heavy = int(time.monotonic() / 3) % 2  # three busy seconds, three light ones
    sum(range(random.randrange(2000000, 4000000) if heavy else random.randrange(20000, 200000)))
    if n % 4 == 0:
        print(f"batch {n}: {random.randrange(100, 999)} rows ok", flush=True)
    if len(held) < 300:
        held.append(bytearray(100000))  # a slow climb the RSS sparkline shows
    time.sleep(0.03)
"""


async def _tree_shot(pilot, app: HermesApp, reg: ProcessRegistry, select, save) -> None:
    folder = Path(reg.home) / "demo"
    (folder / "deploy.sh").write_text(_DEPLOY.lstrip().format(py=PY))
    (folder / "worker.py").write_text(_WORKER.lstrip())
    started = reg.spawn("bash deploy.sh --prod", cwd=str(folder), name="deploy")
    if started.get("status") != "running":
        raise RuntimeError(f"the tree shot's job failed to start: {started}")
    table = app.query_one(JobsTable)
    await _until(pilot, lambda: started["session_id"] in table.rows_by_id)
    table.focus()
    await select("deploy")
    await pilot.press("p")
    await _until(pilot, lambda: isinstance(app.screen, TreeScreen))
    screen = app.screen
    assert isinstance(screen, TreeScreen)
    await _until(pilot, lambda: len(screen.processes) >= 4 and any(p["awaiting_input"] for p in screen.processes))
    await pilot.pause(2.2)  # two more looks: CPU figures over a second, not since start
    save("tree.svg")
    await pilot.press("escape")

    # 7. the same job's sparklines (CPU, RSS, output rate) under the detail title
    bar = app.query_one(TrendBar)
    await _until(pilot, lambda: bar.trend is not None and len(bar.trend.cpu) >= 36, timeout=40)
    save("sparklines.svg")


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    out = Path(argv[0]) if argv else Path("screenshots")  # `make screenshots` runs at the repo root
    out.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix="hp-shots-"))
    reg = ProcessRegistry(home=tmp / "home")
    try:
        for result in start_demo(reg):
            if result.get("status") != "running":
                raise RuntimeError(f"demo job failed to start: {result}")
        time.sleep(3.5)  # let the build, the ping and the tests produce output
        shots = asyncio.run(_shoot(reg, out))
    finally:
        jobs = reg.list()
        for job in jobs if isinstance(jobs, list) else []:
            if job.get("status") == "running":
                reg.kill(job["session_id"], grace=0.2)
        shutil.rmtree(tmp, ignore_errors=True)
    for path in shots:
        print(path)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
