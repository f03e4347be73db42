"""k8s:// hosts: no cluster can run on the test machine, so what is checked is the argv given to
`kubectl` (a stand-in on PATH records it and answers as kubectl would); the transport and
everything above it are the ones docker:// runs on (tests/test_container_*.py, a real daemon)."""

from __future__ import annotations

import os

import pytest

from hermes_procs.core import ProcessRegistry
from hermes_procs.core.remote.address import parse_host
from hermes_procs.core.remote.client import connection
from hermes_procs.core.remote.container_state import down_reason


def test_k8s_argv():
    host = parse_host("k8s://ns/pod/ctr")
    assert host.argv(["python3", "-c", "x"]) == ["kubectl", "exec", "-i", "-n", "ns", "pod", "-c", "ctr", "--",
                                                  "python3", "-c", "x"]
    assert parse_host("k8s://pod").argv(["p"]) == ["kubectl", "exec", "-i", "pod", "--", "p"]


@pytest.fixture
def kubectl(tmp_path, monkeypatch):
    """A `kubectl` on PATH that records its argv and answers `get pod` from $KUBE_ANSWER
    (`exit CODE MESSAGE` or a phase); `exec` fails as on a pod that is gone."""
    bindir = tmp_path / "bin"
    bindir.mkdir()
    log = tmp_path / "argv"
    (bindir / "kubectl").write_text(
        f'#!/bin/sh\nprintf "%s\\n" "$*" >> {log}\n'
        'if [ "$1" = get ]; then\n'
        '  case "$KUBE_ANSWER" in exit*) echo "${KUBE_ANSWER#exit }" >&2; exit 1;; esac\n'
        '  printf "%s" "$KUBE_ANSWER"; exit 0\nfi\n'
        'echo "error: unable to upgrade connection: container not found" >&2; exit 1\n')
    os.chmod(bindir / "kubectl", 0o755)
    monkeypatch.setenv("PATH", f"{bindir}:{os.environ['PATH']}")
    return log


@pytest.mark.parametrize("answer, said", [
    ("Running", None),
    ("Pending", "pod web is Pending"),
    ("Succeeded", "pod web is Succeeded: its jobs ended with it (their exit codes were not recorded)"),
    ('exit Error from server (NotFound): pods "web" not found', "no pod named web (deleted?)"),
    ("exit Unable to connect to the server", None),
])
def test_why_a_pod_cannot_be_reached(kubectl, monkeypatch, answer, said):
    monkeypatch.setenv("KUBE_ANSWER", answer)
    reason = down_reason(parse_host("k8s://team/web/app"))
    assert reason == said
    assert kubectl.read_text().splitlines() == ["get pod -n team -o jsonpath={.status.phase} -- web"]


def test_a_deleted_pod_is_down_in_one_line(kubectl, monkeypatch):
    monkeypatch.setenv("KUBE_ANSWER", 'exit Error from server (NotFound): pods "web" not found')
    reg = ProcessRegistry(host="k8s://web")
    res = reg.list()
    assert (res["status"], res["host_state"]) == ("error", "down"), res
    assert res["error"] == "host k8s://web is down: no pod named web (deleted?)"
    connection(parse_host("k8s://web")).close()
