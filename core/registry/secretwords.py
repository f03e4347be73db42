"""The one list of words that mark a name as holding a secret.

The env filter (envsafe) strips variables whose names contain one of them from jobs'
environments; the masking (redact) hides values assigned to names containing one of them
(``NAME=value``, ``"name": "value"``, ``--name value``). Each entry is a regular-expression piece
matched against the lower-cased name; ``TRIGGERS`` are plain substrings, at least one of which
occurs wherever an entry matches (a cheap test before running the expression). Entries start
with a literal (no character class): the masking's scan then stays a fast literal search.
"""

from __future__ import annotations

import re

SECRET_WORDS = (
    r"api[_-]?key", r"apikey", r"access[_-]?key", r"secret", r"password", r"passwd", r"passphrase",
    r"private[_-]?key", r"credentials?", r"token(?!s\b)", r"authorization", r"auth(?!or)", r"cookie",
    r"signing[_-]?key", r"encryption[_-]?key", r"master[_-]?key", r"session[_-]?key", r"client[_-]?key",
    r"_key(?![a-z])", r"-key(?![a-z])",  # OPENAI_KEY, ANTHROPIC_KEY, STRIPE_KEY (not KEYMAP, MONKEY)
    r"_pwd(?![a-z])", r"-pwd(?![a-z])",  # MYSQL_PWD (not PWD, OLDPWD)
    # at the end of a name only: DB_PASS, SMTP_PASS, SSHPASS (not COMPASS, BUILD_PASS_NUMBER),
    # LDAP_BIND_PW, GITHUB_PAT, a personal access token (not _PATH, TEST_PAT_FILTER)
    r"_pass(?![a-z0-9_])", r"-pass(?![a-z0-9_])", r"sshpass", r"_pw(?![a-z0-9_])", r"-pw(?![a-z0-9_])",
    r"_pat(?![a-z0-9_])", r"-pat(?![a-z0-9_])",
    r"dsn", r"pgpass", r"webhook",
)
TRIGGERS = ("key", "secret", "pass", "credential", "token", "auth", "cookie", "pw", "pat", "dsn", "webhook")
WORDS_RE = "|".join(SECRET_WORDS)
_NAME_RE = re.compile(WORDS_RE)


def is_secret_name(name: str) -> bool:
    """True when the variable or field name `name` marks a secret (case-insensitive)."""
    return bool(_NAME_RE.search(name.lower()))
