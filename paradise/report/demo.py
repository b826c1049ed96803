"""The side-by-side table that ends `paradise demo`: before, predicted (what-if), after."""

from __future__ import annotations

from typing import Any

from rich.markup import escape
from rich.table import Table

from paradise import units
from paradise.report.compare import verdict_text
from paradise.report.console import console

MOVES_SHOWN = 8


def _imbalance(xs: list[float]) -> str:
    mean = sum(xs) / len(xs) if xs else 0.0
    return f"{max(xs) / mean:.2f}" if mean > 0 else "-"


def render_demo(result: dict[str, Any]) -> None:
    """Makespan, busy time per PE and imbalance of the two runs and of the prediction."""
    pred, before, after = result["predicted"], result["before"], result["after"]
    mk = {c["metric"]: c for c in result["performance"]["changes"]}.get("makespan", {})
    pes = max(len(before["busy_ns"]), len(after["busy_ns"]))
    # what-if's per-PE load is the replayed work; its total is the traced busy time, so the
    # column reads like the two measured ones
    pred_load = list(pred.get("pe_load_ns") or [])
    t = Table(title="the closed loop: before, predicted, after")
    for col in ("", "before (default map)", "predicted (what-if)", "after (paradise hints)"):
        t.add_column(col, justify="right" if col else "left")
    t.add_row("makespan", units.duration(before["makespan_ns"]), units.duration(pred.get("predicted_makespan_ns")),
              units.duration(after["makespan_ns"]))
    if before.get("iterations_ns") and after.get("iterations_ns"):
        t.add_row("iterations (first to last step)", units.duration(before["iterations_ns"]), "",
                  units.duration(after["iterations_ns"]))
    for pe in range(pes):
        b = before["busy_ns"][pe] if pe < len(before["busy_ns"]) else 0
        a = after["busy_ns"][pe] if pe < len(after["busy_ns"]) else 0
        p = pred_load[pe] if pe < len(pred_load) else None
        t.add_row(f"PE {pe} busy", units.duration(b), units.duration(p), units.duration(a))
    t.add_row("imbalance (busiest PE / mean)", _imbalance(before["busy_ns"]),
              _imbalance(pred_load) if pred_load else "-", _imbalance(after["busy_ns"]))
    changes = {c["metric"]: c for c in result["performance"]["changes"]}
    wire = changes.get("send.messages_on_wire")
    if wire:
        comm = pred.get("comm") or {}  # what-if's count of messages saved, applied to the traced wire count
        saved = comm.get("messages_before", 0) - comm.get("messages_after", 0)
        t.add_row("messages on the wire", f"{wire['base']:,.0f}", f"{wire['base'] - saved:,.0f}" if comm else "",
                  f"{wire['candidate']:,.0f}")
    c = console()
    if "mapped_objects" in result:
        heavy = set(result.get("heavy_objects", []))
        mv = sorted(result.get("moves", []), key=lambda m: m["object"] not in heavy)  # heavy ones first
        shown = ", ".join(f"{escape(str(m['object']))}{'*' if m['object'] in heavy else ''} {m['from']}->{m['to']}"
                          for m in mv[:MOVES_SHOWN])
        c.print(f"mapping.json ({result.get('strategy')}): {len(mv)} of {result.get('mapped_objects')} objects "
                f"move{': ' + shown if shown else ''}{' ...' if len(mv) > MOVES_SHOWN else ''}"
                f"{'  (* heavy)' if heavy & {m['object'] for m in mv} else ''}")
        c.print(f"the rerun placed {result.get('placed_as_mapped')} of {result.get('mapped_objects')} "
                "objects where mapping.json says.")
        gain = result.get("mapping_gain") or {}
        if "cross_pe_bytes_before" in gain:
            from paradise.analyses.placement_hint import cross_pe_text

            c.print(f"mapping.json: {cross_pe_text(gain)} (the traced messages, placed as the mapping places "
                    "their objects).")
    if result.get("combine_streams"):
        c.print(f"comm.json: messages of {result['combine_streams']} stream(s) combined in batches.")
    c.print(t)
    if before.get("iterations_ns") and after.get("iterations_ns"):
        st = {c["metric"]: c for c in result["performance"]["changes"]}.get("step_time", {})
        c.print(f"iterations {before['iterations_ns'] / after['iterations_ns']:.2f}x faster with the hints; "
                f"median step {units.duration(st.get('base'))} -> {units.duration(st.get('candidate'))} "
                f"({verdict_text(st) if st else 'no steps'}).")
    if mk.get("base"):
        speed = mk["base"] / mk["candidate"] if mk.get("candidate") else None
        c.print(f"makespan {mk['relative'] * 100:+.1f}% with the hints"
                + (f" ({speed:.2f}x faster)" if speed and speed > 1 else "")
                + f" ({verdict_text(mk)}); what-if predicted "
                f"{units.duration(pred.get('predicted_makespan_ns'))}.")
    miss = result.get("prediction") or {}
    if miss.get("missed"):
        c.print(f"[bold yellow]the rerun missed the what-if prediction by {miss['off'] * 100:+.0f}% "
                f"({units.duration(miss['predicted_ns'])} predicted, {units.duration(miss['measured_ns'])} measured; more than "
                f"15% off). Likely causes measured here:[/bold yellow]")
        for cause in miss["causes"]:
            c.print(f"  - {escape(cause)}")
