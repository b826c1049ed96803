"""Terminal report of `paradise compare`."""

from __future__ import annotations

from typing import Any

from rich.table import Table
from rich.text import Text

from paradise import units
from paradise.report import pictures
from paradise.report.console import console, shown, visible

SHOW_CHANGES = 25


def _fmt(value: float, unit: str) -> str:
    if unit == "ns":
        return units.duration(value)
    if unit == "bytes":
        return units.size(value)
    return f"{value:,.0f}"


def verdict_text(ch: dict[str, Any]) -> str:
    """The verdict with its evidence: p-value and sample sizes, or why there is none."""
    verdict = ch.get("verdict") or ("significant" if ch["significant"] else "within noise")
    if verdict == "one run each":
        return "one run each (no test)"
    unit = "steps" if ch.get("basis") == "steps" else "runs"
    n = f"{ch.get('samples_base')} vs {ch.get('samples_candidate')} {unit}"
    p = ch.get("p_value")
    return f"{verdict} ({'p=' + format(p, '.3f') + ', ' if p is not None else ''}{n})"


def render_performance(perf: dict[str, Any]) -> None:
    c = console()
    c.print(
        f"[bold]performance[/bold]  base: {shown(perf['base'])} ({perf['steps_base']} steps)   "
        f"candidate: {shown(perf['candidate'])} ({perf['steps_candidate']} steps)"
    )
    if perf["program_base"] != perf["program_candidate"]:
        c.print(f"[yellow]note: programs differ ({shown(perf['program_base'])} vs "
                f"{shown(perf['program_candidate'])})[/yellow]")
    t = Table(title="changes, significant first")
    for col, justify in (("metric", "left"), ("base", "right"), ("candidate", "right"), ("change", "right"), ("", "left")):
        t.add_column(col, justify=justify)
    for ch in perf["changes"][:SHOW_CHANGES]:
        per = "per step" if ch["metric"] == "step_time" else "of the runs"
        metric = ch["metric"] + (f" ({ch['statistic']} {per})" if ch.get("statistic", "total") != "total" else "")
        rel = f"{ch['relative'] * 100:+.1f}%" if ch["relative"] is not None else _fmt(ch["delta"], ch["unit"])
        better = ch["delta"] < 0 if ch["unit"] == "ns" and not ch["metric"].endswith(".idle") else None
        color = "" if not ch["significant"] else ("green" if better else "red" if better is False else "bold")
        mark = verdict_text(ch)
        t.add_row(
            shown(metric),
            _fmt(ch["base"], ch["unit"]),
            _fmt(ch["candidate"], ch["unit"]),
            f"[{color}]{rel}[/{color}]" if color else rel,
            mark,
        )
    c.print(t)
    c.print(f"significance: {perf.get('test', 'Mann-Whitney U')} on per-step samples, or on one sample per run "
            f"with repeats ({perf.get('runs_base', 1)} vs {perf.get('runs_candidate', 1)} runs); "
            "two single numbers are one run each")
    pictures.compare_bars(c, perf["changes"])
    if len(perf["changes"]) > SHOW_CHANGES:
        c.print(f"({len(perf['changes']) - SHOW_CHANGES} more in --json)")
    _render_step_diff(perf.get("step_diff") or [])


SHOW_STEPS = 5
"""Steps shown in the per-step diff (all of them are in --json)."""
SHOW_OPS = 8
"""Ops shown per step and list."""


def _render_step_diff(steps: list[dict[str, Any]]) -> None:
    c = console()
    shown = [s for s in steps if any(s["counts"].values())][:SHOW_STEPS]
    if not steps:
        return
    if not shown:
        c.print("per-step diff: the same ops, with the same calls and time within 5%, in every paired step")
        return
    t = Table(title="per-step diff (k-th step of each run; ops added, removed, changed)")
    for col, justify in (("step", "left"), ("op", "left"), ("", "left"), ("calls", "right"), ("time", "right")):
        t.add_column(col, justify=justify)
    for s in shown:
        label = f"{s['step_base']} → {s['step_candidate']}"
        for what in ("added", "removed", "changed"):
            for op in s[what][:SHOW_OPS]:
                calls = f"{units.count(op['calls_base'])} → {units.count(op['calls_candidate'])}"
                time = f"{units.duration(op['total_ns_base'])} → {units.duration(op['total_ns_candidate'])}"
                t.add_row(label, Text(visible(op["name"])[:60]), what, calls, time)
                label = ""
    c.print(t)
    more = len([s for s in steps if any(s["counts"].values())]) - len(shown)
    if more > 0:
        c.print(f"({more} more step(s) with differences in --json)")


def render_outputs(out: dict[str, Any]) -> None:
    c = console()
    c.print(f"[bold]model outputs[/bold]  base: {shown(out['base'])}   candidate: {shown(out['candidate'])}")
    t = Table(show_header=True)
    t.add_column("figure")
    t.add_column("value", justify="right")
    common = out["items_common"]
    rows = [
        ("items compared", f"{common:,}"),
        ("items only in base", f"{out['items_only_base']:,}"),
        ("items only in candidate", f"{out['items_only_candidate']:,}"),
        ("accuracy base", f"{out['accuracy_base'] * 100:.2f}%"),
        ("accuracy candidate", f"{out['accuracy_candidate'] * 100:.2f}%"),
        ("Δ accuracy", f"{(out['accuracy_candidate'] - out['accuracy_base']) * 100:+.2f} pts"),
        ("flips (share of items)", f"{out['flips'] * 100:.2f}%"),
        ("  correct → incorrect", f"{out['flips_correct_to_incorrect']:,}"),
        ("  incorrect → correct", f"{out['flips_incorrect_to_correct']:,}"),
        ("predictions changed", f"{out['prediction_changes']:,}"),
    ]
    if out["kl_mean"] is not None:
        q = out["kl_quantiles"]
        rows += [
            ("mean KL(base ‖ candidate)", f"{units.number(out['kl_mean'], 4)}"),
            ("KL p50 / p90 / p99 / max", f"{units.number(q.get('p50', 0), 4)} / {units.number(q.get('p90', 0), 4)} / {units.number(q.get('p99', 0), 4)} / {units.number(out['kl_max'], 4)}"),
        ]
    nf = out.get("noise_floor")
    if nf:
        rows += [
            ("noise floor: flips base vs repeat", f"{nf['flips'] * 100:.2f}%"),
            ("noise floor: mean KL", f"{units.number(nf['kl_mean'], 4)}" if nf["kl_mean"] is not None else "-"),
        ]
    for r in rows:
        t.add_row(*r)
    c.print(t)
    if out["items_only_base"] or out["items_only_candidate"]:
        c.print(
            f"[yellow]items present on one side only are not compared: base-only e.g. "
            f"{shown(out['only_base_examples'])}, candidate-only e.g. {shown(out['only_candidate_examples'])}[/yellow]"
        )
    if nf and nf["flips"] > 0:
        ratio = out["flips"] / nf["flips"]
        c.print(f"flips are {ratio:.1f}× the baseline's own run-to-run flips")
    if out["flipped_items"]:
        ft = Table(title="flipped items (smallest baseline margin first)")
        for col in ("item", "label", "base", "candidate", "direction", "base margin", "KL"):
            ft.add_column(col)
        for f in out["flipped_items"]:
            ft.add_row(
                shown(f["item"]), str(f["label"]), str(f["pred_base"]), str(f["pred_candidate"]),
                f["direction"].replace("correct->incorrect", "✓→✗").replace("incorrect->correct", "✗→✓"),
                "-" if f["margin_base"] is None else f"{f['margin_base']:.3f}",
                "-" if f["kl"] is None else f"{units.number(f['kl'], 4)}",
            )
        c.print(ft)
    if abs(out["accuracy_candidate"] - out["accuracy_base"]) < 0.01 and out["flips"] >= 0.02:
        c.print("[bold yellow]accuracy is nearly unchanged, but answers changed: check the flips above.[/bold yellow]")


def render_compare(result: dict[str, Any]) -> None:
    if result["performance"]:
        render_performance(result["performance"])
    if result["outputs"]:
        render_outputs(result["outputs"])
