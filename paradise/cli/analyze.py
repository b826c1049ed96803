"""`paradise analyze`: run every analysis in paradise.analyses.ANALYSES, print the report, write hints.

The loop is generic: each module named in ANALYSES is imported by name and asked whether it
applies; its report is paradise/report/<name>.py's render() when that exists, else a table of
its characteristics. One failing analysis does not hide the others: it is named in a one-line
warning on stderr (and in --json under "errors"), and the exit code becomes 1.
Set PARADISE_DEBUG=1 to let such a failure raise with its traceback.
"""

from __future__ import annotations

import importlib
import importlib.util
import json
import os
import sys
from enum import Enum
from pathlib import Path
from typing import TYPE_CHECKING, Any

import typer

from paradise.analyses import ANALYSES
from paradise.errors import EngineUnavailable, HintMismatch, OutputExists

if TYPE_CHECKING:  # pandas and pyarrow load only when a command runs (fast `paradise --help`)
    from paradise.analyses.base import AnalysisConfig, AnalysisResult
    from paradise.store import TraceHandle

ENGINES = ("duckdb", "dask")


class EngineName(str, Enum):
    """--engine choices."""

    duckdb = "duckdb"
    dask = "dask"


def trace_summary(trace: TraceHandle) -> dict[str, Any]:
    """What --json says about the trace, from its handle alone (no extra scan)."""
    meta = trace.metadata
    return {
        "path": str(trace.path),
        "files": len(trace.files),
        "source": trace.source,
        "program": trace.program,
        "pes": meta.get("pes") or len(meta.get("pes_seen", [])) or None,
        "complete": trace.complete,
        "rows": trace.num_rows,
        "format_version": meta.get("format_version"),
        "fingerprint": trace.fingerprint,
    }


def _one_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {text[0]}" if text else type(exc).__name__


def run_analyses(
    engine: Any, trace: TraceHandle, config: AnalysisConfig, names: tuple[str, ...] = ANALYSES, progress: Any = None
) -> tuple[dict[str, AnalysisResult], dict[str, str]]:
    """Results of every analysis that applies, and a one-line error per analysis that failed."""
    results: dict[str, AnalysisResult] = {}
    errors: dict[str, str] = {}
    debug = bool(os.environ.get("PARADISE_DEBUG"))
    for name in names:
        try:
            module = importlib.import_module(f"paradise.analyses.{name}")
            if module.applies(trace):
                results[name] = module.analyze(engine, trace, config)
        except Exception as exc:  # a bug in one analysis must not hide the others
            if debug:
                raise
            errors[name] = _one_line(exc)
        if progress is not None:
            progress.advance(1)
    return results, errors


def write_hints(results: dict[str, AnalysisResult], directory: Path, force: bool) -> tuple[list[str], list[str]]:
    """Writes every hint document; returns (paths written, warnings). Refuses to overwrite unforced."""
    from hints.format import HintError, write_hint

    docs: list[tuple[str, dict[str, Any]]] = []
    warnings: list[str] = []
    seen: dict[str, str] = {}
    for name, result in results.items():
        for doc in result.hints:
            kind = str(doc.get("kind"))
            if kind in seen:
                warnings.append(f"analysis {name!r} made a second {kind!r} hint (first from {seen[kind]!r}); skipped")
                continue
            seen[kind] = name
            docs.append((name, doc))
    if not force:
        for _, doc in docs:
            target = directory / f"{doc['kind']}.json"
            if target.exists():
                raise OutputExists(f"{target}: already exists; pass --force to overwrite it")
    written = []
    for name, doc in docs:
        try:
            written.append(str(write_hint(directory, doc, force=force)))
        except FileExistsError as exc:
            raise OutputExists(str(exc)) from None
        except HintError as exc:
            raise HintMismatch(f"{directory}: hint from analysis {name!r}: {exc}") from None
        except OSError as exc:
            raise OutputExists(f"{directory}: cannot write hints ({exc.strerror or exc})") from None
    return written, warnings


def _render(results: dict[str, AnalysisResult], info: dict[str, Any], written: list[str]) -> None:
    from paradise.report import generic
    from paradise.report.console import console

    con = console()
    generic.render_header(con, info)
    for name, result in results.items():
        spec = importlib.util.find_spec(f"paradise.report.{name}")
        renderer = importlib.import_module(f"paradise.report.{name}").render if spec else generic.render
        renderer(con, result.to_dict())
    for path in written:
        con.print(f"hint written: {path}")


def _make_engine(trace: TraceHandle, engine: str, scheduler: str | None) -> Any:
    """The engine by name; a scheduler address implies the Dask engine."""
    from paradise.engines import get_engine

    if scheduler:
        engine = "dask"
    if engine not in ENGINES:
        raise EngineUnavailable(f"unknown engine {engine!r} (choose {' or '.join(ENGINES)})")
    return get_engine(trace, engine, scheduler=scheduler)


def analyze_trace(
    path: Path, *, engine: str = "duckdb", scheduler: str | None = None, config: AnalysisConfig | None = None,
) -> tuple[TraceHandle, dict[str, AnalysisResult], dict[str, str]]:
    """Opens a trace and runs every analysis (for other commands and tests)."""
    from paradise.analyses.base import AnalysisConfig
    from paradise.report.progress import progress_bar
    from paradise.store import open_trace

    trace = open_trace(path)
    eng = _make_engine(trace, engine, scheduler)
    try:
        with progress_bar("analyzing", total=len(ANALYSES)) as bar:
            results, errors = run_analyses(eng, trace, config or AnalysisConfig(), progress=bar)
    finally:
        eng.close()
    return trace, results, errors


def register(app: typer.Typer) -> None:
    @app.command("analyze")
    def analyze_cmd(
        trace: Path = typer.Argument(..., help="Trace file or directory."),
        as_json: bool = typer.Option(False, "--json", help="Print the results as JSON."),
        engine: EngineName = typer.Option(EngineName.duckdb, "--engine", help="Stage-1 engine."),
        scheduler: str | None = typer.Option(
            None, "--scheduler", help="Dask scheduler address, e.g. tcp://host:8786 (implies --engine dask)."
        ),
        top: int = typer.Option(10, "--top", min=1, help="Entries in the top-entries table."),
        hints_out: Path | None = typer.Option(None, "--hints-out", help="Write hint files into this directory."),
        force: bool = typer.Option(False, "--force", help="Overwrite existing hint files."),
        mtbf_hours: float | None = typer.Option(None, "--mtbf-hours", min=0.0, help="Mean time between failures."),
        gpus: int | None = typer.Option(None, "--gpus", min=1, help="GPUs of the job (resilience)."),
    ) -> None:
        """Classify a trace's characteristics, print the report, and optionally write hints."""
        from paradise.analyses.base import AnalysisConfig

        config = AnalysisConfig(mtbf_hours=mtbf_hours, gpus=gpus, options={"top": top})
        handle, results, errors = analyze_trace(trace, engine=engine.value, scheduler=scheduler, config=config)
        for name, msg in errors.items():
            print(f"paradise: warning: analysis {name!r} failed: {msg}", file=sys.stderr)
        written, warnings = write_hints(results, hints_out, force) if hints_out is not None else ([], [])
        for w in warnings:
            print(f"paradise: warning: {w}", file=sys.stderr)
        info = trace_summary(handle)
        if as_json:
            doc = {
                "trace": info,
                "analyses": {name: r.to_dict() for name, r in results.items()},
                "characteristics": [
                    {"analysis": name, **c.to_dict()} for name, r in results.items() for c in r.characteristics
                ],
                "hints": written,
                "errors": errors,
            }
            typer.echo(json.dumps(doc, indent=1, sort_keys=True, default=str))
        else:
            _render(results, info, written)
        if errors:
            raise typer.Exit(1)
