"""A private tmux server for the end-to-end tests of the real dashboard (the *_tmux.py tests):
start a program in a terminal of a known size, send it keys, read its screen.

Each test gets its own server (``tmux -L SOCKET``, no config file: the user's ~/.tmux.conf
plays no part), killed after the test by the ``tmux`` fixture in conftest.py, so a failing test
leaves no dashboard running and two tests never share a session.
"""

from __future__ import annotations

import os
import shlex
import subprocess
import sys
import time
import uuid
from collections.abc import Callable
from pathlib import Path

SESSION = "t"


class Tmux:
    """One tmux server; calling it runs one tmux command on it (``tmux("send-keys", ...)``)."""

    def __init__(self) -> None:
        self.socket = f"hp-test-{uuid.uuid4().hex[:8]}"

    def __call__(self, *args: str, check: bool = True) -> subprocess.CompletedProcess:
        return subprocess.run(["tmux", "-L", self.socket, "-f", "/dev/null", *args], check=check,
                              capture_output=True, text=True, timeout=10)

    def start(self, command: str | list[str], width: int = 120, height: int = 40) -> None:
        """Run `command` (a shell line, or an argv) in the session's one window of that size."""
        argv = [command] if isinstance(command, str) else command
        self("new-session", "-d", "-s", SESSION, "-x", str(width), "-y", str(height), *argv)

    def screen(self) -> str:
        return self("capture-pane", "-p", "-t", SESSION).stdout

    def wait_screen(self, predicate: Callable[[str], bool], timeout: float = 40.0, what: str = "") -> str:
        """The screen, once `predicate` holds for it; AssertionError with the screen after `timeout`."""
        deadline = time.monotonic() + timeout
        while True:
            screen = self.screen()
            if predicate(screen):
                return screen
            if time.monotonic() > deadline:
                raise AssertionError(f"screen never showed {what}:\n{screen}")
            time.sleep(0.1)

    def wait(self, text: str, timeout: float = 40.0) -> str:
        """The screen, once `text` is on it."""
        return self.wait_screen(lambda screen: text in screen, timeout, repr(text))

    def keys(self, *keys: str) -> None:
        """send-keys, then a moment for the program to take them (the focus moves on its next tick)."""
        self("send-keys", "-t", SESSION, *keys)
        time.sleep(0.15)

    def confirm(self) -> None:
        """Enter on the open confirmation, after the moment it drops typed-ahead keys for
        (tui/keyroute.py: a key sent with the one that opened it never answers it)."""
        time.sleep(0.6)
        self.keys("Enter")

    def close(self) -> None:
        """Kill the server and remove its socket file (a killed server leaves it behind)."""
        self("kill-server", check=False)
        folder = Path(os.environ.get("TMUX_TMPDIR") or "/tmp") / f"tmux-{os.getuid()}"
        (folder / self.socket).unlink(missing_ok=True)


def dashboard_command(home: str | Path, **env: str | Path) -> str:
    """The shell line that runs the dashboard over `home` from this checkout (with `env`), then
    stays 5 s so that a crash's traceback can still be read from the screen.  COLUMNS and LINES
    are removed: the window reaches the shell with COLUMNS=80 LINES=24, which Textual would take
    over the window's real size."""
    assignments = " ".join(f"{k}={shlex.quote(str(v))}" for k, v in {"HERMES_PROCS_HOME": home, **env}.items())
    return (f"cd {shlex.quote(os.getcwd())} && unset COLUMNS LINES && {assignments} "
            f"{shlex.quote(sys.executable)} -m hermes_procs --home {shlex.quote(str(home))}; sleep 5")
