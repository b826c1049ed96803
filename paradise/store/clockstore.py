"""The clock refinement (paradise.store.clockrefine) as the trace's writer stores it and open_trace
reads it back. Each per-PE file's `clock.refinement` holds the trace-wide outcome (method, status,
counts, residual, detail) and its own PE's entry only (`pes`: that one PE, or none where the PE is
not shifted), so a file's metadata keeps one size whatever the PE count; the reader rebuilds the
per-PE table from the files' own entries, and a file whose entry is missing, or disagrees with the
trace-wide outcome or another file, is damage (one line naming it). A merged file (no `pe`) holds
the whole table, as its times carry it.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from paradise.errors import NotAParadiseTrace
from paradise.store.clock import MAX_OFFSET_NS, pe_offsets
from paradise.store.clockrefine import METHOD

STATUSES = ("refined", "no_messages", "inconsistent")
PE_FIELDS = ("shift_ns", "lo_ns", "hi_ns", "error_ns")


def for_file(refinement: dict[str, Any], pe: Any) -> dict[str, Any]:
    """One per-PE file's `clock.refinement`: the trace-wide outcome and `pe`'s own entry."""
    out = {k: v for k, v in refinement.items() if k != "pes"}
    if "pes" in refinement:
        own = refinement["pes"].get(str(pe))
        out["pes"] = {str(pe): own} if own is not None else {}
    return out


def _bad(f: Path, what: str) -> NotAParadiseTrace:
    return NotAParadiseTrace(f"{f}: metadata clock.refinement {what}")


def _count(v: Any) -> bool:
    return type(v) is int and 0 <= v <= MAX_OFFSET_NS


def _ns(v: Any) -> bool:
    return type(v) is int and abs(v) <= MAX_OFFSET_NS


def checked(f: Path, value: Any, *, whole: bool = True) -> dict[str, Any]:
    """A file's stored `clock.refinement`, checked on its own: one line naming the file where it
    is damaged. `whole`: a merged file's, which must hold every shifted PE (a per-PE file's may
    hold none: its PE was not shifted)."""
    if not isinstance(value, dict) or value.get("method") != METHOD or value.get("status") not in STATUSES:
        raise _bad(f, f"is not a {METHOD} outcome (an object with a status of {', '.join(STATUSES)})")
    if not all(_count(value.get(k)) for k in ("messages", "backward_before", "min_latency_ns")):
        raise _bad(f, "counts (messages, backward_before, min_latency_ns) are not whole numbers")
    if not isinstance(value.get("detail", ""), str):
        raise _bad(f, "detail is not text")
    pes = value.get("pes")
    if value["status"] != "refined":
        if pes:
            raise _bad(f, f"holds per-PE shifts (pes) though its status is {value['status']}")
        return value
    if not isinstance(pes, dict) or (whole and not pes) or not _count(value.get("residual_ns")):
        raise _bad(f, "says refined without per-PE shifts (pes) and residual_ns")
    for pe, entry in pes.items():
        if not (isinstance(pe, str) and pe.isdigit() and isinstance(entry, dict)
                and all(_ns(entry.get(k)) for k in PE_FIELDS)
                and entry["lo_ns"] <= entry["shift_ns"] <= entry["hi_ns"] and entry["error_ns"] >= 0):
            raise _bad(f, f"pes[{str(pe)[:20]}] is not {{shift_ns, lo_ns, hi_ns, error_ns}} in ns with lo <= shift <= hi")
        if entry["error_ns"] > value["residual_ns"]:
            raise _bad(f, f"pes[{pe}].error_ns is above the trace's residual_ns (disagrees with the trace-wide outcome)")
    return value


def _own_entry_present(f: Path, meta: dict[str, Any], value: dict[str, Any]) -> None:
    """A refined outcome shifts every PE whose ping states an error: the file of such a PE holds its entry."""
    pe = str(meta["pe"])
    entry = pe_offsets(f, meta).get(pe)
    if value["status"] == "refined" and entry and (entry.get("error_ns") or 0) > 0 and pe not in value["pes"]:
        raise _bad(f, f"has no entry for its own PE {pe} (a refined outcome shifts every PE with a ping error)")


def stored(files: list[Path], metas: list[dict[str, Any]]) -> dict[str, Any] | None:
    """The refinement the trace's writer stored (paradise.store.compaction), rebuilt from every
    per-PE file's own entry, each file checked; None where a per-PE file with offsets holds none
    (an older trace, a PE's file converted alone): then it is measured at read time."""
    first: tuple[Path, dict[str, Any]] | None = None
    pes: dict[str, tuple[Path, dict[str, int]]] = {}
    missing = False
    for f, meta in zip(files, metas):
        clock = meta.get("clock")
        if not isinstance(clock, dict):
            continue
        per_pe = meta.get("pe") is not None
        value = checked(f, clock["refinement"], whole=not per_pe) if "refinement" in clock else None
        if not per_pe or not clock.get("offsets"):
            continue
        if value is None:
            missing = True
            continue
        shared = {k: v for k, v in value.items() if k != "pes"}
        if first is None:
            first = (f, shared)
        elif shared != first[1]:
            raise _bad(f, f"disagrees with {first[0].name}'s trace-wide outcome (status, counts, residual)")
        _own_entry_present(f, meta, value)
        for pe, entry in value.get("pes", {}).items():
            owner, known = pes.setdefault(pe, (f, entry))
            if known != entry:
                raise _bad(f, f"pes[{pe}] disagrees with {owner.name}'s")
    if missing or first is None:
        return None
    if first[1]["status"] != "refined":
        return first[1]
    if not pes:
        raise _bad(first[0], "says refined without per-PE shifts (pes) and residual_ns")
    return {**first[1], "pes": {pe: pes[pe][1] for pe in sorted(pes, key=int)}}
