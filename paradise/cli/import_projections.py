"""`paradise import projections`: Charm++ Projections logs -> one paradise Parquet file."""

from __future__ import annotations

import json
import sys
import warnings
from pathlib import Path

import typer

from paradise.errors import visible


def register(app: typer.Typer) -> None:
    """Adds the `projections` subcommand to `paradise import`."""

    @app.command("projections")
    def projections_cmd(
        path: Path = typer.Argument(..., help="The run's .sts file or the folder holding it and its logs."),
        out: Path = typer.Option(..., "-o", "--out", help="Output Parquet file."),
        force: bool = typer.Option(False, "--force", help="Overwrite OUT if it exists."),
    ) -> None:
        """Import Charm++ Projections logs (.sts + per-PE .log/.log.gz) into one paradise Parquet file."""
        import pyarrow.compute as pc
        import pyarrow.parquet as pq

        from paradise.format import read_metadata
        from paradise.importers.projections import import_trace

        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            written = import_trace(path, out, force=force)
        for w in caught:
            print(visible(f"paradise: warning: {w.message}"), file=sys.stderr)
        kinds = pq.read_table(written, columns=["kind"]).column("kind")
        counts = pc.value_counts(kinds.combine_chunks().dictionary_decode()).to_pylist()
        meta = read_metadata(pq.read_schema(written).metadata) or {}
        by_kind = ", ".join(f"{c['counts']} {c['values']}" for c in sorted(counts, key=lambda c: -c["counts"]))
        typer.echo(f"wrote {written}: {len(kinds):,} rows" + (f" ({by_kind})" if by_kind else "")
                   + f" from {meta.get('pes')} PEs")
        notes = (meta.get("extra") or {}).get("notes") or {}
        if notes:
            typer.echo("notes: " + json.dumps(notes, sort_keys=True))
