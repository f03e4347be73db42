"""Issue 8 class 14: an unterminated DCS / SOS / PM / APC string hides nothing after its line."""

from __future__ import annotations

import pytest

from hermes_procs.core.registry.textfilter import TextFilter
from hermes_procs.core.supervisor.text import strip_ansi, to_text

INTROS = ["\x1bP", "\x1bX", "\x1b^", "\x1b_", "\x90", "\x98", "\x9e", "\x9f"]


@pytest.mark.parametrize("intro", INTROS)
def test_unterminated_string_ends_at_newline(intro):
    raw = f"before\n{intro}never terminated\nafter one\nafter two\n"
    assert to_text(raw.encode()) == "before\n\nafter one\nafter two\n"
    assert strip_ansi(raw, keep_sgr=True) == "before\n\nafter one\nafter two\n"
    if intro.startswith("\x1b"):  # the live attach filter (terminal mode) too
        live = TextFilter(keep_sgr=True)
        assert "after two" in live.feed(raw.encode()) + live.finish()


def test_terminated_string_still_removed():
    assert to_text(b"x\x1bPq#0;2;0;0;0\x1b\\y\n") == "xy\n"


def test_wait_and_poll_show_lines_after_an_unterminated_dcs(registry):
    sid = registry.spawn(r"printf 'start\n\033Pq unterminated\nafter the dcs\n'")["session_id"]
    done = registry.wait(sid, timeout=20)
    assert "after the dcs" in done["output"]
    assert "after the dcs" in registry.poll(sid)["output_preview"]
