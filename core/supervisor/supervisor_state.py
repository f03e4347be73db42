"""The supervisor's state, declared in one place: every attribute of supervisor_loop.Supervisor,
and the methods one of its mixins (supervisor_output, _stdin, _clients, _kill, _watch, _lease) calls on
another. Each mixin derives from SupervisorState, so a type checker checks each one against the
whole; at run time the class holds nothing but these annotations (strings, never evaluated).

Stdlib only, and nothing imported at run time: `TYPE_CHECKING` is a plain constant (a type
checker takes it as true), so the supervisor does not load `typing`.
"""

from __future__ import annotations

TYPE_CHECKING = False
if TYPE_CHECKING:
    import mmap
    import selectors
    import socket
    import threading
    from typing import Any

    import proctree
    from idle_events import IdleWatch
    from supervisor_clients import Client


class SupervisorState:
    # the job (supervisor_loop)
    jobdir: str
    pid: int
    ticks: int
    pty: bool
    out_fd: int
    in_fd: int
    meta: dict[str, Any]
    home: str
    session_id: str
    cap: int
    complaints: int
    exit: dict[str, Any] | None
    exit_stored: bool
    exited_at: float
    state_dirty: bool
    pending_events: list[bytes]
    retry_at: float | None
    retry_delay: float
    waiters: list[Client]
    deadline: float | None
    sel: selectors.BaseSelector
    idle: IdleWatch
    wake_r: int
    wake_w: int
    listener: socket.socket
    # output log (supervisor_output)
    log_fd: int
    log_size: int
    dropped: int
    output_dropped: int
    write_failing: bool
    buf: mmap.mmap
    view: memoryview
    offset: int
    output_open: bool
    log_end: int
    times_fd: int
    times_next: float
    times_last: int
    counted_to: int
    # stdin queue (supervisor_stdin)
    stdin_open: bool
    stdin_closing: bool
    stdin_registered: bool
    pending: bytearray
    # client hub (supervisor_clients)
    clients: dict[int, Client]
    accept_paused_until: float | None
    accept_delay: float
    max_clients: int
    spare_fd: int
    # kill (supervisor_kill)
    kill_reason: str | None
    kill_by: str | None
    kill_thread: threading.Thread | None
    kill_deadline: proctree.Deadline | None
    kill_waiters: list[Client]
    kill_results: list[tuple[list[int], list[Client]]]
    # watch patterns (supervisor_watch)
    watch: list[str]
    watch_partial: bytes
    watch_partial_hit: bool
    watch_count: int
    watch_interval: float
    watch_last: float
    watch_suppressed: int
    # lease (supervisor_lease)
    lease_owner: tuple[int, int] | None
    lease_fd: int
    lease_next: float | None
    pinned: bool
    owner_ended: bool

    if TYPE_CHECKING:  # defined by Supervisor or another mixin; declared here for the checker
        def _complain(self, message: str) -> None: ...
        def _event(self, kind: str, **fields: Any) -> None: ...
        def _schedule_retry(self) -> None: ...
        def _write_json(self, name: str, data: dict[str, Any]) -> bool: ...
        def _dispatch(self, client: Client, req: dict[str, Any]) -> None: ...
        def _reply(self, client: Client, message: dict[str, Any]) -> None: ...
        def _send(self, client: Client, data: bytes | memoryview) -> None: ...
        def _queue_stdin(self, data: bytes) -> str | None: ...
        def _attached_input(self, client: Client, data: bytes) -> None: ...
        def _scan_watch(self, data: bytes) -> None: ...
        def _start_kill(self, grace: float, reason: str, client: Client | None, by: str) -> None: ...
        def _tail_text(self, chars: int) -> str: ...
