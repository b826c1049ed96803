"""The cross-view checks: each takes the views of one trace (tests/consistency/views.py) and
asserts that they tell the same story. Figures are compared with the overview of `analyze --json`
(the one result every view reads) or with invariants that hold by definition (a PE's time adds
up to its span; a PE is at most 100 % busy; a bin holds at most one PE-equivalent per PE).
"""

from __future__ import annotations

import html
import re
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Any

from accounting import union_length
from consistency import views as V

from paradise.units import duration as fmt_ns

VIEWS_REL = 0.005
"""The report's figures, `compare --json` and export chrome agree with analyze within 0.5 %."""
ROUND_TRIP_REL = 0.01
"""Projections logs keep microseconds: busy, idle and entry totals within 1 % after a round trip."""
SHARE_EPS = 1e-9
"""Float slack on shares and PE-equivalents summed from the page's JSON."""


def close(got: float, want: float, rel: float, floor_ns: float = 1_000.0) -> bool:
    """Within `rel` of want, or within floor_ns (a microsecond) for figures near zero."""
    return abs(got - want) <= max(rel * abs(want), floor_ns)


@dataclass
class Trace:
    """One trace and its views, each computed on first use."""

    name: str
    path: Path
    work: Path
    charm_style: bool
    """Objects, entry methods and messages (charm4py, Projections, synth charm): Projections can
    hold it, and its running intervals of one PE do not overlap."""
    notes: list[str] = field(default_factory=list)

    @cached_property
    def doc(self) -> dict[str, Any]:
        return V.analyze_json(self.path)

    @cached_property
    def terminal(self) -> str:
        return V.terminal(self.path)

    @cached_property
    def figures(self) -> dict[str, dict[str, Any]]:
        return V.report(self.path, self.work / "report.html")

    @cached_property
    def compare(self) -> dict[str, Any]:
        return V.compare_json(self.path)

    @cached_property
    def chrome(self) -> dict[int, list[tuple[float, float]]]:
        return V.chrome_slices(self.path, self.work / "chrome.json")

    @cached_property
    def round_trip(self) -> dict[str, Any]:
        return V.projections_round_trip(self.path, self.work)


def accounting(t: Trace) -> None:
    """Per PE: busy + idle + other = span, none negative."""
    rows = V.per_pe(t.doc)
    assert rows, f"{t.name}: no PEs in the overview"
    for pe, r in rows.items():
        parts = {k: r[k] for k in ("busy_ns", "idle_ns", "other_ns")}
        assert all(v is not None and v >= 0 for v in parts.values()), f"{t.name} PE {pe}: {parts}"
        assert sum(parts.values()) == r["span_ns"], f"{t.name} PE {pe}: {parts} do not add up to {r['span_ns']}"


_ROW = re.compile(r"^\s*[│|]\s*(\d+)\s*[│|]\s*([^│|]+?)\s*[│|]\s*([^│|]+?)\s*[│|]\s*([^│|]+?)\s*[│|]\s*([^│|]+?)\s*[│|]")


def terminal(t: Trace) -> None:
    """The terminal's time-per-PE table prints analyze's span, busy, idle and other of every PE,
    and its entry table analyze's entry totals (each as the terminal formats it)."""
    rows = V.per_pe(t.doc)
    seen = {}
    for line in t.terminal.splitlines():
        m = _ROW.match(line)
        if m and int(m.group(1)) in rows:
            seen[int(m.group(1))] = tuple(c.rstrip("*") for c in m.groups()[1:])  # *: idle = span - busy
    assert set(seen) == set(rows), f"{t.name}: PEs in the terminal table {sorted(seen)} vs analyze {sorted(rows)}"
    for pe, cells in seen.items():
        r = rows[pe]
        want = tuple(fmt_ns(r[k]) for k in ("span_ns", "busy_ns", "idle_ns", "other_ns"))
        assert cells == want, f"{t.name} PE {pe}: terminal {cells} vs analyze {want}"
    for e in t.doc["analyses"]["overview"]["top_entries"]:
        if e["name"] is None or not str(e["name"]).isprintable() or len(str(e["name"])) > 40:
            continue
        cell = fmt_ns(e["total_ns"])
        pattern = re.escape(str(e["name"])) + r"\s*[│|].*[│|]\s*[\d,]+\s*[│|]\s*" + re.escape(cell) + r"\s*[│|]"
        assert re.search(pattern, t.terminal), f"{t.name}: entry {e['name']!r} total {cell} not in the terminal"


def _by_pe(fig: dict[str, Any]) -> dict[str, dict[str, float]]:
    """{trace name: {x: y}} of a bar chart."""
    return {html.unescape(tr["name"]): dict(zip(map(str, tr["x"]), tr["y"])) for tr in fig["data"]}  # names are escaped


def report_bounds(t: Trace) -> None:
    """Usage profile <= 100 % per PE; time profile <= PEs per bin; heat map <= 1 per cell."""
    pes = len(V.per_pe(t.doc))
    usage = _by_pe(V.figure(t.figures, "Usage profile"))
    busy = {}
    for key, col in usage.items():
        for pe, share in col.items():
            assert share >= -SHARE_EPS, f"{t.name}: negative usage {key} PE {pe}"
            if key != "idle":
                busy[pe] = busy.get(pe, 0.0) + share
    for pe, share in busy.items():
        assert share + usage.get("idle", {}).get(pe, 0.0) <= 1 + SHARE_EPS, f"{t.name} PE {pe}: usage {share:.4f} + idle"
    prof = V.figure(t.figures, "Time profile")
    bins = len(prof["data"][0]["y"]) if prof["data"] else 0
    for b in range(bins):
        total = sum(tr["y"][b] for tr in prof["data"] if tr["name"] != "idle")
        assert total <= pes + SHARE_EPS, f"{t.name}: bin {b} holds {total:.4f} PE-equivalents on {pes} PEs"
        assert total + prof["data"][-1]["y"][b] <= pes + SHARE_EPS if prof["data"][-1]["name"] == "idle" else True
    heat = V.figure(t.figures, "Utilization per PE")
    for row in heat["data"][0]["z"]:
        assert all(0 <= z <= 1 + SHARE_EPS for z in row), f"{t.name}: heat map cell outside 0..1"
    assert prof["layout"]["yaxis"]["range"][0] == 0
    assert V.figure(t.figures, "Usage profile")["layout"]["yaxis"]["range"] == [0, 1]


def report_totals(t: Trace) -> None:
    """The report's busy and idle per PE (usage profile x the run) equal analyze's; the time-per-PE
    chart draws analyze's figures; for Charm-style traces, each entry shown equals analyze's total."""
    rows = V.per_pe(t.doc)
    t0, t1 = V.run_span(t.doc)
    span = max(t1 - t0, 1)
    usage = _by_pe(V.figure(t.figures, "Usage profile"))
    for pe, r in rows.items():
        busy = sum(col.get(str(pe), 0.0) for key, col in usage.items() if key != "idle") * span
        idle = usage.get("idle", {}).get(str(pe), 0.0) * span
        assert close(busy, r["busy_ns"], VIEWS_REL), f"{t.name} PE {pe}: report busy {busy:.0f} vs {r['busy_ns']}"
        assert close(idle, r["idle_ns"], VIEWS_REL), f"{t.name} PE {pe}: report idle {idle:.0f} vs {r['idle_ns']}"
    per = _by_pe(V.figure(t.figures, "Time per PE"))
    for pe, r in rows.items():
        for key in ("busy", "idle", "other"):
            assert close(per[key][str(pe)] * 1e6, r[f"{key}_ns"], 1e-9, 1.0), f"{t.name} PE {pe} {key}"
    if not t.charm_style:
        return
    entries = V.entry_totals(t.doc)
    for key, col in usage.items():
        if key in ("idle", "(other)"):
            continue
        got = sum(col.values()) * span
        assert close(got, entries.get(key, 0), VIEWS_REL), f"{t.name}: report entry {key} {got:.0f} vs {entries.get(key)}"


def compare(t: Trace) -> None:
    """`compare --json` shows analyze's per-PE busy and idle and entry totals."""
    rows = V.per_pe(t.doc)
    entries = V.entry_totals(t.doc)
    got = {c["metric"]: c for c in t.compare["changes"]}
    for pe, r in rows.items():
        for key in ("busy", "idle"):
            c = got[f"pe{pe}.{key}"]
            assert close(c["base"], r[f"{key}_ns"], VIEWS_REL), f"{t.name}: compare pe{pe}.{key} {c['base']} vs {r}"
    listed = [m for m in got if m.startswith("entry:")]
    assert listed or not entries, f"{t.name}: compare lists no entry"
    for m in listed:
        name = m[len("entry:"):]
        assert close(got[m]["base"], entries[name], VIEWS_REL), f"{t.name}: compare {m} {got[m]['base']} vs {entries[name]}"


def chrome(t: Trace) -> None:
    """export chrome: each PE's running slices cover its busy time (their union); on Charm-style
    traces the slices do not overlap, so they also sum to it."""
    rows = V.per_pe(t.doc)
    for pe, r in rows.items():
        sl = t.chrome.get(pe, [])
        assert close(union_length(sl), r["busy_ns"], VIEWS_REL), f"{t.name} PE {pe}: chrome union vs busy {r['busy_ns']}"
        if t.charm_style:
            total = sum(b - a for a, b in sl)
            assert close(total, r["busy_ns"], VIEWS_REL), f"{t.name} PE {pe}: chrome slices sum {total:.0f} vs busy"


def round_trip(t: Trace) -> None:
    """export projections -> import projections -> analyze: busy and idle per PE within 1 % (or a
    microsecond per record of the PE), the same object count, each entry's total within 1 % (or a
    microsecond per record of the entry)."""
    a, b = V.per_pe(t.doc), V.per_pe(t.round_trip)
    assert set(a) == set(b), f"{t.name}: PEs {sorted(a)} -> {sorted(b)}"
    per_pe = V.records_per_pe(t.path)
    for pe in a:
        tick = 1_000.0 * per_pe.get(pe, 0)  # each record's times are floored to whole microseconds
        for key in ("busy_ns", "idle_ns"):
            assert close(b[pe][key], a[pe][key], ROUND_TRIP_REL, tick), f"{t.name} PE {pe} {key}: {a[pe][key]} -> {b[pe][key]}"
        assert min(b[pe]["busy_ns"], b[pe]["idle_ns"], b[pe]["other_ns"]) >= 0
    assert V.object_count(t.round_trip) == V.object_count(t.doc)
    ea, eb = V.entry_totals(t.doc), V.entry_totals(t.round_trip)
    assert set(eb) == set(ea), f"{t.name}: entries {sorted(set(ea) ^ set(eb))} differ"
    records = V.running_records(t.path)
    for name, ns in ea.items():
        # each BEGIN/END pair is floored to whole microseconds: its length moves by less than 1 µs
        tick = 1_000.0 * records.get(name, 0)
        assert close(eb[name], ns, ROUND_TRIP_REL, tick), f"{t.name}: entry {name} {ns} -> {eb[name]} ({records.get(name)} records)"


ALL = {"accounting": accounting, "terminal": terminal, "report_bounds": report_bounds, "report_totals": report_totals,
       "compare": compare, "chrome": chrome, "round_trip": round_trip}
"""Every check by name; round_trip applies to Charm-style traces only (Projections logs have no
threads, streams or training phases)."""


def applicable(t: Trace) -> list[str]:
    return [n for n in ALL if n != "round_trip" or t.charm_style]
