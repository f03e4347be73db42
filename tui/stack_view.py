"""Stacks in the jobs table: each stack is one collapsible header row with its state
(starting, up, degraded, down) above the jobs it runs now.

:meth:`StackGroups.arrange` turns the sampler's job rows and the stacks' states
(``registry.stacks()``) into what the table needs: the header rows to add,
which row belongs under which header (the table sorts a group as one, headers first), and
which rows to hide: the members of a collapsed stack, the earlier runs of a stack's jobs (each
restart is a new job; the header counts them), and everything outside the stack filter (``S``).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any

from rich.text import Text

from hermes_procs.core.supervisor.text import safe_line

from .sampler import JobRow

__all__ = ["HEADER", "StackGroups", "header_id", "is_header", "state_text", "summary_text"]

HEADER = "stack:"
STATE_STYLES = {"up": "bold green", "ready": "green", "starting": "bold yellow", "waiting": "yellow",
                "restarting": "bold yellow", "degraded": "bold red", "failed": "bold red", "blocked": "red",
                "unready": "red", "stopping": "yellow", "down": "dim", "stopped": "dim", "exited": "green",
                "off": "dim"}


def header_id(stack: str) -> str:
    return HEADER + stack


def is_header(session_id: str | None) -> bool:
    return bool(session_id) and str(session_id).startswith(HEADER)


def state_text(state: str) -> Text:
    """A stack's or a stack job's state, coloured (the table's status cell starts with a space)."""
    return Text.assemble(" ", (state, STATE_STYLES.get(state, "")))


@dataclass
class StackGroups:
    """What the table shows of the stacks (see the module docstring)."""

    collapsed: set[str] = field(default_factory=set)
    only: str = ""  # the stack filter ("": every job)
    stacks: dict[str, dict[str, Any]] = field(default_factory=dict)  # name -> api.stacks() entry

    def arrange(self, jobs: list[JobRow], stacks: list[dict[str, Any]]
                ) -> tuple[list[JobRow], dict[str, str], set[str]]:
        """(rows with the headers, row id -> its header id, ids to hide)."""
        self.stacks = {s["stack"]: s for s in stacks if isinstance(s, dict) and s.get("stack")}
        current = {name: {j.get("session_id") for j in s.get("jobs", [])} for name, s in self.stacks.items()}
        members: dict[str, list[JobRow]] = {name: [] for name in self.stacks}
        rows, groups, hidden = [], {}, set()
        for row in jobs:
            if row.stack in self.stacks:
                groups[row.session_id] = header_id(row.stack)
                if row.session_id in current[row.stack]:
                    members[row.stack].append(row)
                    row = dataclasses.replace(row, member=True)
                if row.session_id not in current[row.stack] or row.stack in self.collapsed:
                    hidden.add(row.session_id)
            if self.only and row.stack != self.only:
                hidden.add(row.session_id)
            rows.append(row)
        for name, stack in self.stacks.items():
            header = self._header(stack, members[name])
            rows.append(header)
            if self.only and name != self.only:
                hidden.add(header.session_id)
        return rows, groups, hidden

    def _header(self, stack: dict[str, Any], members: list[JobRow]) -> JobRow:
        name = stack["stack"]
        jobs = stack.get("jobs") or []
        ready = sum(j.get("state") in ("ready", "exited") for j in jobs)
        restarts = sum(int(j.get("restarts") or 0) for j in jobs)
        trouble = [f"{safe_line(j['name'])} {j['state']}" for j in jobs if j.get("state") not in ("ready", "exited")]
        down = stack.get("state") == "down"  # its jobs' states are their last ones: no "ready" count
        detail = (f"{len(jobs)} job{'s' * (len(jobs) != 1)}" if down else f"{ready}/{len(jobs)} ready") + (
            f" · restarts {restarts}" if restarts else "")
        if trouble and not down:
            detail += " · " + ", ".join(trouble[:3])
        running = [m for m in members if m.running]
        return JobRow(
            session_id=header_id(name), name=("▸ " if name in self.collapsed else "▾ ") + name, command=detail,
            cwd="", pid=stack.get("pid"), pty=False,
            status="running" if running or stack.get("supervised") else "exited", label=str(stack.get("state")),
            exit_code=None, started=min((m.started for m in members), default=0.0),
            uptime=max((m.uptime or 0.0 for m in members), default=None),  # no jobs run: no TIME
            cpu=sum(m.cpu or 0.0 for m in running) if running else None,
            rss=sum(m.rss or 0 for m in running) if running else None,
            waiting=any(m.waiting for m in members), age=max((m.age for m in members), default=-1),
            stack=name, restarts=restarts)

    def toggle(self, stack: str) -> None:
        self.collapsed ^= {stack}

    def stack_of(self, row: JobRow | None) -> str | None:
        """The stack a row is (a header) or belongs to."""
        if row is None or not row.stack or row.stack not in self.stacks:
            return None
        return row.stack


def summary_text(stack: dict[str, Any]) -> Text:
    """The detail area of a selected stack: its state, file, and each job's state and message."""
    text = Text()
    text.append(f"stack {stack['stack']}  ", style="bold")
    text.append(str(stack.get("state")), style=STATE_STYLES.get(str(stack.get("state")), ""))
    text.append(f"   from {safe_line(str(stack.get('source') or '?'))}\n", style="dim")
    if stack.get("note"):
        text.append(f"{safe_line(str(stack['note']))}\n", style="yellow")
    jobs = stack.get("jobs") or []
    width = max((len(safe_line(j["name"])) for j in jobs), default=0)
    for job in jobs:
        text.append(f"  {safe_line(job['name']):<{width}}  ", style="bold")
        text.append(f"{job['state']:<10}", style=STATE_STYLES.get(job["state"], ""))
        text.append(f"  {job.get('session_id') or '-':<17}", style="cyan")
        if job.get("restarts"):
            text.append(f"  ↻{job['restarts']}", style="yellow")
        if job.get("message"):
            text.append(f"  {safe_line(str(job['message']))}", style="dim")
        text.append("\n")
    text.append("\nEnter folds it · U up again (re-reads the file) · R restart · D down · S show only this stack",
                style="dim")
    return text
