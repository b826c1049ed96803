"""`paradise merge`: a trace directory (per-PE files, parts of crashed PEs) -> one Parquet file.

Streams: DuckDB sorts the events by (pe, t0) out of core (merge_events.sql, spilling into a folder
beside OUT) and hands Arrow record batches to a Parquet writer one at a time, so a trace larger
than memory merges too. Each PE's rows come out in time order, as docs/trace-format.md states.
"""

from __future__ import annotations

import os
from pathlib import Path

import typer

from paradise.cli.memory_option import budget, memory_limit_option

BATCH_ROWS = 256_000
"""Rows per record batch handed from DuckDB to the writer: bounds memory, ~one row group each."""


def merged_metadata(trace) -> dict:
    """The metadata of the merged file: the trace's, with pe=null and complete = all files complete;
    clock offsets are kept for `paradise info`, marked applied (a file with pe=null is never corrected)."""
    from paradise.format import METADATA_FIELDS

    meta = {k: v for k, v in trace.metadata.items() if k in METADATA_FIELDS and k != "format_version"}
    meta["pe"] = None
    meta["complete"] = trace.complete
    clock = meta.get("clock")
    if isinstance(clock, dict) and clock.get("offsets"):
        meta["clock"] = {**clock, "applied": True}  # the merged rows carry corrected times
    if not meta.get("pes") and trace.metadata.get("pes_seen"):
        meta["pes"] = len(trace.metadata["pes_seen"])
    return meta


def merge_trace(src: str | os.PathLike, out: str | os.PathLike, *, force: bool = False,
                memory_limit: int | None = None) -> Path:
    """Writes every event of the trace at SRC into OUT, sorted by (pe, t0), within `memory_limit`
    (bytes; the engines' default when None): the sort spills beyond it."""
    import pyarrow as pa

    from paradise.engines.summary import SummaryBuilder
    from paradise.format import SCHEMA, WRITE_OPTIONS, conform, make_metadata
    from paradise.format.summary import SummarizingWriter
    from paradise.run import open_run
    from paradise.store import open_trace
    from paradise.store.output import atomic_output, check_output, scratch_dir

    trace = open_trace(src, memory_limit)
    out = check_output(out, force=force, inputs=trace.files, input_dirs=[trace.path] if trace.path.is_dir() else [])
    schema = SCHEMA.with_metadata(make_metadata(**merged_metadata(trace)))
    with scratch_dir(out) as spill, atomic_output(out) as (_, fh), open_run(trace, spill_dir=spill,
                                                                                  memory_limit=memory_limit) as session:
        reader = session.engine.batches("merge_events", BATCH_ROWS)  # a failed spill is one line (OSError)
        with SummarizingWriter(fh, schema, SummaryBuilder(), **WRITE_OPTIONS) as writer:
            for batch in reader:
                writer.write_table(conform(pa.Table.from_batches([batch])).replace_schema_metadata(schema.metadata))
    return out


def register(app: typer.Typer) -> None:
    @app.command("merge")
    def merge_cmd(
        trace_dir: Path = typer.Argument(..., help="Trace directory (or file) to merge."),
        out: Path = typer.Option(..., "-o", "--out", metavar="FILE", help="Output Parquet file."),
        force: bool = typer.Option(False, "--force", help="Overwrite OUT if it exists."),
        memory_limit: str | None = memory_limit_option("the merge's sort"),
    ) -> None:
        """Merge a trace directory into one Parquet file, sorted by PE and time."""
        import pyarrow.parquet as pq

        written = merge_trace(trace_dir, out, force=force, memory_limit=budget(memory_limit))
        rows = pq.ParquetFile(written).metadata.num_rows
        typer.echo(f"wrote {written}: {rows:,} rows")
