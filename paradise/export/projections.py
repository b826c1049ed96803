"""`paradise export projections`: a trace as Charm++ Projections logs (<program>.sts and one
<program>.<pe>.log.gz per PE), the text format of Charm++'s trace-projections (VERSION 11).

DuckDB renders every record as text in per-PE time order (export_projections_lines.sql); the
batches stream into per-PE gzip files. A log's first line counts its records, known only at the
end, so each log is a gzip member with that line followed by the member of the records (readers
of gzip read concatenated members as one stream).
"""

from __future__ import annotations

import gzip
import re
import shutil
from pathlib import Path
from typing import IO, Any

import numpy as np

from paradise.errors import OutputExists, OutputUnwritable
from paradise.export._stream import GZIP_LEVEL, string_bytes

STS_VERSION = "11.0"
"""The .sts / log version written: chare lines carry the index dimensions (read from 9.0 on)."""
BATCH_ROWS = 1 << 16


def program_name(trace: Any) -> str:
    """The run's file stem: the program name with anything but letters, digits, '.', '_' and '-' replaced."""
    name = re.sub(r"[^A-Za-z0-9._-]", "_", str(trace.program or "trace")).strip(".") or "trace"
    return name


def _quote(text: str) -> str:
    """A quoted .sts name (readers take the text up to the line's last quote; a line break,
    which would end the record, becomes a space)."""
    return '"' + text.replace("\n", " ").replace("\r", " ") + '"'


def sts_text(trace: Any, program: str, entries: dict[str, list[Any]], pes: int) -> str:
    """The .sts file: machine, PE count, one CHARE line per collection, one ENTRY line per entry point."""
    chares: dict[Any, int] = {}
    ndims: dict[Any, int] = {}
    for coll, nd in zip(entries["coll"], entries["ndims"]):
        chares.setdefault(coll, len(chares))
        ndims[coll] = max(ndims.get(coll, 0), int(nd or 0))
    lines = ["PROJECTIONS_ID", f"VERSION {STS_VERSION}", 'MACHINE "paradise-export"', f"PROCESSORS {pes}",
             f"TOTAL_CHARES {len(chares)}", f"TOTAL_EPS {len(entries['ep'])}", "TOTAL_MSGS 0",
             "TOTAL_PSEUDOS 0", "TOTAL_EVENTS 0"]
    for coll, cid in chares.items():
        lines.append(f"CHARE {cid} {_quote('(none)' if coll is None else str(coll))} {ndims[coll] or -1}")
    for ep, coll, name in zip(entries["ep"], entries["coll"], entries["name"]):
        lines.append(f"ENTRY CHARE {ep} {_quote('' if name is None else str(name))} {chares[coll]} 0")
    lines += ["TOTAL_STATS 0", "END", ""]
    return "\n".join(lines)


class _Logs:
    """One open body file per PE at a time (the lines arrive sorted by PE)."""

    def __init__(self, folder: Path, program: str) -> None:
        self.folder, self.program = folder, program
        self.pe: int | None = None
        self.fh: IO[bytes] | None = None
        self.count = 0
        self.written: list[int] = []

    def _body(self, pe: int) -> Path:
        return self.folder / f".{self.program}.{pe}.log.body.gz"

    def switch(self, pe: int) -> None:
        self.close()
        self.pe, self.count = pe, 0
        self.fh = gzip.open(self._body(pe), "wb", compresslevel=GZIP_LEVEL)

    def write(self, data: memoryview, rows: int) -> None:
        assert self.fh is not None
        self.fh.write(data)
        self.count += rows

    def close(self) -> None:
        if self.fh is None or self.pe is None:
            return
        self.fh.close()
        body = self._body(self.pe)
        final = self.folder / f"{self.program}.{self.pe}.log.gz"
        with open(final, "wb") as out, open(body, "rb") as src:
            out.write(gzip.compress(f"PROJECTIONS-RECORD {self.count}\n".encode(), compresslevel=GZIP_LEVEL, mtime=0))
            shutil.copyfileobj(src, out, 1 << 20)
        body.unlink()
        self.written.append(self.pe)
        self.fh = None


def _prepare(out: Path, program: str, force: bool) -> None:
    if out.exists() and not out.is_dir():
        raise OutputUnwritable(f"{out}: is a file; name a folder for the Projections logs")
    ours = [out / f"{program}.sts", *sorted(out.glob(f"{program}.*.log.gz"))] if out.is_dir() else []
    existing = [p for p in ours if p.exists()]
    if existing and not force:
        raise OutputExists(f"{existing[0]}: already exists; pass --force to overwrite it")
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise OutputUnwritable(f"{out}: cannot create the folder ({exc.strerror or exc})") from None
    for p in existing:
        p.unlink()


def export(engine: Any, trace: Any, out: Path, *, force: bool = False) -> Path:
    """Writes the .sts and per-PE logs into folder `out`; returns the .sts path."""
    program = program_name(trace)
    _prepare(out, program, force)
    entries = engine.query("export_projections_entries").to_pydict()
    logs = _Logs(out, program)
    try:
        for batch in engine.batches("export_projections_lines", batch_rows=BATCH_ROWS):
            pe = batch.column(0).to_numpy(zero_copy_only=False)
            lines = batch.column(1)
            cuts = np.flatnonzero(np.diff(pe)) + 1  # where the PE changes inside the batch
            for a, b in zip(np.concatenate([[0], cuts]), np.concatenate([cuts, [len(pe)]])):
                if int(pe[a]) != logs.pe:
                    logs.switch(int(pe[a]))
                logs.write(string_bytes(lines, int(a), int(b)), int(b - a))
        logs.close()
        pes = max(int(trace.metadata.get("pes") or 0), max(logs.written, default=-1) + 1)
        sts = out / f"{program}.sts"
        sts.write_text(sts_text(trace, program, entries, pes), encoding="utf-8")
    except OSError as exc:
        raise OutputUnwritable(f"{out}: cannot write ({exc.strerror or exc})") from None
    return sts
