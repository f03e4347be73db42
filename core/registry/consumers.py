"""The event log's consumers: `drain_events` (each event once per consumer) and `forget_consumer`."""

from __future__ import annotations

import builtins
from typing import Any

from ..supervisor.bounds import whole
from . import events
from .base import BadInput, RegistryBase, _safe


class Consumers(RegistryBase):
    """drain_events and forget_consumer (events.py keeps the log and the cursors)."""

    # ---- events and retention ----------------------------------------------------------
    @_safe
    def drain_events(self, consumer: str = "default", all_types: bool = False,
                     only_new: bool = False, limit: int = events.DRAIN_LIMIT) -> builtins.list[dict[str, Any]]:
        """Events this consumer has not seen yet, oldest first, each exactly once, at most `limit`
        of them: when more remain the list ends with a `{"type": "more_events"}` entry (see
        docs/api.md)."""
        self._check_consumer(consumer)
        whole(limit, "limit", 1, 100_000)
        return events.drain(self.home, consumer, None if all_types else events.AGENT_TYPES, only_new, limit)

    @_safe
    def forget_consumer(self, consumer: str) -> dict[str, Any]:
        """Delete a consumer's cursor: its next drain starts over (or, with only_new, at the end)."""
        self._check_consumer(consumer)
        events.forget(self.home, consumer)
        return {"status": "ok"}

    @staticmethod
    def _check_consumer(consumer: object) -> None:
        if not events.valid_consumer(consumer):
            raise BadInput(events.CONSUMER_RULE)
