"""`paradise import FORMAT`: one subcommand per entry of paradise.importers.IMPORTERS."""

from __future__ import annotations

import inspect
import json
import sys
import warnings
from pathlib import Path
from typing import Any

import typer

from paradise.errors import visible
from paradise.importers import IMPORTERS, Importer

app = typer.Typer(help="Import foreign traces into paradise Parquet.", no_args_is_help=True)


def _run(imp: Importer, sources: list[Path], out: Path, force: bool, options: dict[str, Any]) -> None:
    from paradise import tuning

    tuning.apply("arrow-pool")  # opt-in (PARADISE_TUNING): before pyarrow's first allocation
    from importlib import import_module

    from paradise.report.progress import progress_bar

    import_module(imp.module)  # before the bar's clock starts: loading numpy/pyarrow is not progress
    with progress_bar(f"import {imp.format}", None) as bar, warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")

        def on_progress(done: int, total: int) -> None:
            bar.total = total
            bar.advance(done - bar.done)

        written = imp.import_trace(sources, out, force=force, on_progress=on_progress, **options)
    for w in caught:
        print(visible(f"paradise: warning: {w.message}"), file=sys.stderr)
    typer.echo(_summary(written, len(sources)))


def _summary(path: Path, n_sources: int) -> str:
    """`wrote OUT: N rows (by kind) from K PE(s)/rank(s)`, plus the importer's notes."""
    import pyarrow.parquet as pq
    from pyarrow._compute import call_function  # importing pyarrow.compute costs ~25 ms of start-up

    from paradise.format import read_metadata

    pf = pq.ParquetFile(path)
    kinds = pf.read(columns=["kind", "pe"], use_pandas_metadata=False)  # read_table would load pandas
    kind = kinds.column("kind").combine_chunks()
    counts = call_function("value_counts", [call_function("take", [kind.dictionary, kind.indices])]).to_pylist()
    by_kind = ", ".join(f"{c['counts']:,} {c['values']}" for c in sorted(counts, key=lambda c: -c["counts"]))
    meta = read_metadata(pf.schema_arrow.metadata) or {}
    pes = sorted(int(p) for p in call_function("unique", [kinds.column("pe")]).to_pylist() if p is not None)
    line = f"wrote {path}: {kinds.num_rows:,} rows" + (f" ({by_kind})" if by_kind else "")
    line += f" from {n_sources} source(s), PE/rank(s) {_ranges(pes)}"
    clock = (meta.get("clock") or {}).get("method")
    if clock:
        line += f", clock {clock}"
    notes = (meta.get("extra") or {}).get("notes") or {}
    return line + ("\nnotes: " + json.dumps(notes, sort_keys=True) if notes else "")


def _ranges(pes: list[int]) -> str:
    if len(pes) > 6:
        return f"{pes[0]}-{pes[-1]} ({len(pes)})"
    return ", ".join(map(str, pes)) or "none"


def _command(imp: Importer):
    """A typer command whose parameters are the common ones plus the importer's own options."""

    def command(**kw: Any) -> None:
        sources = kw.pop(imp.sources_name)
        _run(imp, sources if isinstance(sources, list) else [sources], kw.pop("out"), kw.pop("force"),
             {k: v for k, v in kw.items() if v is not None})

    params = [
        inspect.Parameter(
            imp.sources_name, inspect.Parameter.KEYWORD_ONLY,
            annotation=list[Path] if imp.many else Path, default=typer.Argument(..., help=imp.sources_help),
        ),
        inspect.Parameter("out", inspect.Parameter.KEYWORD_ONLY, annotation=Path,
                          default=typer.Option(..., "-o", "--out", metavar="FILE", help="Output Parquet trace file.")),
    ]  # fmt: skip
    for opt in imp.options:
        params.append(inspect.Parameter(
            opt.name, inspect.Parameter.KEYWORD_ONLY, annotation=opt.type | None,
            default=typer.Option(None, f"--{opt.name.replace('_', '-')}", help=opt.help),
        ))  # fmt: skip
    params.append(inspect.Parameter(
        "force", inspect.Parameter.KEYWORD_ONLY, annotation=bool,
        default=typer.Option(False, "--force", help="Overwrite OUT if it exists."),
    ))  # fmt: skip
    command.__signature__ = inspect.Signature(params)  # type: ignore[attr-defined]
    command.__doc__ = imp.help
    command.__name__ = f"import_{imp.format}"
    return command


for _imp in IMPORTERS.values():
    app.command(_imp.format, help=_imp.help)(_command(_imp))
