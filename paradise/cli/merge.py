"""`paradise merge`: a trace directory (per-PE files, parts of crashed PEs) -> one Parquet file.

Streams: DuckDB sorts the events by (pe, t0) out of core and hands Arrow record batches to a
Parquet writer one at a time, so a trace larger than memory merges too.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path

import typer

from paradise.errors import OutputExists, require_new_output

BATCH_ROWS = 256_000
"""Rows per record batch handed from DuckDB to the writer: bounds memory, ~one row group each."""


def merged_metadata(trace) -> dict:
    """The metadata of the merged file: the trace's, with pe=null and complete = all files complete."""
    from paradise.format import METADATA_FIELDS

    meta = {k: v for k, v in trace.metadata.items() if k in METADATA_FIELDS and k != "format_version"}
    meta["pe"] = None
    meta["complete"] = trace.complete
    if not meta.get("pes") and trace.metadata.get("pes_seen"):
        meta["pes"] = len(trace.metadata["pes_seen"])
    return meta


def merge_trace(src: str | os.PathLike, out: str | os.PathLike, *, force: bool = False) -> Path:
    """Writes every event of the trace at SRC into OUT, sorted by (pe, t0)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    from paradise.engines.duckdb_engine import DuckDBEngine
    from paradise.format import SCHEMA, conform, make_metadata
    from paradise.store import open_trace

    out = Path(out)
    trace = open_trace(src)
    if out.resolve() in {f.resolve() for f in trace.files}:
        raise OutputExists(f"{out}: is one of the input files; choose another output")
    require_new_output(out, force)
    schema = SCHEMA.with_metadata(make_metadata(**merged_metadata(trace)))
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = out.with_name(f".{out.name}.tmp")
    spill = tempfile.mkdtemp(prefix=".paradise-merge-", dir=out.parent)
    try:
        with DuckDBEngine(trace) as eng:
            eng.con.execute("SET temp_directory = $d", {"d": spill})
            reader = eng.con.sql("SELECT * FROM events ORDER BY pe, t0").to_arrow_reader(BATCH_ROWS)
            with pq.ParquetWriter(tmp, schema, compression="zstd") as writer:
                for batch in reader:
                    writer.write_table(conform(pa.Table.from_batches([batch])).replace_schema_metadata(schema.metadata))
        os.replace(tmp, out)
    finally:
        tmp.unlink(missing_ok=True)
        shutil.rmtree(spill, ignore_errors=True)
    return out


def register(app: typer.Typer) -> None:
    @app.command("merge")
    def merge_cmd(
        trace_dir: Path = typer.Argument(..., help="Trace directory (or file) to merge."),
        out: Path = typer.Option(..., "-o", "--out", help="Output Parquet file."),
        force: bool = typer.Option(False, "--force", help="Overwrite OUT if it exists."),
    ) -> None:
        """Merge a trace directory into one Parquet file, sorted by PE and time."""
        import pyarrow.parquet as pq

        written = merge_trace(trace_dir, out, force=force)
        rows = pq.ParquetFile(written).metadata.num_rows
        typer.echo(f"wrote {written}: {rows:,} rows")
