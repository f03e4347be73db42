"""Stacks and remote hosts: RemoteRegistry forwards the stack calls; a host that got only the
code hermes-procs ships over ssh (no core/stacks/) answers each with one line, never a crash."""

from __future__ import annotations

import pytest
import sshd


def test_a_host_with_the_shipped_code_only_says_stacks_are_not_available(remote, tmp_path):
    why = sshd.available()
    if why:
        pytest.skip(why)
    (tmp_path / "Procfile").write_text("web: sleep 300\n")
    for result in (remote.stacks(), remote.up(str(tmp_path)), remote.down("web"), remote.restart_stack("web")):
        assert isinstance(result, dict) and result["status"] == "error", result
        assert result["error"] == "stacks are not available here (hermes-procs is not installed on this host)"
    assert remote.list() == []  # nothing started there
