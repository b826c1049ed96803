"""Traces for the report and export tests: the canned builders' runs plus rows whose names are
hostile markup (a trace's strings are data: the report must show them, never run them)."""

from __future__ import annotations

from pathlib import Path

from builders import TraceBuilder, charm_like, torch_like

HOSTILE = '</script><img src=x onerror="window.__xss=1">&amp;'
"""An entry name that breaks out of a script block and runs code if any layer treats it as HTML."""
HOSTILE_COLL = "<b>Evil</b>#0"


def hostile_charm(pes: int = 4, steps: int = 4) -> TraceBuilder:
    """charm_like plus, after its last step, a hostile-named message from PE 0 to PE 1."""
    b = charm_like(pes=pes, steps=steps)
    end = max(r["t1"] or r["t0"] for rows in b.rows.values() for r in rows)
    b.message(0, end + 1_000, 1, end + 3_000, end + 9_000, HOSTILE, 96, src=(HOSTILE_COLL, 0), dst=(HOSTILE_COLL, 1))
    b.exec(0, end, end + 2_000, HOSTILE, coll=HOSTILE_COLL, obj=0, index="[0]")
    b.idle(1, end, end + 3_000)
    return b


def hostile_torch(ranks: int = 2, steps: int = 4) -> TraceBuilder:
    """torch_like plus one hostile-named op per rank."""
    b = torch_like(ranks=ranks, steps=steps)
    for r in range(ranks):
        end = max(x["t1"] or x["t0"] for x in b.rows[r])
        b.exec(r, end + 100, end + 5_000, HOSTILE, cat="cpu_op", tid=1)
    return b


def write_both(base: Path) -> dict[str, Path]:
    return {"charm": hostile_charm().write(base / "charm"), "torch": hostile_torch().write(base / "torch")}
