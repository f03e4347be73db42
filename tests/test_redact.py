"""Secret masking of agent-facing text: variable values, token shapes, PEM blocks, speed, opt-out."""

import pytest

from hermes_procs.core.registry.redact import redact, redact_cut, redact_obj

GHP = "ghp_" + "a1B2c3D4e5" * 4
OPENAI = "sk-" + "Z9y8X7w6V5" * 5
ANTHROPIC = "sk-ant-api03-" + "Q1w2E3r4T5" * 4
JWT = "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U"
PEM = ("-----BEGIN RSA PRIVATE KEY-----\nMIIEowIBAAKCAQEAq1w2e3r4t5y6u7i8o9p0\n"
       "a1s2d3f4g5h6j7k8l9z0x1c2v3b4n5m6\n-----END RSA PRIVATE KEY-----")


@pytest.mark.parametrize("text, secret, expected", [
    ("OPENAI_API_KEY=hunter2hunter2", "hunter2hunter2", "OPENAI_API_KEY=***"),
    ("export GITHUB_TOKEN=abc123def", "abc123def", "export GITHUB_TOKEN=***"),
    ("DB_PASSWORD: s3cr3t!", "s3cr3t!", "DB_PASSWORD: ***"),
    ('{"api_key": "hunter2 with spaces", "name": "bob"}', "hunter2", '{"api_key": "***", "name": "bob"}'),
    ("{'client_secret': 'xyz987'}", "xyz987", "{'client_secret': '***'}"),
    ("mysql --password=letmein -u root", "letmein", "mysql --password=*** -u root"),
    ("AWS_SECRET_ACCESS_KEY=wJalrXUtnFEMI/K7MDENG", "wJalrXUtnFEMI", "AWS_SECRET_ACCESS_KEY=***"),
    ("Authorization: Bearer abcdefghijklmnop123", "abcdefghijklmnop123", "Authorization: Bearer ***"),
    ('"Authorization": "Basic dXNlcjpwYXNz"', "dXNlcjpwYXNz", '"Authorization": "***"'),
    ("db: postgres://app:pa55w0rd@db:5432/x", "pa55w0rd", "db: postgres://app:***@db:5432/x"),
])
def test_secret_named_values(text, secret, expected):
    out = redact(text)
    assert secret not in out
    assert out == expected


@pytest.mark.parametrize("token, hint", [
    (GHP, "ghp_...***"),
    ("gho_" + "x" * 36, "gho_...***"),
    ("github_pat_11ABCDEFG0123456789_abcdefghijklmnopqrstuvwxyz", "github_pat_...***"),
    (OPENAI, "sk-...***"),
    (ANTHROPIC, "sk-ant-...***"),
    ("sk-proj-" + "a" * 40, "sk-proj-...***"),
    ("xoxb-123456789012-abcdefghij", "xoxb-...***"),
    ("xoxp-123456789012-abcdefghij", "xoxp-...***"),
    ("AKIAIOSFODNN7EXAMPLE", "AKIA...***"),
    ("ASIAIOSFODNN7EXAMPLE", "ASIA...***"),
    (JWT, "eyJ...***"),
])
def test_token_shapes_anywhere(token, hint):
    out = redact(f"using {token} now")
    assert token not in out
    assert out == f"using {hint} now"


@pytest.mark.parametrize("glue", ["out-", "foo_", "-", "_"])
def test_a_distinctive_token_glued_to_a_word_is_masked(glue):
    for token, hint in ((GHP, "ghp_...***"), (ANTHROPIC, "sk-ant-...***"), ("glpat-" + "a" * 20, "glpat-...***")):
        assert redact(f"id {glue}{token} end") == f"id {glue}{hint} end"
    assert redact(f"{glue}sk-usage-reporter-everything-else") == f"{glue}sk-usage-reporter-everything-else"


@pytest.mark.parametrize("word", ["task_test_shouldReturnEmptyListWhenNoInput", "risk-ant-colony-optimization-model",
                                  "highs_AndLowsOfTheMarketToday2024", "xghp_" + "a" * 30])
def test_a_prefix_that_ends_a_word_is_a_word(word):
    assert redact(f"run {word} now") == f"run {word} now"


@pytest.mark.parametrize("text", [
    "GITHUB_TOKEN: present", "OPENAI_API_KEY: missing", "password = required", "Token : Set",
    "echo ${OPENAI_API_KEY:-unset} ${DB_PASSWORD:=x} ${TOKEN:+set}",
])
def test_words_describing_a_secret_are_kept(text):
    assert redact(text) == text
    assert redact_obj({"output_preview": text})["output_preview"] == text


@pytest.mark.parametrize("text, expected", [
    ("GITHUB_TOKEN=present", "GITHUB_TOKEN=***"),  # an assignment (env dump): a value
    ('"token": "present"', '"token": "***"'),  # quoted: a value
    ("password: hunter2", "password: ***"),  # digits: a value
    ("Authorization: Basic abcdefgh", "Authorization: Basic ***"),  # a credential follows "Basic"
])
def test_values_next_to_a_secret_name_are_masked(text, expected):
    assert redact(text) == expected


def test_value_that_is_a_token_keeps_its_hint():
    assert redact(f"export OPENAI_API_KEY={OPENAI}") == "export OPENAI_API_KEY=sk-...***"
    assert redact(f"GITHUB_TOKEN: '{GHP}'") == "GITHUB_TOKEN: 'ghp_...***'"


def test_pem_blocks_whole_and_cut():
    out = redact(f"key:\n{PEM}\nafter")
    assert "MIIEowIBAAKCAQEA" not in out and out.endswith("-----END RSA PRIVATE KEY-----\nafter")
    assert "-----BEGIN RSA PRIVATE KEY-----" in out
    head_only = PEM.split("-----END")[0]  # output cut before the END line
    assert redact(head_only) == "-----BEGIN RSA PRIVATE KEY-----\n***"  # no END line made up
    assert redact("-----BEGIN PRIVATE KEY-----") == "-----BEGIN PRIVATE KEY-----"  # a search match's line
    tail_only = PEM.split("\n", 1)[1]  # a preview that starts inside the block
    assert "MIIEow" not in redact(tail_only) and "a1s2d3" not in redact(tail_only)


def test_a_tail_of_long_plain_lines_is_not_taken_for_a_key_body():
    # a notification's output of `yyy...` lines was masked whole ("Output:\n***\nlogout")
    text = "y" * 120 + ("\n" + "y" * 500) * 3 + "\nlogout\n"
    assert redact_cut(text) == text
    rows = "\n".join(["ABCDEFGHIJKLMNOPQRSTUVWXYZABCDEFGHIJKLMNOPQRSTUVWXYZ"] * 3) + "\ndone\n"  # no digit
    assert redact_cut(rows) == rows
    body = "".join(f"MIIEowIBAAKCAQEAq1w2e3r4t5y6u7i8o9p0{i:012d}abcXYZ\n" for i in range(3)) + "-----END"
    assert redact_cut(body) == "***\n***\n***\n-----END"  # a cut inside a key's body is still masked


def test_ordinary_text_untouched():
    text = ("author=John max_tokens=100 tokens: 5 disk-usage-reporter-everything task-list\n"
            "The SECRET_KEY is set. Enter password:\nPWD=/home/me skip=ghp_short keyboard: us\n"
            "Proceed? [y/N] ")
    assert redact(text) == text


def test_idempotent():
    text = f"A={OPENAI} TOKEN={GHP} pw: x\n{PEM}\nBearer {JWT} https://u:p@h/x"
    once = redact(text)
    assert redact(once) == once


def test_redact_obj_recursive_and_keys_kept():
    obj = {"command": f"curl -H 'Authorization: Bearer {JWT}'", "n": 3, "ok": True, "none": None,
           "rows": [{"output_preview": f"token {GHP}"}, ("x", f"{OPENAI}")], "api_key": "plain"}
    out = redact_obj(obj)
    assert JWT not in str(out) and GHP not in str(out) and OPENAI not in str(out)
    assert out["n"] == 3 and out["ok"] is True and out["none"] is None and "api_key" in out
    assert out["api_key"] == "plain"  # dict values that are not NAME=value text are not guessed at
    assert obj["rows"][0]["output_preview"] == f"token {GHP}"  # the input is not modified


def test_opt_out_read_at_call_time(monkeypatch):
    text = f"TOKEN={GHP}"
    monkeypatch.setenv("HERMES_PROCS_REDACT", "0")
    assert redact(text) == text and redact_obj({"a": [text]}) == {"a": [text]}
    monkeypatch.setenv("HERMES_PROCS_REDACT", "1")
    assert GHP not in redact(text)


def test_non_strings_pass_through():
    assert redact("") == "" and redact(None) is None and redact_obj(5) == 5


def test_plain_megabyte_comes_back_unchanged():
    line = "2026-01-01 12:00:00 INFO compiling module foo/bar.py -O2 took 12ms author=x key: 3\n"
    plain = line * (1_000_000 // len(line))
    assert redact(plain) == plain  # speed: tests/test_redact_linear.py (a ratio, not a clock)


def _cut(head, n):
    """A tail of exactly n characters (what the registry returns when it cut the output) starting with head."""
    body = head + "\nline two\n"
    return body + "x" * (n - len(body))


@pytest.mark.parametrize("key, n", [("output_preview", 200), ("output_preview", 1000), ("output", 2000)])
def test_tail_cut_inside_a_secret(key, n):
    for head, leaked in (("EN=hunter2hunter2 rest", "hunter2"), (GHP[3:] + " in use", GHP[3:]),
                         (("Ab1" * 16 + "\n") * 2 + "B" * 10, "Ab1Ab1Ab1Ab1Ab1A")):  # a key's body
        text = _cut(head, n)
        assert len(text) == n
        out = redact_obj({"status": "running", key: text})[key]
        assert leaked not in out and "***" in out, (head, out[:80])
        assert out.endswith("x" * 20)


def test_whole_lines_and_short_texts_keep_their_head():
    text = _cut("EN=hunter2 rest", 2000)
    assert redact_obj({"output": text, "total_lines": 3})["output"] == text  # read_log: whole lines
    short = "EN=hunter2 rest\nok"
    assert redact_obj({"output": short})["output"] == short  # not cut: the head is a whole line
    plain = _cut("compiling module core", 200)
    assert redact_obj({"output_preview": plain})["output_preview"] == plain


def test_command_cut_at_200_inside_a_token():
    command = "x" * 180 + " --token " + GHP  # list shows the first 200 characters
    row = {"session_id": "proc_0123456789ab", "command": command[:200]}
    out = redact_obj(row)["command"]
    assert GHP[:12] not in out and out.endswith("ghp_...***")
    whole = {"command": "y" * 200}
    assert redact_obj(whole) == whole
