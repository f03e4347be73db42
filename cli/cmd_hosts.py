"""`hosts`: the remote hosts the dashboard shows and how each answers; `--forget` drops one.

The dashboard shows the hosts named with --host ($HERMES_PROCS_HOST), the `[hosts]` of the
config file and every host a job was started on from this machine (core/remote/hosts.py).
"""

from __future__ import annotations

import os
import threading
from typing import Annotated, Any, Optional

import typer

from hermes_procs.core.supervisor.text import safe_strings

from .app import app
from .options import HomeOpt, JsonOpt, opts
from .output import CliError, out, print_json


@app.command("hosts")
def hosts_cmd(
    ctx: typer.Context,
    forget: Annotated[Optional[str], typer.Option(
        "--forget", metavar="URL", help="Stop showing a host jobs were started on (its jobs keep running).")] = None,
    home: HomeOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """The remote hosts the dashboard shows, each connected to: state, running/total jobs."""
    home, as_json = opts(ctx, home, as_json)
    from hermes_procs.core.remote import hosts as hostset
    from hermes_procs.core.remote import remembered

    if forget is not None:
        if not remembered.forget(forget, home):
            raise CliError(f"{forget} is not a remembered host (hosts of the config file's [hosts] "
                           "stay until removed there)")
        out(f"forgot {forget} (its jobs keep running there)")
        return
    explicit = [os.environ.get("HERMES_PROCS_HOST") or ""]
    rows = _probe(hostset.configured_hosts([h for h in explicit if h and h != "local"], home))
    if as_json:
        print_json(rows)
    elif not rows:
        out("no remote hosts: start a job with --host ssh://HOST, or name hosts under [hosts] "
            "in the config file")
    else:
        out(_table(safe_strings(rows)))


def _probe(urls: list[str]) -> list[dict[str, Any]]:
    """Connect to every host at once; one row each (in the order given)."""
    rows: list[dict[str, Any]] = [{} for _ in urls]

    def one(i: int, url: str) -> None:
        from hermes_procs.core.remote.client import RemoteRegistry

        try:
            reg = RemoteRegistry(url)
        except ValueError as exc:
            rows[i] = {"host": url, "state": "invalid", "error": str(exc), "running": 0, "jobs": 0}
            return
        status = reg.connect()
        jobs = reg.list() if status["state"] == "connected" else []
        jobs = jobs if isinstance(jobs, list) else []
        rows[i] = {**status, "running": sum(j.get("status") == "running" for j in jobs), "jobs": len(jobs)}

    threads = [threading.Thread(target=one, args=(i, url), daemon=True) for i, url in enumerate(urls)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return rows


def _table(rows: list[dict[str, Any]]) -> str:
    width = max(len(r["host"]) for r in rows)
    lines = [f"{'HOST':<{width}}  {'STATE':<11}  JOBS"]
    for r in rows:
        jobs = f"{r['running']}/{r['jobs']} running" if r["state"] == "connected" else ""
        lines.append(f"{r['host']:<{width}}  {r['state']:<11}  {jobs}".rstrip())
        for note in (r.get("error"), r.get("warning")):
            if note:
                lines.append(f"{'':<{width}}  {note}")
    return "\n".join(lines)
