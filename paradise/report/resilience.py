"""Terminal rendering of the resilience analysis and of `paradise policy`."""

from __future__ import annotations

from typing import Any

from rich.console import Console
from rich.table import Table

from paradise import units

_MODE_TEXT = {
    "periodic": "periodic checkpoints",
    "jit": "just-in-time checkpoints on failure",
    "jit+periodic": "just-in-time checkpoints, with a periodic safety net",
}
_INPUT_ROWS = (
    ("iteration_s", "iteration time", "s"),
    ("checkpoint_s", "checkpoint stall", "s"),
    ("jit_save_s", "JIT save", "s"),
    ("restart_s", "restart cost", "s"),
    ("gpus", "GPUs", ""),
    ("mtbf_s", "job MTBF", "s"),
    ("unrecoverable_fraction", "failures JIT cannot recover", ""),
    ("job_s", "job length (prices pure JIT)", "s"),
)


def _pct(x: float | None) -> str:
    return "-" if x is None else f"{100 * x:.2f}%"


def render_policy(c: Console, policy: dict[str, Any], show_inputs: bool = True) -> None:
    """The comparison of periodic, jit and jit+periodic, then the chosen policy and its inputs."""
    inp = policy["inputs"]
    src = inp.get("sources", {})
    t = Table(title="checkpoint policy: expected waste (share of job time)")
    t.add_column("mode")
    t.add_column("interval", justify="right")
    t.add_column("expected waste", justify="right")
    t.add_column("")
    net = policy.get("safety_net_interval_s")
    net_steps = policy.get("safety_net_interval_steps")
    every = {
        "periodic": (policy["intervals"]["daly_higher_order_s"], None),
        "jit": (None, None),
        "jit+periodic": (net, net_steps),
    }
    if policy["mode"] == "periodic":
        every["periodic"] = (policy["interval_s"], policy["interval_steps"])
    for mode, waste in policy["expected_waste"].items():
        sec, steps = every[mode]
        label = "-" if sec is None else units.seconds(sec) + (f" ({units.count(steps)} steps)" if steps else "")
        t.add_row(mode, label, _pct(waste), "[bold green]chosen[/bold green]" if mode == policy["mode"] else "")
    c.print(t)
    line = f"[bold]{_MODE_TEXT[policy['mode']]}[/bold]"
    if policy["interval_steps"]:
        line += f": every {units.count(policy['interval_steps'])} steps ({units.seconds(policy['interval_s'])})"
    c.print(line)
    iv = policy["intervals"]
    c.print(f"optimal periodic interval: Young {units.seconds(iv['young_s'])}, Daly 1st order "
            f"{units.seconds(iv['daly_first_order_s'])}, Daly higher order {units.seconds(iv['daly_higher_order_s'])}")
    if not show_inputs:
        return
    ti = Table(title="inputs")
    ti.add_column("input")
    ti.add_column("value", justify="right")
    ti.add_column("from")
    for key, text, unit in _INPUT_ROWS:
        value = inp.get(key)
        if key == "jit_save_s" and value is None:
            value = inp.get("checkpoint_s")
        shown = units.seconds(value) if unit == "s" else ("-" if value is None else units.number(value))
        ti.add_row(text, shown, src.get(key, ""))
    c.print(ti)


def render(c: Console, result: dict[str, Any]) -> None:
    """The resilience section of `paradise analyze`."""
    c.rule("[bold]resilience[/bold]")
    for ch in result.get("characteristics", []):
        c.print(f"• {ch['summary'] or ch['name']}  [dim](confidence {ch['confidence']:.2f})[/dim]")
    policy = result.get("policy")
    if not policy:
        for note in result.get("notes", []):
            c.print(f"[dim]{note}[/dim]")
        return
    render_policy(c, policy, show_inputs=False)
    t = Table(title="inputs")
    for col, just in (("input", "left"), ("value", "right"), ("from", "left"), ("detail", "left")):
        t.add_column(col, justify=just)
    for row in result.get("inputs", []):
        value = units.seconds(row["value"]) if row["unit"] == "s" else units.number(row['value'])
        t.add_row(row["input"], value, row["source"], row["detail"])
    c.print(t)
    for inc in result.get("incidents", []):
        c.print(f"failure in step {inc['failed_step']}: restored to step {inc['restored_step']}, "
                f"{units.count(inc['replayed'])} step(s) replayed")
