"""The warm template runs the code that is installed, never an older copy (issue 19 item 6).

A template is keyed to the fingerprint of the code its supervisors run (core/supervisor/template.py
`fingerprint`): a spawn only uses a template of the same code, and a template whose files
change on disk leaves. Checked with real copies of the package on disk (what `pip install`
leaves in site-packages), each marking its jobs' environment, so a job shows which copy's
supervisor started it."""

from __future__ import annotations

import ast
import os
import shutil
import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest
from conftest import pid_alive, wait_until
from test_template import _templates

from hermes_procs.core.supervisor import template

ROOT = Path(__file__).resolve().parent.parent
CORE = ROOT / "core"
PROGRAM = CORE / "supervisor"  # the supervisor program's folder: its plain-name imports

# One long-lived client process per copy: each line on stdin is a command, each answer a line
# "MARK LAUNCH" (the job's HP_CODE and how its supervisor started: cold or template).
DRIVER = r'''
import json, sys, time
from hermes_procs.core import ProcessRegistry
reg = ProcessRegistry(home=sys.argv[1])

def once():
    job = reg.spawn('echo "code=${HP_CODE:-none}"')
    done = reg.wait(job["session_id"], timeout=30)
    proc = json.loads((reg.job_dir(job["session_id"]) / "proc.json").read_text())
    return done["output"].strip(), proc["launch"]

for line in sys.stdin:
    out, launch = once()
    deadline = time.monotonic() + 20
    while line.strip() == "warm" and launch != "template" and time.monotonic() < deadline:
        time.sleep(0.05)
        out, launch = once()
    print(out, launch, flush=True)
'''


def install(site: Path, mark: str) -> None:
    """What installing a changed copy leaves in `site`: every file of hermes_procs written anew
    (new inodes, as pip writes them), its supervisor giving each job HP_CODE=`mark`."""
    pkg = site / "hermes_procs"
    shutil.rmtree(pkg, ignore_errors=True)
    skip = shutil.ignore_patterns("__pycache__")
    shutil.copytree(ROOT / "src" / "hermes_procs", pkg,
                    ignore=shutil.ignore_patterns("__pycache__", "core", "cli", "tui"))
    shutil.copytree(CORE, pkg / "core", ignore=skip)
    supervisor = pkg / "core" / "supervisor" / "supervisor.py"
    source = supervisor.read_text()
    anchor = "    env = os.environ if JOB_ENV is None else JOB_ENV\n"
    assert anchor in source
    supervisor.write_text(source.replace(anchor, anchor + f"    env = {{**env, 'HP_CODE': {mark!r}}}\n"))


class Client:
    """A client process running the copy in `site` (without site-packages processing, so the
    editable install of this checkout does not shadow it; the venv's packages are on the path)."""

    def __init__(self, site: Path, home: Path) -> None:
        path = os.pathsep.join([str(site), sysconfig.get_paths()["purelib"], sysconfig.get_paths()["platlib"]])
        env = {**os.environ, "PYTHONPATH": path, "HERMES_PROCS_TEMPLATE_IDLE": "30"}
        self.proc = subprocess.Popen([sys.executable, "-S", "-c", DRIVER, str(home)], stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, text=True, env=env, cwd=site)

    def ask(self, what: str = "spawn") -> tuple[str, str]:
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self.proc.stdin.write(what + "\n")
        self.proc.stdin.flush()
        mark, launch = self.proc.stdout.readline().split()
        return mark, launch

    def close(self) -> None:
        if self.proc.stdin is not None:
            self.proc.stdin.close()
        self.proc.wait(30)


@pytest.fixture
def clients():
    started: list[Client] = []

    def start(site: Path, home: Path) -> Client:
        started.append(Client(site, home))
        return started[-1]

    yield start
    for client in started:
        client.close()


def test_an_upgrade_in_place_is_picked_up_by_the_next_spawn(tmp_path, home, clients):
    site = tmp_path / "site"
    install(site, "v1")
    old_client = clients(site, home)
    assert old_client.ask("warm") == ("code=v1", "template")
    old_template = _templates(home)
    assert len(old_template) == 1
    install(site, "v2")  # the upgrade, while the old client (old code in memory) still runs
    new_client = clients(site, home)
    answers = [new_client.ask() for _ in range(3)]
    assert [mark for mark, _ in answers] == ["code=v2"] * 3, answers  # the old template ran v1 here
    assert old_client.ask()[0] == "code=v2"  # a client loaded before the upgrade starts the new code too
    assert new_client.ask("warm") == ("code=v2", "template")  # warm again, through a new template
    wait_until(lambda: not pid_alive(old_template[0]), timeout=15)  # the old one retired itself
    assert len(_templates(home)) == 1


def test_two_installed_copies_on_one_home_each_run_their_own_code(tmp_path, home, clients):
    site_a, site_b = tmp_path / "a", tmp_path / "b"
    install(site_a, "a")
    install(site_b, "b")
    a, b = clients(site_a, home), clients(site_b, home)
    assert a.ask("warm") == ("code=a", "template")
    assert b.ask("warm") == ("code=b", "template")
    for _ in range(3):  # interleaved: each through its own template, none retires the other
        assert a.ask() == ("code=a", "template")
        assert b.ask() == ("code=b", "template")
    assert len(_templates(home)) == 2


def test_the_same_code_in_two_places_shares_one_template(tmp_path, home, clients):
    site_a, site_b = tmp_path / "a", tmp_path / "b"
    install(site_a, "same")
    install(site_b, "same")
    assert clients(site_a, home).ask("warm") == ("code=same", "template")
    assert clients(site_b, home).ask() == ("code=same", "template")
    assert len(_templates(home)) == 1


def test_the_fingerprint_covers_every_module_a_supervisor_can_load():
    """template.CODE names the modules of core/ the forked supervisors run; every module they
    import by its plain name (at the top or later, in a function) must be in it, or an upgrade
    of that module would not retire the template."""
    names = {p.stem for p in PROGRAM.glob("*.py")}
    missing = {}
    for module in template.CODE:
        tree = ast.parse((PROGRAM / f"{module}.py").read_text())
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                imported = [alias.name.split(".")[0] for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                imported = [node.module.split(".")[0]]
            else:
                continue
            for name in imported:
                if name in names and name not in template.CODE:
                    missing.setdefault(module, []).append(name)
    assert not missing
    assert "supervisor" in template.CODE and "template" in template.CODE


def test_a_module_changed_in_place_changes_the_fingerprint(tmp_path):
    """Also in a process that computed it before (the files' stats are checked at each call)."""
    site = tmp_path / "site"
    install(site, "v1")
    script = ("import sys\nfrom hermes_procs.core.supervisor import template\n"
              "for line in sys.stdin:\n    print(template.fingerprint(), flush=True)\n")
    path = os.pathsep.join([str(site), sysconfig.get_paths()["purelib"]])
    proc = subprocess.Popen([sys.executable, "-S", "-c", script], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            text=True, env={**os.environ, "PYTHONPATH": path}, cwd=site)
    try:
        def fingerprint() -> str:
            proc.stdin.write("\n")
            proc.stdin.flush()
            return proc.stdout.readline().strip()

        first = fingerprint()
        assert len(first) == 16 and first == fingerprint()
        with open(site / "hermes_procs" / "core" / "supervisor" / "supervisor_loop.py", "a") as fh:
            fh.write("# changed in place\n")
        changed = fingerprint()
        assert changed != first
        install(site, "v1")  # the same files again: the same code
        assert fingerprint() == first
    finally:
        proc.stdin.close()
        proc.wait(10)
