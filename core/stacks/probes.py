"""Readiness probes: when a started job counts as ready.

One :class:`ProbeRun` per job run, stepped by the stack supervisor's loop (``step()`` returns
quickly: a port probe is one local connect, an output probe reads the new output through the
registry's ``log_bytes``, an exec probe polls a child process, an http probe's request runs
on a thread). It answers "ready", "timeout" (after ``probe.timeout`` seconds, with
:attr:`ProbeRun.failure` saying what never happened) or None (look again at ``next_at``).

Output regexes come from the stack file: they run through core/userregex.py's
``compile_user`` (RE2, or a worker process with a deadline), never in this process's `re`.
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import threading
import time
import urllib.error
import urllib.request
from typing import TYPE_CHECKING, Any

from .core_api import PatternError, UserRegex, child_env, compile_user, shell_argv, to_text
from .model import Probe, StackError

if TYPE_CHECKING:
    from .core_api import ProcessRegistry

CHUNK = 256 << 10  # bytes of output one regex call takes (RE2: ~0.7 s at most; the worker: its deadline)
CARRY = 64 << 10
STEP_BUDGET = 0.5  # seconds of output scanning in one look of an output probe


def check_pattern(pattern: str, where: str) -> None:
    """StackError when `pattern` is not a regex compile_user takes."""
    try:
        compile_user(pattern, what=where).close()
    except PatternError as exc:
        raise StackError(str(exc)) from None


class ProbeRun:
    """A probe of one run of a job (see the module docstring)."""

    def __init__(self, probe: Probe, registry: ProcessRegistry, session_id: str, cwd: str,
                 env: dict[str, str]) -> None:
        self.probe = probe
        self.started = time.monotonic()
        self.next_at = self.started + probe.initial_delay
        self.failure = _NEVER[probe.kind].format(target=probe.target)
        self._check = _CHECKS[probe.kind](probe, registry, session_id, cwd, env)

    @property
    def deadline(self) -> float:
        return self.started + self.probe.timeout

    def step(self) -> str | None:
        """"ready", "timeout" or None (not yet)."""
        now = time.monotonic()
        if now < self.next_at:
            return None
        try:
            ok = self._check.check()
        except (OSError, PatternError) as exc:
            ok, self.failure = False, f"{self.probe.describe()} failed: {exc}"
        if ok:
            return "ready"
        if getattr(self._check, "last", None):
            self.failure = f"{_NEVER[self.probe.kind].format(target=self.probe.target)} (last: {self._check.last})"
        if time.monotonic() >= self.deadline:
            return "timeout"
        self.next_at = now + self.probe.interval
        return None

    def timeout_message(self) -> str:
        return f"not ready after {self.probe.timeout:g}s: {self.failure}"

    def close(self) -> None:
        self._check.close()


_NEVER = {"port": "port {target} never accepted a connection", "output": "no output matched /{target}/",
          "http": "{target} never answered 2xx or 3xx", "exec": "`{target}` never exited 0"}


class _Port:
    def __init__(self, probe: Probe, *_: Any) -> None:
        self.port = int(probe.target)
        self.last = ""

    def check(self) -> bool:
        for host in ("127.0.0.1", "::1"):
            try:
                with socket.create_connection((host, self.port), timeout=0.2):
                    return True
            except OSError:
                continue
        return False

    def close(self) -> None:
        pass


class _Output:
    """Every byte of the run's output since its start, in CHUNK steps, lines kept whole."""

    def __init__(self, probe: Probe, registry: ProcessRegistry, session_id: str, *_: Any) -> None:
        self.registry, self.session_id = registry, session_id
        self.regex: UserRegex = compile_user(probe.target, what="ready.output")
        self.offset = 0
        self.carry = b""
        self.last = ""

    def check(self) -> bool:
        # at most 16 MiB a look, and no new step after STEP_BUDGET seconds (a slow pattern must
        # not stall the stack's loop: its probe timeouts and `down`); the next look goes on from here
        budget = time.monotonic() + STEP_BUDGET
        for _ in range((16 << 20) // CHUNK):
            if time.monotonic() > budget:
                return False
            got = self.registry.log_bytes(self.session_id, start=self.offset, max_bytes=CHUNK)
            data = got.get("data") if isinstance(got, dict) else None
            if not data:
                return False
            self.offset = got["end"]
            data = self.carry + data
            cut = data.rfind(b"\n") + 1
            self.carry = data[cut:][-CARRY:]
            if self.regex.first(to_text(data)) is not None:
                return True
        return False

    def close(self) -> None:
        self.regex.close()


class _Http:
    """One GET at a time on a thread (no proxy: the URL is the machine's own)."""

    def __init__(self, probe: Probe, *_: Any) -> None:
        self.url, self.timeout = probe.target, probe.attempt_timeout
        self.result: bool | None = None
        self.thread: threading.Thread | None = None
        self.last = ""

    def check(self) -> bool:
        if self.thread is not None and self.thread.is_alive():
            return False
        if self.result:
            return True
        self.thread = threading.Thread(target=self._get, daemon=True, name="stack-http-probe")
        self.thread.start()
        self.thread.join(0.05)  # a local server answers within this: no extra interval
        return bool(self.result)

    def _get(self) -> None:
        opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
        try:
            with opener.open(self.url, timeout=self.timeout) as response:
                self.result = response.status < 400
                self.last = f"HTTP {response.status}"
        except urllib.error.HTTPError as exc:
            self.result, self.last = False, f"HTTP {exc.code}"
        except (OSError, ValueError) as exc:
            reason = getattr(exc, "reason", exc)
            self.result, self.last = False, str(reason)[:100]

    def close(self) -> None:
        pass


class _Exec:
    """The command in the job's folder and environment; one attempt at a time, killed (its
    whole process group) after `attempt_timeout`."""

    def __init__(self, probe: Probe, registry: ProcessRegistry, session_id: str, cwd: str,
                 env: dict[str, str]) -> None:
        self.argv, self.cwd, self.env = shell_argv(probe.target), cwd, child_env(env)
        self.timeout = probe.attempt_timeout
        self.proc: subprocess.Popen[bytes] | None = None
        self.began = 0.0
        self.last = ""

    def check(self) -> bool:
        if self.proc is None:
            self.proc = subprocess.Popen(self.argv, cwd=self.cwd, env=self.env, stdin=subprocess.DEVNULL,
                                         stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                                         start_new_session=True)
            self.began = time.monotonic()
            try:
                self.proc.wait(0.05)
            except subprocess.TimeoutExpired:
                pass
        code = self.proc.poll()
        if code is None:
            if time.monotonic() - self.began > self.timeout:
                self.last = f"timed out after {self.timeout:g}s"
                self.close()
            return False
        self.proc = None
        self.last = f"exit {code}"
        return code == 0

    def close(self) -> None:
        if self.proc is not None:
            try:
                os.killpg(self.proc.pid, signal.SIGKILL)
            except OSError:
                pass
            self.proc.wait()
            self.proc = None


_CHECKS: dict[str, Any] = {"port": _Port, "output": _Output, "http": _Http, "exec": _Exec}
