"""Who collects the exit of a finished supervisor here: pid 1, or the warm template.

A supervisor detaches from whoever started it (the template forks it twice), so when it ends
its exit goes to the nearest *subreaper* above it, else to pid 1. An init (systemd, tini,
`docker run --init`, dumb-init) collects every exit. But a container's pid 1 is often just the
program it was made for (`sleep infinity`, a server): it never waits for children it did not
start, and each finished supervisor, template or leftover of a job would stay as a zombie
(`[hp-supervisor] <defunct>`) until the container stops.

There, the home's template (core/supervisor/template.py) takes the job: it makes itself a subreaper
(`prctl(PR_SET_CHILD_SUBREAPER)`), so what it forks (spares, supervisors) and what they leave
behind is re-parented to it, collects their exits, and stays for the life of the container
instead of leaving after its idle time (it would become a zombie itself). Spawns there go
through it, started first if need be.

HERMES_PROCS_REAPER: `auto` (default: in a container, see `in_container`), `on` (the template
reaps whatever pid 1 is) or `off`.
`pid1_reaps()` reads pid 1's name and signal dispositions from /proc/1/status: a process
that is not a known init (tini, dumb-init, systemd, ...) and neither catches, blocks (to wait
for it) nor ignores SIGCHLD never collects an orphan's exit. HERMES_PROCS_REAPER=off turns
the template's part off (then a warning says what happens, see `report`).

Stdlib only, no package imports: the template imports this module by its plain name.
"""

from __future__ import annotations

import os

TYPE_CHECKING = False  # a type checker takes it as true; the template does not load typing
if TYPE_CHECKING:
    from types import ModuleType

SIGCHLD_BIT = 1 << (17 - 1)  # SIGCHLD is 17 on Linux; bit n-1 of the SigCgt / SigIgn masks
PR_SET_CHILD_SUBREAPER = 36
# inits that collect every exit without showing it in their signal masks at all times
KNOWN_INITS = frozenset({"docker-init", "tini", "tini-static", "dumb-init", "catatonit", "init", "systemd",
                         "s6-svscan", "runsvdir", "runit", "openrc-init", "supervisord"})
INIT_ADVICE = "start the container with an init: `docker run --init` (or tini, dumb-init)"


def pid1_reaps(proc: str = "/proc/1") -> bool:
    """False when pid 1 is not a known init and neither catches, blocks nor ignores SIGCHLD:
    it never collects exits. True when it does (an init catches it, or blocks it to read it
    from a signalfd like systemd; ignoring it makes the kernel collect them), when it is a
    known init (tini waits in sigtimedwait, which unblocks SIGCHLD while it waits), or when
    that cannot be read (then nothing is changed)."""
    try:
        with open(f"{proc}/status") as fh:
            fields = dict(line.split(":", 1) for line in fh if ":" in line)
        masks = [int(fields[name], 16) for name in ("SigCgt", "SigBlk", "SigIgn")]
    except (OSError, KeyError, ValueError):
        return True
    return any(mask & SIGCHLD_BIT for mask in masks) or fields.get("Name", "").strip() in KNOWN_INITS


def pid1_name() -> str:
    """pid 1's process name, letters, digits and `. _ + -` only (a container names it)."""
    try:
        with open("/proc/1/comm") as fh:
            name = fh.read()
    except OSError:
        return "?"
    return "".join(c for c in name if c.isascii() and (c.isalnum() or c in "._+-")) or "?"


def in_container() -> bool:
    """True in a pid namespace of its own (a container's): there, unlike in the machine's own,
    pid 2 is not the kernel's kthreadd."""
    try:
        with open("/proc/2/status") as fh:
            return not fh.read(200).startswith("Name:\tkthreadd\n")
    except OSError:
        return True


def needed() -> bool:
    """Whether the template should reap here: HERMES_PROCS_REAPER `on`, or `auto` (the
    default) in a container whose pid 1 does not; never when it is `off` or we are pid 1.
    (A machine's own pid 1 is an init; one that is not is left alone.)"""
    setting = os.environ.get("HERMES_PROCS_REAPER", "auto").strip().lower()
    if setting in ("off", "0", "no", "false") or os.getpid() == 1:
        return False
    return setting in ("on", "1", "yes", "true") or (in_container() and not pid1_reaps())


def become_subreaper(ctypes: ModuleType) -> bool:
    """Make this process the subreaper of its descendants; False where the kernel refuses."""
    try:
        return int(ctypes.CDLL(None, use_errno=True).prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)) == 0
    except (OSError, AttributeError):
        return False


def reap() -> bool:
    """Collect every child that has exited; False once there is no child left at all."""
    while True:
        try:
            pid, _status = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return False
        if pid == 0:
            return True


def reap_all() -> None:
    """Wait for every child to end, collecting each exit as it comes (a template that stopped
    serving has nothing else to do)."""
    while True:
        try:
            os.wait()
        except ChildProcessError:
            return


def report(template_on: bool) -> dict[str, str]:
    """What the stdio server tells a client about this host: ``{"reaper": "template" | "pid1"
    | "none", "warning": ...}`` (a warning only for "none")."""
    if template_on and needed():
        return {"reaper": "template"}
    if os.getpid() == 1 or pid1_reaps() or not in_container():
        return {"reaper": "pid1"}
    why = ("HERMES_PROCS_REAPER is off" if template_on
           else "the supervisor template is off (HERMES_PROCS_TEMPLATE_IDLE=0)")
    return {"reaper": "none", "warning": f"pid 1 ({pid1_name()}) does not collect the exits of finished processes "
                                         f"and {why}: finished jobs stay as zombies here; {INIT_ADVICE}"}
