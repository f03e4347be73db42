"""The remote bootstrap trusts neither its working directory nor a code cache it did not make
(issue 19 item 8), through a real sshd: the remote user is `hpssh` (tests/sshd.py), the other
user who plants things is `nobody`, writing as itself into folders it can write."""

from __future__ import annotations

import os
import pwd
import shutil
import stat
import subprocess
import tempfile
from pathlib import Path

import pytest
import sshd as sshd_mod

from hermes_procs.core import ProcessRegistry
from hermes_procs.core.remote.address import parse_host
from hermes_procs.core.remote.client import connection, shipped_code

pytestmark = pytest.mark.skipif(sshd_mod.available() is not None, reason=str(sshd_mod.available()))

NOBODY = 65534

# What a hostile module does when it is imported: note who imported it (the bootstrap's
# XDG_CACHE_HOME tells this test's connection from any other), then stand aside.
PAYLOAD = """import os, sys
with open({marker!r}, "a") as fh:
    fh.write("imported by %s\\n" % os.environ.get("XDG_CACHE_HOME"))
"""
# as json.py: the real json takes its place, so nothing else notices
STAND_ASIDE = """del sys.modules["json"]
here = os.path.dirname(os.path.abspath(__file__))
sys.path[:] = [p for p in sys.path if os.path.abspath(p or ".") != here]
import json
"""


@pytest.fixture
def place():
    """(cache home, marker file): a fresh XDG_CACHE_HOME for the remote user, world-writable
    and sticky like /tmp, and a file the remote user may append to (in a folder of /tmp both
    users can reach)."""
    base = Path(tempfile.mkdtemp(prefix="hpboot-", dir="/tmp"))
    os.chmod(base, 0o755)
    cache = base / "cache"
    cache.mkdir()
    os.chmod(cache, 0o1777)
    marker = base / "marker"
    marker.touch()
    shutil.chown(marker, sshd_mod.USER, sshd_mod.USER)
    yield cache, marker
    shutil.rmtree(base, ignore_errors=True)


def _connect(server, cache: Path, monkeypatch) -> dict:
    """Connect to the host with `cache` as the remote XDG_CACHE_HOME (no shared ssh master: a
    master started for another cache home would carry its environment)."""
    monkeypatch.setenv("HERMES_PROCS_SSH_ARGS",
                       f"-o ControlMaster=no -o SetEnv=XDG_CACHE_HOME={cache} {server.ssh_args}")
    url = server.url(server.home_dir())
    try:
        return ProcessRegistry(host=url).connect()
    finally:
        connection(parse_host(url)).close()


def _as(uid: int, script: str) -> None:
    """Run a shell script as another user."""
    subprocess.run(["sh", "-c", f"umask 022; {script}"], user=uid, group=uid, extra_groups=[], check=True)


def _plant_code(root: Path, marker: Path, uid: int) -> None:
    """A code cache entry for the code this side sends, made by user `uid`, whose stdio server
    only notes that it ran."""
    core = root / "hermes_procs" / "core"
    payload = PAYLOAD.format(marker=str(marker)).replace("'", "'\\''")
    _as(uid, f"mkdir -p {core}/remote && touch {root}/hermes_procs/__init__.py {core}/__init__.py "
             f"{core}/remote/__init__.py && printf '%s' '{payload}' > {core}/remote/stdio_server.py")


def _imported(marker: Path, cache: Path) -> bool:
    return f"imported by {cache}" in marker.read_text()


def test_a_module_in_the_remote_working_directory_is_not_imported(server, place, monkeypatch):
    cache, marker = place
    planted = Path(pwd.getpwnam(sshd_mod.USER).pw_dir) / "json.py"  # ssh sessions start there
    planted.write_text(PAYLOAD.format(marker=str(marker)) + STAND_ASIDE)
    shutil.chown(planted, sshd_mod.USER, sshd_mod.USER)
    try:
        status = _connect(server, cache, monkeypatch)
    finally:
        planted.unlink()
    assert status["state"] == "connected", status
    assert not _imported(marker, cache)


def test_a_code_cache_planted_by_another_user_is_never_run(server, place, monkeypatch):
    cache, marker = place
    digest, _ = shipped_code()
    _plant_code(cache / "hermes-procs" / "code" / digest, marker, NOBODY)  # before the user's first use
    status = _connect(server, cache, monkeypatch)
    assert not _imported(marker, cache)
    assert status["state"] == "unreachable"
    assert f"{cache}/hermes-procs" in status["error"] and "another user" in status["error"]
    assert "\n" not in status["error"]


def test_a_cache_folder_others_could_write_is_closed_and_a_foreign_entry_rebuilt(server, place, monkeypatch):
    cache, marker = place
    code = cache / "hermes-procs" / "code"
    code.mkdir(parents=True)
    for folder in (code.parent, code):
        shutil.chown(folder, sshd_mod.USER, sshd_mod.USER)
    os.chmod(code, 0o777)  # the remote user's own folder, left open
    digest, _ = shipped_code()
    _plant_code(code / digest, marker, NOBODY)
    status = _connect(server, cache, monkeypatch)
    assert status["state"] == "connected" and status["code"] == "sent", status
    assert not _imported(marker, cache)
    assert stat.S_IMODE(code.stat().st_mode) & 0o022 == 0
    entry = (code / digest).stat()
    assert entry.st_uid == pwd.getpwnam(sshd_mod.USER).pw_uid and stat.S_IMODE(entry.st_mode) == 0o700


def test_a_cache_entry_that_differs_from_the_code_sent_is_rebuilt(server, place, monkeypatch):
    cache, marker = place
    assert _connect(server, cache, monkeypatch)["code"] == "sent"
    digest, _ = shipped_code()
    served = cache / "hermes-procs" / "code" / digest / "hermes_procs" / "core" / "remote" / "stdio_server.py"
    served.write_text(PAYLOAD.format(marker=str(marker)) + "raise SystemExit(3)\n")  # damaged, or altered
    again = _connect(server, cache, monkeypatch)
    assert again["state"] == "connected" and again["code"] == "sent", again
    assert not _imported(marker, cache)
    assert _connect(server, cache, monkeypatch)["code"] == "cached"


def test_a_cache_home_every_user_may_write_without_the_sticky_bit_is_refused(server, place, monkeypatch):
    cache, _marker = place
    os.chmod(cache, 0o777)  # anyone could rename the cache folder and put another in its place
    status = _connect(server, cache, monkeypatch)
    assert status["state"] == "unreachable" and str(cache) in status["error"], status
    assert not (cache / "hermes-procs").exists()
