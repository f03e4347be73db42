"""The registry over stdin/stdout, one JSON object per line: the server end of remote hosts.

`hermes-procs` reaches a job on another machine by running this module there through a
transport that carries stdin/stdout (`ssh`, `docker exec -i`, `kubectl exec -i`); nothing
listens on a network port. The client end is `core/remote/client.py`. Stdlib only and Python 3.9+,
because it may be sent over the connection to a host where hermes-procs is not installed.

Wire format (version STDIO_VERSION), every message one line of JSON:

    server, first line:  {"hello": "hermes-procs", "v": 3, "version": ..., "home": ..., "code": ...,
                          "pid": the server's pid (the owner of the caller's leased jobs there),
                          "reaper": "pid1" | "template" | "none", "warning": ... (core/supervisor/reaper.py)}
    call:                {"id": N, "call": METHOD, "args": [...], "kwargs": {...}}
      reply:             {"id": N, "result": ...}  or  {"id": N, "error": "...", "kind": "..."}
    cancel a wait:       {"id": N, "cancel": true}       (its wait returns "interrupted")
    open a live stream:  {"id": N, "stream": {"session_id": ..., "input": bool, "source": ...}}
      reply:             {"id": N, "opened": {"offset": int, "pty": bool}}  or an error as above
      then:              {"id": N, "data": BASE64} ...  and finally {"id": N, "end": true}
    type into it:        {"id": N, "send": BASE64};  stop it: {"id": N, "close": true}

Bytes inside results travel as {"$b64": "..."}. METHOD is any public method of
ProcessRegistry that returns data (not `stream`, `job_dir`, `log_files`).
"""

from __future__ import annotations

import base64
import json
import os
import sys
import threading
from typing import Any, BinaryIO, Optional

# 2: screen(raw=True) and log_bytes(times=True), which a client draws and mirrors with
# 3: exec, pin, unpin, spawn's reuse/port/lease, write's and submit's yield_ms, the hello's pid
STDIO_VERSION = 3
NOT_CALLABLE = frozenset({"stream", "job_dir", "log_files"})


def encode(obj: Any) -> Any:
    """JSON default hook: bytes as {"$b64": ...}, anything path-like as its string."""
    if isinstance(obj, (bytes, bytearray, memoryview)):
        return {"$b64": base64.b64encode(bytes(obj)).decode("ascii")}
    return str(obj)


def decode_hook(obj: dict[str, Any]) -> Any:
    """json object_hook undoing `encode` for bytes."""
    if len(obj) == 1 and "$b64" in obj:
        return base64.b64decode(obj["$b64"])
    return obj


def dumps(message: dict[str, Any]) -> bytes:
    return json.dumps(message, default=encode, separators=(",", ":")).encode() + b"\n"


class Server:
    """Serves one registry to one client over a pair of byte streams."""

    def __init__(self, registry: Any, rfile: BinaryIO, wfile: BinaryIO) -> None:
        self.registry = registry
        self.rfile = rfile
        self.wfile = wfile
        self._wlock = threading.Lock()
        self._cancels: dict[Any, threading.Event] = {}
        self._streams: dict[Any, Any] = {}

    def send(self, message: dict[str, Any]) -> None:
        data = dumps(message)
        with self._wlock:
            try:
                self.wfile.write(data)
                self.wfile.flush()
            except (OSError, ValueError):  # the client is gone: the read loop ends too
                pass

    def serve(self, hello: dict[str, Any]) -> None:
        self.send(hello)
        for line in self.rfile:
            try:
                msg = json.loads(line)
            except ValueError:
                self.send({"id": None, "error": "not a JSON line", "kind": "protocol"})
                continue
            if isinstance(msg, dict):
                self._dispatch(msg)
        for stream in list(self._streams.values()):
            stream.close()

    def _dispatch(self, msg: dict[str, Any]) -> None:
        mid = msg.get("id")
        if "call" in msg:
            threading.Thread(target=self._call, args=(mid, msg), daemon=True).start()
        elif "stream" in msg:
            self._open_stream(mid, msg.get("stream") or {})
        elif "send" in msg:
            stream = self._streams.get(mid)
            if stream is not None:
                try:
                    stream.send(base64.b64decode(msg["send"]))
                except (OSError, ValueError):
                    pass
        elif msg.get("close"):
            stream = self._streams.pop(mid, None)
            if stream is not None:
                stream.close()
        elif msg.get("cancel"):
            event = self._cancels.get(mid)
            if event is not None:
                event.set()
        else:
            self.send({"id": mid, "error": "unknown message", "kind": "protocol"})

    def _call(self, mid: Any, msg: dict[str, Any]) -> None:
        name = msg.get("call")
        args = msg.get("args") or []
        kwargs = msg.get("kwargs") or {}
        method = getattr(self.registry, name, None) if isinstance(name, str) else None
        if (not isinstance(name, str) or method is None or not callable(method) or name.startswith("_")
                or name in NOT_CALLABLE or not isinstance(args, list) or not isinstance(kwargs, dict)):
            self.send({"id": mid, "error": f"no such call: {name!r}", "kind": "protocol"})
            return
        if name == "wait":
            kwargs["interrupt"] = self._cancels.setdefault(mid, threading.Event())
        try:
            result = method(*args, **kwargs)
        except Exception as exc:  # noqa: BLE001 - reported to the client, never fatal here
            self.send({"id": mid, "error": f"{type(exc).__name__}: {exc}", "kind": type(exc).__name__})
        else:
            self.send({"id": mid, "result": result})
        finally:
            self._cancels.pop(mid, None)

    def _open_stream(self, mid: Any, spec: dict[str, Any]) -> None:
        try:
            stream = self.registry.stream(spec.get("session_id"), input=bool(spec.get("input")),
                                          source=str(spec.get("source") or "human"))
        except Exception as exc:  # noqa: BLE001 - IdError, SupervisorGone, OSError
            self.send({"id": mid, "error": str(exc), "kind": type(exc).__name__})
            return
        self._streams[mid] = stream
        self.send({"id": mid, "opened": {"offset": stream.offset, "pty": stream.pty}})
        threading.Thread(target=self._pump, args=(mid, stream), daemon=True).start()

    def _pump(self, mid: Any, stream: Any) -> None:
        try:
            while True:
                data = stream.read(1.0)
                if data is None:
                    if stream.closed:
                        break
                    continue
                if not data:
                    break
                self.send({"id": mid, "data": base64.b64encode(data).decode("ascii")})
        except (OSError, ValueError):
            pass
        finally:
            self._streams.pop(mid, None)
            stream.close()
            self.send({"id": mid, "end": True})


def main(home: Optional[str] = None, code: str = "installed") -> int:
    """Serve the registry of `home` (the remote user's default home when None)."""
    from hermes_procs.core.registry.process_registry import ProcessRegistry
    from hermes_procs.core.registry.spawn import template_idle
    from hermes_procs.core.supervisor import reaper

    out = sys.stdout.buffer
    sys.stdout = sys.stderr  # nothing else may write into the protocol stream
    try:
        registry = ProcessRegistry(home=home or None, host="local")
    except Exception as exc:  # noqa: BLE001 - one line for the client, then stop
        out.write(dumps({"hello": "hermes-procs", "v": STDIO_VERSION, "error": f"cannot open home: {exc}"}))
        out.flush()
        return 1
    version = getattr(sys.modules.get("hermes_procs"), "__version__", "?")
    hello = {"hello": "hermes-procs", "v": STDIO_VERSION, "version": version,
             "home": str(registry.home), "code": code, "pid": os.getpid(),
             "python": "%d.%d.%d" % sys.version_info[:3], **reaper.report(template_idle() > 0)}
    Server(registry, sys.stdin.buffer, out).serve(hello)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1] if len(sys.argv) > 1 else None))
