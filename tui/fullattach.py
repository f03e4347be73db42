"""Full-screen attach from the dashboard: suspend the Textual app and hand the real terminal
to the job for perfect fidelity (vim, htop), with the same code and detach chord (Ctrl-]) as
`hermes-procs attach ID` (`hermes_procs.core.registry.attach.attach_terminal`).
"""

from __future__ import annotations

from hermes_procs.core.registry.attach import attach_terminal
from hermes_procs.core.registry.interface import Registry


def full_attach(app, registry: Registry, session_id: str) -> int | None:
    """Suspend ``app``, attach the real terminal to the job until Ctrl-], resume.

    Returns the proxy's result (0 on detach, the job's exit code if it ended), or None when
    the attach failed (the app shows a notification). Terminal panes showing the same job
    get their size back (with a repaint nudge) afterwards.
    """
    result: int | None = None
    error = ""
    try:
        with app.suspend():
            try:
                result = attach_terminal(registry, session_id, source="human")
            except Exception as exc:  # AttachError, SupervisorGone...
                error = str(exc) or type(exc).__name__
    except Exception as exc:  # SuspendNotSupported (e.g. headless or web)
        error = f"full-screen attach is not available here ({type(exc).__name__})"
    if error:
        app.notify(error, title="Attach", severity="error")
        result = None
    _resync_panes(app, session_id)
    app.refresh()
    return result


def _resync_panes(app, session_id: str) -> None:
    from .terminal import TerminalPane

    for pane in app.screen.query(TerminalPane):
        if pane.session_id == session_id:
            pane.resync()
