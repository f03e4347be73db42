"""The supervisor's watch patterns: output lines containing a pattern become watch_match events,
rate limited (one per WATCH_INTERVAL, the rest counted) and at most WATCH_MAX per job.

A mixin of supervisor_loop.Supervisor (it uses the supervisor's state); stdlib only.
"""

from __future__ import annotations

import time

import bounds
from supervisor_output import LOG
from supervisor_state import SupervisorState

TYPE_CHECKING = False
if TYPE_CHECKING:
    from supervisor_clients import Client

WATCH_INTERVAL = 15.0
WATCH_MAX = 8
MAX_LINE = 64 << 10


class Watcher(SupervisorState):
    def _init_watch(self) -> None:
        self.watch = [p for p in self.meta.get("watch_patterns") or [] if p]
        self.watch_partial = b""
        self.watch_partial_hit = False  # the line being built already matched (a prompt)
        self.watch_count = 0
        self.watch_interval = bounds.setting(self.meta.get("watch_interval"), WATCH_INTERVAL, 86400.0)
        self.watch_last = 0.0
        self.watch_suppressed = 0

    def _scan_watch(self, data: bytes) -> None:
        """Match each line once, as soon as it matches: a prompt with no newline yet
        (``Proceed? [y/N] ``) matches while it waits; the rest of that line is not scanned again."""

        def matched(raw: bytes) -> bool:
            line = _plain(raw)
            pattern = next((p for p in self.watch if p in line), None)
            if pattern is not None:
                self._watch_hit(pattern, line)
            return pattern is not None

        lines = (self.watch_partial + data).split(b"\n")
        partial = lines.pop()
        reported = self.watch_partial_hit
        for raw in lines:
            if not reported and self.watch:
                matched(raw)
            reported = False
        self.watch_partial = partial[-MAX_LINE:]
        if partial and not reported and self.watch:
            reported = matched(partial)
        self.watch_partial_hit = reported

    def _set_watch(self, client: Client, patterns: object) -> None:
        """The watch op: new patterns from now on; a prompt already waiting (no newline) matches now."""
        if not isinstance(patterns, list):
            return self._reply(client, {"ok": False, "error": "patterns must be a list of strings"})
        self.watch = [p for p in patterns if isinstance(p, str) and p]
        self._reply(client, {"ok": True, "patterns": self.watch})
        if self.watch and self.exit is None:
            self.watch_partial, self.watch_partial_hit = self._log_last_line(), False
            self._scan_watch(b"")

    def _log_last_line(self) -> bytes:
        """The output after the last newline (at most MAX_LINE bytes of the current log segment)."""
        try:
            with open(LOG, "rb") as fh:
                fh.seek(max(0, self.log_size - MAX_LINE))
                return fh.read().rpartition(b"\n")[2]
        except OSError:
            return b""

    def _watch_hit(self, pattern: str, line: str) -> None:
        now = time.monotonic()
        if self.watch_count and now - self.watch_last < self.watch_interval:
            self.watch_suppressed += 1
            return
        self.watch_count += 1
        self.watch_last = now
        extra = {"suppressed": self.watch_suppressed} if self.watch_suppressed else {}
        self.watch_suppressed = 0
        self._event("watch_match", pattern=pattern, output=line[-1000:], **extra)
        if self.watch_count >= WATCH_MAX:
            self.watch = []
            self._event("watch_match", pattern=pattern, output="", notice=(
                f"watch_patterns matched {WATCH_MAX} times; watching stopped for this job"))


def _plain(raw: bytes) -> str:
    """A line of raw output as plain text (core/supervisor/text.py, loaded only when first needed)."""
    import text

    return text.to_text(raw).rstrip("\n")
