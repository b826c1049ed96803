"""`paradise synth`: a synthetic trace of any size with its ground truth (paradise.synth)."""

from __future__ import annotations

import math
from pathlib import Path

import typer

from paradise.errors import InvalidOption


def parse_count(text: str, option: str = "--events") -> int:
    """A positive count written as 1000000, 1e6 or 1_000_000."""
    try:
        value = float(text.replace("_", ""))
    except ValueError:
        raise InvalidOption(f"{option} {text[:40]!r}: not a number") from None
    if not math.isfinite(value):
        raise InvalidOption(f"{option} {text[:40]!r}: not a finite number")
    if value < 1 or value != int(value):
        raise InvalidOption(f"{option} {text!r}: must be a positive whole number")
    return int(value)


def register(app: typer.Typer) -> None:
    @app.command("synth")
    def synth_cmd(
        out_text: str = typer.Option(..., "-o", "--out", metavar="DIR", help="Directory to write the trace into."),
        kind: str = typer.Option("charm", "--kind", metavar="charm|torch", help="charm (objects and messages) or torch (DDP ranks)."),
        events: str = typer.Option("1e6", "--events", metavar="ROWS", help="Rows of the trace, about (e.g. 1e8)."),
        pes: int = typer.Option(8, "--pes", help="PEs (charm) or ranks (torch)."),
        pattern: str = typer.Option("grid", "--pattern", metavar="grid|all-to-all|star|tree|chain", help="grid, all-to-all, star, tree or chain (charm)."),
        imbalance: float | None = typer.Option(
            None, "--imbalance", metavar="RATIO", help="max/mean PE busy time (1 = balanced; default 1.5, 1 with one PE)."),
        seed: int = typer.Option(0, "--seed", help="Seed: which object is heavy, message sizes."),
        jobs: int | None = typer.Option(None, "--jobs", help="Processes writing files (default: CPUs)."),
        force: bool = typer.Option(False, "--force", help="Replace an existing output directory."),
    ) -> None:
        """Write a synthetic trace with a ground-truth file (synth-truth.json) beside its files."""
        from paradise.synth import TRUTH_FILE, synth

        out = Path(out_text)
        if not out_text:
            from paradise.errors import OutputUnwritable

            raise OutputUnwritable("-o '': not a folder name; choose an output folder")
        if imbalance is None:
            imbalance = 1.5 if pes > 1 else 1.0
        truth = synth(out, kind=kind, events=parse_count(events), pes=pes, pattern=pattern,
                      imbalance=imbalance, seed=seed, jobs=jobs, force=force)
        what = f"{truth['pattern']} " if truth.get("pattern") else ""
        typer.echo(f"wrote {truth['rows']:,} rows ({what}{kind}, {pes} PEs, {truth['steps']} steps) to {out}; "
                   f"ground truth in {out / TRUTH_FILE}")
