"""Every host at once: this machine's registry plus remote ones, as one registry-like object.

The dashboard holds one `HostSet`: `list()` merges the jobs of every host (each row has `host`:
"" for this machine, else the host's URL), and every per-job call (`poll`, `kill`, `write`,
`stream`, ...) goes to the host the job lives on. A host that cannot be reached keeps its last
known rows, marked `host_state: "unreachable"`, instead of its jobs turning `lost`.

Which hosts: those named with `--host`, the `[hosts]` of the config file, and every host a job
was started on from this machine (remembered in `<home>/remote-hosts.json`: core/remote/remembered.py).

Remote jobs' logs are mirrored on demand into `<home>/mirror/<host>/<id>/output.log` (only
for jobs someone looks at: `log_files` starts a mirror), so the log pane's on-disk line index
works for them unchanged.
"""

from __future__ import annotations

import builtins
import hashlib
import os
import threading
import time
from pathlib import Path
from typing import Any

from ..registry.interface import Interrupt, Registry, Result, Rows, Stream
from ..registry.paths import ensure_private_dir
from ..registry.process_registry import ProcessRegistry
from ..supervisor import timeline
from .remembered import remembered

MIRROR_EVERY = 0.25  # seconds between mirror refreshes of a running remote job
LIST_BUDGET = 1.0  # seconds list() waits for a remote host before showing its last rows


def configured_hosts(explicit: list[str] | None = None, home: str | os.PathLike[str] | None = None) -> list[str]:
    """Hosts to show: explicit ones, the config file's names, remembered URLs (no repeats)."""
    from .config import ConfigError, host_aliases

    try:
        aliases = host_aliases()
    except ConfigError:
        aliases = {}
    out: list[str] = []
    for url in [*(explicit or []), *aliases.values(), *remembered(home)]:
        if url and url not in ("local",) and url not in out and aliases.get(url, url) not in out:
            out.append(url)
    return out


def dashboard_registry(home: str | os.PathLike[str] | None = None, hosts: list[str] | None = None) -> Any:
    """What a dashboard shows: this machine's registry over `home`, joined (as a HostSet) by the
    remote hosts of `hosts`, $HERMES_PROCS_HOST, the config file's [hosts] and the remembered
    ones; the plain local registry when there are none. Raises ValueError for a bad explicit
    host (a host from the config or the memory that is broken shows as `invalid` instead)."""
    from .address import parse_host
    from .config import ConfigError, host_aliases

    explicit = [h for h in [*(hosts or []), os.environ.get("HERMES_PROCS_HOST") or ""] if h and h != "local"]
    try:
        aliases = host_aliases()
    except ConfigError:
        aliases = {}
    for url in explicit:
        parse_host(url, aliases)
    local = ProcessRegistry(home=home, host="local")
    remote = configured_hosts(explicit, home)
    return HostSet(local, remote) if remote else local


class HostSet(Registry):
    """This machine's registry and the remote ones, as one `Registry` (and a `HostsView`: the
    hosts' states and names)."""

    def __init__(self, local: ProcessRegistry, hosts: list[str] | None = None) -> None:
        from .client import RemoteRegistry

        self.local = local
        self.remotes: dict[str, RemoteRegistry] = {}
        self.errors: dict[str, str] = {}
        for url in hosts or []:
            try:
                reg = RemoteRegistry(url)
            except ValueError as exc:
                self.errors[url] = str(exc)
                continue
            self.remotes[reg.host.label] = reg
        self._where: dict[str, str] = {}  # session id -> host label ("" = local)
        self._last: dict[tuple[str, tuple[Any, ...]], list[dict[str, Any]]] = {}  # (label, list args) -> the last rows
        self._fresh: dict[tuple[str, tuple[Any, ...]], Any] = {}  # results of the background lists not yet taken
        self._fetching: dict[tuple[str, tuple[Any, ...]], threading.Thread] = {}
        self.names = _short_names(self.remotes)
        self._mirrors: dict[str, _Mirror] = {}
        self._lock = threading.Lock()

    @property
    def home(self) -> Path:
        return self.local.home

    # ---- hosts
    def host_states(self) -> list[dict[str, Any]]:
        """[{"host", "state", "error", "jobs"}] for every remote host."""
        out = []
        for label, reg in self.remotes.items():
            st = reg.status()
            out.append({"host": label, "name": self.host_name(label), "state": st["state"],
                         "error": st["error"], "jobs": len(self._last.get((label, (None, None)), []))})
        for url, err in self.errors.items():
            out.append({"host": url, "name": url, "state": "invalid", "error": err, "jobs": 0})
        return out

    def registry_for(self, session_id: Any) -> Registry:
        host = self._where.get(str(session_id))
        if host is None and isinstance(session_id, str):  # a prefix: the one host that has it
            hits = {h for sid, h in self._where.items() if sid.startswith(session_id)
                    or sid.startswith("proc_" + session_id)}
            host = hits.pop() if len(hits) == 1 else None
        return self.remotes.get(host, self.local) if host else self.local

    # ---- the merged list
    def list(self, task_id: str | None = None, session_key: str | None = None, only: Any = None) -> Rows:
        """Every host's jobs, newest first, each row with `host` ("" = this machine). A remote
        host gets LIST_BUDGET seconds: a slow or unreachable one shows its last known rows
        (marked `host_state`) and is asked again in the background, never holding up the rest.
        `only`: just these ids (ProcessRegistry.list) on this machine, and no remote rows."""
        rows = [dict(r, host="") for r in _rows(self.local.list(task_id, session_key, only))]
        if only is not None:
            return rows
        key = (task_id, session_key)
        fetches = {label: self._fetch(label, reg, key) for label, reg in self.remotes.items()}
        deadline = time.monotonic() + LIST_BUDGET
        for thread in fetches.values():
            thread.join(max(0.0, deadline - time.monotonic()))
        seen = {r["session_id"] for r in rows if "session_id" in r}
        for label, reg in self.remotes.items():
            with self._lock:
                got = self._fresh.pop((label, key), None)
            if isinstance(got, list):
                self._last[(label, key)] = got
            state = reg.status()["state"]
            for row in self._last.get((label, key), []):
                if row.get("session_id") in seen:  # the same host reached under two names
                    continue
                seen.add(row.get("session_id"))
                rows.append(row if state == "connected" else dict(row, host_state=reg.host_state()))
        with self._lock:
            self._where = {r["session_id"]: r.get("host", "") for r in rows if "session_id" in r}
        rows.sort(key=lambda r: r.get("started_at") or "", reverse=True)
        return rows

    def _fetch(self, label: str, reg: Any, key: tuple[Any, ...]) -> threading.Thread:
        """The thread asking `reg` for its list (a new one unless the last is still waiting)."""
        with self._lock:
            thread = self._fetching.get((label, key))
            if thread is not None and thread.is_alive():
                return thread

            def run() -> None:
                try:
                    got = reg.list(*key)
                except Exception as exc:  # the dashboard must not die of one host
                    got = {"status": "error", "error": str(exc)}
                with self._lock:
                    self._fresh[(label, key)] = got

            thread = self._fetching[(label, key)] = threading.Thread(
                target=run, daemon=True, name=f"list-{label}")
            thread.start()
            return thread

    # ---- calls that name no job
    def spawn(self, command: str, host: str | None = None, **kwargs: Any) -> Result:
        """Start a job on `host` (a label or URL of one of the set's hosts, or a new URL; None or
        "" = this machine)."""
        return self._start("spawn", command, host, kwargs)

    def exec(self, command: str, yield_ms: float = 10_000, host: str | None = None, **spawn_options: Any) -> Result:
        """`exec` on `host` (as spawn picks it)."""
        return self._start("exec", command, host, {"yield_ms": yield_ms, **spawn_options})

    def _start(self, method: str, command: str, host: str | None, kwargs: dict[str, Any]) -> Result:
        """registry.METHOD(command, **kwargs) on `host`; the new job's calls go there."""
        if not host or host == "local":
            return getattr(self.local, method)(command, **kwargs)  # type: ignore[no-any-return]
        reg = self.remotes.get(host) or next((r for label, r in self.remotes.items()
                                              if host in (r.host.url, self.names.get(label))), None)
        if reg is None:
            from .client import RemoteRegistry

            try:
                reg = RemoteRegistry(host)
            except ValueError as exc:
                return {"status": "error", "error": str(exc)}
            self.remotes[reg.host.label] = reg
        result = getattr(reg, method)(command, **kwargs)
        if isinstance(result, dict) and result.get("session_id"):
            with self._lock:  # its calls go to its host before the next list() sees it
                self._where[result["session_id"]] = reg.host.label
        return result  # type: ignore[no-any-return]

    def host_name(self, label: str) -> str:
        """A short name for a host label: its name in the config file, else host[:port]
        (docker://web -> docker:web); "local" for this machine."""
        if not label:
            return "local"
        if label in self.names:
            return self.names[label]
        scheme, _, rest = label.partition("://")
        return rest.rsplit("@", 1)[-1] if scheme == "ssh" else f"{scheme}:{rest}"

    # ---- per-job calls go to the job's host
    def stream(self, session_id: str, input: bool = False, source: str = "human") -> Stream:
        return self.registry_for(session_id).stream(session_id, input=input, source=source)

    def job_dir(self, session_id: str) -> Path:
        reg = self.registry_for(session_id)
        if reg is self.local:
            return reg.job_dir(session_id)
        return self._mirror(reg, session_id).dir

    def log_files(self, session_id: str) -> builtins.list[Path]:
        reg = self.registry_for(session_id)
        if reg is self.local:
            return reg.log_files(session_id)
        mirror = self._mirror(reg, session_id)
        return [mirror.path] if mirror.path.exists() else []

    def close(self) -> None:
        """Stop copying remote logs (the mirrors' threads end within a refresh); the remote
        connections stay, shared with whoever else uses those hosts."""
        with self._lock:
            mirrors, self._mirrors = list(self._mirrors.values()), {}
        for mirror in mirrors:
            mirror.stop()
        for mirror in mirrors:
            mirror.join(2.0)

    def _mirror(self, reg: Any, session_id: Any) -> _Mirror:
        key = f"{reg.host.label}\0{session_id}"
        with self._lock:
            mirror = self._mirrors.get(key)
            if mirror is None or not mirror.alive():
                folder = Path(self.home) / "mirror" / _slug(reg.host.label) / str(session_id)
                mirror = self._mirrors[key] = _Mirror(reg, str(session_id), folder)
            mirror.touch()
            return mirror

    # ---- calls that name no job, or several: this machine's registry
    def wait_any(self, session_ids: builtins.list[str] | tuple[str, ...], timeout: float | None = None,
                 interrupt: Interrupt | None = None) -> Result:
        return self.local.wait_any(session_ids, timeout, interrupt)

    def search(self, session_id: str | None = None, pattern: str | None = None, context: int = 2,
               limit: int = 50, task_id: str | None = None, max_chars: int | None = None) -> Result:
        registry = self.registry_for(session_id) if session_id is not None else self.local
        return registry.search(session_id, pattern, context, limit, task_id, max_chars)

    def drain_events(self, consumer: str = "default", all_types: bool = False, only_new: bool = False,
                     limit: int = 1000) -> Rows | Result:
        return self.local.drain_events(consumer, all_types, only_new, limit)

    def forget_consumer(self, consumer: str) -> Result:
        return self.local.forget_consumer(consumer)

    def prune(self, keep_days: float | None = None, keep_count: int | None = None) -> Result:
        return self.local.prune(keep_days, keep_count)

    # ---- stacks: this machine's (a stack's supervisor runs where its file is)
    def stacks(self, name: str | None = None) -> Rows | Result:
        return self.local.stacks(name)

    def up(self, path: str | None = None, name: str | None = None, wait: bool = False,
           timeout: float | None = None) -> Result:
        return self.local.up(path, name, wait, timeout)

    def down(self, stack: str | None = None, path: str | None = None) -> Result:
        return self.local.down(stack, path)

    def restart_stack(self, stack: str, job: str | None = None) -> Result:
        return self.local.restart_stack(stack, job)

    # ---- per-job calls: to the job's host
    def poll(self, session_id: str) -> Result:
        return self.registry_for(session_id).poll(session_id)

    def get(self, session_id: str) -> Result:
        return self.registry_for(session_id).get(session_id)

    def read_log(self, session_id: str, offset: int | None = None, limit: int = 200,
                 since: float | str | None = None, max_chars: int | None = None) -> Result:
        return self.registry_for(session_id).read_log(session_id, offset, limit, since, max_chars)

    def log_bytes(self, session_id: str, start: int | None = None, end: int | None = None,
                  max_bytes: int = 4 << 20, times: bool = False) -> Result:
        return self.registry_for(session_id).log_bytes(session_id, start, end, max_bytes, times)

    def inputs(self, session_id: str, limit: int = 20) -> Rows | Result:
        return self.registry_for(session_id).inputs(session_id, limit)

    def wait(self, session_id: str, timeout: float | None = None, interrupt: Interrupt | None = None,
             until: str = "exit") -> Result:
        return self.registry_for(session_id).wait(session_id, timeout, interrupt, until)

    def screen(self, session_id: str, raw: bool = False) -> Result:
        return self.registry_for(session_id).screen(session_id, raw)

    def tree(self, session_id: str) -> Result:
        return self.registry_for(session_id).tree(session_id)

    def restart(self, session_id: str) -> Result:
        return self.registry_for(session_id).restart(session_id)

    def write(self, session_id: str, data: str | bytes, source: str = "agent",
              yield_ms: float | None = None) -> Result:
        return self.registry_for(session_id).write(session_id, data, source, yield_ms)

    def submit(self, session_id: str, data: str | bytes = "", source: str = "agent",
               yield_ms: float | None = None) -> Result:
        return self.registry_for(session_id).submit(session_id, data, source, yield_ms)

    def pin(self, session_id: str) -> Result:
        return self.registry_for(session_id).pin(session_id)

    def unpin(self, session_id: str) -> Result:
        return self.registry_for(session_id).unpin(session_id)

    def close_stdin(self, session_id: str) -> Result:
        return self.registry_for(session_id).close_stdin(session_id)

    def resize(self, session_id: str, rows: int, cols: int) -> Result:
        return self.registry_for(session_id).resize(session_id, rows, cols)

    def signal(self, session_id: str, sig: str | int) -> Result:
        return self.registry_for(session_id).signal(session_id, sig)

    def signal_process(self, session_id: str, pid: int, sig: str | int, start_ticks: int | None = None) -> Result:
        return self.registry_for(session_id).signal_process(session_id, pid, sig, start_ticks)

    def set_watch_patterns(self, session_id: str, patterns: builtins.list[str]) -> Result:
        return self.registry_for(session_id).set_watch_patterns(session_id, patterns)

    def kill(self, session_id: str, grace: float | None = None) -> Result:
        return self.registry_for(session_id).kill(session_id, grace)


def _short_names(remotes: dict[str, Any]) -> dict[str, str]:
    """label -> the host's name in the config file's [hosts] (when it has one)."""
    from .config import ConfigError, host_aliases

    try:
        aliases = host_aliases()
    except ConfigError:
        return {}
    by_url = {url.split("?", 1)[0]: name for name, url in aliases.items()}
    return {label: by_url[label] for label in remotes if label in by_url}


def _rows(result: Any) -> list[dict[str, Any]]:
    return result if isinstance(result, list) else []


def _slug(label: str) -> str:
    readable = "".join(c if c.isalnum() or c in "-_." else "_" for c in label.split("://", 1)[-1])[:40]
    return f"{readable}-{hashlib.sha256(label.encode()).hexdigest()[:8]}"


class _Mirror:
    """Copies a remote job's output into a local file while someone looks at it (stops 30 s
    after the last look, or once the job has finished and everything is copied), with the
    times its bytes arrived over there (times.idx, core/supervisor/timeline.py: the log pane's `T`)."""

    IDLE = 30.0

    def __init__(self, reg: Any, session_id: str, folder: Path) -> None:
        self.reg = reg
        self.session_id = session_id
        self.dir = ensure_private_dir(folder)
        self.path = folder / "output.log"
        self.path.touch(mode=0o600)
        self.times = folder / timeline.TIMES_NAME
        self.base = 0  # the remote offset of the mirror's first byte (the host may have dropped older output)
        self.last: tuple[int, int] = (-1, 0)  # the last time record written: (local offset, epoch ms)
        self._seen = time.monotonic()
        self._stopped = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True, name=f"mirror-{session_id}")
        self._thread.start()

    def touch(self) -> None:
        self._seen = time.monotonic()

    def alive(self) -> bool:
        return self._thread.is_alive()

    def stop(self) -> None:
        self._stopped.set()

    def join(self, timeout: float) -> None:
        self._thread.join(timeout)

    def _run(self) -> None:
        offset = None
        while time.monotonic() - self._seen < self.IDLE and not self._stopped.is_set():
            res = self.reg.log_bytes(self.session_id, offset if offset is not None else 0, None, times=True)
            data = res.get("data") if isinstance(res, dict) else None
            if data:
                if offset is None or res["start"] != offset:  # first copy, or the remote dropped output
                    self._start_over(int(res["start"]))
                with open(self.path, "ab") as fh:
                    fh.write(data)
                self._add_times(res.get("times"))
                offset = res["end"]
                continue
            if isinstance(res, dict) and res.get("status") not in ("running", "error") and offset == res.get("total"):
                return  # finished and complete
            offset = offset if offset is not None else 0
            self._stopped.wait(MIRROR_EVERY)

    def _start_over(self, base: int) -> None:
        self.base, self.last = base, (-1, 0)
        for path in (self.path, self.times):
            path.write_bytes(b"")
            path.chmod(0o600)

    def _add_times(self, records: Any) -> None:
        """Append the host's time records, moved to the mirror's offsets; anything malformed or
        out of order (offsets rise, times never go back) is left out."""
        out = []
        for rec in records if isinstance(records, list) else []:
            if not (isinstance(rec, list) and len(rec) == 2 and all(type(n) is int and n >= 0 for n in rec)):
                continue
            local, ms = max(0, rec[0] - self.base), max(rec[1], self.last[1])
            if local > self.last[0]:
                out.append(timeline.record(local, ms))
                self.last = (local, ms)
        if out:
            with open(self.times, "ab") as fh:
                fh.write(b"".join(out))
