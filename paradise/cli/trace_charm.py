"""`paradise trace charm`: run an unmodified charm4py program under charmrun with tracing on."""

from __future__ import annotations

import sys
from pathlib import Path

import typer

from paradise import units
from paradise.cli.compaction import compact
from paradise.cli.run_options import check_run_options
from paradise.errors import OutputExists, TraceNotFound


def incomplete_pes(out: Path, pes: int) -> list[int]:
    """PEs without a final trace file marked complete (a clean run writes one per PE)."""
    import pyarrow.parquet as pq

    from paradise.format import read_metadata

    bad = []
    for pe in range(pes):
        f = out / f"pe-{pe:05d}.parquet"
        try:
            meta = read_metadata(pq.read_schema(f).metadata) or {}
        except (OSError, ValueError):
            meta = {}
        if meta.get("complete") is not True:
            bad.append(pe)
    return bad


def _pe_list(pes: list[int]) -> str:
    return ", ".join(map(str, pes[:10])) + (f" and {len(pes) - 10} more" if len(pes) > 10 else "")


def _prepare_out(out: Path, force: bool, program: Path) -> None:
    """Refuses a trace directory that already holds a trace, unless --force (then clears it)."""
    from paradise.format.compact import spools
    from paradise.store.output import prepare_output_folder  # pyarrow loads only when a command runs

    prepare_output_folder(out, inputs=[program])
    old = list(out.glob("pe-*.parquet")) + spools(out) + list(out.glob(".pe-*.tmp"))
    if old and not force:
        raise OutputExists(f"{out}: already holds a trace; pass --force to overwrite it")
    for f in old:
        f.unlink()


def _written(out: Path) -> str:
    from paradise.format.compact import spools

    partial = any(out.glob("pe-*.parquet")) or bool(spools(out))
    return f"partial trace in {out} (marked incomplete)" if partial else "no trace written"


def register(app: typer.Typer) -> None:
    """Adds the `charm` subcommand to `paradise trace`."""

    @app.command(
        "charm",
        context_settings={"allow_interspersed_args": False, "ignore_unknown_options": True},
    )
    def charm_cmd(
        program: Path = typer.Argument(..., help="The charm4py program (APP.py)."),
        app_args: list[str] = typer.Argument(None, help="Arguments passed to the program."),
        pes: int = typer.Option(2, "--pes", "-p", help="Number of PEs (charmrun +pN)."),
        out: Path = typer.Option(..., "-o", "--out", metavar="DIR", help="Trace directory (one Parquet file per PE)."),
        hints: Path = typer.Option(None, "--hints", metavar="DIR", help="Hints directory: its mapping.json places arrays."),
        timeout: float = typer.Option(None, "--timeout", metavar="SECONDS", help="Kill the run after this many seconds."),
        force: bool = typer.Option(False, "--force", help="Overwrite an existing trace in OUT."),
    ) -> None:
        """Run a charm4py program with tracing on (options go before APP.py; the rest is the program's)."""
        from tracers.charm.launch import launch
        from tracers.charm.resolve import resolve_peers
        from tracers.job import JobTerminated

        check_run_options(timeout, pes)
        if not program.is_file():
            raise TraceNotFound(f"{program}: no such program (or not a regular file)")
        if hints is not None and not hints.is_dir():
            raise TraceNotFound(f"{hints}: no such hints directory")
        _prepare_out(out, force, program)
        try:
            res = launch(program, list(app_args or []), pes, trace_dir=out, hints_dir=hints, timeout_s=timeout)
        except JobTerminated as exc:
            compact(out)
            print(f"paradise: {program.name} stopped ({exc} to paradise); {_written(out)}", file=sys.stderr)
            raise typer.Exit(128 + exc.signum) from None
        compacted = compact(out, summaries=False)  # resolve_peers rewrites the files of a clean run
        finals = sorted(out.glob("pe-?????.parquet"))
        written = _written(out)
        if res.timed_out:
            print(f"paradise: {program.name} timed out after {units.number(timeout, 6)} s; {written}", file=sys.stderr)
            raise typer.Exit(124)
        if res.returncode != 0:
            print(f"paradise: {program.name} failed (exit code {res.returncode}); {written}", file=sys.stderr)
            raise typer.Exit(res.returncode if 0 < res.returncode < 256 else 1)
        missing = incomplete_pes(out, pes)
        if missing:
            print(f"paradise: {program.name} ran, but the trace data of PE(s) {_pe_list(missing)} are incomplete "
                  f"(a trace write failed: full disk?); {written}", file=sys.stderr)
            raise typer.Exit(1)
        if len(finals) == pes:
            from paradise.engines.summary import SummaryBuilder

            resolve_peers(out, summary=SummaryBuilder)
        typer.echo(f"paradise: traced {program.name} on {pes} PE(s) in {res.wall_s:.1f} s -> {out}"
                   + (f" ({compacted} after the run)" if compacted else ""))
