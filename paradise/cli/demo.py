"""`paradise demo`: the closed loop on a real program, shown step by step.

Traces examples/stencil2d.py (a heavy region makes the default mapping imbalanced) on 2 PEs,
analyzes the trace, writes hints, predicts the next run with what-if, reruns with the hints,
and prints before, predicted and after side by side. Each step is the `paradise` command a
user would type, printed before it runs.
"""

from __future__ import annotations

import json
import shlex
import subprocess
import sys
from pathlib import Path

import typer

from paradise.errors import ParadiseError, TraceNotFound

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
STEP_TIMEOUT_S = 600


class DemoStepFailed(ParadiseError):
    """A step of the demo exited non-zero; its own message was printed above."""


def _run(args: list[str], echo: bool = True, capture: bool = True) -> str:
    cmd = [sys.executable, "-m", "paradise.cli.main", *args]
    if echo:
        typer.secho("$ paradise " + " ".join(shlex.quote(a) for a in args), fg="cyan", err=True)
    proc = subprocess.run(cmd, capture_output=capture, text=True, timeout=STEP_TIMEOUT_S)
    if proc.returncode != 0:
        if capture:
            sys.stderr.write(proc.stderr[-4000:])
        raise DemoStepFailed(f"step 'paradise {args[0]} {args[1] if len(args) > 1 else ''}' failed with exit code {proc.returncode}")
    return proc.stdout


def _busy(perf: dict, pes: int) -> tuple[list[float], list[float]]:
    by = {c["metric"]: c for c in perf["changes"]}
    before = [by.get(f"pe{p}.busy", {}).get("base", 0.0) for p in range(pes)]
    after = [by.get(f"pe{p}.busy", {}).get("candidate", 0.0) for p in range(pes)]
    return before, after


def run_demo(out: Path, pes: int, example: str, example_args: list[str]) -> dict:
    app = EXAMPLES / f"{example}.py"
    if not app.is_file():
        raise TraceNotFound(f"{app}: example not found (the demo runs from a source checkout)")
    before, after, hints = out / "before", out / "after", out / "hints"
    common = ["--pes", str(pes), "--force", "--timeout", str(STEP_TIMEOUT_S)]
    _run(["trace", "charm", *common, "-o", str(before), str(app), *example_args], capture=False)
    analysis = json.loads(_run(["analyze", str(before), "--hints-out", str(hints), "--force", "--json"]))
    _run(["analyze", str(before)], echo=False, capture=False)
    if not (hints / "mapping.json").exists():
        typer.echo("paradise found no mapping worth changing; nothing to rerun.")
        return {"analysis": analysis, "hints": []}
    predicted = json.loads(_run(["whatif", str(before), "--hints", str(hints), "--json"]))
    _run(["trace", "charm", *common, "--hints", str(hints), "-o", str(after), str(app), *example_args], capture=False)
    perf = json.loads(_run(["compare", str(before), str(after), "--json"]))["performance"]
    return {"analysis": analysis, "predicted": predicted, "performance": perf, "pes": pes}


def register(app: typer.Typer) -> None:
    @app.command("demo")
    def demo_cmd(
        out: Path = typer.Option(Path("paradise-demo"), "--out", "-o", help="Folder for traces and hints."),
        pes: int = typer.Option(2, "--pes", min=1, help="PEs for both runs."),
        example: str = typer.Option("stencil2d", "--example", help="Example program under examples/."),
        example_args: str = typer.Option("", "--args", help="Arguments for the example, as one string."),
        as_json: bool = typer.Option(False, "--json", help="Machine-readable summary."),
    ) -> None:
        """Trace an example, analyze it, write hints, rerun with them, and show before / predicted / after."""
        result = run_demo(out, pes, example, shlex.split(example_args))
        if as_json:
            typer.echo(json.dumps(result, indent=1, sort_keys=True, default=float))
            return
        if "performance" not in result:
            return
        from paradise.report.demo import render_demo

        render_demo(result, *_busy(result["performance"], pes))
