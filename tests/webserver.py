"""A real `hermes-procs web --port 0` process for the web tests, and raw HTTP requests to it."""

from __future__ import annotations

import http.client
import re
import signal
import subprocess
import sys
import threading

from conftest import wait_until

URL_RE = re.compile(r"http://127\.0\.0\.1:(\d+)/\?token=([\w-]+)")


class Served:
    """A running `hermes-procs web --port 0` and what it printed."""

    def __init__(self, home, *extra: str) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "hermes_procs", "--home", str(home), "web", "--port", "0", *extra],
            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        self.printed: list[str] = []
        threading.Thread(target=self._read, daemon=True).start()
        match = wait_until(lambda: next(filter(None, map(URL_RE.search, list(self.printed))), None),
                           timeout=30)
        self.port, self.token = int(match.group(1)), match.group(2)

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            self.printed.append(line)

    def request(self, path: str = "/", headers: dict | None = None) -> http.client.HTTPResponse:
        conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=20)
        hdrs = {"Host": f"127.0.0.1:{self.port}"}
        hdrs.update(headers or {})
        conn.request("GET", path, headers=hdrs)
        resp = conn.getresponse()
        resp.body = resp.read().decode()  # type: ignore[attr-defined]
        conn.close()
        return resp

    def stop(self) -> None:
        self.proc.send_signal(signal.SIGINT)
        try:
            self.proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
