"""Keeping the home small: `prune` (retention.py) and the automatic prune a spawn runs now and
then."""

from __future__ import annotations

import math
import os
import time
from pathlib import Path
from typing import Any

from .base import RegistryBase, _safe
from .paths import list_job_ids, open_nofollow, write_text_atomic

PRUNE_EVERY = 3600.0


class Housekeeping(RegistryBase):
    """prune, and the automatic prune."""

    @_safe
    def prune(self, keep_days: float | None = None, keep_count: int | None = None) -> dict[str, Any]:
        """Delete finished jobs past retention (running jobs are kept), and the stacks down
        for longer than keep_days.

        Returns `ok` with pruned, pruned_ids, kept_finished, pruned_cursors, pruned_stacks."""
        from .retention import cutoff, prune
        from .stacking import prune_stacks

        result = prune(self.jobs_dir, keep_days, keep_count)
        return {**result, "pruned_stacks": prune_stacks(self.home, cutoff(keep_days))}

    def _auto_prune(self) -> None:
        """Apply retention now and then: when an hour has passed since any registry on this
        home last did (one stat), or when jobs pile up past what retention keeps. A prune loads
        every job, so "pile up" means 20 (+10 %) more folders than the last prune left (its
        count is in .last_prune): with hundreds of jobs running, not on every spawn."""
        from .retention import keep_count

        stamp = self.home / ".last_prune"
        try:
            age = time.time() - os.lstat(stamp).st_mtime
        except FileNotFoundError:
            age = math.inf
        try:
            count = _folder_count(self.jobs_dir)
            if age > PRUNE_EVERY or (count > keep_count() + 20 and count > _pruned_left(stamp) * 1.1 + 20):
                write_text_atomic(stamp, str(count))  # replaces a planted link, never follows it
                self.prune()
                write_text_atomic(stamp, str(len(list_job_ids(self.jobs_dir))))
        except (OSError, ValueError):  # best effort: `prune` itself reports bad settings
            pass


def _folder_count(jobs_dir: Path) -> int:
    """How many job folders there are, in one stat where the filesystem counts them: a
    directory's link count is 2 + its subdirectories (ext4, xfs, tmpfs, overlayfs; staging
    folders count too, which is close enough for a threshold). Listing 1,000 folders on every
    spawn took ~1 ms; where the count says nothing (btrfs: always 1), the listing."""
    links = os.stat(jobs_dir).st_nlink
    return links - 2 if links > 2 else len(list_job_ids(jobs_dir))


def _pruned_left(stamp: Path) -> int:
    """How many job folders the last automatic prune left (0 when unknown)."""
    try:
        with os.fdopen(open_nofollow(stamp, os.O_RDONLY), "rb") as fh:
            text = fh.read(20).decode("ascii", "replace")
    except OSError:
        return 0
    return int(text) if text.isdigit() else 0
