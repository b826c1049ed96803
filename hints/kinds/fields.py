"""Checked reading of hint fields: every number finite, of its JSON type and within a stated range,
every text a string of bounded length. JSON as Python reads it admits NaN, Infinity, 1e400 and
integers of thousands of digits; none of them may reach a runtime."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

from hints.format import HintError

MAX_TEXT = 4096
"""Longest name (entry method, collection, program) a hint may hold; longer is damage."""
INT64_MAX = 2**63 - 1


def show(v: Any) -> str:
    """A value as the refusal shows it: JSON spelling for NaN/Infinity, at most 60 characters."""
    if isinstance(v, float) and not math.isfinite(v):
        return "NaN" if math.isnan(v) else ("Infinity" if v > 0 else "-Infinity")
    text = repr(v) if not isinstance(v, int) or abs(v) < 10**40 else f"an integer of {len(str(abs(v)))} digits"
    return text if len(text) <= 60 else text[:57] + "..."


def _num(x: float) -> str:
    """A bound as text: whole numbers in full (1048576, not 1.04858e+06)."""
    return str(int(x)) if float(x).is_integer() and abs(x) < 1e16 else f"{x:g}"


def integer(path: Path, where: str, v: Any, lo: int, hi: int) -> int:
    """v when it is a JSON integer (not a bool, float or text) within lo..hi."""
    if type(v) is not int or not lo <= v <= hi:
        raise HintError(f"{path}: {where} should be an integer in {lo}..{hi}, not {show(v)}")
    return v


def number(path: Path, where: str, v: Any, lo: float, hi: float, *, above: bool = False) -> float:
    """v when it is a finite JSON number within [lo, hi] (lo excluded when `above`)."""
    ok = type(v) in (int, float) and math.isfinite(v) and (v > lo if above else v >= lo) and v <= hi
    if not ok:
        low = f"above {_num(lo)}" if above else f"at least {_num(lo)}"
        raise HintError(f"{path}: {where} should be a finite number {low} and at most {_num(hi)}, not {show(v)}")
    return float(v)


def optional_number(path: Path, where: str, v: Any, lo: float, hi: float, *, above: bool = False) -> float | None:
    return None if v is None else number(path, where, v, lo, hi, above=above)


def text(path: Path, where: str, v: Any, *, empty: bool = True) -> str:
    """v when it is a string of at most MAX_TEXT characters (non-empty unless `empty`)."""
    if type(v) is not str or len(v) > MAX_TEXT or (not empty and not v):
        what = "a non-empty text" if not empty else "a text"
        raise HintError(f"{path}: {where} should be {what} of at most {MAX_TEXT} characters, not {show(v)}")
    return v


def obj(path: Path, where: str, v: Any) -> dict[str, Any]:
    if not isinstance(v, dict):
        raise HintError(f"{path}: {where} should be an object, not {show(v)}")
    return v


def array(path: Path, where: str, v: Any) -> list[Any]:
    if not isinstance(v, list):
        raise HintError(f"{path}: {where} should be a list, not {show(v)}")
    return v


def finite_numbers(path: Path, where: str, v: Any) -> dict[str, Any]:
    """An object whose number values (at any depth) are all finite: figures shown or carried along."""
    def walk(x: Any, at: str) -> None:
        if isinstance(x, float) and not math.isfinite(x):
            raise HintError(f"{path}: {at} should be a finite number, not {show(x)}")
        if isinstance(x, dict):
            for k, y in x.items():
                walk(y, f"{at}.{k}")
        elif isinstance(x, list):
            for i, y in enumerate(x):
                walk(y, f"{at}[{i}]")

    walk(obj(path, where, v), where)
    return v


def pe_range(pes: int | None) -> int:
    """Highest PE a hint may name: the run's last PE, or any PE up to MAX_PES when the run is unknown."""
    return (pes if pes else MAX_PES) - 1


MAX_PES = 1 << 22
"""Most PEs a hint may be made for when the run's count is not known (above any machine here)."""
