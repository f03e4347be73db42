"""The supervisor's watch patterns: output lines containing a pattern become watch_match events,
rate limited (one per WATCH_INTERVAL, the rest counted) and at most WATCH_MAX per job.

A mixin of supervisor_loop.Supervisor (it uses the supervisor's state); stdlib only.
"""

import time

import bounds

WATCH_INTERVAL = 15.0
WATCH_MAX = 8
MAX_LINE = 64 << 10


class Watcher:
    def _init_watch(self) -> None:
        self.watch = [p for p in self.meta.get("watch_patterns") or [] if p]
        self.watch_partial = b""
        self.watch_count = 0
        self.watch_interval = bounds.setting(self.meta.get("watch_interval"), WATCH_INTERVAL, 86400.0)
        self.watch_last = 0.0
        self.watch_suppressed = 0

    def _scan_watch(self, data: bytes) -> None:
        lines = (self.watch_partial + data).split(b"\n")
        self.watch_partial = lines.pop()[-MAX_LINE:]
        for raw in lines:
            line = _plain(raw)
            for pattern in self.watch:
                if pattern in line:
                    self._watch_hit(pattern, line)
                    break
            if not self.watch:
                return

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
    """A line of raw output as plain text (core/text.py, loaded only when first needed)."""
    import text

    return text.to_text(raw).rstrip("\n")
