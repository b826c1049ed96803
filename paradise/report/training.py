"""Terminal report of the training analysis: step breakdown per rank, stragglers, collectives,
DDP buckets, input stalls, device streams, failures and checkpoints."""

from __future__ import annotations

from typing import Any

from rich.console import Console
from rich.markup import escape
from rich.table import Table

from paradise import units

MAX_RANK_ROWS = 32
"""Ranks shown in the breakdown table (slowest mean step first); --json has all."""
MAX_COLLECTIVE_ROWS = 12
"""Collective groups shown (most total time first)."""
MAX_NAME_CHARS = 40
"""Collective / kernel names are cut to this width."""


def _pct(x: float | None) -> str:
    return "-" if x is None else f"{x:.1%}"


def _breakdown(rows: list[dict[str, Any]]) -> Table:
    shown = sorted(rows, key=lambda r: -(r["mean_step_ns"] or 0))[:MAX_RANK_ROWS]
    title = "step time per rank (compute + exposed comm + overlap + idle = step)"
    if len(rows) > len(shown):
        title += f" — {len(shown)} slowest of {len(rows)}"
    t = Table(title=title, title_justify="left")
    for col in ("rank", "steps", "mean step", "compute", "comm", "overlap", "idle"):
        t.add_column(col, justify="right")
    for r in sorted(shown, key=lambda r: r["pe"]):
        t.add_row(
            str(r["pe"]), str(r["steps"]), units.duration(r["mean_step_ns"]),
            _pct(r["compute_share"]), _pct(r["comm_share"]), _pct(r["overlap_share"]), _pct(r["idle_share"]),
        )  # fmt: skip
    return t


def _arrivals(rows: list[dict[str, Any]]) -> Table:
    t = Table(title="slowest rank per collective: the one that arrived last (the others waited for it)",
              title_justify="left")
    t.add_column("name", max_width=MAX_NAME_CHARS, no_wrap=True, overflow="ellipsis")
    for col in ("ranks", "calls met", "arrived last", "others waited", "slowest rank"):
        t.add_column(col, justify="right")
    for r in rows[:MAX_COLLECTIVE_ROWS]:
        t.add_row(escape(str(r["name"])), str(r["ranks"]), f"{r['met_calls']:,}",
                  f"rank {r['last_rank']}: {r['last_calls']:,}", units.duration(r["wait_ns"]),
                  str(r["slowest_rank"]) if r["slowest_rank"] is not None else "none (" + str(r["withheld"]) + ")")
    return t


def _collectives(rows: list[dict[str, Any]]) -> Table:
    t = Table(title="collectives by kind and size", title_justify="left")
    t.add_column("name", max_width=MAX_NAME_CHARS, no_wrap=True, overflow="ellipsis")
    t.add_column("source")
    for col in ("size", "calls", "total", "mean", "max", "bandwidth"):
        t.add_column(col, justify="right")
    for r in rows[:MAX_COLLECTIVE_ROWS]:
        size = "?" if r["bucket_log2"] < 0 else f"≥{units.size(2 ** r['bucket_log2'])}"
        bw = r.get("bandwidth_bytes_per_s")
        t.add_row(
            escape(str(r["name"])), str(r["cat"]) + (" (device)" if r["on_device"] else ""), size,
            f"{r['calls']:,}", units.duration(r["dur_ns"]), units.duration(r["mean_ns"]), units.duration(r["max_ns"]),
            "-" if bw is None else units.size(bw) + "/s",
        )  # fmt: skip
    return t


def _streams(rows: list[dict[str, Any]]) -> Table:
    t = Table(title="device time by stream (stream -1 = whole device)", title_justify="left")
    for col in (
        "rank",
        "stream",
        "kernels",
        "kernel time",
        "comm kernels",
        "busy",
        "idle",
        "gaps",
        "longest gap",
    ):
        t.add_column(col, justify="right")
    for r in rows:
        t.add_row(
            str(r["pe"]), "all" if r["stream"] == -1 else str(r["stream"]), f"{r['kernels']:,}",
            units.duration(r["kernel_ns"]), units.duration(r["comm_ns"]), units.duration(r["busy_ns"]), units.duration(r["idle_ns"]),
            f"{r['gaps']:,}", units.duration(r["max_gap_ns"]),
        )  # fmt: skip
    return t


def render(console: Console, result: dict[str, Any]) -> None:
    """Prints the training report from the analysis result dict."""
    console.rule("[bold]training[/bold]", align="left")
    for c in result.get("characteristics", []):
        console.print(f"  [bold]{escape(str(c['name']))}[/bold]: {escape(str(c['summary']))}")
    if result.get("breakdown"):
        console.print(_breakdown(result["breakdown"]))
    for s in result.get("stragglers", []):
        console.print(
            f"  straggler: rank {s['rank']} slowest in {s['slow_steps']}/{s['steps']} steps, "
            f"delaying the others by {units.duration(s['cost_ns'])} in total"
        )
    w = result.get("stragglers_by_waiting")
    if w:
        console.print("  time in collectives per rank (few steps: the rank that waits least arrived last): " + ", ".join(
            f"rank {r['rank']} {units.duration(r['collective_ns'])}" for r in w["ranks"][:MAX_RANK_ROWS]))
    if result.get("collectives"):
        console.print(_collectives(result["collectives"]))
    if result.get("collective_arrivals"):
        console.print(_arrivals(result["collective_arrivals"]))
    b = result.get("ddp_buckets")
    if b:
        line = (
            f"  DDP buckets: {units.number(b['buckets_per_step'], 6)} per step, {units.size(b['mean_bucket_bytes'])} each, "
            f"latency {units.duration(b['latency_ns'])}, bandwidth "
            f"{'-' if b['bandwidth_bytes_per_s'] is None else units.size(b['bandwidth_bytes_per_s']) + '/s'}: {b['verdict']}"
        )
        if b["suggested_bucket_cap_mb"]:
            line += f" → bucket_cap_mb={b['suggested_bucket_cap_mb']} (≈{units.duration(b['predicted_gain_ns_per_step'])}/step)"
        console.print(line)
    for s in result.get("stalls", [])[:MAX_RANK_ROWS]:
        console.print(
            f"  rank {s['pe']}: input stalls {units.duration(s['stall_ns'])} over {s['gaps']} gaps "
            f"({_pct(s['stall_share'])}), longest {units.duration(s['max_stall_ns'])}"
        )
    if result.get("streams"):
        console.print(_streams(result["streams"]))
    for e in result.get("events", []):
        size = f", {units.size(e['bytes'])}" if e.get("bytes") else ""
        console.print(
            f"  rank {e['pe']}: {e['kind']} {escape(str(e['name']))} ×{e['count']}, {units.duration(e['dur_ns'])}{size}"
        )
