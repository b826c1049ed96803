"""`paradise export chrome|projections`: a paradise trace for Perfetto / chrome://tracing or for
the Projections tool."""

from __future__ import annotations

from pathlib import Path

import typer

from paradise.cli.memory_option import budget, memory_limit_option

app = typer.Typer(help="Export a trace to another tool's format.", no_args_is_help=True)


@app.command("chrome")
def chrome_cmd(
    trace: Path = typer.Argument(..., help="Trace file or directory."),
    out: Path = typer.Option(..., "-o", "--out", metavar="FILE", help="trace.json or trace.json.gz to write."),
    force: bool = typer.Option(False, "--force", help="Overwrite an existing output."),
    memory_limit: str | None = memory_limit_option("the export"),
) -> None:
    """Chrome Trace Event Format, for Perfetto UI and chrome://tracing.

    An event per execution, op or kernel, flows for messages and kernel launches, idle counters."""
    from paradise.export import chrome
    from paradise.run import open_run
    from paradise.store import open_trace
    from paradise.store.output import check_output

    limit = budget(memory_limit)
    handle = open_trace(trace, limit)
    out = check_output(out, force=force, inputs=handle.files)
    with open_run(handle, memory_limit=limit) as session:
        chrome.export(session.engine, handle, out)
    typer.echo(f"chrome trace written: {out}")


@app.command("projections")
def projections_cmd(
    trace: Path = typer.Argument(..., help="Trace file or directory."),
    out: Path = typer.Option(..., "-o", "--out", metavar="DIR", help="Folder to write <program>.sts and <program>.<pe>.log.gz into."),
    force: bool = typer.Option(False, "--force", help="Write into an existing folder, replacing its files of this run."),
    memory_limit: str | None = memory_limit_option("the export"),
) -> None:
    """Charm++ Projections logs (.sts and one .log.gz per PE), for the Projections tool.

    `paradise import projections` reads them back."""
    from paradise.export import projections
    from paradise.run import open_run

    with open_run(trace, memory_limit=budget(memory_limit)) as session:
        sts = projections.export(session.engine, session.trace, out, force=force)
    typer.echo(f"projections logs written: {sts}")
