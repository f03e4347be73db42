"""Host URLs are checked after percent-decoding (issue 19 item 11): what reaches ssh, docker or
kubectl is what was checked, and a bad URL is one clear line, from the API and the CLI."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

from hermes_procs.core import ProcessRegistry
from hermes_procs.core.remote.address import CONTROL_FOLDER_MAX, parse_host

CLI = [sys.executable, "-m", "hermes_procs"]

BAD = [
    "ssh://user%0aname@box",  # a newline in the user name: a second line in ssh's %r expansions
    "ssh://user%0dname@box",
    "ssh://user%00name@box",  # was "internal error: ValueError: embedded null byte"
    "ssh://user%7fname@box",
    "ssh://user%c2%85name@box",  # C1 NEL, UTF-8 encoded
    "ssh://us%20er@box",
    "ssh://us%27er@box",  # a quote
    "ssh://%2Doption@box",
    "ssh://bo%0ax",
    "ssh://bo%00x",
    "ssh://%2Dbox",
    "ssh://us\ner@box",  # raw: urlsplit drops \t \r \n silently, the URL must not pass as another
    "ssh://bo\tx",
    "docker://a%0ab",
    "docker://a%00b",
    "docker://%2Dname",
    "k8s://ns/p%00od",
    "k8s://n%0as/pod/ctr",
    "k8s://ns/pod/c%0dtr",
    "ssh://box?home=%00",
    "ssh://box?home=/a%0ab",
    "ssh://box?python=python3%c2%9b",
    "ssh://user%ff@box",  # not UTF-8
]


@pytest.mark.parametrize("url", BAD)
def test_decoded_control_characters_and_options_are_refused(url):
    with pytest.raises(ValueError) as caught:
        parse_host(url, {})
    message = str(caught.value)
    assert "\n" not in message and "\r" not in message and "\0" not in message
    assert "\x85" not in message and "\x7f" not in message and "\x9b" not in message


@pytest.mark.parametrize("url", ["ssh://user%0aname@box", "ssh://user%00name@box", "docker://a%00b",
                                 "k8s://ns/p%00od"])
def test_cli_says_one_line_and_runs_nothing(url, tmp_path):
    bindir = tmp_path / "bin"  # stand-ins that would record being run
    bindir.mkdir()
    for tool in ("ssh", "docker", "kubectl"):
        (bindir / tool).write_text(f"#!/bin/sh\necho ran > {tmp_path}/{tool}.ran\n")
        os.chmod(bindir / tool, 0o755)
    env = {**os.environ, "PATH": f"{bindir}:{os.environ['PATH']}",
           "HERMES_PROCS_CONFIG": str(tmp_path / "none.toml")}
    res = subprocess.run([*CLI, "--host", url, "ls"], capture_output=True, text=True, timeout=60, env=env)
    assert res.returncode == 1 and res.stderr.count("\n") == 1, res.stderr
    assert "internal error" not in res.stderr and "Traceback" not in res.stderr
    assert list(tmp_path.glob("*.ran")) == []


def test_decoded_names_reach_the_transport_decoded():
    host = parse_host("ssh://first%2Elast@my%2Dbox:2222?home=/srv/h%20ome")
    assert (host.target, host.port, host.home) == ("first.last@my-box", 2222, "/srv/h ome")
    assert parse_host("ssh://dev%40corp@box").target == "dev@corp@box"  # a domain user
    assert parse_host("docker://web%2D1").target == "web-1"
    assert parse_host("k8s://team/api%2D0/main").extra == ("team", "api-0", "main")
    assert parse_host("ssh://[::1]:22").target == "::1"


def test_ssh_connections_are_shared_only_through_a_private_folder(monkeypatch):
    cache = Path(tempfile.mkdtemp(dir="/tmp"))  # a short path: the socket's must fit in 108 bytes
    try:
        monkeypatch.setenv("XDG_CACHE_HOME", str(cache))
        argv = parse_host("ssh://box").argv(["true"])
        folder = cache / "hermes-procs" / "ssh"
        assert f"ControlPath={folder}/%C" in argv and (folder.stat().st_mode & 0o777) == 0o700
        os.chmod(folder, 0o733)  # others could plant a socket there that ssh would take for its master
        assert not any(arg.startswith("Control") for arg in parse_host("ssh://box").argv(["true"]))
    finally:
        _remove(cache)



@pytest.mark.parametrize("extra", [0, 1])
def test_a_job_starts_over_ssh_with_the_longest_control_folder_and_past_it(server, monkeypatch, extra):
    """The longest folder that is used still leaves ssh room for its master's socket (ssh said
    "path ... too long for Unix domain socket" and the host was unreachable with a 60-character
    one); one character more and the connection is not shared, but made."""
    cache = Path(tempfile.mkdtemp(dir="/tmp"))
    try:
        long = cache / ("c" * (CONTROL_FOLDER_MAX - len(str(cache)) - len("/hermes-procs/ssh") - 1 + extra))
        folder = long / "hermes-procs" / "ssh"
        assert len(str(folder)) == CONTROL_FOLDER_MAX + extra
        monkeypatch.setenv("XDG_CACHE_HOME", str(long))
        monkeypatch.setenv("HERMES_PROCS_SSH_ARGS", server.ssh_args)
        shares = any(arg.startswith("ControlPath=") for arg in parse_host("ssh://box").argv(["true"]))
        assert shares is not bool(extra)
        reg = ProcessRegistry(host=server.url(server.home_dir()))
        try:
            started = reg.spawn("echo over ssh")
            assert "session_id" in started, started
            assert reg.wait(started["session_id"], timeout=30)["exit_code"] == 0
        finally:
            reg.conn.close()
        assert bool(list(folder.iterdir())) is not bool(extra)  # the master's socket, when shared
    finally:
        _remove(cache)


def _remove(cache: Path) -> None:
    """Remove a test's $XDG_CACHE_HOME. A remote host's reconnecting thread left in this worker
    by an earlier test builds its ssh options meanwhile, which makes the control folder in
    whatever $XDG_CACHE_HOME is now (a soak run failed with "Directory not empty"): try again."""
    for _ in range(5):
        shutil.rmtree(cache, ignore_errors=True)
        if not cache.exists():
            return
        time.sleep(0.1)
