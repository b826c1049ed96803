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
import math
import re
import sys
from enum import Enum
from pathlib import Path
from typing import TYPE_CHECKING, Any

import typer

from paradise import units
from paradise.analyses import ANALYSES
from paradise.analyses.runner import select_analyses, trace_summary, write_hints
from paradise.cli.memory_option import budget, memory_limit_option
from paradise.errors import InvalidOption, visible

if TYPE_CHECKING:  # pandas and pyarrow load only when a command runs (fast `paradise --help`)
    from paradise.analyses.base import AnalysisResult


class EngineName(str, Enum):
    """--engine choices."""

    duckdb = "duckdb"
    dask = "dask"


def _render(results: dict[str, AnalysisResult], info: dict[str, Any], written: list[str],
            over_time: Any = None) -> None:
    from rich.markup import escape

    from paradise.report import generic, pictures
    from paradise.report.console import console

    con = console()
    generic.render_header(con, info)
    for name, result in results.items():
        spec = importlib.util.find_spec(f"paradise.report.{name}")
        renderer = importlib.import_module(f"paradise.report.{name}").render if spec else generic.render
        doc = result.to_dict()
        renderer(con, doc)
        if name == "overview" and doc.get("per_pe"):
            pictures.utilization(con, doc["per_pe"], over_time(doc) if over_time else None)
    for path in written:
        con.print(f"hint written: {escape(path)}")


MAX_TOP = 100_000
MAX_MTBF_HOURS = 1e7
MAX_GPUS = 10_000_000
_SCHEDULER_RE = re.compile(r"^(?:(?:tcp|tls|ucx|ws|wss|inproc)://)?[\w.\-\[\]:]+:\d{1,5}$")


MAX_LOCAL_WORKERS = 256
"""Most worker processes of --scheduler local: each is a Python interpreter with DuckDB loaded."""


def check_analyze_options(*, top: int, mtbf_hours: float | None, gpus: int | None, scheduler: str | None,
                          workers: int | None = None) -> None:
    """Values within their ranges before any work starts; one line naming the option otherwise."""
    if not 1 <= top <= MAX_TOP:
        raise InvalidOption(f"--top: {top} is out of range (1..{MAX_TOP})")
    if mtbf_hours is not None and not (math.isfinite(mtbf_hours) and 0 < mtbf_hours <= MAX_MTBF_HOURS):
        raise InvalidOption(f"--mtbf-hours: {units.number(mtbf_hours, 6)} is out of range (> 0, at most {units.number(MAX_MTBF_HOURS, 6)})")
    if gpus is not None and not 1 <= gpus <= MAX_GPUS:
        raise InvalidOption(f"--gpus: {gpus} is out of range (1..{MAX_GPUS})")
    if scheduler is not None and scheduler != "local":
        if not _SCHEDULER_RE.match(scheduler):
            raise InvalidOption(f"--scheduler {scheduler!r}: not a scheduler address (tcp://host:8786, or local)")
        port = int(scheduler.rsplit(":", 1)[1])
        if not 1 <= port <= 65535:
            raise InvalidOption(f"--scheduler {scheduler!r}: port {port} is out of range (1..65535)")
    if workers is not None and not 1 <= workers <= MAX_LOCAL_WORKERS:
        raise InvalidOption(f"--workers: {workers} is out of range (1..{MAX_LOCAL_WORKERS})")


def check_hints_folder(directory: Path) -> None:
    """--hints-out must be a folder paradise can create or write (checked before any analysis)."""
    from paradise.store.output import prepare_output_folder

    prepare_output_folder(directory)


def _progress(label: str, total: int) -> Any:
    from paradise.report.progress import progress_bar

    return progress_bar(label, total=total)


def _utilization_bins(session: Any, results: dict[str, AnalysisResult]) -> list[float] | None:
    """Mean utilization per time bin for the terminal's sparkline (one binning query, report_bins, on
    the run's engine), None without an overview that has per-PE rows."""
    from paradise.report.html.gather import mean_utilization
    from paradise.report.pictures import SPARK_BINS

    overview = results["overview"].to_dict() if "overview" in results else {}
    if not overview.get("per_pe"):
        return None
    return mean_utilization(session.engine, session.trace, overview, SPARK_BINS)


def register(app: typer.Typer) -> None:
    @app.command("analyze")
    def analyze_cmd(
        trace: Path = typer.Argument(..., help="Trace file or directory."),
        as_json: bool = typer.Option(False, "--json", help="Print the results as JSON."),
        engine: EngineName = typer.Option(EngineName.duckdb, "--engine", help="Stage-1 engine."),
        scheduler: str | None = typer.Option(
            None, "--scheduler", metavar="ADDRESS", help="Dask scheduler: tcp://host:8786 (an existing cluster) or local (a "
            "LocalCluster of worker processes); implies --engine dask."
        ),
        memory_limit: str | None = memory_limit_option("the analysis"),
        workers: int | None = typer.Option(None, "--workers", help="Workers of --scheduler local (2; at most 256)."),
        worker_memory: str | None = typer.Option(
            None, "--worker-memory", metavar="SIZE", help="Memory limit per worker of --scheduler local, e.g. 2GiB."
        ),
        top: int = typer.Option(10, "--top", help="Entries in the top-entries table."),
        hints_out: Path | None = typer.Option(None, "--hints-out", metavar="DIR", help="Write hint files into this directory."),
        advisory: bool = typer.Option(False, "--advisory", help="Also write advisory hints that no paradise "
                                      "runtime consumer reads (schedule.json: message priorities)."),
        force: bool = typer.Option(False, "--force", help="Overwrite existing hint files."),
        mtbf_hours: float | None = typer.Option(None, "--mtbf-hours", metavar="HOURS", help="Mean time between failures."),
        gpus: int | None = typer.Option(None, "--gpus", help="GPUs of the job (resilience)."),
        only: str | None = typer.Option(
            None, "--only", metavar="NAMES",
            help=f"Run only these analyses, comma-separated ({', '.join(ANALYSES)}); e.g. --only overview "
            "for a quick first report on a large trace. Default: all that apply.",
        ),
    ) -> None:
        """Classify a trace's characteristics, print the report, and optionally write hints."""
        from paradise.analyses.base import AnalysisConfig
        from paradise.memory import parse_size

        names = select_analyses(only)
        check_analyze_options(top=top, mtbf_hours=mtbf_hours, gpus=gpus, scheduler=scheduler, workers=workers)
        options = {"memory_limit": budget(memory_limit), "workers": workers,
                   "worker_memory": parse_size(worker_memory, "--worker-memory") if worker_memory else None}
        if hints_out is not None:  # refused before the analyses run, not after
            check_hints_folder(hints_out)

        config = AnalysisConfig(mtbf_hours=mtbf_hours, gpus=gpus, options={"top": top})
        from paradise import tuning

        tuning.apply_for_analysis()  # opt-in (PARADISE_TUNING): this process ends after the report
        from paradise.run import analyze_run, open_run

        with open_run(trace, engine=engine.value, scheduler=scheduler, **options) as session:
            results, errors = analyze_run(session, config, names, progress=_progress)
            spark = None if as_json else _utilization_bins(session, results)  # before the run closes
        handle = session.trace
        for name, msg in errors.items():
            print(visible(f"paradise: warning: analysis {name!r} failed on a valid trace, a bug in paradise "
                          f"(PARADISE_DEBUG=1 shows the traceback; please report it): {msg}"), file=sys.stderr)
        written, notes = write_hints(results, hints_out, force, advisory) if hints_out is not None else ([], [])
        for w in notes:
            print(visible(f"paradise: {'note' if 'not written' in w else 'warning'}: {w}"), file=sys.stderr)
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
            _render(results, info, written, lambda _overview: spark)
        if errors:
            raise typer.Exit(1)
