"""Copy text to the user's clipboard: the system clipboard where one is reachable (a desktop
session with wl-copy, xclip, xsel or pbcopy), else OSC 52 through the terminal (works over SSH
and in tmux with ``set-clipboard on``)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys

__all__ = ["system_copy"]

_TOOLS = (
    ("WAYLAND_DISPLAY", ["wl-copy"]),
    ("DISPLAY", ["xclip", "-selection", "clipboard"]),
    ("DISPLAY", ["xsel", "--clipboard", "--input"]),
)


def system_copy(text: str) -> str | None:
    """Put ``text`` on the system clipboard; the tool's name, or None when none is reachable
    (then the caller uses OSC 52).  Blocks up to 2 s: call it from a worker thread."""
    candidates = [argv for env, argv in _TOOLS if os.environ.get(env)]
    if sys.platform == "darwin":
        candidates.insert(0, ["pbcopy"])
    for argv in candidates:
        if shutil.which(argv[0]) is None:
            continue
        try:
            done = subprocess.run(argv, input=text.encode("utf-8"), timeout=2,
                                  stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        except (OSError, subprocess.SubprocessError):
            continue
        if done.returncode == 0:
            return argv[0]
    return None
