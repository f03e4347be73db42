"""Reading jobs: `poll`, `get`, `list` (with the index of finished jobs, listindex.py), the
output (`read_log`, `log_bytes`, `screen`, `search`), `inputs` and the process `tree`."""

from __future__ import annotations

import builtins
import functools
import os
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from ..supervisor import stats, text, timeline
from ..supervisor.bounds import whole
from . import events, leases, listindex, logstore, processes, protocol
from .base import MAX_LOG_BYTES, UNSUPERVISED, BadInput, RegistryBase, _outcome_fields, _safe
from .jobstate import CorruptJob, Job, load
from .paths import job_inodes, open_nofollow
from .userregex import compile_user

if TYPE_CHECKING:
    from collections.abc import Collection

MAX_TREE = 1000  # processes in one tree() answer (parents first; the rest are counted)


class Observing(RegistryBase):
    """The reading verbs but wait."""

    # ---- queries -----------------------------------------------------------------------
    @_safe
    def poll(self, session_id: str) -> dict[str, Any]:
        """The job's status and the last 1000 characters of its output.

        Returns `running` or `exited` (then also exit_code, completion_reason, signal, leftover_pids)."""
        job = self._job(session_id)
        live = self._live_status(job)
        result = self._summary(job, preview_chars=1000)
        result["command"] = job.meta["command"]
        result["output_dropped"] = live.get("output_dropped", 0) if live else _output_dropped(job)
        if not job.running:
            result.update(_outcome_fields(job))
            result["leftover_pids"] = job.leftover_pids()
        elif job.unsupervised:
            result["note"] = UNSUPERVISED.format(job=job.session_id)
        return result

    def _live_status(self, job: Job) -> dict[str, Any] | None:
        """The supervisor's own view of a running job; it holds the exit in memory when the
        disk refused exit.json (the job then shows as exited). None when it does not answer."""
        if not job.running:
            return None
        try:
            reply = protocol.request(job.dir, {"op": "status"}, timeout=1.0)
        except (protocol.SupervisorGone, OSError, ValueError):
            return None
        if not reply.get("ok"):
            return None
        if isinstance(reply.get("exit"), dict):
            job.exit = reply["exit"]
        return reply

    def _summary(self, job: Job, preview_chars: int, seen: dict[str, Any] | None = None,
                 listeners: stats.Listeners | None = None) -> dict[str, Any]:
        start, tail = self._tail(job, preview_chars * 4 + 4096, seen)
        result = {"status": job.status, "session_id": job.session_id, "command": job.meta["command"],
                  "name": job.meta.get("name", ""), "pid": job.pid, "pty": job.meta.get("pty", False),
                  "cwd": job.meta.get("cwd"), "started_at": job.started_iso(), "uptime_seconds": job.uptime(),
                  "output_preview": text.last_chars(tail, preview_chars), "output_bytes": start + len(tail),
                  "task_id": job.meta.get("task_id", ""), "session_key": job.meta.get("session_key", ""),
                  "rerun_of": job.meta.get("rerun_of"), "port": job.meta.get("port"),
                  "stack": job.meta.get("stack"), "restarts": job.meta.get("restarts", 0),
                  "lease": leases.view(job.dir, job.meta), **self._figures(job, listeners)}
        if not job.running:
            result.update(_outcome_fields(job))
        elif job.unsupervised:
            result["unsupervised"] = True
        return result

    @staticmethod
    def _tail(job: Job, n: int, seen: dict[str, Any] | None) -> tuple[int, bytes]:
        """logstore.tail_span, or the one kept in `seen` while output.log has the same inode,
        size and mtime (it only grows; a rotation makes a new file)."""
        if seen is None:
            return logstore.tail_span(job.dir, n)
        try:
            st = os.stat(f"{job.dir}/{logstore.LOG_NAME}")
            key = (n, st.st_ino, st.st_size, st.st_mtime_ns)
            job.extra["log_stat"] = st  # QUIET needs it too
        except OSError:
            key = None
        kept: tuple[Any, tuple[int, bytes]] | None = seen.get("tail")
        if key is not None and kept is not None and kept[0] == key:
            return kept[1]
        span = logstore.tail_span(job.dir, n)
        seen["tail"] = (key, span)
        return span

    def _figures(self, job: Job, listeners: stats.Listeners | None = None) -> dict[str, Any]:
        """awaiting_input, quiet_seconds, cpu_percent, rss_bytes, process_count, ports
        (core/supervisor/stats.py)."""
        proc = job.proc or {}
        return stats.job_figures(job.session_id, self._cpu, running=job.running, root=job.pid,
                                 supervisor_pid=proc.get("supervisor_pid") if job.supervisor_alive else None,
                                 started_at=job.started_at, log_path=f"{job.dir}/{logstore.LOG_NAME}",
                                 supervisor_stat=job.extra.get("supervisor_stat"), log_stat=job.extra.get("log_stat"),
                                 listeners=listeners)

    @_safe
    def read_log(self, session_id: str, offset: int | None = None, limit: int = 200,
                 since: float | str | None = None, max_chars: int | None = None) -> dict[str, Any]:
        """Lines `offset` .. `offset+limit-1` of the job's output (None: the last `limit` lines).
        `since` (seconds ago, a duration like "5m", or an ISO time; not with `offset`): only
        the output that arrived since then (core/supervisor/timeline.py). `max_chars`: the
        answer's cap (1,000 .. MAX_ANSWER_CHARS, the default; the tool and MCP ask for less).

        Returns status, session_id, output, total_lines, showing."""
        if offset is not None:
            whole(offset, "offset", 0)
        whole(limit, "limit", 1)
        read = functools.partial(logstore.read_lines, max_chars=_answer_cap(max_chars))
        job = self._job(session_id)
        if since is None:
            return {"status": job.status, "session_id": job.session_id, **read(job.dir, offset, min(limit, 100_000))}
        if offset is not None:
            raise BadInput("give offset or since, not both")
        try:
            result = timeline.read_since(job.dir, since, min(limit, 100_000), read)
        except ValueError as exc:
            raise BadInput(str(exc)) from None
        return {"status": job.status, "session_id": job.session_id, **result}

    @_safe
    def log_bytes(self, session_id: str, start: int | None = None, end: int | None = None,
                  max_bytes: int = MAX_LOG_BYTES, times: bool = False) -> dict[str, Any]:
        """Raw output bytes between absolute offsets [start, end) (None: the current end),
        at most `max_bytes` of them (the last ones when `start` is None). `end` in the result
        is where the returned bytes stop, `total` the current end of the output. `times`: also
        the records of times.idx that date them, [[offset, epoch ms], ...] (core/supervisor/timeline.py)."""
        for value, what in ((start, "start"), (end, "end")):
            if value is not None and (isinstance(value, bool) or not isinstance(value, int) or value < 0):
                raise BadInput(f"{what} must be a byte offset >= 0, not {value!r}")
        if isinstance(max_bytes, bool) or not isinstance(max_bytes, int) or not 0 < max_bytes <= MAX_LOG_BYTES:
            raise BadInput(f"max_bytes must be a whole number from 1 to {MAX_LOG_BYTES}, not {max_bytes!r}")
        job = self._job(session_id)
        total = logstore.total_bytes(job.dir)
        stop = total if end is None else min(end, total)
        first = max(0, stop - max_bytes) if start is None else start
        stop = min(stop, first + max_bytes)
        data = logstore.read_bytes(job.dir, first, stop) if stop > first else b""
        result = {"status": job.status, "session_id": job.session_id, "start": stop - len(data), "end": stop,
                  "total": total, "data": data}
        if times:
            result["times"] = timeline.records_between(job.dir, stop - len(data), stop)
        return result

    @_safe
    def list(self, task_id: str | None = None, session_key: str | None = None,
             only: Collection[str] | None = None) -> list[dict[str, Any]]:
        """Every job, newest first, optionally only those filed under `task_id` / `session_key`,
        or only the jobs whose ids are in `only` (a collection of full ids: the dashboard
        re-reads the rows on screen; ids of jobs that are gone are left out).

        Returns a list of row dicts (a damaged job folder has status `corrupt` and an error)."""
        self._reap_supervisors()
        inodes = job_inodes(self.jobs_dir)
        ids = list(inodes)
        if only is not None and (isinstance(only, (str, bytes)) or not isinstance(only, Iterable)
                                 or not all(isinstance(i, str) for i in only)):
            raise BadInput("only must be a collection of job ids")
        finished = self._finished_rows()
        rows, new = [], []
        self._forget(set(ids))
        chosen = None if only is None else set(only)
        wanted = ids if chosen is None else [sid for sid in ids if sid in chosen]
        listeners = stats.Listeners()  # /proc/net read once for every running job's ports
        for session_id in wanted:
            row = finished.get(session_id)
            if row is None:
                row, done = self._list_row(session_id, inodes[session_id], listeners)
                if done:
                    new.append(row)
            if _filed_under(row, task_id, session_key):  # index rows written before these fields:
                rows.append({**stats.IDLE, "rerun_of": None, "port": None, "lease": None, "ports": [], "stack": None,
                             "restarts": 0, **row})
        self._index_rows(finished, new, ids)
        rows.sort(key=lambda r: r.pop("_sort"), reverse=True)
        return rows

    def _forget(self, live: set[str]) -> None:
        """Drop what is kept per job (CPU samples, write-once files) for jobs that are gone."""
        self._cpu.forget(live)
        with self._lock:
            for sid in self._seen.keys() - live:
                del self._seen[sid]

    def _finished_rows(self) -> dict[str, dict[str, Any]]:
        """Rows of finished jobs from the index (listindex.py), re-read when the file changed."""
        try:
            st = os.stat(self.home / listindex.NAME)
            key = (st.st_ino, st.st_size, st.st_mtime_ns)
        except OSError:
            key = None
        with self._lock:
            if key is None or key != self._index_key:
                self._index, self._index_lines = listindex.read(self.home)
                self._index_key = key
            return self._index

    def _index_rows(self, finished: dict[str, dict[str, Any]], new: builtins.list[dict[str, Any]],
                    ids: builtins.list[str]) -> None:
        """Append the rows of jobs seen finished for the first time; compact a bloated index."""
        live = set(ids)
        with self._lock:
            for row in new:
                finished[row["session_id"]] = row
            if listindex.needs_compaction(self._index_lines + len(new), len(live)):
                listindex.rewrite(self.home, [r for sid, r in finished.items() if sid in live])
                self._index_key = None
            elif new:
                listindex.append(self.home, new)
                self._index_lines += len(new)

    def _list_row(self, session_id: str, ino: int, listeners: stats.Listeners) -> tuple[dict[str, Any], bool]:
        """One row of `list` read from the job folder, and whether the job is finished for good
        (exit recorded, supervisor gone: the row can no longer change).

        What cannot change is kept between calls (self._seen, per job folder inode) while the
        job runs: meta.json and proc.json (each written once), and the output preview while the
        log is unchanged. A finished job's row goes to the index instead (listindex.py). `ino`:
        the folder's inode number from the listing."""
        jobdir = self.jobs_dir / session_id
        try:
            with self._lock:
                seen = self._seen.get(session_id)
                if seen is None or seen["ino"] != ino:
                    seen = self._seen[session_id] = {"ino": ino}
            job = load(jobdir, seen)
        except (CorruptJob, OSError) as exc:
            return {"session_id": session_id, "status": "corrupt", "error": str(exc), "command": "", "name": "",
                    "pid": None, "pty": False, "cwd": None, "started_at": None, "uptime_seconds": 0,
                    "output_preview": "", "_sort": 0.0}, False
        row = self._summary(job, preview_chars=200, seen=seen, listeners=listeners)
        row["command"] = row["command"][:200]
        row["_sort"] = job.started_at
        done = job.exit is not None and not job.supervisor_alive
        if done:
            with self._lock:
                self._seen.pop(session_id, None)
        return row, done

    @_safe
    def get(self, session_id: str) -> dict[str, Any]:
        """The job's full record: what poll gives plus meta, proc, exit and dir."""
        job = self._job(session_id)
        return {**self._summary(job, 1000), "meta": job.meta, "proc": job.proc, "exit": job.outcome or None,
                "dir": str(job.dir)}

    @_safe
    def inputs(self, session_id: str, limit: int = 20) -> builtins.list[dict[str, Any]]:
        """The last `limit` inputs typed into the job, oldest first: {t, source, preview, bytes}."""
        limit = whole(limit, "limit", 0)
        path = self.job_dir(session_id) / "inputs.jsonl"
        try:
            with os.fdopen(open_nofollow(path, os.O_RDONLY), "rb") as fh:
                size = fh.seek(0, os.SEEK_END)
                fh.seek(max(0, size - (64 << 10)))
                lines = fh.read().splitlines()[1 if size > 64 << 10 else 0:]
        except FileNotFoundError:
            return []
        entries = [e for e in (events.parse_line(line) for line in lines) if e]
        return entries[-limit:] if limit else []

    # ---- what the human sees: screen, search, restart ----------------------------------
    @_safe
    def screen(self, session_id: str, raw: bool = False) -> dict[str, Any]:
        """A PTY job's terminal screen as text (core/registry/screen.py); `raw`: instead of `lines`,
        `data`, the bytes that draw it (a remote host's answer: its client draws them)."""
        from .screen import render as render_screen  # these two load on first use: a CLI query
        from .screen import source as screen_source  # (`hermes-procs poll`) needs neither

        job = self._job(session_id)
        if not job.meta.get("pty"):
            raise BadInput(f"{job.session_id} runs on pipes, not in a terminal: screen needs a job started "
                           "with pty=True (read this one with read_log or search)")
        if raw:
            return {"status": job.status, "session_id": job.session_id,
                    **screen_source(job.dir, job.meta, job.pid if job.running else None)}
        try:
            shown = render_screen(job.dir, job.meta, job.pid if job.running else None)
        except ImportError:
            raise BadInput("screen needs the bittty package: pip install bittty") from None
        return {"status": job.status, "session_id": job.session_id, **shown}

    @_safe
    def search(self, session_id: str | None = None, pattern: str | None = None, context: int = 2, limit: int = 50,
               task_id: str | None = None, max_chars: int | None = None) -> dict[str, Any]:
        """Regex over the whole retained log of one job, or of every job (of `task_id`) when
        `session_id` is None (core/registry/search.py). The pattern runs in RE2 or in a worker process with
        a deadline (core/registry/userregex.py); the answer holds at most MAX_ANSWER_CHARS characters of
        lines, or `max_chars` (1,000 .. MAX_ANSWER_CHARS; `truncated` and a `note` say when it was capped)."""
        from .search import Collector, search_log

        regex = compile_user(pattern)  # the worker process, if any, starts with the first match
        if isinstance(context, bool) or not isinstance(context, int) or not 0 <= context <= 100:
            raise BadInput(f"context must be a whole number of lines from 0 to 100, not {context!r}")
        if isinstance(limit, bool) or not isinstance(limit, int) or not 1 <= limit <= 10_000:
            raise BadInput(f"limit must be a whole number from 1 to 10000, not {limit!r}")
        if session_id in (None, ""):
            rows = self.list(task_id=task_id or None)
            if isinstance(rows, dict):
                return rows
            ids = [row["session_id"] for row in rows]
        else:
            ids = [self._resolve(session_id)]
        out = Collector(limit, _answer_cap(max_chars))
        total = 0
        with regex:
            regex.limit_total()  # one deadline for the whole search too, not only per block
            for sid in ids:
                total += search_log(self.jobs_dir / sid, regex, context, out, {"session_id": sid})
        result = {"status": "ok", "pattern": pattern, "matches": out.matches, "total": total}
        if session_id not in (None, ""):
            result["session_id"] = ids[0]
        if out.capped:
            result.update(truncated=True, note=out.note(total))
        return result

    @_safe
    def tree(self, session_id: str) -> dict[str, Any]:
        """The job's processes (proctree's identity-checked rule), parents first: pid, ppid,
        start_ticks, depth, command, state, cpu_percent, rss_bytes, awaiting_input
        (core/registry/processes.py). Returns the job's status, session_id and `processes` (empty when
        none is left), at most MAX_TREE of them; `more_processes` counts the rest."""
        job = self._job(session_id)
        rows = self._process_rows.rows(job.tree().scan(), processes.stdin_of(job.pid if job.running else None))
        result: dict[str, Any] = {"status": job.status, "session_id": job.session_id, "processes": rows[:MAX_TREE]}
        if len(rows) > MAX_TREE:
            result["more_processes"] = len(rows) - MAX_TREE
        return result


def _filed_under(row: dict[str, Any], task_id: str | None, session_key: str | None) -> bool:
    """True when the row matches list()'s task_id / session_key filters (None: any)."""
    return ((task_id is None or row.get("task_id", "") == task_id)
            and (session_key is None or row.get("session_key", "") == session_key))


def _output_dropped(job: Job) -> int:
    """Output bytes the supervisor could not store (disk full): from the exit record, else
    from logstate.json."""
    value = (job.exit or {}).get("output_dropped")
    if value is None:
        value = logstore.output_dropped(job.dir)
    return value if isinstance(value, int) and not isinstance(value, bool) else 0


def _answer_cap(max_chars: int | None) -> int:
    """An answer's cap in characters: MAX_ANSWER_CHARS, or `max_chars` (1,000 .. that)."""
    if max_chars is None:
        return logstore.MAX_ANSWER_CHARS
    return whole(max_chars, "max_chars", 1000, logstore.MAX_ANSWER_CHARS)
