"""Secrets reach neither jobs nor agents: one keyword list strips variables from jobs' env and
masks values for agents; command-line and config-file credentials are masked, also in the
`command` field of start/list/poll results."""

from __future__ import annotations

import re

import pytest
from conftest import wait_until

from hermes_procs.core.agents.events_stream import iter_events
from hermes_procs.core.agents.tool import run_action
from hermes_procs.core.registry import envsafe, secretwords
from hermes_procs.core.registry import redact as redact_mod
from hermes_procs.core.registry.redact import redact, redact_obj

AWS_SECRET = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"

STRIPPED = {
    "MYSQL_PWD": "hunter2", "OPENAI_KEY": "abc", "ANTHROPIC_KEY": "abc", "PGPASSWORD": "pw",
    "GPG_PASSPHRASE": "pp", "SSH_KEY_PASSPHRASE": "pp", "SLACK_WEBHOOK_URL": "https://hooks.slack.com/services/T/B/X",
    "http_proxy": "http://user:pw@proxy:3128", "HTTPS_PROXY": "http://bob:s3cret@proxy:8080",
    "DATABASE_URL": "postgres://app:pa55@db/x", "GITHUB_TOKEN": "x", "SENTRY_DSN": "https://k@sentry/1",
    "SOME_VALUE": "ghp_" + "a1B2c3D4e5" * 4, "AWS_SECRET_ACCESS_KEY": AWS_SECRET,
    "DB_PASS": "pw", "SSHPASS": "pw", "SMTP_PASS": "pw", "LDAP_BIND_PW": "pw", "GITHUB_PAT": "pw",
    "REDIS_URL": "redis://:hunter2abc@cache:6379",
}
KEPT = {"PATH": "/usr/bin:/bin", "PWD": "/home/me", "OLDPWD": "/", "HOME": "/root", "no_proxy": "localhost",
        "http_proxy_plain": "http://proxy:3128", "MAX_TOKENS": "100", "XKB_KEYMAP": "us", "AUTHOR": "me",
        "GIT_COMMIT": "0123456789abcdef0123456789abcdef01234567", "HERMES_PROCS_ENV_PASSTHROUGH": "",
        "GOPATH": "/go", "PATTERN": "x", "COMPASS_DIR": "/c", "BYPASS": "1", "BUILD_PASS_NUMBER": "12",
        "TEST_PAT_FILTER": "x", "LLVM_PASS_PLUGIN": "p.so"}


def test_env_filter_strips_secrets_and_keeps_the_rest():
    env = envsafe.child_env(base={**STRIPPED, **KEPT})
    assert not set(STRIPPED) & set(env), sorted(set(STRIPPED) & set(env))
    assert all(env[k] == v for k, v in KEPT.items())


def test_passthrough_still_passes():
    env = envsafe.child_env(base={"MYSQL_PWD": "x", envsafe.PASS_THROUGH_ENV: "MYSQL_PWD"})
    assert env["MYSQL_PWD"] == "x"


def test_job_does_not_see_secrets(registry, monkeypatch):
    for name, value in STRIPPED.items():
        monkeypatch.setenv(name, value)
    job = registry.spawn("env")
    registry.wait(job["session_id"], timeout=30)
    seen = registry.read_log(job["session_id"], offset=0, limit=10_000)["output"].splitlines()
    names = {line.split("=", 1)[0] for line in seen if "=" in line}
    assert not names & set(STRIPPED)


def test_one_keyword_list():
    for word in secretwords.SECRET_WORDS:  # the env filter strips a name holding any word of the list
        literal = re.sub(r"\(.*?\)|\[.*?\]|[?\\]", "", word)
        assert envsafe.is_secret(f"MY_{literal.upper()}", "v4lue"), word  # some only end a name (DB_PASS)
    assert redact_mod._ASSIGN_TRIGGERS is secretwords.TRIGGERS
    assert secretwords.WORDS_RE in redact_mod._ASSIGN_RE.pattern
    for word in secretwords.SECRET_WORDS:  # every word can be found through a trigger
        literal = re.sub(r"\(.*?\)|\[.*?\]|[?\\]", "", word)
        assert any(t in literal for t in secretwords.TRIGGERS), word
    for name in STRIPPED:
        if name not in ("http_proxy", "HTTPS_PROXY", "DATABASE_URL", "SOME_VALUE", "REDIS_URL"):  # found by value
            assert redact(f"{name}=v4lue") == f"{name}=***", name


@pytest.mark.parametrize("text, secret", [
    ("mysql -u root --password hunter2 db", "hunter2"),
    ("mysql --password=hunter2 db", "hunter2"),
    ("mysql -uroot -phunter2 db", "hunter2"),
    ("mariadb -h db -p'hunter2' app", "hunter2"),
    ("curl -u bob:hunter2 https://api", "hunter2"),
    ("curl --user=bob:hunter2 https://api", "hunter2"),
    ("docker login -u me -p hunter2 registry.io", "hunter2"),
    ("podman login --password hunter2 quay.io", "hunter2"),
    ("machine api.example.com login bob password hunter2", "hunter2"),
    ("machine h\n  login bob\n  password hunter2\n", "hunter2"),
    ("db.example.com:5432:app:bob:hunter2", "hunter2"),
    ("*:*:*:postgres:hunter2", "hunter2"),
    ("posting to https://hooks.slack.com/services/T000/B000/XXXXhunter2", "XXXXhunter2"),
    ("https://discord.com/api/webhooks/123/hunter2tok", "hunter2tok"),
    (f"aws_access_key_id,secret\nAKIAIOSFODNN7EXAMPLE,{AWS_SECRET}", AWS_SECRET),
    (f"the key is {AWS_SECRET}", AWS_SECRET),
    ("export MYSQL_PWD=hunter2", "hunter2"),
    ("OPENAI_KEY=hunter2 ANTHROPIC_KEY=hunter3", "hunter"),
    ("GPG_PASSPHRASE: hunter2", "hunter2"),
    ("SLACK_WEBHOOK_URL=https://hooks.slack.com/x/y", "hooks.slack.com/x"),
    ("http_proxy=http://user:hunter2@proxy:3128", "hunter2"),
    ("openssl enc -pass pass:hunter2", "hunter2"),
    ("redis://:hunter2@cache:6379/0", "hunter2"),  # no user name
    ("postgres://app:hun@ter2@db/x", "ter2"),  # an @ in the password
    ("sshpass -p hunter2 ssh h", "hunter2"),
    ("sshpass -phunter2 ssh h", "hunter2"),
    ("redis-cli -h cache -a hunter2 ping", "hunter2"),
    ("mongosh -u admin -p hunter2 --host db", "hunter2"),
    ("ldapsearch -x -D cn=admin -w hunter2 -b dc=x", "hunter2"),
    ("openssl rsa -passin pass:hunter2 -in key.pem", "hunter2"),
    ("smbclient //nas/share -U bob%hunter2", "hunter2"),
    ("az login -u me@x.com -p hunter2", "hunter2"),
    ("<server><password>hunter2</password></server>", "hunter2"),
    ("DB_PASS=hunter2 SMTP_PASS=hunter3", "hunter"),
    ("sshpass -v -p 'my hunter2' ssh -p 22 h", "hunter2"),
    ("sudo LDAPTLS_REQCERT=never /usr/bin/ldapmodify -w hunter2 -f x", "hunter2"),
    ("x=$(redis-cli -a hunter2 get k)", "hunter2"),
    ("<passphrase>hunter2</passphrase> <password type='x'>hunter3</password>", "hunter"),
])
def test_command_line_and_config_credentials_are_masked(text, secret):
    out = redact(text)
    assert secret not in out and "***" in out, out
    assert redact(out) == out


@pytest.mark.parametrize("text, expected", [
    ("mysql -phunter2; echo ok", "mysql -p***; echo ok"),
    ("mysql -uroot -phunter2 && ls", "mysql -uroot -p*** && ls"),
    ("(mysql -phunter2)", "(mysql -p***)"),
    ("docker login -p hunter2; docker push x", "docker login -p ***; docker push x"),
    ("curl -u bob:hunter2 || true", "curl -u bob:*** || true"),
    ("sshpass -p hunter2; ssh h", "sshpass -p ***; ssh h"),
    ("mysql -phun;ter2 x", "mysql -p*** x"),  # inside the value: not a shell word's end, all masked
])
def test_the_shell_operator_after_a_masked_value_is_kept(text, expected):
    """`-pPW;` was `-p***` and the command read as if the next one were its argument."""
    assert redact(text) == expected


@pytest.mark.parametrize("text", [
    "docker run -u 1000:1000 image", "git log 0123456789abcdef0123456789abcdef01234567",
    "ssh -p 2222 host", "PWD=/home/me OLDPWD=/tmp", "Password is required\n", "pip install -U pkg",
    "mysql -u root -p", "Enter password: ", "max_tokens=100 author=me keyboard: us",
    "ls -a /tmp; redis-cli ping", "ls -w 80 && ldapsearch -b dc=x", "https://user@example.com/x",
    "GOPATH=/go PATTERN=x*y bypass=1",
    "sshpass -f pwfile ssh -p 2222 host", "docker run --name mongo -p 27017:27017 mongo",
    "python ldap_sync.py -w 4", "curl ldap://h -w '%{http_code}'",
    "https://user@host.example/x?notify=ops@corp.com", "BUILD_PASS_NUMBER=12 TEST_PAT_FILTER=x",
])
def test_ordinary_command_lines_untouched(text):
    assert redact(text) == text


def test_command_field_of_start_list_and_poll_is_masked(registry):
    command = "mysql -uroot -phunter2 -e 'select 1' || curl -u bob:hunter3 http://127.0.0.1:9 || true"
    started = run_action({"action": "start", "command": command}, registry)
    assert started["status"] == "running", started
    listed = run_action({"action": "list"}, registry)
    polled = run_action({"action": "poll", "session_id": started["session_id"]}, registry)
    rows = [r for r in listed["processes"] if r["session_id"] == started["session_id"]] \
        if isinstance(listed, dict) and "processes" in listed else []
    for text in [started["command"], polled["command"], *[r["command"] for r in rows]]:
        assert "hunter2" not in text and "hunter3" not in text and "-p***" in text, text
    assert rows, listed


def test_a_stack_jobs_secret_printed_bare_is_masked_for_agents(registry, tmp_path):
    """A stack file's env and env_file give a job its password; the job prints it bare (no
    NAME= before it, no token shape): the agent's answers about the job mask it, the user's raw
    log keeps it."""
    (tmp_path / ".env").write_text("API_TOKEN=Mellon5peak\n")
    (tmp_path / "hermes-procs.toml").write_text(
        '[jobs.api]\ncommand = "echo $DB_PASSWORD; echo [$API_TOKEN]; echo $PORT_LABEL; sleep 30"\n'
        'env = { DB_PASSWORD = "Hunter2Horse", PORT_LABEL = "plainvalue" }\nenv_file = ".env"\n')
    up = run_action({"action": "up", "cwd": str(tmp_path), "wait_ready": True}, registry)
    sid = up["jobs"][0]["session_id"]
    assert wait_until(lambda: "plainvalue" in registry.read_log(sid)["output"], timeout=10)
    answers = [run_action({"action": "log", "session_id": sid}, registry)["output"],
               run_action({"action": "poll", "session_id": sid}, registry)["output_preview"],
               *(m["line"] for m in run_action({"action": "search", "pattern": "e"}, registry)["matches"])]
    for text in answers:
        assert "Hunter2Horse" not in text and "Mellon5peak" not in text, text
    assert answers[0] == "***\n[***]\nplainvalue"  # a variable not named as a secret is kept
    events = [e for e in iter_events(registry, "t") if e.get("session_id") == sid]
    assert events and "Hunter2Horse" not in repr(events)
    assert "Hunter2Horse" in registry.read_log(sid)["output"]  # the user's API is not masked
    run_action({"action": "down", "stack": up["stack"]}, registry)


def test_a_tail_cut_inside_a_jobs_secret_masks_the_rest_of_it(registry):
    """output_preview is the last 1,000 characters: cut through a password of letters only, its
    end (`orse`) has no shape to find; the job's own values tell it."""
    command = 'printf "%s%s" "$DB_PASSWORD" "$(head -c 996 /dev/zero | tr "\\0" y)"; sleep 30'
    started = run_action({"action": "start", "command": command, "env": {"DB_PASSWORD": "HunterHorse"}}, registry)
    sid = started["session_id"]
    assert wait_until(lambda: len(registry.poll(sid)["output_preview"]) == 1000, timeout=10)
    assert registry.poll(sid)["output_preview"].startswith("orsey")  # the cut is where we want it
    preview = run_action({"action": "poll", "session_id": sid}, registry)["output_preview"]
    assert preview == "***" + "y" * 996


def test_a_cut_head_is_masked_also_when_a_jobs_secret_is_in_the_tail(registry):
    """The job's values are masked after the shapes: masking them first changed the tail's
    length, by which the cut of a token (`q1w2...`) is told, and its head showed."""
    command = ('printf "zzq1w2e3r4t5y6u7i8 %s %s" "$DB_PASSWORD" "$(head -c 971 /dev/zero | tr "\\0" y)"; '
               'sleep 30')
    sid = run_action({"action": "start", "command": command, "env": {"DB_PASSWORD": "HunterHorse"}},
                     registry)["session_id"]
    assert wait_until(lambda: len(registry.poll(sid)["output_preview"]) == 1000, timeout=10)
    assert registry.poll(sid)["output_preview"].startswith("q1w2e3r4t5y6u7i8 HunterHorse yyy")
    preview = run_action({"action": "poll", "session_id": sid}, registry)["output_preview"]
    assert preview == "*** *** " + "y" * 971


def test_another_jobs_many_secrets_do_not_push_a_jobs_own_out(registry):
    """One pattern of the 256 longest values of every job an answer named: a job given 300 long
    ones unmasked the others in list and search."""
    victim = run_action({"action": "start", "command": 'echo "marker $DB_PASSWORD"; sleep 30',
                         "env": {"DB_PASSWORD": "Zx9-correct-battery"}}, registry)["session_id"]
    decoys = {f"K{i}_PASSWORD": f"decoy-{i:04d}-" + "x" * 80 for i in range(300)}
    decoy = run_action({"action": "start", "command": "echo marker $K7_PASSWORD; sleep 30", "env": decoys},
                       registry)["session_id"]
    assert wait_until(lambda: all("marker" in registry.read_log(s)["output"] for s in (victim, decoy)), timeout=10)
    answers = [run_action({"action": "search", "pattern": "marker"}, registry),
               run_action({"action": "list"}, registry)]
    assert all("Zx9-correct-battery" not in repr(a) and "decoy-0007" not in repr(a) for a in answers), answers
    lines = {m["session_id"]: m["line"] for m in answers[0]["matches"]}
    assert lines == {victim: "marker ***", decoy: "marker ***"}


def test_output_that_begins_like_the_end_of_a_secret_is_kept_when_not_cut(registry):
    """The cut-head rule ran on every output: `2024-12-08 ...` lost `2024` to DB_PASSWORD=Winter2024."""
    out = run_action({"action": "exec", "command": "echo '2024-12-08 12:00 server started'",
                      "env": {"DB_PASSWORD": "Winter2024"}}, registry)
    assert out["output"] == "2024-12-08 12:00 server started\n", out
    sid = out["session_id"]
    assert run_action({"action": "poll", "session_id": sid}, registry)["output_preview"].startswith("2024-12-08")
    assert run_action({"action": "log", "session_id": sid}, registry)["output"].startswith("2024-12-08")


def test_a_secret_wrapped_over_two_rows_of_a_screen_is_masked(registry):
    """`screen` cut a wrapped line into rows: a value longer than the terminal's width, or one
    that crossed its right edge, showed whole across two rows."""
    secret = "correct-horse-battery-staple-" * 3 + "end"  # 90 characters on a 60-column terminal
    sid = registry.spawn("echo $SESSION_SECRET; echo x; sleep 30", pty=True, rows=10, cols=60,
                         env={"SESSION_SECRET": secret})["session_id"]
    assert wait_until(lambda: "x" in registry.screen(sid)["lines"][2], timeout=10)
    lines = run_action({"action": "screen", "session_id": sid}, registry)["lines"]
    assert lines[0] == "*" * 60 and lines[1] == "*" * 30, lines[:3]
    assert "horse" not in "".join(lines)


def test_exec_output_cut_in_its_middle_masks_both_sides_of_the_cut(registry):
    """exec keeps the first 2,000 and the last 14,000 characters: a value the cut went through
    showed 30 of its 40 characters before `[... left out ...]`, a token's end after it."""
    secret = "wxyzabcdefghijklmnopqrstuvwxyzabcdefghij"  # letters only: no shape to find
    command = "printf '%01969d ' 0; echo $MY_TOKEN; head -c 20000 /dev/zero | tr '\\0' a"
    out = run_action({"action": "exec", "command": command, "env": {"MY_TOKEN": secret}}, registry)["output"]
    head, _, _ = out.partition("\n[... ")
    assert head.endswith(" ***") and "wxyzabcdefgh" not in out, head[-60:]
    # a token's shape on either side of the cut: its start before, its end after
    cut = redact_obj({"output": "x Zq7Kp2Lm9XwR4t\n[... 9 characters left out ...]\nGs0Ab2Cd3Ef4Gh rest"})
    assert cut["output"] == "x ***\n[... 9 characters left out ...]\n*** rest"
