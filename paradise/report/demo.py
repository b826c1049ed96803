"""The side-by-side table that ends `paradise demo`."""

from __future__ import annotations

from typing import Any

from rich.table import Table

from paradise.report.console import console, fmt_ns


def render_demo(result: dict[str, Any], busy_before: list[float], busy_after: list[float]) -> None:
    perf, pred = result["performance"], result["predicted"]
    by = {c["metric"]: c for c in perf["changes"]}
    mk = by["makespan"]
    t = Table(title="the closed loop: before, predicted, after")
    for col in ("", "before (default map)", "predicted (what-if)", "after (paradise hints)"):
        t.add_column(col, justify="right" if col else "left")
    pred_mk = pred.get("predicted_makespan_ns")
    t.add_row("makespan", fmt_ns(mk["base"]), fmt_ns(pred_mk), fmt_ns(mk["candidate"]))
    pred_load = pred.get("pe_load_ns") or []
    for pe, (b, a) in enumerate(zip(busy_before, busy_after)):
        p = pred_load[pe] if pe < len(pred_load) else None
        t.add_row(f"PE {pe} busy", fmt_ns(b), fmt_ns(p), fmt_ns(a))
    if busy_before and busy_after:
        imb = lambda xs: max(xs) / (sum(xs) / len(xs)) if sum(xs) else 1.0  # noqa: E731
        t.add_row("imbalance (max/mean)", f"{imb(busy_before):.2f}", "", f"{imb(busy_after):.2f}")
    c = console()
    c.print(t)
    if mk["base"]:
        c.print(f"makespan {mk['relative'] * 100:+.1f}% with the hints "
                f"({'significant' if mk['significant'] else 'within noise'}).")
