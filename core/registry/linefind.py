"""The lines in which an RE2 pattern matches, found over a whole buffer at grep's speed.

:class:`LineFinder` (core/registry/userregex.py builds one for every pattern RE2 takes) searches a block
of text in RE2 from one line on to the next match (C speed, the GIL released), finds that
line around the match (``rfind``/``find``) and goes on after it: no Python code runs for a line
that does not match. The pattern is compiled with RE2's ``never_nl`` (``\\n`` taken out of
every class; a literal one never matches), so a match lies within one line, as when each line
is matched alone (grep's semantics, and the regex worker's).

Two ways to go faster, with the same lines found:

* **A literal first.** When every match must contain a run of literal text (``ERROR`` in
  ``\\bERROR\\b``, ``id=9999`` in ``id=9999[0-9]``, ``xxx`` in ``x{3}``; :func:`required_literals`
  reads the pattern's top-level sequence), RE2 searches for that literal from its byte that is
  rarest in the first block searched (RE2 skips to a literal's first byte with ``memchr``), and
  each line it finds is then matched by the whole pattern. When the literal keeps finding lines
  the pattern does not match, the finder goes back to the whole pattern.
* **Runs of lines.** Counting matches (a search past its ``limit``) needs no line offsets: when
  the pattern can never match a line end (:func:`newline_free`), RE2 matches whole runs of
  consecutive matching lines (:data:`RUNS`, anchored at the next matching line) and the lines
  of a run are counted with ``bytes.count``, so a pattern that matches every line is counted
  at the speed of RE2's DFA too.

Standard library and RE2 only; nothing here runs without RE2 (remote hosts use the worker).
"""

from __future__ import annotations

import importlib
import re
from typing import Any

__all__ = ["RUNS", "LineFinder", "best_choice", "newline_free", "parse", "required_literals"]

RUNS = "(?:^[^\\n]*(?:{})[^\\n]*(?:\\n|$))+"  # consecutive lines that each hold a match
SAMPLE = 1 << 16  # bytes of the first block that rank the bytes of a literal
GIVE_UP = 8  # the literal is dropped when it finds this many times more lines than match


class LineFinder:
    """Finds the lines of a buffer in which an RE2 pattern matches (see the module's doc).

    ``regex``: the pattern compiled with ``never_nl``; ``runs``: :data:`RUNS` of it compiled
    (None when the pattern could match a line end); ``literals``: :func:`required_literals`;
    ``re2``: the module."""

    def __init__(self, regex: Any, runs: Any, literals: list[list[bytes]], re2: Any) -> None:
        self.match = regex._regexp.Match
        self.anchor = type(regex._regexp).Anchor.UNANCHORED
        self.anchored = type(regex._regexp).Anchor.ANCHOR_START
        self.runs = runs._regexp.Match if runs is not None else None
        self.literals = literals
        self.re2 = re2
        self.scan: Any = None  # the literal's Match once chosen; False: search the whole pattern
        self.tried = self.confirmed = 0

    def starts(self, data: bytes, pos: int, end: int, limit: int | None = None) -> tuple[list[int], int]:
        """Offsets where the lines of ``data[pos:end]`` (``pos`` at a line start) that hold a match
        start, at most ``limit`` of them, and where the search stopped."""
        if self.scan is None:
            self.scan = self._prefilter(data[pos:pos + SAMPLE])
        found: list[int] = []
        match, un = self.match, self.anchor
        verify = bool(self.scan)
        candidate = _Candidates(self.scan, un, data, end) if verify else None
        tried = 0
        while pos < end and (limit is None or len(found) < limit):
            start = candidate.next(pos) if candidate is not None else match(un, data, pos, end)[0][0]
            if start < 0 or (start == end and data[end - 1:end] == b"\n"):
                pos = end  # none, or only the empty match after the last line end: no line there
                break
            line = data.rfind(b"\n", pos, start) + 1 or pos
            stop = data.find(b"\n", start, end)
            if stop < 0:
                stop = end
            tried += 1
            if not verify or match(un, data, line, stop)[0][0] >= 0:
                found.append(line)
            pos = stop + 1
        if verify:
            self._judge(tried, len(found))
        return found, min(pos, end)

    def count(self, data: bytes, pos: int, end: int) -> int:
        """How many lines of ``data[pos:end]`` (``pos`` at a line start) hold a match: from each
        next matching line (:meth:`starts`), the run of matching lines there, matched anchored
        (one forward pass of RE2's DFA; unanchored, RE2 would also pass back over it)."""
        if self.runs is None:
            return len(self.starts(data, pos, end)[0])
        total, runs, anchored = 0, self.runs, self.anchored
        while pos < end:
            found, _ = self.starts(data, pos, end, 1)
            if not found:
                break
            stop = runs(anchored, data, found[0], end)[0][1]
            if stop <= found[0]:  # never so (the line matches), but never loop on it
                stop = data.find(b"\n", found[0], end) + 1 or end
            total += data.count(b"\n", found[0], stop) + (data[stop - 1:stop] != b"\n")
            pos = stop
        return total

    def _judge(self, tried: int, confirmed: int) -> None:
        """Go back to the whole pattern when the literal keeps finding lines it does not match."""
        self.tried += tried
        self.confirmed += confirmed
        if self.tried > 1000 and self.tried > GIVE_UP * self.confirmed:
            self.scan = False

    def _prefilter(self, sample: bytes) -> Any:
        """The Matches of the literals to search for (one of which every match holds), each
        from its byte rarest in ``sample``; False when there are none."""
        best: tuple[int, int, list[bytes]] | None = None
        for choice in self.literals:
            picks = [_rarest_start(literal, sample) for literal in choice]
            key = (sum(count for count, _ in picks), len(picks), [text for _, text in picks])
            if best is None or key < best:
                best = key
        if best is None:
            return False
        options = self.re2.Options()
        options.literal = options.never_nl = options.never_capture = True
        options.log_errors = False
        try:
            return [self.re2.compile(text, options)._regexp.Match for text in best[2]]
        except self.re2.error:
            return False


class _Candidates:
    """Where the next of several literals occurs in a buffer, each searched once per occurrence."""

    def __init__(self, matches: list[Any], anchor: Any, data: bytes, end: int) -> None:
        self.matches, self.anchor, self.data, self.end = matches, anchor, data, end
        self.at = [-2] * len(matches)  # the next occurrence of each (-1: none left; -2: not searched)

    def next(self, pos: int) -> int:
        """The first occurrence of any of the literals at or after ``pos``, or -1."""
        first = -1
        for i, match in enumerate(self.matches):
            at = self.at[i]
            if at == -2 or 0 <= at < pos:
                at = self.at[i] = match(self.anchor, self.data, pos, self.end)[0][0]
            if at >= 0 and (first < 0 or at < first):
                first = at
        return first


def _rarest_start(literal: bytes, sample: bytes) -> tuple[int, bytes]:
    """The suffix of ``literal`` from its byte rarest in ``sample`` (ties: the longest), with its count."""
    best = (len(sample) + 1, literal)
    for i in range(len(literal)):
        if 0x80 <= literal[i] < 0xC0:
            continue  # inside a character
        count = sample.count(literal[i:i + 1])
        if count < best[0]:
            best = (count, literal[i:])
    return best


def parse(pattern: str, flags: int) -> Any:
    """The pattern as Python's regex parser reads it, or None."""
    try:
        return _re_module("_parser", "sre_parse").parse(pattern, flags)
    except Exception:  # noqa: BLE001 - compile_user judged the pattern; no shortcut then
        return None


def _constants() -> Any:
    return _re_module("_constants", "sre_constants")


def _re_module(name: str, before_3_11: str) -> Any:
    """A private module of ``re`` (``re._parser``; ``sre_parse`` before Python 3.11)."""
    try:
        return importlib.import_module(f"re.{name}")
    except ImportError:
        return importlib.import_module(before_3_11)


def required_literals(parsed: Any) -> list[list[bytes]]:
    """Literal text every match contains: each entry is a list of literals (UTF-8) of which
    every match holds one: one literal for a run of the pattern's top-level sequence (a
    class, repeat or optional part ends a run), for a top-level ``|`` the literals of one such
    entry of each branch.
    [] for a pattern that ignores case (a literal would have to as well)."""
    if parsed is None or parsed.state.flags & re.IGNORECASE:
        return []
    return _choices(parsed.data, _constants())


def _choices(items: Any, c: Any) -> list[list[bytes]]:
    choices: list[list[bytes]] = []
    run: list[int] = []
    for op, arg in [*items, (None, None)]:
        if op is c.LITERAL:
            run.append(arg)
            continue
        if (op in (c.MAX_REPEAT, c.MIN_REPEAT) and arg[0] >= 1 and len(arg[2].data) == 1
                and arg[2].data[0][0] is c.LITERAL):
            run += [arg[2].data[0][1]] * min(arg[0], 64)
            if arg[1] == arg[0]:
                continue
        text = "".join(map(chr, run))
        if text and "\n" not in text:
            choices.append([text.encode("utf-8", "surrogatepass")])
        run = []
        if op is c.SUBPATTERN and not arg[1] and not arg[2]:  # a group without flags: its text is required too
            choices += _choices(arg[3].data, c)
        elif op is c.BRANCH:
            each = [_choices(branch.data, c) for branch in arg[1]]
            if all(each):  # the literals of one choice of each branch
                choices.append([lit for alts in each for lit in best_choice(alts)])
    return choices


def best_choice(choices: list[list[bytes]]) -> list[bytes]:
    """Of required_literals' entries, the one whose shortest literal is the longest."""
    return max(choices, key=lambda choice: min(map(len, choice)))


def newline_free(parsed: Any) -> bool:
    """Whether the pattern can never match a ``\\n`` (then :data:`RUNS` of it counts lines
    exactly). Judged from the parse; anything not known to be safe is not."""
    if parsed is None:
        return False
    return _free(parsed.data, bool(parsed.state.flags & re.DOTALL), _constants())


def _free(items: Any, dotall: bool, c: Any) -> bool:
    safe_categories = (c.CATEGORY_DIGIT, c.CATEGORY_NOT_SPACE, c.CATEGORY_WORD, c.CATEGORY_NOT_LINEBREAK)
    for op, arg in items:
        if op is c.LITERAL:
            ok = arg != 10
        elif op is c.ANY:
            ok = not dotall
        elif op is c.AT:
            ok = True
        elif op is c.IN:
            ok = all((kind is c.LITERAL and value != 10) or (kind is c.RANGE and not value[0] <= 10 <= value[1])
                     or (kind is c.CATEGORY and value in safe_categories) for kind, value in arg)
        elif op in (c.MAX_REPEAT, c.MIN_REPEAT):
            ok = _free(arg[2].data, dotall, c)
        elif op is c.SUBPATTERN:
            ok = _free(arg[3].data, (dotall or bool(arg[1] & re.DOTALL)) and not arg[2] & re.DOTALL, c)
        elif op is c.BRANCH:
            ok = all(_free(branch.data, dotall, c) for branch in arg[1])
        else:
            ok = False
        if not ok:
            return False
    return True
