"""Regenerate the dashboard screenshots (SVG) in ``./screenshots/`` from the real app running the
demo jobs in a temporary home: ``python -m hermes_procs.tui.screenshots [OUTDIR]``; with
``--keys`` it prints the README's keys table instead (generated from the bindings: help.py).

Shots: ``dashboard.svg`` (table + log of a build), ``filter.svg`` (the build's log filtered),
``times.svg`` (the log with the time each line arrived), ``terminal.svg`` (terminal pane with a
Python REPL), ``scrollback.svg`` (the terminal pane scrolled back), ``input.svg`` (a pipe job
waiting for an answer, with the input bar and its history), ``kill.svg`` (kill confirmation),
``rerun.svg`` (rerun confirmation of a running job), ``help.svg`` (the key map), ``tree.svg`` (the
process tree of a job with workers, one asking a question), ``sparklines.svg`` (that job's CPU,
RSS and output rate under the detail title), ``stack.svg`` (a stack as one unit: its row with
its state above its jobs, one restarted by its policy, and the stack's detail). Every job
started is killed and the stack downed at the end.
"""

from __future__ import annotations

import asyncio
import shutil
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from textual.widgets import Input

from hermes_procs.core import ProcessRegistry

from .app import HermesApp
from .demo import PY, kill_running, start_demo
from .dialogs import KillScreen, RerunScreen
from .help import HelpScreen, markdown_table
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


class _Camera:
    """The running app and the shots taken so far; one method a group of shots, in order."""

    def __init__(self, app: HermesApp, pilot: Any, reg: ProcessRegistry, out: Path) -> None:
        self.app, self.pilot, self.reg, self.out = app, pilot, reg, out
        self.table = app.query_one(JobsTable)
        self.shots: list[Path] = []

    async def select(self, name: str) -> None:
        """Select the job named `name` and wait until its log is shown (indexed)."""
        sid = _id_by_name(self.reg, name)
        self.table.select_id(sid)
        pane = self.app.query_one(LogPane)
        await _until(self.pilot, lambda: self.app.main.selected == sid and pane.reader is not None
                     and pane.reader.index is not None and not pane._tail_mode)
        await self.pilot.pause(0.3)

    def save(self, name: str) -> None:
        self.shots.append(Path(self.app.save_screenshot(filename=name, path=str(self.out))))

    async def log_shots(self) -> None:
        """dashboard.svg, filter.svg, times.svg: the log pane's views."""
        # 1. the table and the log of the build (colours, \r progress collapsed)
        await self.select("build")
        await self.pilot.pause(0.6)
        self.save("dashboard.svg")

        # 1b. the filter: only the lines of the build that match, with a line of context
        await self.pilot.press("ampersand")
        await self.pilot.press(*r"warning|tui/\w+")
        self.app.query_one("#filter-context", Input).value = "1"
        self.app.query_one("#filter-re").focus()
        await self.pilot.press("enter")
        pane = self.app.query_one(LogPane)
        await _until(self.pilot, lambda: pane._filter is not None and pane._filter.done)
        await self.pilot.pause(0.3)
        self.save("filter.svg")
        await self.pilot.press("ampersand", "escape")
        await _until(self.pilot, lambda: pane._filter is None)
        self.table.focus()

        # 1c. the log of the ping job with the time each line arrived (T)
        await self.select("ping")
        await _until(self.pilot, lambda: pane.total >= 8)
        pane.focus()
        await self.pilot.press("T")
        await _until(self.pilot, lambda: pane._times and all(t is not None for t in pane._times))
        await self.pilot.pause(0.3)
        self.save("times.svg")
        await self.pilot.press("T")
        self.table.focus()

    async def input_shot(self) -> None:
        """input.svg: a pipe job asking a question, the input bar and its history."""
        # 2. a pipe job asking a question: the input bar and its history
        await self.select("reset staging")
        await self.pilot.press("i")
        await self.pilot.press(*"maybe later")
        await self.pilot.pause(0.2)
        self.save("input.svg")
        await self.pilot.press("escape")
        self.app.main.input_bar.line.value = ""

    async def terminal_shots(self) -> None:
        """terminal.svg, scrollback.svg: the terminal pane with a Python REPL."""
        # 3. the terminal pane with the Python REPL
        self.table.focus()
        await self.select("python REPL")
        await self.pilot.press("t")
        main = self.app.main
        await _until(self.pilot, lambda: main.terminal is not None and ">>>" in main.terminal.screen_text())
        term = main.terminal
        assert term is not None  # the wait above saw it
        for line in ("import sys, platform", "platform.python_version()",
                     "[n * n for n in range(12)]", "{'jobs': 5, 'waiting': True}"):
            await self.pilot.press(*line, "enter")
            await self.pilot.pause(0.25)
        await _until(self.pilot, lambda: "121" in term.screen_text())
        await self.pilot.pause(0.3)
        self.save("terminal.svg")
        # 3b. scrolled back through the REPL's history (Shift-PgUp)
        await self.pilot.press(*"print('\\n'.join(f'{n:>2} squared is {n * n}' for n in range(1, 41)))", "enter")
        await _until(self.pilot, lambda: "40 squared is 1600" in term.screen_text())
        await self.pilot.pause(0.3)
        await self.pilot.press("shift+pageup", "shift+pageup")
        await _until(self.pilot, lambda: term.back > term.engine.rows)
        await self.pilot.pause(0.2)
        self.save("scrollback.svg")
        await self.pilot.press("shift+pagedown", "shift+pagedown", "shift+pagedown")
        await _until(self.pilot, lambda: term.back == 0)
        await self.pilot.press("ctrl+right_square_bracket")
        await _until(self.pilot, lambda: self.app.main.terminal is None)

    async def dialog_shots(self) -> None:
        """kill.svg, rerun.svg, help.svg: the confirmations and the key map."""
        # 4. the kill confirmation
        await self.select("ping")
        await self.pilot.press("k")
        await _until(self.pilot, lambda: isinstance(self.app.screen, KillScreen))
        await self.pilot.pause(0.2)
        self.save("kill.svg")
        await self.pilot.press("n")
        await _until(self.pilot, lambda: not isinstance(self.app.screen, KillScreen))

        # 4b. the rerun confirmation of a running job
        await self.pilot.press("r")
        await _until(self.pilot, lambda: isinstance(self.app.screen, RerunScreen))
        await self.pilot.pause(0.2)
        self.save("rerun.svg")
        await self.pilot.press("n")
        await _until(self.pilot, lambda: not isinstance(self.app.screen, RerunScreen))

        # 5. help
        await self.pilot.press("question_mark")
        await _until(self.pilot, lambda: isinstance(self.app.screen, HelpScreen))
        await self.pilot.pause(0.2)
        self.save("help.svg")
        await self.pilot.press("escape")



async def _shoot(reg: ProcessRegistry, out: Path) -> list[Path]:
    app = HermesApp(reg, sample_interval=0.5, home_label="~/.hermes/procs")  # not the temporary home
    async with app.run_test(size=SIZE) as pilot:
        camera = _Camera(app, pilot, reg, out)
        await _until(pilot, lambda: len(camera.table.rows_by_id) >= 5)
        await camera.log_shots()
        await camera.input_shot()
        await camera.terminal_shots()
        await camera.dialog_shots()
        # 6, 7. the process tree of a job with workers, one of them asking a question; its sparklines
        await _tree_shot(pilot, app, reg, camera.select, camera.save)
        await _stack_shot(pilot, app, reg, camera.save)
    return camera.shots


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


# the stack of stack.svg: a database that takes a moment, an API that waits for it, a worker
# that crashes now and then (restarted by its policy)
_STACK = """
name = "shop"
[jobs.db]
command = "python3 db.py {db}"
ready = {{ port = {db} }}
[jobs.api]
command = "python3 -m http.server {api} --bind 127.0.0.1"
depends_on = ["db"]
ready = {{ http = "http://127.0.0.1:{api}/" }}
[jobs.worker]
command = "python3 worker.py"
depends_on = ["api"]
restart = "always"
backoff = 0.5
"""
_STACK_DB = """
import socket, sys, time
time.sleep(0.5)
s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(("127.0.0.1", int(sys.argv[1]))); s.listen()
print("db: ready to accept connections", flush=True)
while True:
    s.accept()[0].close()
"""
_STACK_WORKER = """
import time
for n in range(4):
    print(f"worker: job {n} done", flush=True)
    time.sleep(0.6)
raise SystemExit("worker: lost the queue (crash)")
"""


def _free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


async def _stack_shot(pilot, app: HermesApp, reg: ProcessRegistry, save) -> None:
    """8. stack.svg: the stack's row (state, jobs ready, restarts) above its jobs, selected."""
    from .stack_view import header_id

    folder = Path(reg.home) / "shop"
    folder.mkdir()
    (folder / "hermes-procs.toml").write_text(_STACK.format(db=_free_port(), api=_free_port()))
    (folder / "db.py").write_text(_STACK_DB)
    (folder / "worker.py").write_text(_STACK_WORKER)
    result = reg.up(str(folder), wait=True, timeout=30)
    if result.get("status") != "ok":
        raise RuntimeError(f"the stack shot's stack did not come up: {result}")

    def restarted() -> bool:
        rows = reg.stacks("shop")
        stack = rows[0] if isinstance(rows, list) and rows else {}
        worker: dict[str, Any] = next((j for j in stack.get("jobs", []) if j["name"] == "worker"), {})
        return stack.get("state") == "up" and worker.get("restarts", 0) >= 1 and worker.get("state") == "ready"

    await _until(pilot, restarted, timeout=30)
    table = app.query_one(JobsTable)
    await _until(pilot, lambda: header_id("shop") in table.rows_by_id)
    table.focus()
    table.select_id(header_id("shop"))
    await _until(pilot, lambda: app.main.selected == header_id("shop"))
    await pilot.pause(0.6)
    save("stack.svg")


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv == ["--keys"]:  # the README's keys table, from the bindings (help.py)
        print(markdown_table())
        return 0
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
        stacks = reg.stacks()
        for stack in stacks if isinstance(stacks, list) else []:
            reg.down(stack["stack"])
        kill_running(reg, grace=0.2)
        shutil.rmtree(tmp, ignore_errors=True)
    for path in shots:
        print(path)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
