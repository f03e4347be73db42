"""`hermes-procs web` against the terminal dashboard, in the same run:

(a) first paint: from opening the printed URL in headless Chromium (Debian's, driven by
    Playwright) to the jobs table reaching the page, against starting the dashboard in a tmux
    pane until its table shows the same jobs;
(b) CPU while the selected job floods (`seq`): the web side's server plus its dashboard
    process, against the terminal dashboard's process, each over the same window, the floods
    taking turns (SIGSTOP/SIGCONT) as in b_dashboard.

Skipped (one row saying why) without /usr/bin/chromium or the playwright package.
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import time

import psutil

from hermes_procs.core import ProcessRegistry

from .b_dashboard import FLOOD, Tmux, _app_proc, _stop, wait_screen
from .common import PY, Config, Row, interleave, temp_home

CHROMIUM = "/usr/bin/chromium"
ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
        "--disable-component-update", "--no-first-run", "--disable-sync"]
URL_RE = re.compile(r"http://127\.0\.0\.1:\d+/\?token=[\w-]+")


def _serve(home) -> tuple[subprocess.Popen, str]:
    proc = subprocess.Popen([PY, "-m", "hermes_procs", "--home", str(home), "web", "--port", "0"],
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    assert proc.stdout is not None
    for line in proc.stdout:
        match = URL_RE.search(line)
        if match:
            return proc, match.group(0)
    raise RuntimeError("hermes-procs web printed no URL")


def _tree_cpu(root: psutil.Process) -> float:
    total = 0.0
    for p in [root, *root.children(recursive=True)]:
        try:
            if p.name() in ("seq", "sleep"):
                continue
            t = p.cpu_times()
            total += t.user + t.system
        except psutil.Error:
            pass
    return total


def _cpu_window(root: psutil.Process, seconds: float) -> float:
    c0, t0 = _tree_cpu(root), time.monotonic()
    time.sleep(seconds)
    return 100 * (_tree_cpu(root) - c0) / (time.monotonic() - t0)


class _Page:
    """One browser page on the dashboard; `text()` is what the app sent it, as plain text."""

    def __init__(self, browser, url: str) -> None:
        from hermes_procs.core.supervisor.text import strip_ansi

        self._strip = strip_ansi
        self.frames: list[bytes] = []
        self.page = browser.new_page(viewport={"width": 1200, "height": 760})
        self.page.on("websocket", lambda ws: ws.on(
            "framereceived", lambda p: self.frames.append(p if isinstance(p, bytes) else p.encode())))
        self.t0 = time.perf_counter()
        self.page.goto(url)

    def wait_for(self, word: str, timeout: float = 30.0) -> float:
        while word not in self._strip(b"".join(self.frames).decode("utf-8", "replace")):
            if time.perf_counter() - self.t0 > timeout:
                raise RuntimeError(f"the page never showed {word!r}")
            self.page.wait_for_timeout(5)
        return time.perf_counter() - self.t0


def run(cfg: Config) -> list[Row]:
    if not os.access(CHROMIUM, os.X_OK):
        return [Row("14 web dashboard", "", error=f"{CHROMIUM} missing (tools/system-deps.sh installs it as root)")]
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        return [Row("14 web dashboard", "", error="playwright not installed (pip install -e '.[test]')")]
    rows: list[Row] = []
    with temp_home() as home, sync_playwright() as pw:
        reg = ProcessRegistry(home=home)
        for i in range(3):
            reg.spawn("sleep 3600", name=f"quiet{i}")
        marker = "quiet0"
        server, url = _serve(home)
        browser = pw.chromium.launch(executable_path=CHROMIUM, args=ARGS)
        try:
            def web_paint() -> float:
                page = _Page(browser, url)
                try:
                    return 1000 * page.wait_for(marker)
                finally:
                    page.page.close()

            def tty_paint() -> float:
                t0 = time.perf_counter()
                tm = Tmux(f"{PY} -m hermes_procs --home {home}")
                try:
                    wait_screen(tm, lambda lines: any(marker in line for line in lines), timeout=30)
                    return 1000 * (time.perf_counter() - t0)
                finally:
                    tm.kill()

            web, tty = interleave(cfg.runs, web_paint, tty_paint)
            rows.append(Row("14a web first paint (URL opened -> jobs table)", "ms", web,
                            "terminal dashboard start in tmux", tty, "report"))
            rows.append(_flood_cpu(cfg, reg, home, browser, url, server))
        finally:
            browser.close()
            server.send_signal(signal.SIGINT)
            try:
                server.wait(timeout=20)
            except subprocess.TimeoutExpired:
                server.kill()
    return rows


def _flood_cpu(cfg: Config, reg: ProcessRegistry, home, browser, url: str, server: subprocess.Popen) -> Row:
    """CPU of each side while its selected job floods, the floods taking turns."""
    flood = reg.spawn(FLOOD, name="flood")  # the newest job: selected first on both sides
    fpid = flood["pid"]
    _stop([fpid], signal.SIGSTOP)
    page = _Page(browser, url)
    tm = Tmux(f"{PY} -m hermes_procs --home {home}")
    try:
        page.wait_for("flood")
        wait_screen(tm, lambda lines: any("flood" in line for line in lines[:6]), timeout=30)
        app = _app_proc(tm.pane_pid(), "hermes_procs")
        web_root = psutil.Process(server.pid)
        window = 2.0 if cfg.full else 1.0

        def measure(root_cpu) -> float:
            _stop([fpid], signal.SIGCONT)
            time.sleep(0.3)
            try:
                return root_cpu()
            finally:
                _stop([fpid], signal.SIGSTOP)

        web, tty = interleave(cfg.runs, lambda: measure(lambda: _cpu_window(web_root, window)),
                              lambda: measure(lambda: _cpu_window(app, window)))
        return Row("14b web server + its dashboard CPU, selected job floods", "% core", web,
                   "terminal dashboard, same flood", tty, "report",
                   note="server (aiohttp, textual-serve) and the per-browser dashboard process together")
    finally:
        _stop([fpid], signal.SIGCONT)
        os.kill(fpid, signal.SIGKILL)
        tm.kill()
        page.page.close()


if __name__ == "__main__":  # pragma: no cover
    for row in run(Config(runs=int(sys.argv[1]) if len(sys.argv) > 1 else 3)):
        print(row.as_dict())
