"""Every host at once: this machine's registry plus remote ones, as one registry-like object.

The dashboard holds one `HostSet`: `list()` merges the jobs of every host (each row has `host`:
"" for this machine, else the host's URL), and every per-job call (`poll`, `kill`, `write`,
`stream`, ...) goes to the host the job lives on. A host that cannot be reached keeps its last
known rows, marked `host_state: "unreachable"`, instead of its jobs turning `lost`.

Which hosts: those named with `--host`, the `[hosts]` of the config file, and every host a job
was started on from this machine (remembered in `<home>/remote-hosts.json` by `remember`).

Remote jobs' logs are mirrored on demand into `<home>/mirror/<host>/<id>/output.log` (only
for jobs someone looks at: `log_files` starts a mirror), so the log pane's on-disk line index
works for them unchanged.
"""

from __future__ import annotations

import hashlib
import json
import os
import threading
import time
from pathlib import Path
from typing import Any

from .paths import ensure_private_dir, resolve_home, write_json_atomic
from .registry import ProcessRegistry

KNOWN = "remote-hosts.json"
MIRROR_EVERY = 0.25  # seconds between mirror refreshes of a running remote job


def remember(url: str, home: str | os.PathLike | None = None) -> None:
    """Note that a job was started on `url` (the dashboard of this machine then shows it)."""
    path = ensure_private_dir(resolve_home(home)) / KNOWN
    hosts = remembered(home)
    if url not in hosts:
        write_json_atomic(path, {"hosts": [*hosts, url][-50:]})


def remembered(home: str | os.PathLike | None = None) -> list[str]:
    try:
        data = json.loads((resolve_home(home) / KNOWN).read_text())
        return [h for h in data.get("hosts", []) if isinstance(h, str)]
    except (OSError, ValueError, AttributeError):
        return []


def configured_hosts(explicit: list[str] | None = None, home: str | os.PathLike | None = None) -> list[str]:
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


class HostSet:
    """This machine's registry and the remote ones, behind the ProcessRegistry methods."""

    def __init__(self, local: ProcessRegistry, hosts: list[str] | None = None) -> None:
        from .remote import RemoteRegistry

        self.local = local
        self.home = local.home
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
        self._last: dict[str, list[dict]] = {}
        self._mirrors: dict[str, _Mirror] = {}
        self._lock = threading.Lock()

    # ---- hosts
    def host_states(self) -> list[dict]:
        """[{"host", "state", "error", "jobs"}] for every remote host."""
        out = []
        for label, reg in self.remotes.items():
            st = reg.status()
            out.append({"host": label, "state": st["state"], "error": st["error"],
                        "jobs": len(self._last.get(label, []))})
        for url, err in self.errors.items():
            out.append({"host": url, "state": "invalid", "error": err, "jobs": 0})
        return out

    def registry_for(self, session_id: Any) -> Any:
        host = self._where.get(str(session_id))
        if host is None and isinstance(session_id, str):  # a prefix: the one host that has it
            hits = {h for sid, h in self._where.items() if sid.startswith(session_id)
                    or sid.startswith("proc_" + session_id)}
            host = hits.pop() if len(hits) == 1 else None
        return self.remotes.get(host, self.local) if host else self.local

    # ---- the merged list
    def list(self, task_id: Any = None, session_key: Any = None) -> list[dict]:
        rows = [dict(r, host="") for r in _rows(self.local.list(task_id, session_key))]
        results: dict[str, Any] = {}
        threads = [threading.Thread(target=lambda lb=label, rg=reg: results.__setitem__(
            lb, rg.list(task_id, session_key)), daemon=True) for label, reg in self.remotes.items()]
        for t in threads:
            t.start()
        for t in threads:
            t.join(30)
        for label in self.remotes:
            got = results.get(label)
            if isinstance(got, list):
                self._last[label] = got
                rows.extend(got)
            else:  # unreachable: the last rows we had, marked so
                rows.extend(dict(r, host_state="unreachable") for r in self._last.get(label, []))
        with self._lock:
            self._where = {r["session_id"]: r.get("host", "") for r in rows if "session_id" in r}
        rows.sort(key=lambda r: r.get("started_at") or "", reverse=True)
        return rows

    # ---- per-job calls go to the job's host
    def stream(self, session_id: Any, input: bool = False, source: str = "human") -> Any:
        return self.registry_for(session_id).stream(session_id, input=input, source=source)

    def job_dir(self, session_id: Any) -> Path:
        reg = self.registry_for(session_id)
        if reg is self.local:
            return reg.job_dir(session_id)
        return self._mirror(reg, session_id).dir

    def log_files(self, session_id: Any) -> list[Path]:
        reg = self.registry_for(session_id)
        if reg is self.local:
            return reg.log_files(session_id)
        mirror = self._mirror(reg, session_id)
        return [mirror.path] if mirror.path.exists() else []

    def _mirror(self, reg: Any, session_id: Any) -> _Mirror:
        key = f"{reg.host.label}\0{session_id}"
        with self._lock:
            mirror = self._mirrors.get(key)
            if mirror is None or not mirror.alive():
                folder = Path(self.home) / "mirror" / _slug(reg.host.label) / str(session_id)
                mirror = self._mirrors[key] = _Mirror(reg, str(session_id), folder)
            mirror.touch()
            return mirror

    def __getattr__(self, name: str) -> Any:
        if name.startswith("_"):
            raise AttributeError(name)
        attr = getattr(self.local, name)
        if not callable(attr):
            return attr

        def call(session_id: Any = None, *args: Any, **kwargs: Any) -> Any:
            if session_id is None:
                return attr(*args, **kwargs)
            return getattr(self.registry_for(session_id), name)(session_id, *args, **kwargs)

        return call


def _rows(result: Any) -> list[dict]:
    return result if isinstance(result, list) else []


def _slug(label: str) -> str:
    readable = "".join(c if c.isalnum() or c in "-_." else "_" for c in label.split("://", 1)[-1])[:40]
    return f"{readable}-{hashlib.sha256(label.encode()).hexdigest()[:8]}"


class _Mirror:
    """Copies a remote job's output into a local file while someone looks at it (stops 30 s
    after the last look, or once the job has finished and everything is copied)."""

    IDLE = 30.0

    def __init__(self, reg: Any, session_id: str, folder: Path) -> None:
        self.reg = reg
        self.session_id = session_id
        self.dir = ensure_private_dir(folder)
        self.path = folder / "output.log"
        self.path.touch(mode=0o600)
        self._seen = time.monotonic()
        self._thread = threading.Thread(target=self._run, daemon=True, name=f"mirror-{session_id}")
        self._thread.start()

    def touch(self) -> None:
        self._seen = time.monotonic()

    def alive(self) -> bool:
        return self._thread.is_alive()

    def _run(self) -> None:
        offset = None
        while time.monotonic() - self._seen < self.IDLE:
            res = self.reg.log_bytes(self.session_id, offset if offset is not None else 0, None)
            data = res.get("data") if isinstance(res, dict) else None
            if data:
                if offset is None or res["start"] != offset:  # first copy, or the remote dropped output
                    self.path.write_bytes(b"")
                with open(self.path, "ab") as fh:
                    fh.write(data)
                offset = res["end"]
                continue
            if isinstance(res, dict) and res.get("status") not in ("running", "error") and offset == res.get("total"):
                return  # finished and complete
            offset = offset if offset is not None else 0
            time.sleep(MIRROR_EVERY)
