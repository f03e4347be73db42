"""The protocol's shared vocabulary (core/supervisor/wire.py): both ends use it, and a client meeting a
newer supervisor says so clearly."""

from __future__ import annotations

import json
import socket

import pytest

from hermes_procs.core.registry import protocol
from hermes_procs.core.supervisor import wire


def test_every_op_has_its_reply_keys():
    assert set(wire.REPLY_KEYS) == set(wire.OPS)


def test_live_supervisor_replies_carry_the_version_and_the_documented_keys(registry):
    sid = registry.spawn("sleep 30")["session_id"]
    reply = protocol.request(registry.job_dir(sid), {"op": wire.STATUS}, retry_for=5.0)
    assert reply["v"] == wire.VERSION
    assert set(wire.REPLY_KEYS[wire.STATUS]) <= set(reply)


def test_a_newer_supervisor_is_named_clearly():
    ours, theirs = socket.socketpair()
    with ours, theirs:
        theirs.sendall(json.dumps({"ok": True, "v": wire.VERSION + 1}).encode() + b"\n")
        with pytest.raises(protocol.NewerSupervisor, match="upgrade hermes-procs"):
            protocol.read_reply(ours)
