"""`hermes-procs web` in a real browser: Debian's headless chromium driven by Playwright (its
Python package; no browser is ever downloaded).  Skips, saying why, when either is missing
(tools/system-deps.sh installs chromium when run as root)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import wait_until
from webserver import Served

pytestmark = pytest.mark.timeout(120)
CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
                 "--disable-component-update", "--no-first-run", "--disable-sync"]
SCREENSHOT = Path(__file__).resolve().parent.parent / "screenshots" / "web.png"
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
    if not os.access(CHROMIUM, os.X_OK):
        pytest.skip(f"{CHROMIUM} missing (tools/system-deps.sh installs it when run as root)")
    sync_api = pytest.importorskip("playwright.sync_api", reason="playwright (the test extra) is not installed")
    home = tmp_path / "home"
    victim = cli_run(home, "--name", "victim", "--", "sleep", "300")
    echoer = cli_run(home, "--name", "echoer", "--", sys.executable, "-u", "-c", ECHO)  # newest: selected first
    served = Served(home)
    try:
        with sync_api.sync_playwright() as pw:
            browser = pw.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
            try:
                page = browser.new_page(viewport={"width": 1200, "height": 760})
                page.goto(f"http://127.0.0.1:{served.port}/?token={served.token}")
                rows = page.locator(".xterm-rows")
                page.wait_for_function(
                    "() => { const r = document.querySelector('.xterm-rows');"
                    " return r && r.innerText.includes('victim') && r.innerText.includes('echoer'); }",
                    timeout=60_000)
                page.locator(".xterm").click()
                page.keyboard.press("i")
                page.wait_for_timeout(300)  # the input bar takes focus (a UI round trip, not a race on the job)
                page.keyboard.type("hello-browser")
                page.keyboard.press("Enter")
                wait_until(lambda: "got: hello-browser" in log_text(home, echoer), timeout=30)
                page.keyboard.press("Escape")
                page.wait_for_function(
                    "() => document.querySelector('.xterm-rows').innerText.includes('hello-browser')",
                    timeout=30_000)
                page.keyboard.press("Down")
                page.wait_for_timeout(300)
                page.keyboard.press("k")
                page.wait_for_function(
                    "() => document.querySelector('.xterm-rows').innerText.includes('victim')", timeout=10_000)
                page.keyboard.press("y")
                wait_until(lambda: status(home, victim) != "running", timeout=30)
                assert rows.count() == 1
                SCREENSHOT.parent.mkdir(exist_ok=True)
                page.screenshot(path=str(SCREENSHOT))
            finally:
                browser.close()
    finally:
        served.stop()
        subprocess.run([sys.executable, "-m", "hermes_procs", "--home", str(home), "kill", echoer],
                       capture_output=True, timeout=30)
    assert status(home, echoer) != "running"
