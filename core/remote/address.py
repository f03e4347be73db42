"""Host addresses: `ssh://[user@]host[:port]`, `docker://CONTAINER`, `k8s://[NAMESPACE/]POD[/CONTAINER]`
(with `?home=PATH&python=PATH`), parsed and checked (`parse_host`) into a `Host`, which knows the
local command that reaches the host's stdio server (core/remote/client.py runs it).
"""

from __future__ import annotations

import os
import re
import shlex
from dataclasses import dataclass, field
from urllib.parse import SplitResult, parse_qs, unquote, urlsplit

SCHEMES = ("ssh", "docker", "k8s")


@dataclass(frozen=True)
class Host:
    """A parsed host URL and the command that reaches its stdio server."""

    url: str
    scheme: str
    target: str
    port: int | None = None
    home: str | None = None
    python: str = "python3"
    extra: tuple[str, ...] = field(default=())
    ssh_options: tuple[str, ...] = field(default=())  # given by a program (the Hermes plugin), not the URL

    @property
    def label(self) -> str:
        return self.url.split("?", 1)[0]

    def argv(self, remote: list[str]) -> list[str]:
        """The local command that runs `remote` (an argv) on the host with stdio attached."""
        if self.scheme == "ssh":
            # the user's options first: for each option ssh keeps the first value it is given
            opts = [*shlex.split(os.environ.get("HERMES_PROCS_SSH_ARGS", "")), *self.ssh_options]
            port = ["-p", str(self.port)] if self.port else []
            return ["ssh", *opts, "-T", "-o", "BatchMode=yes", "-o", "ServerAliveInterval=10",
                    "-o", "ServerAliveCountMax=3", *_control_master(), *port, "--", self.target,
                    shlex.join(remote)]
        if self.scheme == "docker":
            return ["docker", "exec", "-i", self.target, *remote]
        namespace, pod, container = self.extra
        ns = ["-n", namespace] if namespace else []
        ct = ["-c", container] if container else []
        return ["kubectl", "exec", "-i", *ns, pod, *ct, "--", *remote]


# A Unix socket's path holds 107 bytes; ssh binds its master at ControlPath + "." + 16 random
# characters before renaming it, and %C is 40: the folder may take 107 - 1 - 40 - 17 of them.
CONTROL_FOLDER_MAX = 49


def _control_master() -> list[str]:
    """Options sharing one SSH connection per host between processes (each CLI call would
    otherwise pay a full SSH handshake): a master kept 60 s after its last use, its socket in
    a private folder. HERMES_PROCS_SSH_ARGS="-o ControlMaster=no" turns it off. Without a
    private folder (another user's, or one others may enter), no sharing: ssh would talk to any
    socket planted there as if it were its master. Nor with a folder whose path is too long
    for the socket (ssh would refuse to connect at all)."""
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    folder = os.path.join(base, "hermes-procs", "ssh")
    try:
        os.makedirs(folder, mode=0o700, exist_ok=True)
        st = os.stat(folder)
        if st.st_uid != os.geteuid() or st.st_mode & 0o077 or len(folder) > CONTROL_FOLDER_MAX:
            return []
    except OSError:
        return []
    return ["-o", "ControlMaster=auto", "-o", f"ControlPath={folder}/%C", "-o", "ControlPersist=60"]


def parse_host(url: str, aliases: dict[str, str] | None = None) -> Host:
    """`ssh://[user@]host[:port]`, `docker://C`, `k8s://[NS/]POD[/CONTAINER]`, or an alias
    from the config file's [hosts] table. Raises ValueError with a clear sentence.

    Every part is checked after percent-decoding, as it reaches ssh, docker or kubectl: no
    control characters anywhere (C0, DEL, C1), names of letters, digits and a few marks, and
    nothing that starts with `-` (an option)."""
    url = _host_url(url, aliases)
    if _CONTROL.search(url):  # urlsplit would drop \t \r \n without a word
        raise ValueError(f"host URL contains control characters: {url!r}")
    parts = urlsplit(url)
    if parts.scheme not in SCHEMES:
        raise ValueError(f"unsupported host scheme {parts.scheme!r} in {url!r}; use one of {', '.join(SCHEMES)}")
    query = parse_qs(parts.query)
    home = query.get("home", [None])[0]
    python = query.get("python", ["python3"])[0]
    if any(_CONTROL.search(value) for value in (home or "", python)):
        raise ValueError(f"host URL contains control characters: {url!r}")
    if parts.scheme == "ssh":
        return Host(url, "ssh", *_ssh_target(url, parts), home, python)
    words = [_decoded(w, _NAME, "name", url) for w in (parts.netloc + parts.path).split("/") if w]
    if not words:
        raise ValueError(f"expected {parts.scheme}://NAME, not {url!r}")
    if parts.scheme == "docker":
        if len(words) != 1:
            raise ValueError(f"expected docker://CONTAINER, not {url!r}")
        return Host(url, "docker", words[0], None, home, python)
    namespace, pod, container = _k8s_words(url, words)
    return Host(url, "k8s", pod, None, home, python, (namespace, pod, container))


_CONTROL = re.compile("[\x00-\x1f\x7f-\x9f]")
_USER = re.compile(r"[\w.@+-]+")  # letters (any script), digits, . _ @ + -
_HOSTNAME = re.compile(r"[\w.:%-]+")  # names, IPv4, IPv6 (with a zone id)
_NAME = re.compile(r"[A-Za-z0-9_.-]+")  # containers, pods, namespaces


def _decoded(raw: str, allowed: re.Pattern[str], what: str, url: str) -> str:
    """A part of a host URL, percent-decoded; ValueError unless it is all `allowed` characters
    and does not start with "-" (ssh, docker and kubectl would take it for an option)."""
    try:
        value = unquote(raw, errors="strict")
    except UnicodeDecodeError:
        raise ValueError(f"bad {what} in host URL {url!r}: not UTF-8 once decoded") from None
    if not allowed.fullmatch(value) or value.startswith("-"):
        raise ValueError(f"bad {what} {value!r} in host URL {url!r}")
    return value


def _host_url(url: object, aliases: dict[str, str] | None) -> str:
    """`url` trimmed, an alias replaced by its URL; ValueError unless it is a URL then."""
    if not isinstance(url, str) or not url.strip():
        raise ValueError("host must be a URL such as ssh://user@box, docker://NAME or k8s://POD")
    url = url.strip()
    if "://" not in url and aliases and url in aliases:
        url = aliases[url]
    if "://" not in url:
        known = ", ".join(sorted(aliases or {})) or "none configured"
        raise ValueError(f"unknown host {url!r}: use ssh://HOST, docker://CONTAINER, k8s://POD "
                         f"or a name from [hosts] in the config file ({known})")
    return url


def _ssh_target(url: str, parts: SplitResult) -> tuple[str, int | None]:
    """(`[user@]host`, port) of an ssh:// URL."""
    if not parts.hostname or parts.path not in ("", "/"):
        raise ValueError(f"expected ssh://[user@]host[:port], not {url!r}")
    try:
        port = parts.port
    except ValueError:
        raise ValueError(f"bad port in {url!r}") from None
    host = _decoded(parts.hostname, _HOSTNAME, "host name", url)
    user = _decoded(parts.username, _USER, "user name", url) if parts.username else None
    return (f"{user}@{host}" if user else host), port


def _k8s_words(url: str, words: list[str]) -> tuple[str, str, str]:
    """(namespace, pod, container) of k8s://[NAMESPACE/]POD[/CONTAINER]; "" where not given."""
    if len(words) > 3:
        raise ValueError(f"expected k8s://[NAMESPACE/]POD[/CONTAINER], not {url!r}")
    if len(words) == 1:
        return "", words[0], ""
    if len(words) == 2:
        return words[0], words[1], ""
    return words[0], words[1], words[2]
