"""`make test` leaves the files of the user who runs it alone: the jobs the suite runs (Python
REPLs, less) write their history into the session's temporary HOME (conftest.py)."""

from __future__ import annotations

import os
import pwd
import sys
from pathlib import Path

from conftest import wait_until


def test_repl_and_pager_history_go_to_the_sessions_home(registry):
    home = Path(os.environ["HOME"])
    assert home != Path(pwd.getpwuid(os.getuid()).pw_dir), "the suite runs with the user's own HOME"
    repl = registry.spawn(f"{sys.executable} -q -i", pty=True)["session_id"]
    pager = registry.spawn("seq 1 500 | less", pty=True)["session_id"]
    wait_until(lambda: ">>>" in registry.read_log(repl)["output"], timeout=20)
    registry.submit(repl, "6 * 7")
    wait_until(lambda: "42" in registry.read_log(repl)["output"], timeout=20)
    registry.close_stdin(repl)  # Ctrl-D: the REPL exits and saves its history
    wait_until(lambda: registry.screen(pager)["lines"][0].strip() == "1", timeout=20)
    registry.submit(pager, "/250")  # a search: less keeps it in its history file
    registry.write(pager, "q")
    for sid in (repl, pager):
        assert registry.wait(sid, timeout=20)["status"] == "exited"
    assert "6 * 7" in (home / ".python_history").read_text()
    assert "250" in (home / ".lesshst").read_text()
