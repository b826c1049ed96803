"""`paradise report TRACE -o report.html`: one self-contained HTML page of the run.

The analyses run as in `paradise analyze` (one Session, so the report reuses their shared
results: the critical path among them); the report adds its binning and timeline queries on that engine, the what-if
replay under --hints and the comparison with --compare, then writes the page atomically.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

import typer

from paradise.cli.memory_option import budget, memory_limit_option
from paradise.errors import InvalidOption

if TYPE_CHECKING:
    from paradise.store import TraceHandle

MAX_WINDOW_NS = 1 << 60
"""Trace times lie within ±2^62 ns (paradise.store.validate); the timeline's queries subtract times
from the window's ends, and a window at ±2^62 ns overflowed INT64 there: ±2^60 ns (36 years) does not."""


def parse_window(text: str | None) -> tuple[int, int] | None:
    """--window START_NS:END_NS."""
    if text is None:
        return None
    try:
        a, b = (int(x) for x in text.split(":"))  # int(): 400 digits at most (Python's own limit)
    except ValueError:
        raise InvalidOption(f"--window {text!r}: expected START_NS:END_NS (integers)") from None
    if b <= a:
        raise InvalidOption(f"--window {text!r}: the end must come after the start")
    if not -MAX_WINDOW_NS <= a < b <= MAX_WINDOW_NS:
        raise InvalidOption(f"--window {text[:60]!r}: times must lie within ±2^60 ns")
    return a, b


def build_report(trace_path: Path | TraceHandle, *, hints: Path | None = None,
                 compare: Path | TraceHandle | None = None, window: tuple[int, int] | None = None,
                 engine: str = "duckdb", memory_limit: int | None = None) -> str:
    """The report page's text for a trace (for the command, tests and benchmarks); the traces are
    paths or handles already open (the command opens each once)."""
    from plotly.offline import get_plotlyjs

    from paradise.analyses import ANALYSES
    from paradise.analyses.runner import trace_summary
    from paradise.report.html import gather, page
    from paradise.run import analyze_run, open_run
    from paradise.store import TraceHandle, open_trace

    trace = trace_path if isinstance(trace_path, TraceHandle) else open_trace(trace_path, memory_limit)
    if compare is not None and not isinstance(compare, TraceHandle):
        compare = open_trace(compare, memory_limit)  # a bad --compare trace fails before the analyses run
    loaded = None
    if hints is not None:
        from paradise.whatif import load_hints

        loaded = load_hints(trace, hints)  # judged before the analyses: a bad file costs none
    from paradise.report.progress import progress_bar

    whatif: dict[str, Any] | None = None
    with progress_bar("report", len(ANALYSES) + 3) as bar:
        with open_run(trace, engine=engine, memory_limit=memory_limit) as session:
            results, errors = analyze_run(session, bar=bar)
            dicts = {name: r.to_dict() for name, r in results.items()}
            bar.stage("figures")
            drawn = gather.gather(session, dicts, window)
            bar.advance(1)
            if loaded is not None:
                from paradise.errors import OutOfMemory
                from paradise.whatif import predict

                bar.stage("what-if under the hints")
                try:
                    whatif = predict(session, loaded)  # the analyses' replayer, not a second one
                except OutOfMemory as exc:  # the page says why, beside everything else
                    whatif = {"not_replayed": str(exc)}
            bar.advance(1)
        cmp = None
        if compare is not None:
            from paradise.compare.perf import compare_traces

            bar.stage("comparison")
            cmp = compare_traces(trace, compare, engine=engine, memory_limit=memory_limit).to_dict()
        bar.advance(1)
    return page.build(trace_summary(trace), dicts, drawn, whatif=whatif, compare=cmp, errors=errors,
                      plotly_js=get_plotlyjs())


def register(app: typer.Typer) -> None:
    @app.command("report")
    def report_cmd(
        trace: Path = typer.Argument(..., help="Trace file or directory."),
        out: Path = typer.Option(..., "-o", "--out", metavar="FILE", help="The HTML file to write."),
        hints: Path | None = typer.Option(None, "--hints", metavar="DIR", help="Hints directory: per-PE load now and under the hints (what-if)."),
        compare: Path | None = typer.Option(None, "--compare", metavar="TRACE", help="Another run of the program: before/after charts."),
        window: str | None = typer.Option(None, "--window", metavar="START_NS:END_NS",
                                          help="Timeline window (default: the longest step)."),
        force: bool = typer.Option(False, "--force", help="Overwrite an existing report."),
        memory_limit: str | None = memory_limit_option("the report"),
    ) -> None:
        """Write one self-contained HTML report that works offline.

        It shows utilization, timeline, communication, training, hints, and every characteristic with its evidence."""
        from paradise import tuning
        from paradise.store import open_trace
        from paradise.store.output import atomic_output, check_output

        tuning.apply_for_analysis()  # opt-in (PARADISE_TUNING): this process ends after the page is written
        limit = budget(memory_limit)
        span = parse_window(window)
        handle = open_trace(trace, limit)
        other = open_trace(compare, limit) if compare is not None else None
        inputs = [f for t in (handle, other) if t is not None for f in t.files]
        out = check_output(out, force=force, inputs=inputs)  # beside the trace's files is fine: only *.parquet is read
        text = build_report(handle, hints=hints, compare=other, window=span, memory_limit=limit)
        with atomic_output(out) as (_, fh):
            fh.write(text.encode("utf-8"))
        typer.echo(f"report written: {out}")
