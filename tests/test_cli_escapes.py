"""`write -E` / `submit -E`: a bad escape is one clear error line, never an internal error."""

from __future__ import annotations

import subprocess
import sys


def _cli(home, *args):
    return subprocess.run([sys.executable, "-m", "hermes_procs", "--home", str(home), *args],
                          capture_output=True, text=True, timeout=60)


def test_bad_escape_is_a_clear_error(registry):
    job = registry.spawn("cat")
    try:
        cases = [("write", d) for d in ("\\x", "\\x4", "\\u12", "\\U0011FFFF", "\\ud800")] + [("submit", "\\x")]
        for command, data in cases:
            out = _cli(registry.home, command, "-E", job["session_id"], data)
            assert out.returncode == 1 and "bad escape" in out.stderr, (data, out.stderr)
            assert "internal error" not in out.stderr and len(out.stderr.strip().splitlines()) == 1
            assert "\\\\" not in out.stderr, out.stderr  # the escape as typed, not its Python repr ('\\x')
        assert registry.inputs(job["session_id"]) == []  # nothing was sent
    finally:
        registry.kill(job["session_id"], grace=0.2)


def test_good_escapes_still_work(registry):
    job = registry.spawn("cat")
    try:
        out = _cli(registry.home, "write", "-E", job["session_id"], "a\\x41\\u00e9\\n")
        assert out.returncode == 0, out.stderr
        assert registry.inputs(job["session_id"])[-1]["preview"] == "aA\u00e9\n"
    finally:
        registry.kill(job["session_id"], grace=0.2)


def test_a_hex_escape_is_the_byte_as_printf_reads_it(registry):
    # -E '\xff' sent UTF-8 c3 bf (U+00FF); printf and $'...' send the one byte
    job = registry.spawn("od -An -tx1", pty=False)
    try:
        out = _cli(registry.home, "write", "-E", job["session_id"], "\\xff\\u00ff\\x41")
        assert out.returncode == 0 and out.stdout == "wrote 4 bytes\n", out
        registry.close_stdin(job["session_id"])
        registry.wait(job["session_id"], timeout=10)
        assert registry.read_log(job["session_id"])["output"].split() == ["ff", "c3", "bf", "41"]
    finally:
        registry.kill(job["session_id"], grace=0.2)

