"""`paradise demo`: the closed loop on a real program, shown step by step.

Traces an example on 2 PEs (examples/stencil2d.py by default: a heavy region makes the default
mapping imbalanced; `--example particles`: many small messages, combined per comm.json), analyzes
the trace, writes hints, predicts the next run with what-if, reruns with the hints, and prints
before, predicted and after side by side. Each step is the `paradise` command a
user would type, printed before it runs; the closing table reads the two traces directly.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import subprocess
import sys
from pathlib import Path
from typing import Any

import typer

from paradise.cli.trace_charm import MAX_PES
from paradise.errors import InvalidOption, ParadiseError

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
STEP_TIMEOUT_S = 600
DEMO_ARGS = {"stencil2d": "--grid 8 8 --block 512 --iters 40 --check-blocks 2",
             "particles": "--particles 2000 --steps 8 --check"}
"""Default arguments per example. 512x512 blocks: per message, charm4py's runtime costs about
as much as relaxing a 256x256 block once, so smaller blocks make the run as much messaging as
compute, which no mapping removes; at 512 compute dominates and balancing it shows."""
DEMO_ENTRIES = frozenset({"before", "after", "hints", "demo.json"})
"""What the demo writes into its folder: a folder holding anything else is not overwritten."""


class DemoStepFailed(ParadiseError):
    """A step of the demo exited non-zero; its own message was printed above."""


class DemoFolderInUse(ParadiseError):
    """The output folder holds files the demo did not write."""


_SHOW = {"stdout": None}
"""Where uncaptured steps print: the terminal, or stderr when --json keeps stdout for JSON."""


def _run(args: list[str], echo: bool = True, capture: bool = True) -> str:
    """One step as the `paradise` command a user would type; `-P` keeps the current folder off
    sys.path, and the step ends with the demo (tracers.job)."""
    from tracers import job

    cmd = [sys.executable, "-P", "-m", "paradise.cli.main", *args]
    if echo:
        typer.secho("$ paradise " + " ".join(shlex.quote(a) for a in args), fg="cyan", err=True)
    pipe = subprocess.PIPE if capture else None
    proc = job.start(cmd, env=dict(os.environ), stdout=pipe if capture else _SHOW["stdout"], stderr=pipe, text=True)
    with job.owned(proc):
        try:
            out, err = proc.communicate(timeout=STEP_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            job.stop(proc)
            raise DemoStepFailed(f"step 'paradise {' '.join(args[:2])}' ran past {STEP_TIMEOUT_S} s") from None
    if proc.returncode != 0:
        if capture:
            sys.stderr.write(err[-4000:])
        raise DemoStepFailed(f"step 'paradise {' '.join(args[:2])}' failed with exit code {proc.returncode}")
    return out or ""


PREDICTION_MISS = 0.15
"""A rerun whose makespan is off the what-if prediction by more than 15 % is reported as a miss."""
OTHER_LOAD = 0.5
"""Load average above the run's own PEs by more than this counts as other load on the machine."""


def _traced_run(args: list[str], pes: int) -> dict[str, float]:
    """A `paradise trace charm` step, with what the machine did meanwhile: wall time and the
    1-minute load average before and after. (The PEs' CPU time is not measured: charmrun does not
    reap them, so rusage of children misses them.)"""
    import time

    load0 = os.getloadavg()[0]
    t0 = time.monotonic()
    _run(args, capture=False)
    return {"wall_s": round(time.monotonic() - t0, 3), "load1_before": round(load0, 2),
            "load1_after": round(os.getloadavg()[0], 2), "cpus": os.cpu_count() or 1, "pes": pes}


def prediction_check(predicted_ns: float | None, measured_ns: float, runs: dict[str, dict[str, float]]) -> dict[str, Any]:
    """Whether the rerun missed the what-if prediction by more than PREDICTION_MISS, and the likely
    causes the demo measured (other load on the machine, one run per side)."""
    out: dict[str, Any] = {"predicted_ns": predicted_ns, "measured_ns": measured_ns, "missed": False, "causes": []}
    if not predicted_ns:
        return out
    off = (measured_ns - predicted_ns) / predicted_ns
    out.update(off=round(off, 4), missed=abs(off) > PREDICTION_MISS)
    if not out["missed"]:
        return out
    for side, m in runs.items():
        other = max(m["load1_before"], m["load1_after"]) - m["pes"]
        if other > OTHER_LOAD:
            out["causes"].append(
                f"other load on the machine during the {side} run: 1-minute load average up to "
                f"{max(m['load1_before'], m['load1_after']):.1f} on {m['cpus']} CPU(s), of which the run's "
                f"{m['pes']} PE(s) account for about {m['pes']}")
    out["causes"].append("one run per side: how much two runs of the same program differ on this machine "
                         "was not measured (repeat both and use compare --baseline-repeat/--candidate-repeat)")
    return out


def trace_facts(path: Path) -> dict[str, Any]:
    """Busy time per PE and the PE of every array element, read from a trace."""
    from paradise.engines import get_engine
    from paradise.store import open_trace

    trace = open_trace(path)
    eng = get_engine(trace, "duckdb")
    pes = int(trace.metadata.get("pes") or 1)
    load = eng.query("overview_pe_time").to_pandas()  # the one accounting of PE time
    busy = [0] * max(pes, int(load["pe"].max()) + 1 if len(load) else 1)
    for pe, ns in zip(load["pe"], load["busy_ns"]):
        busy[int(pe)] = int(ns)
    # where each element ran (its last PE: elements do not migrate without a balancer)
    rows = eng.sql("SELECT coll, index, arg_max(pe, t1) AS pe FROM events "
                   "WHERE kind = 'exec' AND coll IS NOT NULL AND index IS NOT NULL GROUP BY coll, index")
    placed: dict[str, dict[str, int]] = {}
    for c, i, p in zip(*(rows.column(k).to_pylist() for k in ("coll", "index", "pe"))):
        placed.setdefault(str(c), {})[str(i)] = int(p)
    spans = eng.sql(
        "SELECT max(t1) - min(t0) AS m, max(t1) FILTER (WHERE step IS NOT NULL) - min(t0) FILTER (WHERE step IS NOT NULL) "
        "AS s FROM events WHERE kind = 'exec'"
    ).to_pylist()[0]
    return {"busy_ns": busy, "placement": placed, "makespan_ns": int(spans["m"] or 0),
            "iterations_ns": int(spans["s"] or 0)}


def moves(before: dict[str, dict[str, int]], mapping: dict[str, dict[str, int]]) -> list[dict[str, Any]]:
    """The elements mapping.json places on another PE than the traced run did."""
    out = []
    for coll, objs in sorted(mapping.items()):
        for idx, pe in sorted(objs.items()):
            was = before.get(coll, {}).get(idx)
            if was is not None and was != pe:
                out.append({"object": f"{coll}{idx}", "from": was, "to": pe})
    return out


def _check_folder(out: Path) -> None:
    from paradise.store.output import prepare_output_folder

    if out.is_dir() and any(p.name not in DEMO_ENTRIES for p in out.iterdir()):
        raise DemoFolderInUse(f"{out}: holds files the demo did not write; choose another --out")
    prepare_output_folder(out)


def _heavy(analysis: dict[str, Any]) -> list[str]:
    chars = analysis.get("analyses", {}).get("placement", {}).get("characteristics", [])
    for c in chars:
        if c.get("name") == "object_load_distribution":
            for e in c.get("evidence", []):
                if e.get("metric") == "heavy_objects":
                    return list(e.get("value") or [])
    return []


def example_program(example: str) -> Path:
    """The program examples/<example>.py; a name with a path in it, or none there, is refused."""
    known = sorted(p.stem for p in EXAMPLES.glob("*.py")) if EXAMPLES.is_dir() else []
    if not re.fullmatch(r"[A-Za-z0-9_]+", example) or example not in known:
        choices = f"choose from {', '.join(known)}" if known else "the demo runs from a source checkout"
        raise InvalidOption(f"--example {example!r}: not an example under examples/ ({choices})")
    return EXAMPLES / f"{example}.py"


def example_arguments(text: str) -> list[str]:
    """--args split as a shell would; unbalanced quotes are one line naming the option."""
    try:
        return shlex.split(text)
    except ValueError as exc:
        raise InvalidOption(f"--args {text!r}: {exc}") from None


def run_demo(out: Path, pes: int, example: str, example_args: list[str]) -> dict[str, Any]:
    app = example_program(example)
    _check_folder(out)
    before, after, hints = out / "before", out / "after", out / "hints"
    common = ["--pes", str(pes), "--force", "--timeout", str(STEP_TIMEOUT_S)]
    runs = {"before": _traced_run(["trace", "charm", *common, "-o", str(before), str(app), *example_args], pes)}
    analysis = json.loads(_run(["analyze", str(before), "--hints-out", str(hints), "--force", "--json"]))
    _run(["analyze", str(before)], echo=False, capture=False)
    result: dict[str, Any] = {"analysis": analysis, "pes": pes, "out": str(out),
                              "heavy_objects": _heavy(analysis)}
    comm = json.loads((hints / "comm.json").read_text()) if (hints / "comm.json").exists() else {}
    streams = comm.get("combine") or []
    mapping = json.loads((hints / "mapping.json").read_text()) if (hints / "mapping.json").exists() else None
    facts_before = trace_facts(before)
    if mapping is not None:
        result["strategy"] = mapping.get("strategy")
        result["mapping_gain"] = mapping.get("predicted_gain") or {}
        result["moves"] = moves(facts_before["placement"], mapping.get("collections", {}))
    remap = mapping is not None and result["strategy"] != "keep" and bool(result["moves"])
    if streams:
        result["combine_streams"] = len(streams)
    if not remap and not streams:
        typer.echo("paradise proposes to keep the current mapping and found no messages to combine; nothing to rerun.", err=_SHOW["stdout"] is sys.stderr)
        return result
    result["predicted"] = json.loads(_run(["whatif", str(before), "--hints", str(hints), "--json"]))
    runs["after"] = _traced_run(["trace", "charm", *common, "--hints", str(hints), "-o", str(after), str(app),
                                 *example_args], pes)
    result["performance"] = json.loads(_run(["compare", str(before), str(after), "--json"]))["performance"]
    facts_after = trace_facts(after)
    result["before"], result["after"] = facts_before, facts_after
    result["runs"] = runs
    result["prediction"] = prediction_check(result["predicted"].get("predicted_makespan_ns"),
                                            facts_after["makespan_ns"], runs)
    if mapping is not None:
        placed = facts_after["placement"]
        result["placed_as_mapped"] = sum(1 for c, objs in mapping["collections"].items()
                                         for i, p in objs.items() if placed.get(c, {}).get(i) == p)
        result["mapped_objects"] = sum(len(objs) for objs in mapping["collections"].values())
    (out / "demo.json").write_text(json.dumps(result, indent=1, sort_keys=True, default=float))
    return result


def register(app: typer.Typer) -> None:
    @app.command("demo")
    def demo_cmd(
        out: Path = typer.Option(Path("paradise-demo"), "--out", "-o",
                                 metavar="DIR", help="Folder for traces and hints (rewritten by each demo run)."),
        pes: int = typer.Option(2, "--pes", help="PEs for both runs."),
        example: str = typer.Option("stencil2d", "--example", metavar="NAME", help="Example program under examples/."),
        example_args: str | None = typer.Option(None, "--args", metavar="ARGS", show_default=False,
                                         help="Arguments for the example, as one string "
                                              f"(stencil2d: {DEMO_ARGS['stencil2d']!r}; "
                                              f"particles: {DEMO_ARGS['particles']!r})."),
        as_json: bool = typer.Option(False, "--json", help="Machine-readable summary."),
    ) -> None:
        """Trace an example, analyze it, write hints, rerun with them, and show before / predicted / after."""
        _SHOW["stdout"] = sys.stderr if as_json else None
        if example_args is None:
            example_args = DEMO_ARGS.get(example, "")
        if not 1 <= pes <= MAX_PES:
            raise InvalidOption(f"--pes: {pes} is out of range (1..{MAX_PES})")
        from tracers.job import JobTerminated

        try:
            result = run_demo(out, pes, example, example_arguments(example_args))
        except JobTerminated as exc:
            print(f"paradise: demo stopped ({exc} to paradise); its step was ended", file=sys.stderr)
            raise typer.Exit(128 + exc.signum) from None
        if as_json:
            typer.echo(json.dumps(result, indent=1, sort_keys=True, default=float))
            return
        if "performance" not in result:
            return
        from paradise.report.demo import render_demo

        render_demo(result)
