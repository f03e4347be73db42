"""Tests of hermes_procs.core.supervisor.text: decoding, escape stripping, CR collapsing, bounded tails."""

from __future__ import annotations

import json
import random
import re
import time

import pytest

from hermes_procs.core.supervisor.text import (
    Utf8Stream,
    collapse_cr,
    last_chars,
    safe_json,
    safe_line,
    safe_strings,
    safe_text,
    strip_ansi,
    to_text,
)

# --- Utf8Stream ------------------------------------------------------------------------


def test_utf8_stream_split_characters_survive() -> None:
    text = "é€😀 ok ✓"
    data = text.encode()
    s = Utf8Stream()
    out = "".join(s.feed(data[i : i + 1]) for i in range(len(data))) + s.flush()
    assert out == text


def test_utf8_stream_invalid_bytes_become_replacement() -> None:
    s = Utf8Stream()
    out = s.feed(b"a\xffb\xc3") + s.feed(b"(") + s.flush()
    assert out == "a\ufffdb\ufffd("


def test_utf8_stream_flush_incomplete_tail() -> None:
    s = Utf8Stream()
    assert s.feed(b"x\xe2\x82") == "x"
    assert s.flush() == "\ufffd"
    # usable again after flush
    assert s.feed("€".encode()) == "€"


# --- strip_ansi --------------------------------------------------------------------------


@pytest.mark.parametrize(
    "raw, expected",
    [
        ("\x1b[1m\x1b[32mgreen\x1b[0m", "green"),  # SGR
        ("\x1b[38;2;10;20;30mrgb\x1b[K", "rgb"),  # truecolor + erase line
        ("\x1b[?1049hfull\x1b[?1049l\x1b[?25h", "full"),  # private CSI params
        ("\x1b[2J\x1b[H\x1b[10;20Hpos", "pos"),  # cursor movement
        ("\x1b]0;my title\x07after", "after"),  # OSC title, BEL
        ("\x1b]2;title\x1b\\after", "after"),  # OSC title, ST
        ("\x1b]8;;https://example.com\x1b\\link\x1b]8;;\x1b\\", "link"),  # OSC 8 hyperlink
        ("\x1b]8;id=1;file:///x\x07a\x1b]8;;\x07", "a"),  # OSC 8 with BEL
        ("\x1b]52;c;aGVsbG8gd29ybGQ=\x07clip", "clip"),  # OSC 52 clipboard
        ("\x1bPq#0;2;0;0;0#0~~@@-\x1b\\dcs", "dcs"),  # DCS (sixel)
        ("\x1b_Gf=100;AAAA\x1b\\apc", "apc"),  # APC (kitty graphics)
        ("\x1b^privacy\x1b\\pm", "pm"),  # PM
        ("\x1bXsos\x1b\\sos", "sos"),  # SOS
        ("\x1b=\x1b>\x1b(B\x1b)0\x1b7\x1b8\x1b#8\x1bMtwo", "two"),  # two-character escapes
        ("\x9b31mc1\x9b0m", "c1"),  # 8-bit CSI
        ("\x9d0;t\x9cosc1", "osc1"),  # 8-bit OSC and ST
        ("\x90q\x9cdcs1\x85", "dcs1"),  # 8-bit DCS, NEL
        ("a\x00b\x07c\x08d\x0be\x0cf\x7fg", "abcdefg"),  # lone C0 and DEL
        ("lone\x1b", "lone"),  # a lone ESC at the end
        ("\x1b\x1b[31mx", "x"),  # ESC ESC
    ],
)
def test_strip_ansi_families(raw: str, expected: str) -> None:
    assert strip_ansi(raw) == expected
    # keep_sgr (the dashboard's log pane) removes the same, except colours and backspaces
    kept = strip_ansi(raw, keep_sgr=True)
    assert re.sub(r"\x1b\[[0-9;:]*m", "", kept).replace("\b", "") == expected


def test_strip_ansi_keep_sgr_keeps_only_colours() -> None:
    raw = "\x1b[1;31mred\x1b[0m\x1b]52;c;aGk=\x07 \x1b[2J\x1b[?1049hx\bY\x1b]0;t\x07\x9b31m"
    assert strip_ansi(raw, keep_sgr=True) == "\x1b[1;31mred\x1b[0m x\bY"


def test_strip_ansi_keeps_newline_tab_cr_and_text() -> None:
    s = "a\tb\r\nc\nünï ✓ 😀\r"
    assert strip_ansi(s) == s


def test_strip_ansi_unterminated_osc_does_not_swallow_next_lines() -> None:
    assert strip_ansi("\x1b]0;cut title\nnext line\n") == "\nnext line\n"


def test_strip_ansi_is_fast_on_colored_build_output() -> None:
    line = "\x1b[1m\x1b[32m   Compiling\x1b[0m foo-crate v1.2.3 (/home/user/src/foo)\n"
    warn = "\x1b[33mwarning\x1b[0m\x1b[1m: unused variable `x`\x1b[0m at src/lib.rs:10\n"
    s = (line * 4 + warn) * (2_000_000 // (len(line) * 4 + len(warn)))  # ~2 MB
    t = time.thread_time()  # CPU time: a loaded machine's other processes do not count
    out = strip_ansi(s)
    elapsed = time.thread_time() - t
    assert "\x1b" not in out and "Compiling foo-crate" in out
    assert elapsed < 0.5, f"strip_ansi took {elapsed:.3f}s for 2 MB"


# --- collapse_cr ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    "raw, expected",
    [
        ("plain\nlines\n", "plain\nlines\n"),
        ("a\r\nb\r\n", "a\nb\n"),  # CRLF folds
        ("a\r\r\nb", "a\nb"),  # PTY CRCRLF
        ("10%\r50%\r100%\ndone", "100%\ndone"),  # progress bar
        ("abc\rX", "Xbc"),  # overwrite semantics
        ("abcdef\rXY\rZ", "ZYcdef"),
        ("progress\r", "progress"),  # trailing CR changes nothing
        ("\rfoo", "foo"),
        ("ab\bX", "aX"),  # backspace moves the cursor left
        ("|\b/\b-\b\\", "\\"),  # spinner
        ("abc\b \b", "ab "),  # erase idiom
        ("\b\bx", "x"),  # never before column 0
        ("_\bA", "A"),  # overstrike
        ("abc\rd\be", "ebc"),
    ],
)
def test_collapse_cr(raw: str, expected: str) -> None:
    assert collapse_cr(raw) == expected


def test_collapse_cr_is_each_line_collapsed_alone() -> None:
    """The shortcut for a terminal's ``\r\n`` (a last ``\r`` changes nothing) gives what
    collapsing each line by itself gives, whatever the redraws around it."""
    from hermes_procs.core.supervisor.text import _collapse_line

    rng = random.Random(5)
    for _ in range(3000):
        s = "".join(rng.choice(["a", "bc", "\r", "\b", "\n", "\r\n", "xyz"]) for _ in range(rng.randint(0, 12)))
        assert collapse_cr(s) == "\n".join(map(_collapse_line, s.split("\n"))), repr(s)


def test_collapse_cr_many_redraws_is_linear() -> None:
    s = "".join(f"\rdownloading {i}/100000" for i in range(100_000)) + "\n"
    t = time.perf_counter()
    assert collapse_cr(s) == "downloading 99999/100000\n"
    assert time.perf_counter() - t < 0.5


# --- to_text -------------------------------------------------------------------------------


def test_to_text_pty_output() -> None:
    raw = (
        b"\x1b]0;build\x07\x1b[32mok\x1b[0m caf\xc3\xa9\r\n"
        b" 10% [#   ]\r 60% [### ]\r100% [####]\r\n"
        b"bad \xff byte\r\n"
        b"tail"
    )
    assert to_text(raw) == "ok café\n100% [####]\nbad \ufffd byte\ntail"


def test_to_text_backspace_survives_stripping() -> None:
    assert to_text(b"ab\x08X\x07") == "aX"


# --- last_chars ----------------------------------------------------------------------------


def test_last_chars_small_inputs() -> None:
    assert last_chars(b"", 10) == ""
    assert last_chars(b"hello", 0) == ""
    assert last_chars(b"hello", 10) == "hello"
    assert last_chars(b"\x1b[31mhello\x1b[0m\r\n", 3) == "lo\n"


def test_last_chars_bounded_on_50mb_without_newline() -> None:
    data = "é".encode() * 25_000_000  # 50 MB, no newline, 2-byte characters
    t = time.perf_counter()
    out = last_chars(data, 1000)
    elapsed = time.perf_counter() - t
    assert out == "é" * 1000  # no U+FFFD from a character cut at the window start
    assert elapsed < 0.2, f"last_chars took {elapsed:.3f}s (decoded too much?)"


def test_last_chars_escape_heavy_tail_widens_window() -> None:
    # every visible character wrapped in colour codes: ~11 bytes of escapes per character
    data = b"start\n" + b"".join(b"\x1b[3%dm%d\x1b[0m" % (i % 8, i % 10) for i in range(20_000))
    out = last_chars(data, 2000)
    expected = "".join(str(i % 10) for i in range(20_000))[-2000:]
    assert out == expected


def test_last_chars_collapses_progress_of_last_line() -> None:
    data = b"x" * 100_000 + b"\n" + b"".join(b"\r%d%%" % i for i in range(101))
    assert last_chars(data, 10) == "xxxxx\n100%"
    assert "\r" not in last_chars(data, 50)


# --- the sanitiser for what a job controls -------------------------------------------------


@pytest.mark.parametrize(("raw", "shown"), [
    ("plain name – ünïcode ✓ 日本", "plain name – ünïcode ✓ 日本"),  # ordinary text unchanged
    ("tab\tand\nnewline", "tab\tand\nnewline"),
    ("\x1b]52;c;eA==\x07", "\\x1b]52;c;eA==\\x07"),
    ("\x1b]2;title\x1b\\", "\\x1b]2;title\\x1b\\"),
    ("\x9b31m\x9d0;t\x9c\x85\x80\x9f", "\\x9b31m\\x9d0;t\\x9c\\x85\\x80\\x9f"),
    ("\x00\x08\x0b\x0c\r\x7f", "\\x00\\x08\\x0b\\x0c\\x0d\\x7f"),
    ("a\u202eexe.txt\u2066b\u2069\u202a", "a\\u202eexe.txt\\u2066b\\u2069\\u202a"),
    ("line\u2028separator\u2029", "line\\u2028separator\\u2029"),
    ("lone \ud800 surrogate", "lone \\ud800 surrogate"),
])
def test_safe_text_shows_what_could_act_on_a_terminal(raw: str, shown: str) -> None:
    assert safe_text(raw) == shown
    shown.encode("utf-8")  # printable to any UTF-8 terminal


def test_safe_line_is_one_line() -> None:
    assert safe_line("  make \\\n  test\t-j4\x1b[2J\n") == "make \\ test -j4\\x1b[2J"
    assert safe_line("a\u2028b\xa0c") == "a b c"


def test_safe_json_decodes_to_the_same_value_with_no_unsafe_character() -> None:
    value = {"name": "x\x1b]52;c;eA==\x07\x9b\x85\u202e\u2028\x7f\ud800é日", "n": [1, None, True]}
    dumped = safe_json(value)
    assert json.loads(dumped) == value
    assert "é日" in dumped  # readable, not ensure_ascii
    assert not re.search("[\x00-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069\u2028\u2029\ud800-\udfff]", dumped)


def test_safe_strings_reaches_every_string_of_a_result() -> None:
    result = {"status": "ok", "jobs": [{"name": "\x1b]2;t\x07", "pid": 5, "tags": ("\x9b",)}]}
    assert safe_strings(result) == {"status": "ok", "jobs": [{"name": "\\x1b]2;t\\x07", "pid": 5, "tags": ["\\x9b"]}]}
