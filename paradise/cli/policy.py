"""`paradise policy`: plan a checkpoint policy without a trace (periodic vs just-in-time)."""

from __future__ import annotations

import json
import math

import typer

from paradise import units
from paradise.errors import InvalidOption

MAX_SECONDS = 1e9
"""Largest time option (about 31 years): beyond it the Daly formulas overflow, and no job is that long."""
MAX_HOURS = MAX_SECONDS / 3600
MAX_GPUS = 10_000_000


def _number(option: str, text: str | None, *, required: bool = True, minimum: float = 0.0,
            strict: bool = True, integer: bool = False, maximum: float = MAX_SECONDS) -> float | None:
    """Parses one numeric option; a bad value is one line naming the option (exit 2)."""
    if text is None:
        if required:
            raise InvalidOption(f"{option}: missing (required)")
        return None
    if len(text) > 64:
        raise InvalidOption(f"{option}: {text[:20]}… is out of range (at most {units.number(maximum, 6)})")
    try:
        value = int(text) if integer else float(text)
    except ValueError:
        kind = "an integer" if integer else "a number"
        raise InvalidOption(f"{option}: {text!r} is not {kind}") from None
    if not math.isfinite(value) or value < minimum or (strict and value == minimum):
        bound = f"> {units.number(minimum, 6)}" if strict else f">= {units.number(minimum, 6)}"
        raise InvalidOption(f"{option}: {text} is out of range (must be {bound})")
    if value > maximum:
        raise InvalidOption(f"{option}: {text} is out of range (at most {units.number(maximum, 6)})")
    return value


def register(app: typer.Typer) -> None:
    @app.command("policy", help="Plan a checkpoint policy without a trace: periodic (Daly) vs just-in-time.")
    def policy_cmd(
        iteration_s: str = typer.Option(None, "--iteration-s", metavar="SECONDS", help="seconds per training step"),
        checkpoint_s: str = typer.Option(None, "--checkpoint-s", metavar="SECONDS", help="seconds one checkpoint stalls training"),
        restart_s: str = typer.Option(None, "--restart-s", metavar="SECONDS", help="seconds from a failure to training again"),
        gpus: str = typer.Option(None, "--gpus", metavar="N", help="GPUs in the job"),
        mtbf_hours: str = typer.Option(None, "--mtbf-hours", metavar="HOURS", help="job MTBF in hours (default: 5 failures per 1000 node-days)"),
        jit_save_s: str = typer.Option(None, "--jit-save-s", metavar="SECONDS", help="seconds of a just-in-time save (default: --checkpoint-s)"),
        unrecoverable: str = typer.Option(None, "--unrecoverable-fraction", metavar="FRACTION", help="share of failures JIT cannot recover (default 0.1)"),
        job_hours: str = typer.Option(None, "--job-hours", metavar="HOURS", help="job length in hours, prices pure JIT (default 24)"),
        as_json: bool = typer.Option(False, "--json", help="print the policy as JSON"),
    ) -> None:
        from hints.generators.checkpoint_policy import (
            HOURS,
            JOB_HOURS_DEFAULT,
            UNRECOVERABLE_FRACTION,
            PolicyInputs,
            default_mtbf_s,
            plan,
        )

        it = _number("--iteration-s", iteration_s)
        ck = _number("--checkpoint-s", checkpoint_s)
        rs = _number("--restart-s", restart_s, strict=False)
        n = int(_number("--gpus", gpus, minimum=1, strict=False, integer=True, maximum=MAX_GPUS))
        mh = _number("--mtbf-hours", mtbf_hours, required=False, maximum=MAX_HOURS)
        js = _number("--jit-save-s", jit_save_s, required=False, strict=False)
        q = _number("--unrecoverable-fraction", unrecoverable, required=False, strict=False)
        if q is not None and q > 1:
            raise InvalidOption(f"--unrecoverable-fraction: {unrecoverable} is out of range (must be within [0, 1])")
        jh = _number("--job-hours", job_hours, required=False, maximum=MAX_HOURS)
        sources = {k: "option" for k in ("iteration_s", "checkpoint_s", "restart_s", "gpus")}
        sources["mtbf_s"] = "option" if mh is not None else "default"
        sources["jit_save_s"] = "option" if js is not None else "default"
        sources["unrecoverable_fraction"] = "option" if q is not None else "default"
        sources["job_s"] = "option" if jh is not None else "default"
        inp = PolicyInputs(
            iteration_s=it, checkpoint_s=ck, restart_s=rs, gpus=n,
            mtbf_s=mh * HOURS if mh is not None else default_mtbf_s(n),
            jit_save_s=js,
            unrecoverable_fraction=UNRECOVERABLE_FRACTION if q is None else q,
            job_s=(JOB_HOURS_DEFAULT if jh is None else jh) * HOURS,
            sources=sources,
        )
        try:
            policy = plan(inp)
        except (ValueError, OverflowError, ZeroDivisionError) as exc:
            raise InvalidOption(f"policy options: {exc}") from None
        if as_json:
            typer.echo(json.dumps(policy.to_dict(), indent=1, sort_keys=True))
            return
        from paradise.report.console import console
        from paradise.report.resilience import render_policy

        render_policy(console(), policy.to_dict())
