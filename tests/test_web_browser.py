"""`hermes-procs web` in a real browser: Debian's headless chromium driven by Playwright (its
Python package; no browser is ever downloaded).  Skips, saying why, when either is missing
(tools/system-deps.sh installs chromium when run as root)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
from conftest import wait_until
from webserver import Screen, Served, chromium

pytestmark = pytest.mark.timeout(120)
# `make screenshots` sets this to the repository's screenshots/ (README's web.png); otherwise the
# picture goes to the test's temporary folder and a test run leaves the tree clean
SCREENSHOT_DIR = os.environ.get("HERMES_PROCS_SCREENSHOT_DIR")
ECHO = "import sys\nfor line in sys.stdin:\n    print('got:', line.strip(), flush=True)"


def cli_run(home: Path, *args: str) -> str:
    out = subprocess.run([sys.executable, "-m", "hermes_procs", "--home", str(home), "--json", "run", *args],
                         capture_output=True, text=True, timeout=30, check=True).stdout
    return json.loads(out)["session_id"]


def status(home: Path, sid: str) -> str:
    out = subprocess.run([sys.executable, "-m", "hermes_procs", "--home", str(home), "--json", "poll", sid],
                         capture_output=True, text=True, timeout=30).stdout
    return json.loads(out)["status"]


def log_text(home: Path, sid: str) -> str:
    return subprocess.run([sys.executable, "-m", "hermes_procs", "--home", str(home), "log", sid],
                          capture_output=True, text=True, timeout=30).stdout


def test_browser_sees_kills_and_types_into_a_job(tmp_path):
    home = tmp_path / "home"
    victim = cli_run(home, "--name", "victim", "--", "sleep", "300")
    echoer = cli_run(home, "--name", "echoer", "--", sys.executable, "-u", "-c", ECHO)  # newest: selected first
    served = Served(home)
    try:
        with chromium() as browser:
            page = browser.new_page(viewport={"width": 1200, "height": 760})
            shown = Screen(page)
            page.goto(f"http://127.0.0.1:{served.port}/?token={served.token}")
            # xterm.js draws on a canvas: the test reads what the app sent to this page, and
            # checks that the page has written it to its terminal (textual-serve's classes)
            page.wait_for_selector("body.-first-byte .textual-terminal.-connected", timeout=60_000)
            assert "token" not in page.url  # taken out of the address bar: the cookie holds it
            shown.wait_for("victim", "echoer")
            # no click: the page takes keys as soon as the dashboard is there, and the keys
            # typed right behind i go to the input bar it opens (tui/keyroute.py)
            assert page.evaluate("document.activeElement.className").startswith("xterm-helper-textarea")
            page.keyboard.type("ihello-browser")
            page.keyboard.press("Enter")
            wait_until(lambda: "got: hello-browser" in log_text(home, echoer), timeout=30)
            shown.wait_for("got: hello-browser")  # the log pane shows the job's answer
            shown.clear()
            page.keyboard.press("Escape")
            shown.wait_for("Kill")  # the table has the focus: the full footer is drawn again
            shown.clear()
            page.keyboard.press("ArrowDown")
            shown.wait_for(victim)  # the detail title names the selected job by its full id
            shown.clear()
            page.keyboard.press("k")
            shown.wait_for("Kill this job?", victim)
            time.sleep(0.6)  # the confirmation drops keys typed ahead of it (tui/keyroute.py)
            page.keyboard.press("Enter")
            wait_until(lambda: status(home, victim) != "running", timeout=30)
            shown.wait_for("killed")
            page.keyboard.press("ArrowUp")
            page.wait_for_timeout(1000)
            page.screenshot(path=str(Path(SCREENSHOT_DIR or tmp_path) / "web.png"))
    finally:
        served.stop()
        subprocess.run([sys.executable, "-m", "hermes_procs", "--home", str(home), "kill", echoer],
                       capture_output=True, timeout=30)
    assert status(home, echoer) != "running"
