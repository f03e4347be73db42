"""Regular expressions from users and agents, run where a bad one cannot hang anything.

Python's `re` backtracks and holds the GIL for a whole match: `(a+)+$` against a line of 41
characters runs for hours and freezes every thread of the process (the dashboard, the MCP
server, a CLI that can no longer be interrupted). So a pattern that a user or an agent gives
(`search`, `wait(until="output:...")`, the dashboard's `&` filter and `[[highlight]]` rules)
is compiled with :func:`compile_user` and runs

* in **RE2** (the ``google-re2`` package) when it is installed and the pattern means the same
  there: matching takes time linear in the text, and RE2 releases the GIL while it runs (a
  pattern whose program is over ``MAX_RE2_PROGRAM`` instructions goes to the worker: RE2's time
  grows with the program too);
* otherwise (look-around, back-references and the other syntax RE2 lacks, or no RE2: remote
  hosts run the standard library only) in **Python's re inside a worker process**
  (`regex_worker.py`, one per pattern, started on first use), with a deadline on every call
  (``HERMES_PROCS_REGEX_TIMEOUT`` seconds, default 3; a call is at most about 1 MiB of text).
  A call past it kills the worker and raises :class:`PatternTimeout` ("pattern took too long");
  the worker matches each line on its first ``LINE_CAP`` characters.

``HERMES_PROCS_REGEX_ENGINE=re`` uses the worker for every pattern (Python's semantics
exactly). The syntax is Python's in both cases: a pattern is first compiled by `re` (the only
judge of what is valid); RE2 takes it only when it accepts it and it has none of the
constructs RE2 reads differently (`[:alpha:]`-like classes, `{,n}`, `\\A`, turned-off flags).
RE2 differs from `re` in one way that remains: ``\\d \\w \\s \\b`` are ASCII classes in RE2.

The line semantics are grep's: :meth:`UserRegex.lines` gives the lines of a text in which the
pattern matches (a match never spans a line end; ``^`` and ``$`` match at each line's ends).
"""

from __future__ import annotations

import json
import os
import re
import select
import sys
import time
import warnings
from _thread import allocate_lock  # threading's Lock; `threading` costs a CLI query ~1.5 ms
from pathlib import Path
from typing import TYPE_CHECKING, Any, Optional

from . import linefind
from .colourfind import ColourFinder
from .envnumbers import env_number

if TYPE_CHECKING:
    import subprocess

__all__ = ["LINE_CAP", "MAX_PATTERN", "PatternError", "PatternTimeout", "UserRegex", "compile_user",
           "regex_timeout"]

MAX_PATTERN = 4096  # characters
MAX_RE2_PROGRAM = 2000  # instructions: at most ~1.5-3 s per MiB in RE2, as the worker's deadline
DEFAULT_TIMEOUT = 3.0
DEFAULT_SEARCH_TIMEOUT = 30.0
LINE_CAP = 65536  # characters of a line the worker matches (regex_worker.LINE_CAP)
WORKER = Path(__file__).with_name("regex_worker.py")
# syntax Python's re reads one way and RE2 another (or that depends on matching line by line)
_DIVERGENT = re.compile(r"\[:|\{,|\\[AZ]|\(\?[a-zA-Z]*-")


class PatternError(ValueError):
    """A pattern that is not a valid regular expression, or that could not be run."""


class PatternTimeout(PatternError):
    """A pattern that ran past its deadline (in the worker process, which was killed)."""


def search_timeout() -> float:
    """Seconds one whole search may spend in the worker: HERMES_PROCS_SEARCH_TIMEOUT, default
    30 (each call has regex_timeout; a slow pattern over a 1 GB log made a thousand calls)."""
    return env_number("HERMES_PROCS_SEARCH_TIMEOUT", DEFAULT_SEARCH_TIMEOUT, 0.05, 86400, lowest_ok=True)


def regex_timeout() -> float:
    """Seconds one worker call may take: HERMES_PROCS_REGEX_TIMEOUT, default 3."""
    return env_number("HERMES_PROCS_REGEX_TIMEOUT", DEFAULT_TIMEOUT, 0.05, 3600, lowest_ok=True)


def compile_user(pattern: object, *, ignore_case: bool = False, what: str = "pattern") -> UserRegex:
    """The pattern ready to run, or PatternError saying what is wrong with it (`what` names it)."""
    if not isinstance(pattern, str) or not pattern:
        raise PatternError(f"{what} must be a non-empty regular expression, not {pattern!r}"[:200])
    if len(pattern) > MAX_PATTERN:
        raise PatternError(f"{what} is {len(pattern)} characters long; at most {MAX_PATTERN} are accepted")
    if not pattern.isascii() and not _is_text(pattern):
        raise PatternError(f"{what} {ascii(pattern)[:100]} holds bytes that are not UTF-8 text")
    flags = re.IGNORECASE if ignore_case else 0
    try:
        with warnings.catch_warnings():  # "possible nested set" and the like: not the user's concern here
            warnings.simplefilter("ignore")
            re.compile(pattern, flags)  # compiling never backtracks: only matching does
    except (re.error, OverflowError, RecursionError) as exc:
        raise PatternError(f"{what} {pattern!r} is not a valid regular expression ({exc})"[:300]) from None
    main, why = _re2_try(pattern, ignore_case)
    by_line, why = _re2_try(pattern, ignore_case, lines=True) if main is not None else (None, why)
    regex = UserRegex(pattern, ignore_case, main if by_line is not None else None)
    regex.why_not_re2 = why
    if regex.engine == "re2":
        parsed = linefind.parse(pattern, flags)
        runs = _re2_try(linefind.RUNS.format(pattern), ignore_case)[0] if linefind.newline_free(parsed) else None
        literals = linefind.required_literals(parsed)
        regex.finder = linefind.LineFinder(by_line, runs, literals, _re2_module())
        if literals:
            regex.colours = ColourFinder(linefind.best_choice(literals), _re2_module())
    return regex


def _is_text(pattern: str) -> bool:
    """No lone surrogate in it (a shell argument of bytes that are not UTF-8 holds them)."""
    try:
        pattern.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def _re2_module() -> Any:
    if os.environ.get("HERMES_PROCS_REGEX_ENGINE", "").lower() == "re":
        return None
    try:
        import re2
    except ImportError:
        return None
    return re2


def _re2_try(pattern: str, ignore_case: bool, lines: bool = False) -> tuple[Any, str]:
    """(the RE2 regex for `pattern`, "") or (None, why it runs in the worker instead: RE2 cannot
    take it, would read it differently, or its program is too big). The regex is multi-line (^
    and $ at line ends); `lines`: it never matches a line end (RE2's ``never_nl``: ``\\n`` taken
    out of every class, a literal one never matches), so a match lies within one line, as when
    each line is matched alone."""
    re2 = _re2_module()
    if re2 is None:
        forced = os.environ.get("HERMES_PROCS_REGEX_ENGINE", "").lower() == "re"
        return None, "HERMES_PROCS_REGEX_ENGINE=re" if forced else "the google-re2 package is missing"
    if _DIVERGENT.search(pattern):
        return None, "syntax RE2 reads differently ([:class:], {,n}, \\A, \\Z, a flag turned off)"
    options = re2.Options()
    options.case_sensitive = not ignore_case
    options.log_errors = False
    options.never_nl = options.never_capture = lines
    try:
        regex = re2.compile("(?m)" + pattern, options)
    except re2.error:
        return None, "syntax RE2 lacks (look-around, back-references)"
    # RE2's time is linear in the text, times the program's size when its DFA gives up (about
    # 0.7 ms per MiB per instruction here): a big program (`a[a-z]{400}|b...`) could run for
    # minutes unstopped, so it goes to the worker, whose calls have a deadline
    if max(regex.programsize, regex.reverseprogramsize) > MAX_RE2_PROGRAM:
        return None, f"too big for RE2 (over {MAX_RE2_PROGRAM:,} instructions)"
    return regex, ""


class UserRegex:
    """A user's pattern and where it runs (``engine``: "re2" or "re" in a worker process).

    Use it as a context manager, or call :meth:`close`, to end its worker."""

    def __init__(self, source: str, ignore_case: bool, re2_regex: Any) -> None:
        self.source = source
        self.ignore_case = ignore_case
        self._re2 = re2_regex
        self._worker: Optional[_Worker] = None
        self.finder: Optional[linefind.LineFinder] = None  # RE2 over raw bytes, line by line
        self.colours: Optional[ColourFinder] = None  # RE2 over coloured bytes, for the literal
        self._lock = allocate_lock()
        self._aborted = False
        self._deadline: Optional[float] = None  # of the whole operation (a search), in the worker
        self.why_not_re2 = ""  # why it runs in the worker (for a message that says so)

    @property
    def engine(self) -> str:
        return "re2" if self._re2 is not None else "re"

    def __enter__(self) -> UserRegex:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        with self._lock:
            if self._worker is not None:
                self._worker.close()

    def limit_total(self) -> None:
        """From now on the worker's calls together may take search_timeout() seconds (RE2 is
        linear: unlimited); past that a call raises PatternTimeout, as one past its own does."""
        self._deadline = time.monotonic() + search_timeout()

    def abort(self) -> None:
        """Stop now, from any thread: the worker is killed, so a call in progress (in another
        thread) raises PatternError at once, and so does every later call."""
        self._aborted = True
        worker = self._worker
        if worker is not None:
            worker.kill()

    def lines(self, text: str | bytes) -> list[int]:
        """Indices of the lines of `text` (split on ``\\n``; bytes are UTF-8) where the pattern
        matches within the line."""
        data = text if isinstance(text, bytes) else text.encode("utf-8", "surrogatepass")
        if self.finder is not None:
            return _indices(data, self.finder.starts(data, 0, len(data))[0])
        return [int(i) for i in self._call("lines", data)["lines"]]

    def line_starts(self, data: bytes, end: int, limit: int | None = None) -> tuple[list[int], int]:
        """Offsets in ``data[:end]`` (UTF-8 text split on ``\\n``) where the lines in which the
        pattern matches start, at most ``limit`` of them, and how many more lines match."""
        if self.finder is not None:
            found, pos = self.finder.starts(data, 0, end, limit)
            return found, self.finder.count(data, pos, end) if pos < end else 0
        lines = [int(i) for i in self._call("lines", data[:end])["lines"]]
        more = max(0, len(lines) - limit) if limit is not None else 0
        starts, line, pos = [], 0, 0
        for i in lines[:len(lines) - more]:
            while line < i:
                pos, line = data.find(b"\n", pos, end) + 1, line + 1
            starts.append(pos)
        return starts, more

    def coloured_lines(self, data: bytes, end: int, clean: bool = False) -> tuple[list[int] | None, bool]:
        """Starts of the lines of ``data[:end]`` whose text may match, when the block is coloured
        text (core/registry/colourfind.py; None: match the block's text), and whether the block
        is clean coloured text (``clean``: known to be)."""
        return self.colours.candidates(data, end, clean) if self.colours is not None else (None, False)

    def first(self, text: str) -> str | None:
        """The text of the first match in `text` (^ and $ at line ends; a match may span lines)."""
        if self._re2 is not None:
            match = self._re2.search(text.encode("utf-8", "surrogatepass"))
            return match.group(0).decode("utf-8", "replace") if match else None
        found = self._call("first", text.encode("utf-8", "surrogatepass"))["match"]
        return str(found) if found is not None else None

    def spans(self, line: str) -> list[tuple[int, int]]:
        """(start, end) of every non-empty match in one line of text, in characters."""
        if self._re2 is not None:
            return [m.span() for m in self._re2.finditer(line) if m.end() > m.start()]
        return [(int(s), int(e)) for s, e in self._call("spans", line.encode("utf-8", "surrogatepass"))["spans"]]

    def _call(self, op: str, data: bytes) -> dict[str, Any]:
        with self._lock:
            if self._aborted:
                raise PatternError("the pattern was stopped")
            if self._worker is None:
                self._worker = _Worker(self.source, re.MULTILINE | (re.IGNORECASE if self.ignore_case else 0))
            return self._worker.call(op, data, self._deadline)


def _indices(data: bytes, starts: list[int]) -> list[int]:
    """Line numbers (from 0) of the lines of ``data`` starting at ``starts`` (ascending)."""
    out, line, counted = [], 0, 0
    for start in starts:
        line += data.count(b"\n", counted, start)
        counted = start
        out.append(line)
    return out


class _Worker:
    """`python -I -S regex_worker.py` holding one compiled pattern; every call has a deadline."""

    def __init__(self, source: str, flags: int) -> None:
        self.source = source
        self.timeout = regex_timeout()
        self.failed: PatternError | None = None
        import subprocess  # here: only a pattern RE2 refuses starts a worker
        import weakref

        self.proc = subprocess.Popen(
            [sys.executable or "python3", "-I", "-S", str(WORKER), str(self.timeout)],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, close_fds=True)
        self._finalizer = weakref.finalize(self, _end, self.proc)
        self.buffer = b""
        reply = self.call("compile", source.encode("utf-8", "surrogatepass"), flags=flags)
        if "ok" not in reply:
            raise PatternError(f"pattern {source!r} is not a valid regular expression ({reply.get('error')})"[:300])

    def call(self, op: str, data: bytes, total_deadline: Optional[float] = None, **extra: Any) -> dict[str, Any]:
        if self.failed is not None:
            raise self.failed
        header = json.dumps({"op": op, "n": len(data), **extra}).encode() + b"\n"
        try:
            assert self.proc.stdin is not None
            self.proc.stdin.write(header + data)
            self.proc.stdin.flush()
            reply = self._reply(time.monotonic() + self.timeout, total_deadline)
        except PatternError as exc:
            self.fail(exc)
            raise
        except (OSError, ValueError) as exc:
            error = PatternError(f"the regex worker process failed ({exc})")
            self.fail(error)
            raise error from None
        if "error" in reply and op != "compile":
            error = PatternError(f"the regex worker process failed ({reply['error']})")
            self.fail(error)
            raise error
        return reply

    def _reply(self, deadline: float, total_deadline: Optional[float] = None) -> dict[str, Any]:
        assert self.proc.stdout is not None
        fd = self.proc.stdout.fileno()
        whole = total_deadline is not None and total_deadline < deadline
        deadline = min(deadline, total_deadline) if total_deadline is not None else deadline
        while b"\n" not in self.buffer:
            left = deadline - time.monotonic()
            if left <= 0 or not select.select([fd], [], [], left)[0]:
                raise PatternTimeout(self._too_long(whole))
            chunk = os.read(fd, 1 << 16)
            if not chunk:
                raise PatternError("the regex worker process ended unexpectedly")
            self.buffer += chunk
        line, _, self.buffer = self.buffer.partition(b"\n")
        reply = json.loads(line)
        return reply if isinstance(reply, dict) else {"error": "bad reply"}

    def _too_long(self, whole: bool) -> str:
        if whole:
            return (f"pattern {self.source[:80]!r} took too long (over {search_timeout():g} s for the whole search, "
                    "in Python's re: RE2 cannot run it): simplify it, or search one job or fewer lines")
        return (f"pattern {self.source[:80]!r} took too long (over {self.timeout:g} s on one block of "
                "the log; nested repeats such as (a+)+ backtrack without end): simplify it")

    def fail(self, exc: PatternError) -> None:
        """Every later call raises `exc`; the process is killed now."""
        self.failed = exc
        self.close()

    def close(self) -> None:
        self._finalizer()

    def kill(self) -> None:
        """Kill the process without waiting (any thread): a reply being awaited meets end of file."""
        if self.proc.poll() is None:
            self.proc.kill()


def _end(proc: subprocess.Popen[bytes]) -> None:
    """Kill and reap a worker (also when its UserRegex is garbage collected unclosed)."""
    import subprocess

    if proc.poll() is None:
        proc.kill()
    try:
        proc.wait(timeout=5)
    except subprocess.TimeoutExpired:
        pass
    for stream in (proc.stdin, proc.stdout):
        try:
            if stream is not None:
                stream.close()
        except OSError:
            pass
