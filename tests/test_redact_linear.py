"""Masking is linear: every pattern of core/registry/redact.py on adversarial 1 MB inputs costs at most
RATIO times a plain re.sub over the same input, measured in the same test (a ratio, not a
wall-clock bound: a quadratic pattern is thousands of times slower at this size, a loaded
machine slows both sides alike). The plain re.sub matches every character (``.`` with
DOTALL): its cost per character does not depend on the input's shape. Masking measures at most
~6x that today.

COVERS maps each compiled pattern of the module to the inputs built to break it; a new pattern
without adversarial inputs fails test_every_pattern_has_adversarial_inputs.
"""

from __future__ import annotations

import re
import time

import pytest

from hermes_procs.core.registry import redact as R

MB = 1 << 20
RATIO = 20
B64 = "QUJDREVGR0hJSktMTU5PUFFSU1RVVldYWVphYmNkZWZnaGlqa2xtbm9wcXJzdHV2"  # 64 base64 chars


def fill(unit: str, size: int = MB) -> str:
    return unit * (size // len(unit) + 1)


INPUTS = {
    # PEM: the case (base64 after an END line), many END lines, BEGIN without END
    "pem_b64_after_end": "-----END PRIVATE KEY-----\n" + fill(B64 + "\n"),
    "pem_b64_then_end": fill(B64 + "\n") + "-----END PRIVATE KEY-----\n",
    "pem_many_ends": fill(B64 + "\n-----END RSA PRIVATE KEY-----\n"),
    "pem_many_begins": fill("-----BEGIN PRIVATE KEY-----\n" + B64 + "\n"),
    "pem_end_kind_runs": fill("-----END " + "A " * 30 + "\n") + "PRIVATE KEY-----",
    "pem_begin_kind_runs": fill("-----BEGIN " + "A" * 60 + "\n") + "PRIVATE KEY-----",
    # key body lines on their own: every line one, lines one character too long, no line end
    "key_lines": fill(B64 + "\n"),
    "key_lines_too_long": fill(B64 + "abcdefghijklm\n"),
    "key_line_run": "A1b" * (MB // 3),
    # token shapes
    "tok_prefixes": fill("sk-ghp_eyJxoxb-AKIAASIAglpat-hf_npm_AIzagithub_pat_sk_live_rk_test_"),
    "tok_sk_run": "sk-" + "a" * MB,
    "tok_jwt_parts": fill("eyJaaaaaa.eyJbbbbbb"),
    "tok_jwt_dots": fill("eyJaaaaaa."),
    "bearer_runs": fill("Bearer "),
    "bearer_spaces": "bearer" + " " * MB + "x",
    # URL credentials and webhooks
    "url_scheme_dots": fill("a.") + "://u:p",
    "url_user_runs": fill("://a:"),
    "url_no_at": fill("http://user:pass/"),
    "url_long_user": "://" + "a" * MB + ":",
    "url_at_runs": "://:" + fill("a@"),
    "xml_tags": fill("<password>a</"),
    "xml_open_runs": fill("<password>") + "x",
    "xml_attrs": fill("<password " + "a" * 190),
    # tools with a password option of their own: commands they start, their options
    "tool_names": fill("sshpass redis-cli mongo ldapx openssl smbclient "),
    "tool_starts": fill(";redis-cli "),
    "tool_options": fill("redis-cli -a x -a x -p "),
    "tool_mongo_p": "mongo" + fill(" -p x"),
    "tool_assigns": fill("a=b ") + "redis-cli -a x",
    "tool_paths": fill("a/") + " redis-cli -a x",
    "tool_runs": fill("redis-cli " + "x" * 290 + "\n"),
    "tool_smb_users": "smbclient" + fill(" -u " + "a" * 50),
    "sshpass_opts": fill("sshpass -v x "),
    "sshpass_p_runs": "sshpass" + fill(" -p x"),
    "webhook_heads": fill("/api/webhooks/"),
    "webhook_long": "hooks.slack.com/" + "a" * MB,
    "webhook_hooks": fill("hooks "),
    # AWS bare secrets: long runs, runs of 40, near misses
    "aws_long_run": "A" * MB,
    "aws_runs_of_40": fill("aB3" * 13 + "x "),
    "aws_slashes": fill("a/"),
    # names and values
    "assign_keywords": fill("password"),
    "assign_eq": fill("password="),
    "assign_open_quote": fill("password='"),
    "assign_spaces": "api_key" + " " * MB + "=",
    "assign_key_suffix": fill("_key_pwd-key"),
    "assign_tokens": fill("token "),
    # options and command lines
    "opt_dashes": "-" * MB + "password x",
    "opt_password_runs": fill("--password "),
    "opt_prefix_runs": fill("--a-"),
    "opt_long_prefix": "--" + "a" * MB + " x",
    "mysql_words": fill("mysql ") + "-p",
    "mysql_p_runs": "mysql" + fill(" -px"),
    "mysql_lines": fill("mysql -p\n"),
    "login_words": fill("docker login "),
    "login_p_runs": fill("docker login -p "),
    "user_runs": fill(" -u "),
    "user_pairs": fill("-u a:"),
    "user_long": "-u " + "a" * MB,
    "netrc_runs": fill("login a password "),
    "netrc_lines": fill("password\n"),
    "netrc_words": fill("password "),
    "pgpass_lines": fill("h:1:b:c:d\n"),
    "pgpass_colons": fill("a:"),
    "pgpass_long_host": fill("a" * 252 + ":"),
}
CUT_INPUTS = {  # redact_cut also masks the head of a text cut mid-line
    "head_b64_lines": fill("A" * 48 + "\n"),
    "head_run": "a1" * (MB // 2),
    "head_assign": "x" * MB + "=",
    "head_quote": "k: '" + "x" * MB,
}
AROUND_INPUTS = {  # exec's output cut in its middle (redact_obj masks both sides of the marker)
    "cut_markers": fill("\n[... 12 characters left out ...]\n"),
    "cut_runs_around": "a1" * (MB // 2) + "\n[... 5 characters left out ...]\n" + "b2" * (MB // 2),
}
COVERS = {
    "_ASSIGN_RE": ["assign_keywords", "assign_eq", "assign_open_quote", "assign_spaces", "assign_key_suffix",
                   "assign_tokens"],
    "_OPTION_RE": ["opt_dashes", "opt_password_runs", "opt_prefix_runs", "opt_long_prefix"],
    "_MYSQL_P_RE": ["mysql_words", "mysql_p_runs", "mysql_lines"],
    "_LOGIN_P_RE": ["login_words", "login_p_runs"],
    "_USER_PW_RE": ["user_runs", "user_pairs", "user_long"],
    "_NETRC_RE": ["netrc_runs", "netrc_words"],
    "_NETRC_LINE_RE": ["netrc_lines", "netrc_words"],
    "_PGPASS_RE": ["pgpass_lines", "pgpass_colons", "pgpass_long_host"],
    "_TOKEN_PATTERNS": ["tok_prefixes", "tok_sk_run", "tok_jwt_parts", "tok_jwt_dots"],
    "_BEARER_RE": ["bearer_runs", "bearer_spaces"],
    "_URL_CRED_RE": ["url_scheme_dots", "url_user_runs", "url_no_at", "url_long_user"],
    "_WEBHOOK_RE": ["webhook_heads", "webhook_long", "webhook_hooks"],
    "_AWS_SECRET_RE": ["aws_long_run", "aws_runs_of_40", "aws_slashes"],
    "_KEY_LINE_RE": ["key_lines", "key_lines_too_long", "key_line_run"],
    "_PEM_RE": ["pem_many_begins", "pem_begin_kind_runs"],
    "_PEM_END_RE": ["pem_b64_after_end", "pem_many_ends", "pem_end_kind_runs"],
    "_BASE64_LINE_RE": ["pem_b64_after_end", "pem_b64_then_end"],
    "_HEAD_RUN_RE": ["head_run"],
    "_HEAD_ASSIGN_RE": ["head_assign", "head_quote"],
    "_BASE64_LINES_RE": ["head_b64_lines"],
    "_TAIL_TOKEN_RE": ["tok_prefixes"],  # searched over the last 200 characters only
    "_HINT_RE": ["tok_prefixes", "assign_eq"],  # matched at the start of one value
    "_XML_PASSWORD_RE": ["xml_tags", "xml_open_runs", "xml_attrs"],
    "_TOOL_COMMAND_RE": ["tool_names", "tool_starts", "tool_assigns", "tool_paths", "tool_runs"],
    "_SMB_USER_PW": ["tool_smb_users"],
    "_SSHPASS_RE": ["sshpass_opts", "sshpass_p_runs", "tool_names"],
    "CUT_MARKER_RE": ["cut_markers", "cut_runs_around"],
    "_TAIL_RUN_RE": ["cut_runs_around"],
}
_PLAIN = re.compile(r".", re.DOTALL)


def _best(fn, text: str, runs: int = 3) -> float:
    """The least CPU time (this thread's: time another process takes from a loaded machine does
    not count) of `runs` calls."""
    best = float("inf")
    for _ in range(runs):
        start = time.thread_time()
        fn(text)
        best = min(best, time.thread_time() - start)
    return best


def _assert_linear(fn, text: str) -> None:
    plain = _best(lambda t: _PLAIN.sub("", t), text, runs=2)
    spent = _best(fn, text, runs=1)
    if spent > RATIO * plain:  # one more try of both before calling it a failure
        plain = min(plain, _best(lambda t: _PLAIN.sub("", t), text, runs=1))
        spent = min(spent, _best(fn, text, runs=1))
    assert spent <= RATIO * plain, f"{spent:.3f}s against {plain:.3f}s for a plain re.sub ({spent / plain:.0f}x)"


@pytest.mark.parametrize("name", sorted(INPUTS))
def test_redact_is_linear(name):
    _assert_linear(R.redact, INPUTS[name])


@pytest.mark.parametrize("name", sorted(CUT_INPUTS))
def test_redact_cut_is_linear(name):
    _assert_linear(R.redact_cut, CUT_INPUTS[name])


@pytest.mark.parametrize("name", sorted(AROUND_INPUTS))
def test_redact_around_a_cut_is_linear(name):
    _assert_linear(lambda t: R.redact_obj({"output": t}), AROUND_INPUTS[name])


def test_every_pattern_has_adversarial_inputs():
    patterns = {name for name, value in vars(R).items() if isinstance(value, re.Pattern)}
    patterns.add("_TOKEN_PATTERNS")
    assert patterns <= set(COVERS), f"add adversarial inputs for {sorted(patterns - set(COVERS))}"
    for inputs in COVERS.values():
        assert all(name in INPUTS or name in CUT_INPUTS or name in AROUND_INPUTS for name in inputs)
