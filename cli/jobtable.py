"""The `ls` table: aligned columns, docker-ps style.

Plain string formatting rather than rich: `ls` is the command scripts call in loops, and this
keeps it fast.
"""

from __future__ import annotations

from typing import Any

from hermes_procs.core.registry.model import JobInfo

from .output import fmt_duration, fmt_started

FINISHED_SHOWN = 20  # without --all: running jobs and this many of the newest finished ones
HEADS = ["ID", "STATUS", "PID", "STARTED", "DURATION", "COMMAND"]
RIGHT = {2, 4}  # right-aligned columns
GAP = "  "
MIN_COMMAND = 12  # columns of COMMAND worth keeping STARTED and PID for
_COLORS = {"green": "\x1b[32m", "red": "\x1b[31m", "yellow": "\x1b[33m", "": ""}


def jobs_text(rows: list[dict[str, Any]], show_all: bool, tty: bool) -> str:
    """What `ls` prints for the API's list: the table, or "No processes.", and a line saying
    how many older finished jobs were left out."""
    jobs = [JobInfo.from_dict(row) for row in rows]
    shown, hidden = (jobs, 0) if show_all else _newest(jobs)
    text = render_table(shown, tty) if shown else ("No processes." if not hidden else "")
    if hidden:
        text += f"\n({hidden} older finished job{'s' if hidden != 1 else ''} hidden; --all shows them)"
    return text


def _newest(jobs: list[JobInfo]) -> tuple[list[JobInfo], int]:
    """Running jobs and the FINISHED_SHOWN newest finished ones; how many were left out."""
    shown: list[JobInfo] = []
    finished = 0
    for job in jobs:
        if not job.running:
            finished += 1
            if finished > FINISHED_SHOWN:
                continue
        shown.append(job)
    return shown, len(jobs) - len(shown)


def _cells(job: JobInfo, ports: bool) -> tuple[list[str], str]:
    style = "red" if job.failed else "yellow" if job.stopped or not (job.running or job.ended) else \
        "green" if job.running else ""
    command = job.command or job.error
    if job.pty:
        command = "[pty] " + command
    if job.name:
        command = f"{job.name}: {command}"
    label = job.label() + (" (input?)" if job.running and job.awaiting_input else "")  # the dashboard's `?`
    if job.running and job.lease:
        label += f" ({job.lease})"  # the dashboard's L and K: it ends with its owner, or is kept
    cells = [job.session_id, label, str(job.pid if job.pid is not None else "-"), fmt_started(job.started),
             fmt_duration(job.uptime)]
    if ports:
        cells.append(",".join(str(port) for port in job.ports))
    return [*cells, " ".join(command.split())], style


def render_table(jobs: list[JobInfo], tty: bool) -> str:
    """Every column but COMMAND keeps its full width; COMMAND is cut with an ellipsis to the
    terminal width (no cut when not a terminal). A terminal too narrow to leave COMMAND
    MIN_COMMAND columns loses STARTED, then PID, as the dashboard does; a row never wraps.
    Colours and a bold header only on a terminal."""
    ports = any(job.ports for job in jobs)  # a PORTS column when a job listens
    heads = [*HEADS[:-1], "PORTS", HEADS[-1]] if ports else HEADS
    rows = [_cells(job, ports) for job in jobs]
    fixed = len(heads) - 1
    widths = [max([len(heads[i])] + [len(cells[i]) for cells, _ in rows]) for i in range(fixed)]
    shown, room = list(range(fixed)), None
    if tty:
        import shutil  # here: not loaded for an agent's (piped) ls

        columns = shutil.get_terminal_size((100, 24)).columns
        for drop in (None, 3, 2):  # STARTED, then PID
            if drop is not None:
                shown.remove(drop)
            room = max(2, columns - sum(widths[i] + len(GAP) for i in shown))
            if room >= MIN_COMMAND:
                break

    def line(cells: list[str], style: str = "", head: bool = False) -> str:
        parts = []
        for i in shown:
            cell = cells[i].rjust(widths[i]) if i in RIGHT else cells[i].ljust(widths[i])
            if i == 1 and style and tty:
                cell = f"{_COLORS[style]}{cell}\x1b[0m"
            parts.append(cell)
        command = cells[fixed]
        if room is not None and len(command) > room:
            command = command[: room - 1] + "\u2026"
        text = GAP.join([*parts, command]).rstrip()
        return f"\x1b[1m{text}\x1b[0m" if head and tty else text

    return "\n".join([line(heads, head=True)] + [line(cells, style) for cells, style in rows])
