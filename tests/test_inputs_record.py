"""Inputs are recorded as typed, also in PTY REPLs whose readline turns echo off; only answers
to a real password prompt are hidden."""

from __future__ import annotations

import sys

import pytest
from conftest import wait_until


def _log_has(registry, sid, text):
    return text in registry.read_log(sid, offset=0, limit=1000).get("output", "")


def _previews(registry, sid):
    return [entry["preview"] for entry in registry.inputs(sid)]


def test_repl_inputs_are_recorded_as_typed(registry):
    job = registry.spawn(f"{sys.executable} -q -i", pty=True)  # readline turns echo off at each prompt
    sid = job["session_id"]
    try:
        wait_until(lambda: _log_has(registry, sid, ">>>"), 30)
        assert registry.submit(sid, "print(6 * 7)")["status"] == "ok"
        wait_until(lambda: _log_has(registry, sid, "42"), 30)
        assert registry.submit(sid, "x = 'plain'")["status"] == "ok"
        wait_until(lambda: len(registry.inputs(sid)) == 2, 30)
        assert _previews(registry, sid) == ["print(6 * 7)\r", "x = 'plain'\r"]
    finally:
        registry.kill(sid, grace=0.2)


@pytest.mark.parametrize("pty", [True, False])
@pytest.mark.parametrize("prompt", ["Password: ", "[sudo] password for me: ", "Enter passphrase for key id_rsa: "])
def test_answers_to_password_prompts_are_hidden(registry, pty, prompt):
    job = registry.spawn(f"printf '%s' \"{prompt}\"; read -r -s pw; echo; printf 'Name: '; read -r n; echo hi $n",
                         pty=pty)
    sid = job["session_id"]
    try:
        wait_until(lambda: _log_has(registry, sid, prompt.strip()), 30)
        registry.submit(sid, "hunter2")
        wait_until(lambda: _log_has(registry, sid, "Name:"), 30)
        registry.submit(sid, "bob")
        wait_until(lambda: _log_has(registry, sid, "hi bob"), 30)
        previews = _previews(registry, sid)
        assert len(previews) == 2 and "hunter2" not in previews[0] and "hidden" in previews[0]
        assert previews[1].rstrip("\r\n") == "bob"
    finally:
        registry.kill(sid, grace=0.2)
