"""`paradise export projections`: a trace as Charm++ Projections logs (<program>.sts and one
<program>.<pe>.log.gz per PE), the text format of Charm++'s trace-projections (VERSION 11).

DuckDB renders every record as text in per-PE time order (export_projections_lines.sql); the
batches stream into per-PE gzip files. A log's first line counts its records, known only at the
end, so each log is a gzip member with that line followed by the member of the records (readers
of gzip read concatenated members as one stream).
"""

from __future__ import annotations

import gzip
import os
import re
import shutil
import tempfile
from pathlib import Path
from typing import IO, Any

import numpy as np

from paradise.errors import OutputUnwritable
from paradise.export._stream import GZIP_LEVEL, string_bytes
from paradise.format import MAX_PES
from paradise.store.output import TMP_TAG

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
    """One open body file per PE at a time (the lines arrive sorted by PE). Every file is a
    temporary created exclusively beside its output (never through a planted link); `commit`
    renames them all into place, `discard` removes them (a failed run leaves no half output)."""

    def __init__(self, folder: Path, program: str) -> None:
        self.folder, self.program = folder, program
        self.pe: int | None = None
        self.fh: IO[bytes] | None = None
        self.raw: IO[bytes] | None = None
        self.body: Path | None = None
        self.count = 0
        self.written: list[int] = []
        self.staged: list[tuple[Path, Path]] = []  # (temporary, output)

    def temporary(self, out: Path) -> tuple[Path, IO[bytes]]:
        """A new temporary for `out`, opened for writing (O_EXCL), recorded for commit/discard."""
        fd, name = tempfile.mkstemp(prefix=f".{out.name}.{TMP_TAG}-{os.getpid()}-", suffix=".tmp", dir=self.folder)
        umask = os.umask(0)
        os.umask(umask)
        os.fchmod(fd, 0o666 & ~umask)
        self.staged.append((Path(name), out))
        return Path(name), os.fdopen(fd, "wb")

    def switch(self, pe: int) -> None:
        self.close()
        self.pe, self.count = pe, 0
        fd, name = tempfile.mkstemp(prefix=f".{self.program}.{pe}.log.body.{TMP_TAG}-{os.getpid()}-",
                                    suffix=".tmp", dir=self.folder)
        self.body = Path(name)
        self.raw = os.fdopen(fd, "wb")
        self.fh = gzip.GzipFile(filename="", mode="wb", compresslevel=GZIP_LEVEL, fileobj=self.raw, mtime=0)

    def write(self, data: memoryview, rows: int) -> None:
        assert self.fh is not None
        self.fh.write(data)
        self.count += rows

    def close(self) -> None:
        if self.fh is None or self.pe is None or self.body is None:
            return
        self.fh.close()
        self.raw.close()
        self.fh = None
        _, out = self.temporary(self.folder / f"{self.program}.{self.pe}.log.gz")
        with out, open(self.body, "rb") as src:
            out.write(gzip.compress(f"PROJECTIONS-RECORD {self.count}\n".encode(), compresslevel=GZIP_LEVEL, mtime=0))
            shutil.copyfileobj(src, out, 1 << 20)
        self.body.unlink()
        self.body = None
        self.written.append(self.pe)

    def commit(self) -> None:
        """Renames every finished temporary onto its output (replacing a link, never following it)."""
        for tmp, out in self.staged:
            os.replace(tmp, out)
        self.staged = []

    def discard(self) -> None:
        if self.fh is not None:
            for f in (self.fh, self.raw):
                try:
                    f.close()
                except OSError:
                    pass
            self.fh = None
        for tmp in [t for t, _ in self.staged] + ([self.body] if self.body else []):
            tmp.unlink(missing_ok=True)
        self.staged, self.body = [], None


def _ours(out: Path, program: str) -> list[Path]:
    """The files of an export of `program` in `out`: PROGRAM.sts and PROGRAM.<pe>.log.gz (not
    another run's PROGRAM.v2.0.log.gz or PROGRAM.notes.log.gz)."""
    pat = re.compile(re.escape(program) + r"\.(sts|\d+\.log\.gz)")
    try:
        return sorted(p for p in out.iterdir() if pat.fullmatch(p.name))
    except OSError:
        return []


def _prepare(out: Path, program: str, force: bool) -> list[Path]:
    """Checks the output folder and every file of an earlier export in it (store.output's checks:
    links, folders, devices); returns those files (removed after a successful run with --force)."""
    from paradise.store.output import check_output, prepare_output_folder, remove_stale

    if out.is_symlink() and not out.is_dir() or out.exists() and not out.is_dir():
        raise OutputUnwritable(f"{out}: is a file; name a folder for the Projections logs")
    prepare_output_folder(out)
    existing = _ours(out, program)
    for p in [out / f"{program}.sts", *existing]:
        check_output(p, force=force)
    for p in existing:
        remove_stale(p)
    return existing


def export(engine: Any, trace: Any, out: Path, *, force: bool = False) -> Path:
    """Writes the .sts and per-PE logs into folder `out`; returns the .sts path."""
    program = program_name(trace)
    export_pes(trace, [])
    old = _prepare(out, program, force)
    entries = engine.query("export_projections_entries").to_pydict()
    logs = _Logs(out, program)
    done = False
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
        pes = export_pes(trace, logs.written)
        sts = out / f"{program}.sts"
        _, fh = logs.temporary(sts)
        with fh:
            fh.write(sts_text(trace, program, entries, pes).encode("utf-8"))
        for p in old:  # an earlier export's logs of PEs this one has not
            if p.name not in {o.name for _, o in logs.staged}:
                p.unlink(missing_ok=True)
        logs.commit()
        done = True
    except OSError as exc:
        raise OutputUnwritable(f"{out}: cannot write ({exc.strerror or exc}); nothing written") from None
    finally:
        if not done:
            logs.discard()
    return sts


def export_pes(trace: Any, written: list[int]) -> int:
    """The PROCESSORS count of the .sts: the metadata's PE count, or more when the data has more
    PEs; refused past what a .sts may hold (the importer's bound)."""
    pes = max(int(trace.metadata.get("pes") or 0), max(written, default=-1) + 1)
    if pes > MAX_PES:
        raise OutputUnwritable(f"{trace.path}: {pes} PEs; a Projections .sts holds at most {MAX_PES}")
    return pes
