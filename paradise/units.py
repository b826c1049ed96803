"""Times, sizes and plain numbers as people read them: one formatter for every printed figure
(terminal report, sentences in characteristics, CLI messages). Three significant digits, a unit
on every time and size, thousands separators, never scientific notation."""

from __future__ import annotations

import math

_TIME_UNITS = (("h", 3600e9), ("min", 60e9), ("s", 1e9), ("ms", 1e6), ("µs", 1e3))
"""Largest first; minutes and hours only from MINUTES_FROM_S / HOURS_FROM_S on."""
MINUTES_FROM_S = 120.0
HOURS_FROM_S = 2 * 3600.0
_SIZE_UNITS = (("TB", 1e12), ("GB", 1e9), ("MB", 1e6), ("kB", 1e3))
_BINARY_UNITS = (("TiB", 1 << 40), ("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10))


def number(x: float | int | None, digits: int = 3) -> str:
    """`digits` significant digits in fixed notation (1,234,567 / 12.3 / 0.00123), no exponent."""
    if x is None:
        return "-"
    x = float(x)
    if not math.isfinite(x):
        return "nan" if math.isnan(x) else ("inf" if x > 0 else "-inf")
    if x == 0:
        return "0"
    if abs(x) >= 10 ** digits:
        return f"{x:,.0f}"
    decimals = max(0, digits - 1 - math.floor(math.log10(abs(x))))
    text = f"{x:.{decimals}f}"
    if "." in text:
        text = text.rstrip("0").rstrip(".")
    return "0" if text in ("-0", "") else text


def count(n: float | int | None) -> str:
    """A count with thousands separators: 647,394."""
    return "-" if n is None else f"{round(float(n)):,}"


def duration(ns: float | int | None) -> str:
    """Nanoseconds as the largest unit that keeps the figure >= 1: 6.53 s, 163 ms, 30 µs, 4.8 h."""
    if ns is None:
        return "-"
    ns = float(ns)
    if not math.isfinite(ns):
        return number(ns)
    a = abs(ns)
    for unit, div in _TIME_UNITS:
        if unit == "h" and a < HOURS_FROM_S * 1e9 or unit == "min" and a < MINUTES_FROM_S * 1e9:
            continue
        if a >= div:
            return f"{number(ns / div)} {unit}"
    return f"{number(ns)} ns"


def seconds(s: float | int | None) -> str:
    """Seconds, formatted as duration()."""
    return "-" if s is None else duration(float(s) * 1e9)


def size(b: float | int | None) -> str:
    """Bytes in decimal units: 4.17 kB, 80.7 MB (B below 1 kB)."""
    if b is None:
        return "-"
    b = float(b)
    for unit, div in _SIZE_UNITS:
        if abs(b) >= div:
            return f"{number(b / div)} {unit}"
    return f"{number(b)} B"


def exact_size(b: float | int | None) -> str:
    """Bytes exactly, grouped, where the figure itself is the point (a measured message size): 4,174 B."""
    return "-" if b is None else f"{round(float(b)):,} B"


def binary_size(b: int) -> str:
    """Bytes in binary units with one decimal, as memory limits are given: 2.0 GiB."""
    for unit, div in _BINARY_UNITS:
        if b >= div:
            return f"{b / div:.1f} {unit}"
    return f"{b} B"


def rate(bytes_per_s: float | None) -> str:
    """A bandwidth: 8.69 GB/s."""
    return "-" if bytes_per_s is None else f"{size(bytes_per_s)}/s"
