"""`paradise compare BASE CANDIDATE`: did the change help, and did it change the model's answers?"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import typer

from paradise.cli.memory_option import budget, memory_limit_option
from paradise.errors import InvalidOption, TraceNotFound

ENGINES = ("duckdb", "dask")

OUTPUT_KEYS = (
    "accuracy_base",
    "accuracy_candidate",
    "flips",
    "flips_correct_to_incorrect",
    "flips_incorrect_to_correct",
    "kl_mean",
    "items_common",
    "items_only_base",
    "items_only_candidate",
)


def json_safe(value: Any) -> Any:
    """Plain JSON: numpy scalars as numbers, and NaN or infinities (which JSON has not) as null."""
    if isinstance(value, dict):
        return {str(k): json_safe(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [json_safe(v) for v in value]
    if isinstance(value, (str, bool, int)) or value is None:
        return value
    try:
        f = float(value)
    except (TypeError, ValueError):
        return str(value)
    if f.is_integer() and not isinstance(value, float) and abs(f) < 2**53:
        return int(f)
    return f if math.isfinite(f) else None


def _has_events(path: Path) -> bool:
    from paradise.format import OUTPUTS_FILE  # pyarrow: loaded only when the command runs

    if path.is_dir():
        return any(p.name != OUTPUTS_FILE for p in path.glob("*.parquet"))
    return path.exists() and path.name != OUTPUTS_FILE


def _outputs_of(path: Path) -> Path | None:
    from paradise.format import OUTPUTS_FILE

    if path.is_dir():
        return path / OUTPUTS_FILE if (path / OUTPUTS_FILE).exists() else None
    return path if path.name == OUTPUTS_FILE else None


def run_compare(base: Path, candidate: Path, baseline_repeats: list[Path], engine: str,
                candidate_repeats: list[Path] | None = None, memory_limit: int | None = None) -> dict:
    """Compares what both sides hold: events (performance) and/or model outputs. Repeats of the
    baseline / candidate (further runs) give run-level figures a distribution; the first baseline
    repeat also gives the outputs' noise floor."""
    from paradise.format import OUTPUTS_FILE

    candidate_repeats = list(candidate_repeats or [])
    for p in (base, candidate, *baseline_repeats, *candidate_repeats):
        if not p.exists():
            raise TraceNotFound(f"{p}: no such file or directory")
    result: dict = {"base": str(base), "candidate": str(candidate), "performance": None, "outputs": None}
    if _has_events(base) and _has_events(candidate):
        from paradise.compare.perf import compare_traces

        for p in (*baseline_repeats, *candidate_repeats):
            if not _has_events(p) and not _outputs_of(p):
                raise TraceNotFound(f"{p}: a repeat must be a trace of the same program (no trace events here)")
        result["performance"] = compare_traces(
            base, candidate, engine=engine, base_repeats=[p for p in baseline_repeats if _has_events(p)],
            candidate_repeats=[p for p in candidate_repeats if _has_events(p)], memory_limit=memory_limit).to_dict()
    elif candidate_repeats:
        raise TraceNotFound(f"{base}: --candidate-repeat needs trace events on both sides")
    ob, oc = _outputs_of(base), _outputs_of(candidate)
    floor = _outputs_of(baseline_repeats[0]) if baseline_repeats else None
    if ob and oc and (floor or not baseline_repeats):
        from paradise.compare.outputs import compare_outputs

        out = compare_outputs(ob, oc, baseline_repeat=floor).to_dict()
        result["outputs"] = out
        result.update({k: out[k] for k in OUTPUT_KEYS})
    elif baseline_repeats and result["performance"] is None:
        raise TraceNotFound(f"{base}: --baseline-repeat needs trace events or model outputs ({OUTPUTS_FILE}) "
                            "on both sides and in the repeat")
    if result["performance"] is None and result["outputs"] is None:
        missing = base if not (_has_events(base) or ob) else candidate
        raise TraceNotFound(
            f"{missing}: nothing to compare: both sides need trace events, or both need {OUTPUTS_FILE}"
        )
    return result


def register(app: typer.Typer) -> None:
    @app.command("compare")
    def compare_cmd(
        base: Path = typer.Argument(..., help="Baseline: trace file/folder, or a folder/file with outputs.parquet."),
        candidate: Path = typer.Argument(..., help="Candidate, of the same program / evaluation set."),
        baseline_repeats: list[Path] = typer.Option(
            [], "--baseline-repeat", metavar="RUN", show_default=False,
            help="Another run of the baseline (repeat the option for more). Traces: run-level figures "
                 "(makespan, totals, volume) get one sample per run, so a difference can be tested; "
                 "model outputs: the first repeat gives the noise floor of flips and KL.",
        ),
        candidate_repeats: list[Path] = typer.Option(
            [], "--candidate-repeat", metavar="RUN", show_default=False,
            help="Another run of the candidate (repeat the option for more).",
        ),
        engine: str = typer.Option("duckdb", "--engine", metavar="duckdb|dask", help="Stage-1 engine: duckdb or dask."),
        as_json: bool = typer.Option(False, "--json", help="Machine-readable output."),
        memory_limit: str | None = memory_limit_option("the comparison (each trace read in turn)"),
    ) -> None:
        """Compare two runs: their performance and, when both have model outputs, their answers.

        Performance: makespan/step time, per-PE busy/idle, per-entry time, volume; model outputs:
        accuracy, flips and KL divergence.

        A difference is called significant only from distributions: per-step samples on both sides, or one sample per run with repeats (Mann-Whitney U, two-sided, 95 % confidence; run-level figures such as the makespan need at least 4 runs per side). Two single numbers are shown as "one run each"."""
        if engine not in ENGINES:
            raise InvalidOption(f"--engine {engine!r}: unknown engine (choose {' or '.join(ENGINES)})")
        result = run_compare(base, candidate, baseline_repeats, engine, candidate_repeats, budget(memory_limit))
        if as_json:
            typer.echo(json.dumps(json_safe(result), indent=2, sort_keys=True, allow_nan=False))
            return
        from paradise.report.compare import render_compare

        render_compare(result)
