"""Numeric inputs, checked the same way at every entry point: finite, in range, a clear error.

The registry checks what the API, CLI, agent tool and MCP server pass it; the supervisor checks
the numbers of socket requests with the same functions. A number out of range is rejected (a
`BadNumber` whose message names the input and its range), never passed on to `select()`,
`sleep()` or an ioctl where it would overflow or spin.

Stdlib only and no package-relative imports: the supervisor imports this file as `bounds`.
"""

from __future__ import annotations

import math

MAX_SECONDS = 366 * 86400.0  # a year: the longest max_runtime, kill grace or wait taken
MAX_TERMINAL = 1000  # rows and columns of a PTY (a screen of 1000 x 1000 is ~1 MiB of text)
EARLIEST = -62135596800.0  # 0001-01-01T00:00:00Z and 9999-12-31T23:59:59Z: the instants an
LATEST = 253402300799.0  # ISO 8601 time can show (and time.localtime can take)


class BadNumber(ValueError):
    """A numeric input that is not a number, not finite, or out of its range."""


def shown(value: object, exact: bool = False) -> str:
    """A value as an error quotes it, cut to 40 characters; a whole float as the number typed
    (`-1`, which the CLI's float options pass as -1.0), unless `exact` (where 2.0 is the error)."""
    if not exact and isinstance(value, float) and value.is_integer() and abs(value) < 1e16:
        return str(int(value))
    text = repr(value)
    return text if len(text) <= 40 else text[:37] + "..."


def seconds(value: object, name: str, *, allow_zero: bool = False, maximum: float = MAX_SECONDS) -> float:
    """A duration in seconds: a real number, finite, > 0 (or >= 0), at most `maximum`."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise BadNumber(f"{name} must be a number of seconds, not {shown(value)}")
    try:
        number = float(value)
    except OverflowError:  # an int too big for a float
        number = math.inf
    if not math.isfinite(number) or number < 0 or (number == 0 and not allow_zero):
        least = "0 or more" if allow_zero else "more than 0"
        raise BadNumber(f"{name} must be a finite number of seconds, {least}, not {shown(number)}")
    if number > maximum:
        most = f"a year ({maximum:.0f} seconds)" if maximum == MAX_SECONDS else f"{maximum:g} seconds"
        raise BadNumber(f"{name} must be at most {most}, not {number:g}")
    return number


def whole(value: object, name: str, lowest: int, highest: int | None = None) -> int:
    """A whole number in [lowest, highest] (no upper bound when `highest` is None)."""
    if (isinstance(value, bool) or not isinstance(value, int) or value < lowest
            or (highest is not None and value > highest)):
        span = f"from {lowest} to {highest}" if highest is not None else f">= {lowest}"
        raise BadNumber(f"{name} must be a whole number {span}, not {shown(value, exact=True)}")
    return value


def terminal_size(rows: object, cols: object) -> tuple[int, int]:
    """PTY rows and columns, each 1..MAX_TERMINAL."""
    return whole(rows, "rows", 1, MAX_TERMINAL), whole(cols, "cols", 1, MAX_TERMINAL)


def setting(raw: str | float | None, default: float, maximum: float) -> float:
    """A positive number from an environment setting; `default` when unset or not a number,
    `maximum` when larger (a setting never makes the supervisor sleep or wait without end)."""
    try:
        value = float(raw) if raw is not None else default
    except (TypeError, ValueError):
        return default
    if not math.isfinite(value) or value <= 0:
        return default
    return min(value, maximum)
