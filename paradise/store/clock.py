"""Per-PE clock offsets recorded by the tracers (metadata `clock.offsets`), read back as one linear
correction per file: the engines add it to `t0`, `t1` and `exec_t0` once, in the `events` view.

A PE's entry says how far its clock was from PE 0's at the run's start and end (`start_ns` at trace
time `t_start`, `end_ns` at `t_end`; corrected = own + offset); between and beyond, the offset is
the straight line through the two (a constant where only the start was measured). Files without
offsets (older traces, imports, merged files, whose times are already corrected) get none.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

from paradise.errors import NotAParadiseTrace

Correction = tuple[int, int, float]
"""(t_start, offset at t_start in ns, drift in ns per ns): corrected t = t + offset + drift * (t - t_start)."""

MAX_OFFSET_NS = 1 << 50
"""Offsets beyond 13 days are damage, not clocks."""


def _int(f: Path, pe: Any, key: str, value: Any, *, optional: bool = False) -> int | None:
    if value is None and optional:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) \
            or abs(value) > MAX_OFFSET_NS * 64:
        raise NotAParadiseTrace(f"{f}: metadata clock.offsets[{pe!s:.20}].{key} is not a time in ns")
    return int(value)


def pe_offsets(f: Path, meta: dict[str, Any]) -> dict[str, dict[str, int | None]]:
    """The checked `clock.offsets` entries of one file ({} when it has none)."""
    clock = meta.get("clock")
    offsets = clock.get("offsets") if isinstance(clock, dict) else None
    if offsets is None:
        return {}
    if not isinstance(offsets, dict):
        raise NotAParadiseTrace(f"{f}: metadata clock.offsets is not an object")
    out: dict[str, dict[str, int | None]] = {}
    for pe, entry in offsets.items():
        if not isinstance(entry, dict):
            raise NotAParadiseTrace(f"{f}: metadata clock.offsets[{pe!s:.20}] is not an object")
        out[str(pe)] = {
            "t_start": _int(f, pe, "t_start", entry.get("t_start", 0)),
            "start_ns": _int(f, pe, "start_ns", entry.get("start_ns")),
            "t_end": _int(f, pe, "t_end", entry.get("t_end"), optional=True),
            "end_ns": _int(f, pe, "end_ns", entry.get("end_ns"), optional=True),
            "error_ns": _int(f, pe, "error_ns", entry.get("error_ns"), optional=True),
        }
        if abs(out[str(pe)]["start_ns"]) > MAX_OFFSET_NS:  # type: ignore[arg-type]
            raise NotAParadiseTrace(f"{f}: metadata clock.offsets[{pe!s:.20}].start_ns is out of range")
    return out


def correction(entry: dict[str, int | None]) -> Correction | None:
    """The linear correction of one PE's entry; None when it changes nothing."""
    t0, a = int(entry["t_start"] or 0), int(entry["start_ns"] or 0)
    t1, b = entry.get("t_end"), entry.get("end_ns")
    drift = (b - a) / (t1 - t0) if t1 is not None and b is not None and t1 > t0 else 0.0
    if a == 0 and drift == 0.0:
        return None
    return t0, a, drift


CLOCKED_COLUMNS = ("t0", "t1", "exec_t0")
"""Time columns the clock correction moves (`active` is a duration and stays)."""


def corrected_sql(files: list[str], corrections: dict[str, Correction], columns: tuple[str, ...] = CLOCKED_COLUMNS
                  ) -> str:
    """`r.c + ... AS c` for each column: t + offset + drift * (t - t_start) of the row's file (`r._file`,
    its index in `files`), looked up in lists of the files' corrections (0 for a file without one).
    The one text of the correction: the engines' `events` view and the message bounds (clockrefine)."""
    def column(i: int, sql_type: str) -> str:
        values = [corrections.get(f) for f in files]
        return "([" + ", ".join("NULL" if v is None else repr(v[i]) for v in values) + f"]::{sql_type}[])"

    ts, a, d = column(0, "BIGINT"), column(1, "BIGINT"), column(2, "DOUBLE")
    return ", ".join(
        f"r.{c} + coalesce({a}[r._file + 1] + CAST(round({d}[r._file + 1] * (r.{c} - {ts}[r._file + 1])) AS BIGINT), 0)"
        f" AS {c}" for c in columns
    )


def file_corrections(files: tuple[Path, ...] | list[Path], metas: tuple[dict[str, Any], ...] | list[dict[str, Any]]
                     ) -> dict[str, Correction]:
    """Correction per file path (as the engines name it) for per-PE files whose own PE has offsets."""
    out: dict[str, Correction] = {}
    for f, meta in zip(files, metas):
        pe = meta.get("pe")
        if pe is None:
            continue  # a merged or imported file: times already on one clock
        entry = pe_offsets(f, meta).get(str(pe))
        corr = correction(entry) if entry is not None else None
        if corr is not None:
            out[str(f)] = corr
    return out


def refinable(clock: dict[str, Any]) -> bool:
    """Whether the message bounds may refine a trace's offsets (paradise.store.clockrefine): per-PE
    files not yet corrected (not a merged file) with some PE's offset uncertain."""
    return not clock.get("applied") and "refinement" not in clock and any(
        (e.get("error_ns") or 0) > 0 for e in clock["offsets"].values())


def clock_summary(files: tuple[Path, ...] | list[Path], metas: tuple[dict[str, Any], ...] | list[dict[str, Any]]
                  ) -> dict[str, Any] | None:
    """The trace's clock alignment over all its files: method, largest error, offsets per PE."""
    methods: list[str] = []
    offsets: dict[str, dict[str, int | None]] = {}
    kept: dict[str, Any] = {}
    applied = True  # every file with offsets says its times already carry them (a merged file)
    for f, meta in zip(files, metas):
        clock = meta.get("clock")
        if not isinstance(clock, dict):
            continue
        if clock.get("offsets"):
            applied = applied and clock.get("applied") is True
        for key in ("refinement", "final_method"):  # a merged file's: its times carry them
            if key in clock:
                kept[key] = clock[key]
        method = clock.get("method")
        if isinstance(method, str) and method not in methods:
            methods.append(method)
        for pe, entry in pe_offsets(f, meta).items():
            offsets.setdefault(pe, entry)
    if not methods and not offsets:
        return None
    errors = [e["error_ns"] for e in offsets.values() if e.get("error_ns") is not None]
    summary = {
        "method": "+".join(methods) if methods else None,
        "residual_ns": max(errors) if errors else None,
        "offsets": {pe: offsets[pe] for pe in sorted(offsets, key=lambda p: (len(p), p))},
    }
    if offsets and applied:
        summary.update(kept, applied=True)
    return summary
