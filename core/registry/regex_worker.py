"""The worker process that runs a user's regular expression in Python's `re` (core/registry/userregex.py).

Python's `re` backtracks: `(a+)+$` on a line of 41 characters runs for hours, holding the GIL
the whole time, so such a pattern must never run inside a process that has other work to do.
``userregex`` starts this program (``python -I -S regex_worker.py TIMEOUT``) when RE2 cannot
take a pattern (look-around, back-references, or no RE2 installed: remote hosts run the
standard library only) and kills it when one call runs past its deadline.

Protocol, over stdin/stdout: a request is one JSON line ``{"op": OP, "n": N}`` followed by N
bytes of UTF-8 text; the reply is one JSON line.

    compile  the text is the pattern; "flags": re flags  -> {"ok": true} or {"error": "..."}
    lines    -> {"lines": [i, ...]}: the lines of the text (split on \\n) in which the pattern
             matches, each matched on its first LINE_CAP characters
    first    -> {"match": "..."} or {"match": null}: the first match in the text (MULTILINE)
    spans    -> {"spans": [[start, end], ...]}: every non-empty match in the text (one line)

An alarm as long as the deadline (plus a second) ends the process should the caller die while
a match runs; end of file on stdin ends it otherwise. Standard library only, Python 3.9.
"""

from __future__ import annotations

import json
import math
import re
import signal
import sys
from typing import Any

LINE_CAP = 65536  # characters of one line that `lines` matches


def _lines(pattern: re.Pattern[str], text: str) -> list[int]:
    lines = text.split("\n")
    if lines[-1] == "":
        lines.pop()  # the text ends with a line end (or is empty): no line after it
    search = pattern.search
    return [i for i, line in enumerate(lines) if search(line, 0, LINE_CAP)]


def _first(pattern: re.Pattern[str], text: str) -> str | None:
    match = pattern.search(text)
    return match.group(0) if match else None


def _spans(pattern: re.Pattern[str], text: str) -> list[list[int]]:
    return [[m.start(), m.end()] for m in pattern.finditer(text) if m.end() > m.start()]


def _answer(pattern: re.Pattern[str], op: str, text: str) -> dict[str, Any]:
    if op == "lines":
        return {"lines": _lines(pattern, text)}
    if op == "first":
        return {"match": _first(pattern, text)}
    if op == "spans":
        return {"spans": _spans(pattern, text)}
    return {"error": f"unknown op {op!r}"}


def main() -> None:
    alarm = math.ceil(float(sys.argv[1])) + 1 if len(sys.argv) > 1 else 0
    stdin, stdout = sys.stdin.buffer, sys.stdout.buffer
    pattern: re.Pattern[str] | None = None
    while True:
        header = stdin.readline()
        if not header:
            return
        request = json.loads(header)
        text = stdin.read(int(request["n"])).decode("utf-8", "surrogatepass")
        if request["op"] == "compile":
            try:
                pattern = re.compile(text, int(request.get("flags", 0)))
                reply: dict[str, Any] = {"ok": True}
            except (re.error, OverflowError, ValueError) as exc:
                reply = {"error": str(exc)}
        elif pattern is None:
            reply = {"error": "no pattern compiled"}
        else:
            signal.alarm(alarm)
            reply = _answer(pattern, request["op"], text)
            signal.alarm(0)
        stdout.write(json.dumps(reply).encode() + b"\n")
        stdout.flush()


if __name__ == "__main__":
    main()
