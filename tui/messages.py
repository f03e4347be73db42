"""Typed messages the dashboard's workers post when an action on a job is done: one class per
outcome, so each handler is a plain method and nothing is dispatched on strings.

Workers run in threads (``@work(thread=True)``) and only ever ``post_message`` one of these;
the :class:`~.main_screen.MainScreen` handles them on the UI thread.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum

from textual.message import Message

__all__ = [
    "ActionFailed",
    "Copied",
    "InputSent",
    "JobAlreadyExited",
    "JobRerun",
    "JobStarted",
    "LogSaved",
    "PinChanged",
    "SendMode",
    "SignalSent",
    "WaitingForInput",
]


class SendMode(Enum):
    """How the input bar's text goes to the job."""

    SUBMIT = "submit"  # the line plus a newline
    WRITE = "write"  # the text raw, no newline
    EOF = "eof"  # close the job's stdin


@dataclass
class JobStarted(Message):
    """A new job runs (the table selects it once the sampler lists it)."""

    session_id: str
    command: str


@dataclass
class JobRerun(Message):
    """``old`` was started again as ``new`` (registry.restart; the old job and its log stay)."""

    old: str
    new: str
    command: str


@dataclass
class WaitingForInput(Message):
    """A job started waiting for input; ``question`` is the last line it printed ("" if none)."""

    session_id: str
    title: str
    question: str


@dataclass
class SignalSent(Message):
    """A signal reached the job's process group."""

    session_id: str
    signal: str


@dataclass
class InputSent(Message):
    """Input was delivered to the job's stdin (or its stdin was closed)."""

    session_id: str
    mode: SendMode


@dataclass
class PinChanged(Message):
    """A leased job is now kept when its owner ends (``pinned``), or ends with it again."""

    session_id: str
    pinned: bool
    title: str


@dataclass
class JobAlreadyExited(Message):
    """An action found the job already ended."""

    session_id: str


@dataclass
class ActionFailed(Message):
    """An action on a job failed; ``title`` names the action, ``error`` says why."""

    title: str
    error: str


@dataclass
class Copied(Message):
    """Text went to the clipboard; ``how`` is the tool or "OSC 52"."""

    what: str
    how: str


@dataclass
class LogSaved(Message):
    """The log was written to ``path``."""

    path: str
    size: int
    plain: bool
