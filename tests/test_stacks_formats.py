"""The four stack file formats read into one model (core/stacks/): real files in a temporary
folder; every bad file is one line naming the problem, every unsupported key one warning."""

from __future__ import annotations

import os
import time

import pytest

from hermes_procs.core.stacks.loader import DEFAULT_FILES, load_stack
from hermes_procs.core.stacks.model import StackError


def write(folder, name, text):
    path = folder / name
    path.write_text(text)
    return str(path)


def test_toml_maps_every_key(tmp_path):
    (tmp_path / "api").mkdir()
    write(tmp_path, ".env", "TOKEN=abc\n# a comment\nexport MODE='dev'\n")
    spec = load_stack(write(tmp_path, "hermes-procs.toml", """
name = "shop"
debounce = 0.2
[jobs.db]
command = "db --port 5432"
ready = { port = 5432, timeout = 7 }
[jobs.api]
command = "api"
cwd = "api"
env = { DEBUG = "1" }
env_file = ".env"
pty = true
depends_on = { db = "ready" }
ready = { http = "http://127.0.0.1:8000/health" }
restart = "on-failure"
max_restarts = 4
backoff = 0.5
watch = ["api/**/*.py"]
stop_grace = 2
"""))
    assert spec.name == "shop" and spec.format == "toml" and spec.order() == ["db", "api"]
    api = spec.jobs["api"]
    assert api.cwd == str(tmp_path / "api") and api.pty and api.depends_on == {"db": "ready"}
    assert api.env == {"TOKEN": "abc", "MODE": "dev", "DEBUG": "1"}
    assert (api.restart, api.max_restarts, api.backoff, api.stop_grace) == ("on-failure", 4, 0.5, 2)
    assert api.ready is not None and api.ready.kind == "http" and api.watch == ["api/**/*.py"]
    assert spec.jobs["db"].ready is not None and spec.jobs["db"].ready.timeout == 7 and spec.debounce == 0.2


@pytest.mark.parametrize(("text", "error"), [
    ('[jobs.a\ncommand="x"\n', "hermes-procs.toml: invalid TOML"),
    ('[jobs.a]\ncommand="x"\ncomand="y"\n', "jobs.a: unknown key 'comand' (did you mean command?)"),
    ('[jobs.a]\ncommand=3\n', "jobs.a.command: must be a string, not 3"),
    ('[jobs.a]\ncommand="x"\ndepends_on=["zz"]\n', "jobs.a.depends_on: no job named 'zz' in this stack"),
    ('[jobs.a]\ncommand="x"\ndepends_on="b"\n',
     "jobs.a.depends_on: must be a list of job names or a table of name = condition, not 'b'"),
    ('[jobs.a]\ncommand="x"\ndepends_on=["b"]\n[jobs.b]\ncommand="y"\ndepends_on=["a"]\n',
     "dependency cycle: a -> b -> a"),
    ('[jobs.a]\ncommand="x"\nrestart="sometimes"\n', "jobs.a.restart: must be one of no, on-failure, always"),
    ('[jobs.a]\ncommand="x"\nstop_grace=604800\n', "jobs.a.stop_grace: must be a number of seconds from 0 to 60"),
    ('[jobs.a]\ncommand="x"\nready={port=99999}\n', "jobs.a.ready.port: must be a TCP port"),
    ('[jobs.a]\ncommand="x"\nready={output="(["}\n', "is not a valid regular expression"),
    ('[jobs.a]\ncommand="x"\nready={http="ftp://x/"}\n', "jobs.a.ready.http: must be an http:// or https:// URL"),
    ('[jobs.a]\ncommand="x"\nready={http="http://127.0.0.1/a b"}\n', "a URL holds no spaces or control characters"),
    ('[jobs.a]\ncommand="x"\nready={http="http://127.0.0.1/\\u0007"}\n', "a URL holds no spaces or control"),
    ('[jobs.a]\ncommand="x"\ndepends_on={b="healthy"}\n[jobs.b]\ncommand="y"\n', "jobs.a.depends_on.b"),
    ('[jobs.a]\ncommand="x"\nenv_file="missing.env"\n',
     "hermes-procs.toml: jobs.a.env_file missing.env: no such file: "),
    ('[jobs.a]\ncommand="x"\nwatch=["src/[z-a].py"]\n', "jobs.a.watch: 'src/[z-a].py' is not a glob (invalid"),
    ('[jobs.a]\ncommand="x"\nwatch=["[!]"]\n', "jobs.a.watch: '[!]' is not a glob"),
    ('[jobs.a]\ncommand="x"\nwatch=["/usr/**/*.py"]\n', "'/usr/**/*.py' is an absolute path"),
    ('[jobs.a]\ncommand="x"\nwatch=["src/../../x"]\n', "leaves the stack file's folder"),
    ('[jobs.a]\ncommand="x"\nwatch=["' + "*" * 400 + '"]\n', "is longer than 300 characters"),
    ("x = " + "[" * 100_000 + "]" * 100_000 + "\n", "hermes-procs.toml: nested too deeply"),
    ('name = "bad name"\n[jobs.a]\ncommand="x"\n', "name 'bad name' must be"),
    ('[other]\n', "unknown key 'other'"),
    ('name = "x"\n', "no [jobs.NAME] table"),
])
def test_a_bad_toml_file_is_one_line_naming_the_problem(tmp_path, text, error):
    with pytest.raises(StackError) as caught:
        load_stack(write(tmp_path, "hermes-procs.toml", text))
    message = str(caught.value)
    assert error in message and "\n" not in message, message


def test_an_env_file_that_is_a_fifo_is_refused_not_waited_on(tmp_path):
    os.mkfifo(tmp_path / "e")
    with pytest.raises(StackError, match=r"jobs\.a\.env_file e: not a regular file"):
        load_stack(write(tmp_path, "hermes-procs.toml", '[jobs.a]\ncommand="x"\nenv_file="e"\n'))


def test_a_yaml_alias_of_aliases_is_refused_at_once(tmp_path):
    # a 435-byte file of aliases ten wide and eight deep: its error quoted the value's whole repr
    # (16 s, 590 MB; one level more, 160 s and 6 GB)
    levels = ["a0: &a0 [x,x,x,x,x,x,x,x,x,x]"] + [f"a{i}: &a{i} [" + ",".join([f"*a{i - 1}"] * 10) + "]"
                                                  for i in range(1, 8)]
    text = "\n".join([*levels, "processes:", "  web:", "    command: *a7"]) + "\n"
    started = time.monotonic()
    with pytest.raises(StackError, match=r"processes\.web\.command: must be a string"):
        load_stack(write(tmp_path, "process-compose.yaml", text))
    assert time.monotonic() - started < 5


def test_procfile(tmp_path):
    spec = load_stack(write(tmp_path, "Procfile", "# the app\nweb: python -m http.server $PORT\n\n"
                                                  "worker:  sleep 100  \nrelease: echo migrate\n"))
    assert spec.format == "procfile" and list(spec.jobs) == ["web", "worker", "release"]
    assert spec.jobs["web"].command == "python -m http.server $PORT" and spec.jobs["worker"].command == "sleep 100"
    assert spec.name == tmp_path.name


def test_a_bad_procfile_line_is_named(tmp_path):
    with pytest.raises(StackError, match="Procfile line 2: expected NAME: COMMAND"):
        load_stack(write(tmp_path, "Procfile", "web: ok\nthis is not a process line\n"))


def test_process_compose(tmp_path):
    (tmp_path / "sub").mkdir()
    spec = load_stack(write(tmp_path, "process-compose.yaml", """
version: "0.5"
log_location: /tmp/pc.log
processes:
  db:
    command: python3 -m http.server 9
    working_dir: sub
    environment: ["A=1", "B=two=2"]
    readiness_probe:
      http_get: {host: 127.0.0.1, port: 9, path: /health}
      timeout_seconds: 3
  migrate:
    command: echo migrated
    depends_on:
      db: {condition: process_healthy}
  api:
    command: sleep 100
    depends_on:
      migrate: {condition: process_completed_successfully}
      db: {condition: process_started}
    readiness_probe:
      exec: {command: "true"}
    availability: {restart: on_failure, backoff_seconds: 2, max_restarts: 3}
    shutdown: {signal: 15}
  off:
    command: sleep 5
    disabled: true
"""))
    assert spec.format == "process-compose" and list(spec.jobs) == ["db", "migrate", "api", "off"]
    db, api = spec.jobs["db"], spec.jobs["api"]
    assert db.cwd == str(tmp_path / "sub") and db.env == {"A": "1", "B": "two=2"}
    assert db.ready is not None and (db.ready.kind, db.ready.target) == ("http", "http://127.0.0.1:9/health")
    assert spec.jobs["migrate"].depends_on == {"db": "ready"}
    assert api.depends_on == {"migrate": "completed_successfully", "db": "started"}
    assert (api.restart, api.backoff, api.max_restarts) == ("on-failure", 2, 3)
    assert api.ready is not None and api.ready.kind == "exec"
    assert spec.jobs["off"].autostart is False  # `off` is a name (YAML 1.2), not a boolean
    assert "process-compose.yaml: log_location: not supported, ignored" in spec.warnings
    assert "process-compose.yaml: processes.api.shutdown.signal: not supported, ignored" in spec.warnings


def test_a_misspelt_key_is_named_with_the_key_it_may_mean(tmp_path):
    spec = load_stack(write(tmp_path, "process-compose.yaml", """
processes:
  web:
    command: sleep 5
    availibility: {restart: always}
    depend_on: {db: {condition: process_started}}
    liveness_probe: {exec: {command: "true"}}
"""))
    assert spec.warnings == [
        "process-compose.yaml: processes.web.availibility: not supported, ignored (did you mean availability?)",
        "process-compose.yaml: processes.web.depend_on: not supported, ignored (did you mean depends_on?)",
        # not a typo of readiness_probe: it says what hermes-procs does instead
        "process-compose.yaml: processes.web.liveness_probe: not supported, ignored (a running job is not probed; "
        "availability.restart restarts it when it exits)"]


def test_mprocs(tmp_path):
    (tmp_path / "sub").mkdir()
    spec = load_stack(write(tmp_path, "mprocs.yaml", """
procs:
  a:
    shell: "echo hi; sleep 100"
  b:
    cmd: ["sleep", "100 200"]
    cwd: sub
    env: {X: "1"}
    autostart: false
  no:
    shell: "sleep 50"
    stop: SIGKILL
"""))
    assert spec.format == "mprocs" and list(spec.jobs) == ["a", "b", "no"]
    assert spec.jobs["b"].command == "sleep '100 200'" and spec.jobs["b"].env == {"X": "1"}
    assert spec.jobs["b"].autostart is False and spec.jobs["b"].cwd == str(tmp_path / "sub")
    assert spec.warnings == ["mprocs.yaml: procs.no.stop: not supported, ignored"]


def test_a_yaml_value_reaches_the_job_as_it_was_written(tmp_path):
    """YAML 1.1 made 18.10 "18.1", 12:30 "750" (minutes) and a date a repr in an error; 1.2's
    core schema, which process-compose and mprocs read, keeps them text."""
    values = "{V: 18.10, T: 12:30, E: 1e3, D: 2024-01-02, H: 0x1F, P: 8000, B: true, O: off, Z: 017}"
    compose = load_stack(write(tmp_path, "process-compose.yaml",
                               f"processes:\n  a: {{command: x, environment: {values}}}\n"))
    mprocs = load_stack(write(tmp_path, "mprocs.yaml", f"procs:\n  a: {{shell: x, env: {values}}}\n"))
    written = {"V": "18.10", "T": "12:30", "E": "1e3", "D": "2024-01-02", "H": "0x1F", "P": "8000", "B": "true",
               "O": "off", "Z": "017"}
    assert compose.jobs["a"].env == written and mprocs.jobs["a"].env == written


def test_a_key_a_merge_brings_may_be_overridden_at_any_depth(tmp_path):
    """The check for keys given twice ran after `<<` had flattened a deeper mapping: its own
    override of a merged key read as a key given twice."""
    spec = load_stack(write(tmp_path, "process-compose.yaml", "x-base: &b {command: x, working_dir: .}\n"
                            "x-deep: {y: {z: &c {<<: *b, command: y}}}\nprocesses:\n  a: {<<: *c}\n"))
    assert list(spec.jobs) == ["a"]


def test_a_toml_float_in_env_is_refused_not_rewritten(tmp_path):
    """TOML keeps no text for a float: `V = 3.10` reached the job as 3.1."""
    with pytest.raises(StackError) as caught:
        load_stack(write(tmp_path, "hermes-procs.toml", '[jobs.a]\ncommand = "x"\nenv = { N = 3, V = 3.10 }\n'))
    assert str(caught.value) == ('hermes-procs.toml: jobs.a.env.V: a TOML float (read as 3.1): quote it (V = "...") '
                                 "so that the job gets the text as written")
    spec = load_stack(write(tmp_path, "hermes-procs.toml", '[jobs.a]\ncommand = "x"\nenv = { N = 3, V = "3.10" }\n'))
    assert spec.jobs["a"].env == {"N": "3", "V": "3.10"}


@pytest.mark.parametrize(("name", "text", "error"), [
    ("process-compose.yaml", "processes: [1, 2\n", "invalid YAML"),
    ("process-compose.yaml", "processes:\n  a: {}\n", "processes.a"),
    ("process-compose.yaml", "processes:\n  web: {comand: sleep 10}\n",
     "process-compose.yaml: processes.web: needs a command (comand: did you mean command?)"),
    ("process-compose.yaml", "processes:\n  a: {command: x, depends_on: {b: {condition: process_started}}}\n",
     "processes.a.depends_on: no job named 'b' in this stack"),
    ("mprocs.yaml", "procs:\n  a: {shell: 1}\n", "procs.a.shell"),
    ("process-compose.yaml", 'processes:\n  a: {command: x, environment: ["A=x\\0y"]}\n',
     "processes.a.environment.A: must be a string"),
    ("process-compose.yaml", "processes: " + "[" * 50_000 + "]" * 50_000 + "\n", "nested too deeply"),
    ("mprocs.yaml", "- just a list\n", "mprocs.yaml"),
    ("process-compose.yaml", "processes:\n  a: {command: sleep 1}\n  a: {command: sleep 2}\n",
     "process-compose.yaml: invalid YAML: the key 'a' is given twice (line 3, column 3)"),
    ("mprocs.yaml", "procs:\n  a: {shell: x, env: {A: 1, A: 2}}\n", "the key 'A' is given twice (line 2, column 29)"),
    ("process-compose.yaml",
     "processes:\n  a:\n    command: x\n    readiness_probe:\n      http_get: {path: \"/a\\nb\"}\n",
     "processes.a.readiness_probe.http_get: a URL holds no spaces or control characters"),
])
def test_a_bad_yaml_file_is_one_line(tmp_path, name, text, error):
    with pytest.raises(StackError) as caught:
        load_stack(write(tmp_path, name, text))
    assert error in str(caught.value) and "\n" not in str(caught.value), caught.value


def test_without_a_file_the_first_known_one_is_read(tmp_path):
    write(tmp_path, "mprocs.yaml", "procs:\n  m: {shell: 'true'}\n")
    write(tmp_path, "Procfile", "p: true\n")
    assert DEFAULT_FILES.index("Procfile") < DEFAULT_FILES.index("mprocs.yaml")
    assert list(load_stack(cwd=str(tmp_path)).jobs) == ["p"]
    assert list(load_stack(str(tmp_path)).jobs) == ["p"]  # a folder: its stack file
    (tmp_path / "Procfile").unlink()
    (tmp_path / "mprocs.yaml").unlink()
    with pytest.raises(StackError, match="no stack file in"):
        load_stack(cwd=str(tmp_path))


def test_a_folder_or_dangling_link_by_a_stack_files_name_is_said_not_skipped(tmp_path):
    write(tmp_path, "mprocs.yaml", "procs:\n  m: {shell: 'true'}\n")
    (tmp_path / "hermes-procs.toml").mkdir()  # a stack file after it is read: it does not hide it
    assert load_stack(cwd=str(tmp_path)).format == "mprocs"
    os.remove(tmp_path / "mprocs.yaml")  # without one it is said (it was "no stack file")
    with pytest.raises(StackError, match=r"hermes-procs.toml is a folder: a stack file must be a regular file"):
        load_stack(cwd=str(tmp_path))
    (tmp_path / "hermes-procs.toml").rmdir()
    (tmp_path / "Procfile").symlink_to(tmp_path / "gone")
    with pytest.raises(StackError, match=r"Procfile is a link to nothing"):
        load_stack(cwd=str(tmp_path))
    (tmp_path / "Procfile").unlink()
    os.mkfifo(tmp_path / "process-compose.yaml")  # never opened: a fifo would block the read
    with pytest.raises(StackError, match=r"process-compose.yaml is a special file"):
        load_stack(cwd=str(tmp_path))
