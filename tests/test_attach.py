"""`hermes-procs attach` driven inside a real pseudo-terminal, and the text filter used by
`log --follow` / attach."""

from __future__ import annotations

import fcntl
import json
import os
import pty
import select
import shlex
import struct
import subprocess
import sys
import termios
import time

import pytest

from hermes_procs.core.registry.textfilter import TextFilter

PY = sys.executable


@pytest.fixture
def hp(home):
    def run(*args):
        out = subprocess.run([PY, "-m", "hermes_procs", *args], capture_output=True, text=True, timeout=30,
                             env=dict(os.environ, HERMES_PROCS_HOME=str(home)))
        return out

    started = []

    def start(*args):
        sid = run("run", *args).stdout.strip()
        assert sid.startswith("proc_"), sid
        started.append(sid)
        return sid

    run.start = start
    yield run
    for sid in started:
        run("kill", sid, "--grace", "0.2")


class Term:
    """A shell script run on the slave side of a fresh PTY; we are the terminal."""

    def __init__(self, script: str, home, rows=24, cols=80):
        pid, fd = pty.fork()
        if pid == 0:  # child: the PTY is our controlling terminal
            os.environ["HERMES_PROCS_HOME"] = str(home)
            os.execvp("sh", ["sh", "-c", script])
        self.pid, self.fd = pid, fd
        fcntl.ioctl(fd, termios.TIOCSWINSZ, struct.pack("HHHH", rows, cols, 0, 0))
        self.buf = b""
        self.status = None

    def expect(self, needle: bytes, timeout=8.0) -> bytes:
        deadline = time.monotonic() + timeout
        while needle not in self.buf:
            left = deadline - time.monotonic()
            if left <= 0:
                raise AssertionError(f"{needle!r} not seen; got {self.buf[-2000:]!r}")
            r, _, _ = select.select([self.fd], [], [], left)
            if r:
                try:
                    data = os.read(self.fd, 65536)
                except OSError:
                    data = b""
                if not data:
                    if needle not in self.buf:
                        raise AssertionError(f"EOF before {needle!r}; got {self.buf[-2000:]!r}")
                    break
                self.buf += data
                if len(self.buf) > 1 << 20:  # a flood: keep the tail
                    self.buf = self.buf[-(256 << 10):]
        return self.buf

    def send(self, data: bytes) -> None:
        os.write(self.fd, data)

    def close(self) -> int:
        deadline = time.monotonic() + 10
        while self.status is None and time.monotonic() < deadline:
            try:
                r, _, _ = select.select([self.fd], [], [], 0.1)
                if r:
                    self.buf += os.read(self.fd, 65536)
            except OSError:
                pass
            pid, status = os.waitpid(self.pid, os.WNOHANG)
            if pid:
                self.status = os.waitstatus_to_exitcode(status)
        if self.status is None:
            os.kill(self.pid, 9)
            os.waitpid(self.pid, 0)
        os.close(self.fd)
        return self.status


def attach_script(sid, tmp_path):
    cmd = shlex.join([PY, "-m", "hermes_procs", "attach", sid])
    before, after = tmp_path / "before", tmp_path / "after"
    return (f"stty -g > {before}; {cmd}; echo \"ATTACH_RC=$?\"; stty -g > {after}; echo END"), before, after


def test_attach_types_into_a_pty_job_detaches_and_restores_the_terminal(hp, home, tmp_path):
    sid = hp.start("--pty", "--", "cat")
    script, before, after = attach_script(sid, tmp_path)
    term = Term(script, home, rows=30, cols=100)
    try:
        term.expect(f"[attached to {sid} — detach with Ctrl-]]".encode())
        _wait_raw(term)  # the banner comes before raw mode: typed earlier, the line would echo twice
        term.send(b"hello pty\r")
        # the job's terminal echoes it, then cat prints it again
        out = term.expect(b"hello pty\r\nhello pty\r\n")
        term.send(b"\x1d")
        term.expect(b"ATTACH_RC=0")
        term.expect(b"END")
        assert b"[detached from " + sid.encode() in term.buf
    finally:
        assert term.close() == 0
    assert before.read_text() == after.read_text()  # terminal settings restored
    # the job got this terminal's size and keeps running
    polled = json.loads(hp("poll", sid, "--json").stdout)
    assert polled["status"] == "running"
    assert "hello pty" in hp("log", sid).stdout
    out = json.loads(hp("submit", sid, "again", "--json").stdout)
    assert out["status"] == "ok"
    del out


def test_attach_sees_the_job_exit_and_reports_it(hp, home, tmp_path):
    sid = hp.start("--pty", "--", f"{PY} -q -i")
    # the REPL must be up before we attach
    deadline = time.monotonic() + 10
    while ">>>" not in hp("log", sid).stdout:
        assert time.monotonic() < deadline
        time.sleep(0.05)
    script, before, after = attach_script(sid, tmp_path)
    term = Term(script, home)
    try:
        term.expect(b"[attached to")
        term.expect(b">>> ")  # recent output replayed for context
        term.send(b"import os; print(os.get_terminal_size())\r")
        term.expect(b"os.terminal_size(columns=80, lines=24)")
        term.send(b"raise SystemExit(4)\r")
        term.expect(f"[{sid} exited with code 4]".encode())
        term.expect(b"ATTACH_RC=4")  # attach exits with the job's status
        term.expect(b"END")
    finally:
        assert term.close() == 0
    assert before.read_text() == after.read_text()


def test_attach_refuses_pipe_and_exited_jobs(hp, home, tmp_path):
    sid = hp.start("--", "sleep 30")
    script, _, _ = attach_script(sid, tmp_path)
    term = Term(script, home)
    try:
        out = term.expect(b"ATTACH_RC=1")
    finally:
        term.close()
    assert b"hermes-procs: error: " + sid.encode() + b" is not a PTY job" in out
    assert b"Traceback" not in out

    done = hp.start("--pty", "--", "true")
    hp("wait", done)
    script, _, _ = attach_script(done, tmp_path)
    term = Term(script, home)
    try:
        out = term.expect(b"ATTACH_RC=1")
    finally:
        term.close()
    assert b"has already exited" in out


# --------------------------------------------------------------------------- TextFilter


def feed_all(f: TextFilter, chunks) -> str:
    return "".join(f.feed(c) for c in chunks) + f.finish()


def test_filter_for_files_matches_log_text():
    data = b"\x1b[31mred\x1b[0m\r\n10%\r50%\r100%\r\n\x1b]0;title\x07plain \xc3\xa9t\xc3\xa9\n"
    expect = "red\n100%\nplain été\n"
    assert feed_all(TextFilter(), [data]) == expect
    # split everywhere: inside escapes, inside UTF-8, between \r and \n
    assert feed_all(TextFilter(), [bytes([b]) for b in data]) == expect


def test_filter_for_files_holds_partial_lines_until_newline():
    f = TextFilter()
    assert f.feed(b"prompt> ") == ""
    assert f.finish() == "prompt> "


def test_filter_escapes_bidi_controls_and_drops_conceal():
    # `log -f | od -c` showed U+202E and the isolates raw; on a terminal `ESC[8m` hid the text after it
    data = "K\u202eL W\u2066x\u2069 \x85\x1b[1;8;31mshown\x1b[0m \x1b[38;5;8mgrey\x1b[8m\n".encode()
    for chunks in ([data], [bytes([b]) for b in data]):
        assert feed_all(TextFilter(), chunks) == "K\\u202eL W\\u2066x\\u2069 shown grey\n"
        assert feed_all(TextFilter(keep_sgr=True), chunks) == (
            "K\\u202eL W\\u2066x\\u2069 \x1b[1;31mshown\x1b[0m \x1b[38;5;8mgrey\n\x1b[0m")
    # a terminal reads 08 as 8; only plain SGR is a colour (ESC[>4;2m sets a key mode)
    odd = b"a\x1b[08mb\x1b[1;008mc\x1b[>4;2md\x1b[1 me\x1b[38;5;08mf\n"
    assert feed_all(TextFilter(keep_sgr=True), [odd]) == "ab\x1b[1mcde\x1b[38;5;08mf\n\x1b[0m"
    # and 8:0 (a sub-parameter, which xterm may read as 8); 38:5:8 is one colour
    colon = b"a\x1b[8:0mb\x1b[1;8:1;38:5:8mc\n"
    assert feed_all(TextFilter(keep_sgr=True), [colon]) == "ab\x1b[1;38:5:8mc\n\x1b[0m"


def test_filter_for_terminals_keeps_colours_only():
    data = b"\x1b[?1049h\x1b[2J\x1b[H\x1b[1;32mok\x1b[0m \x1b]0;t\x07\xe2\x9c\x93\r\n\x07"
    expect = "\x1b[1;32mok\x1b[0m \u2713\r\n\x1b[0m"
    assert feed_all(TextFilter(keep_sgr=True), [data]) == expect
    assert feed_all(TextFilter(keep_sgr=True), [bytes([b]) for b in data]) == expect
    f = TextFilter(keep_sgr=True)
    assert f.feed(b"50%\r") == "50%\r"  # immediate, \r kept for in-place redraw


FULLSCREEN = r"""
import os, signal, sys
def draw(*_):
    size = os.get_terminal_size()
    sys.stdout.write("\x1b[H\x1b[2JSIZE %dx%d" % (size.lines, size.columns))
    sys.stdout.flush()
signal.signal(signal.SIGWINCH, draw)
sys.stdout.write("\x1b[?1049h")
draw()
while True:
    signal.pause()
"""


def test_attach_full_screen_job_repaint_resize_and_alt_screen(hp, home, tmp_path):
    prog = tmp_path / "full.py"
    prog.write_text(FULLSCREEN)
    sid = hp.start("--pty", "--rows", "10", "--cols", "50", "--", f"{PY} {prog}")
    deadline = time.monotonic() + 10
    while "SIZE 10x50" not in hp("log", sid).stdout:
        assert time.monotonic() < deadline
        time.sleep(0.05)
    script, before, after = attach_script(sid, tmp_path)
    term = Term(script, home, rows=24, cols=80)
    try:
        term.expect(b"[attached to")
        term.expect(b"SIZE 24x80")  # the nudge made it repaint at this terminal's size
        start = term.buf.index(b"[attached to")
        assert b"\x1b[?1049h" in term.buf[start:]  # we switched to the alternate screen
        fcntl.ioctl(term.fd, termios.TIOCSWINSZ, struct.pack("HHHH", 40, 100, 0, 0))
        term.expect(b"SIZE 40x100")  # SIGWINCH forwarded
        term.send(b"\x1d")
        term.expect(b"END")
    finally:
        assert term.close() == 0
    tail = term.buf[term.buf.rindex(b"SIZE 40x100"):]
    assert b"\x1b[?1049l" in tail  # the user's screen is back
    assert before.read_text() == after.read_text()


def _wait_raw(term: Term, timeout: float = 10.0) -> None:
    """Wait until attach has put the terminal in raw mode (canonical input off)."""
    deadline = time.monotonic() + timeout
    while termios.tcgetattr(term.fd)[3] & termios.ICANON:
        assert time.monotonic() < deadline, "attach never put the terminal in raw mode"
        time.sleep(0.01)


def _children(pid: int) -> list[int]:
    try:
        with open(f"/proc/{pid}/task/{pid}/children") as fh:
            return [int(x) for x in fh.read().split()]
    except (FileNotFoundError, ProcessLookupError):
        return []


def test_attach_restores_the_terminal_on_sigterm(hp, home, tmp_path):
    import signal

    sid = hp.start("--pty", "--", "cat")
    script, before, after = attach_script(sid, tmp_path)
    term = Term(script, home)
    try:
        term.expect(b"[attached to")
        _wait_raw(term)  # its signal handlers are in place before raw mode
        kids = _children(term.pid)
        assert len(kids) == 1
        os.kill(kids[0], signal.SIGTERM)
        term.expect(b"ATTACH_RC=143")
        term.expect(b"END")
    finally:
        assert term.close() == 0
    assert before.read_text() == after.read_text()
    assert json.loads(hp("poll", sid, "--json").stdout)["status"] == "running"


def test_attach_detaches_from_a_flooding_job(hp, home, tmp_path):
    sid = hp.start("--pty", "--", "yes flood")
    script, before, after = attach_script(sid, tmp_path)
    term = Term(script, home)
    try:
        term.expect(b"[attached to")
        term.expect(b"flood\r\nflood\r\n")
        term.send(b"\x1d")  # read between output chunks, whatever the flood
        term.expect(b"ATTACH_RC=0", timeout=15)
        term.expect(b"END")
    finally:
        assert term.close() == 0
    assert before.read_text() == after.read_text()
