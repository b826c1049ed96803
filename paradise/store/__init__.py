"""Opening traces: one Parquet file or a directory of per-PE (part) files, checked before use."""

from __future__ import annotations

import hashlib
import re
import stat
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from paradise.errors import NotAParadiseTrace, SchemaVersionError, TraceNotFound, TruncatedTrace
from paradise.format import ADDED_COLUMNS, OUTPUTS_FILE, REQUIRED_COLUMNS, SUPPORTED_MAJORS
from paradise.format.spool import SUFFIX as SPOOL_SUFFIX
from paradise.format.summary import read_summary
from paradise.store import clockrefine, clockstore
from paradise.store.clock import clock_summary, file_corrections, refinable
from paradise.store.validate import check_columns, check_metadata, check_values, parse_metadata

_PART_RE = re.compile(r"^(?P<stem>.+?)\.part-(?P<seq>\d+)\.parquet$")


@dataclass(frozen=True)
class TraceHandle:
    """A validated, read-only view of a trace's files. No analysis methods, ever."""

    path: Path
    files: tuple[Path, ...]
    metadata: dict[str, Any]
    """Merged metadata: that of the first file, plus `pes_seen` and `complete` over all files."""
    file_metadata: tuple[dict[str, Any], ...] = field(repr=False)
    num_rows: int = 0
    corrections: dict[str, tuple[int, int, float]] = field(default_factory=dict, repr=False)
    """Clock correction per file path (paradise.store.clock): applied once, by the engines' `events` view."""
    same_columns: bool = False
    """Whether every file has the same columns of the same types, the format's added ones
    (format.ADDED_COLUMNS) among them: the engines' `events` then reads the files as they are, without
    uniting their schemas by name at each query (which opens every file: 0.3 ms a file)."""
    _summaries: dict[str, pa.Table | None] = field(default_factory=dict, repr=False, compare=False)
    """Each file's summary once read (summary())."""

    @property
    def source(self) -> str:
        return str(self.metadata.get("source", "unknown"))

    @property
    def program(self) -> str:
        return str(self.metadata.get("program", ""))

    @property
    def complete(self) -> bool:
        return bool(self.metadata.get("complete"))

    @property
    def outputs(self) -> Path | None:
        """The model-outputs table beside the events, when there is one."""
        candidate = (self.path if self.path.is_dir() else self.path.parent) / OUTPUTS_FILE
        return candidate if candidate.exists() else None

    @property
    def fingerprint(self) -> str:
        """Stable id of the trace content: file names, sizes and row counts (not paths)."""
        h = hashlib.sha256()
        for f, m in zip(self.files, self.file_metadata):
            h.update(f.name.encode())
            h.update(str(m.get("_rows")).encode())
            h.update(str(m.get("program")).encode())
        return h.hexdigest()[:16]

    def sql_files(self) -> list[str]:
        return [str(f) for f in self.files]

    def summary(self, file: str) -> pa.Table | None:
        """The file's summary rows (paradise.format.summary: overview_pe over the file, from its
        footer) when it carries one that agrees with the file, read on first use; else None."""
        if file not in self._summaries:
            try:
                self._summaries[file] = read_summary(pq.ParquetFile(file))
            except (OSError, pa.ArrowException):  # gone or damaged since opened: the rows' reader says so
                self._summaries[file] = None
        return self._summaries[file]

    def summaries(self, files: list[str]) -> list[pa.Table] | None:
        """Each of `files`' summary rows, or None unless every one has a summary and no clock
        correction (a summary holds the rows' times as written)."""
        if any(f in self.corrections for f in files):
            return None
        out = []
        for f in files:
            s = self.summary(f)
            if s is None:
                return None
            out.append(s)
        return out

    @property
    def may_hold_pieces(self) -> bool:
        """Whether any file may hold `piece` rows (format 1.1), by its footer (may_hold_pieces)."""
        return any(m.get("_pieces", True) for m in self.file_metadata)


def may_hold_pieces(pf: pq.ParquetFile) -> bool:
    """Whether a file may hold `piece` rows, from its footer alone: only a piece has an exec_t0, so
    a file without the column, or whose row-group statistics count every exec_t0 null, holds none
    (a file without statistics may)."""
    if "exec_t0" not in pf.schema_arrow.names:
        return False
    col = pf.schema_arrow.get_field_index("exec_t0")
    meta = pf.metadata
    for i in range(meta.num_row_groups):
        chunk = meta.row_group(i)
        stats = chunk.column(col).statistics
        if stats is None or not stats.has_null_count or stats.null_count != chunk.num_rows:
            return True
    return False


def _trace_files(path: Path) -> list[Path]:
    """Event files of a directory: final per-PE files, plus parts of PEs that never closed."""
    files = sorted(p for p in path.glob("*.parquet") if p.name != OUTPUTS_FILE and not p.name.startswith("."))
    finals = {p.stem for p in files if not _PART_RE.match(p.name)}
    chosen = []
    for p in files:
        m = _PART_RE.match(p.name)
        if m and m.group("stem") in finals:
            continue  # a crash during compaction left parts beside the final file
        chosen.append(p)
    return chosen


def _check_file(f: Path) -> tuple[dict[str, Any], int, pa.Schema]:
    try:
        st = f.stat()
    except OSError as exc:
        raise TraceNotFound(f"{f}: cannot read ({exc.strerror or exc})") from None
    if not stat.S_ISREG(st.st_mode):
        raise NotAParadiseTrace(f"{f}: not a regular file (a folder, FIFO or device), not a Parquet trace")
    if st.st_size == 0:
        raise NotAParadiseTrace(f"{f}: empty file, not a Parquet trace")
    try:
        pf = pq.ParquetFile(f)
        schema = pf.schema_arrow
    except Exception as exc:  # pyarrow raises ArrowInvalid/OSError with long texts
        with open(f, "rb") as fh:
            head = fh.read(4)
        if head == b"PAR1":
            raise TruncatedTrace(f"{f}: truncated or damaged Parquet file (no valid footer)") from exc
        raise NotAParadiseTrace(f"{f}: not a Parquet file") from exc
    meta = parse_metadata(f, schema.metadata)
    if meta is None:
        raise NotAParadiseTrace(f"{f}: Parquet file without paradise trace metadata (not a paradise trace)")
    version = meta.get("format_version")
    if not isinstance(version, str) or version.split(".")[0] not in SUPPORTED_MAJORS:
        shown = version if isinstance(version, str) and len(version) < 20 else "?"
        raise SchemaVersionError(
            f"{f}: trace format version {shown or '?'} is not supported (this paradise reads "
            f"{', '.join(m + '.x' for m in SUPPORTED_MAJORS)})"
        )
    check_metadata(f, meta)
    missing = [c for c in REQUIRED_COLUMNS if c not in schema.names]
    if missing:
        raise NotAParadiseTrace(f"{f}: missing required column(s) {', '.join(missing)}")
    check_columns(f, schema)
    check_values(f, pf, meta)
    meta["_rows"] = pf.metadata.num_rows
    meta["_pieces"] = may_hold_pieces(pf)
    return meta, pf.metadata.num_rows, schema


def _check_pes_unique(files: list[Path], metas: list[dict[str, Any]]) -> None:
    """Two files of the same PE (and torchrun attempt) would double its rows; only the parts
    of one PE's unfinished file share a PE."""
    owner: dict[tuple[int, Any], str] = {}
    for f, m in zip(files, metas):
        pe = m.get("pe")
        if pe is None:
            continue
        extra = m.get("extra") if isinstance(m.get("extra"), dict) else {}
        key = (pe, extra.get("restart", 0))
        part = _PART_RE.match(f.name)
        stem = part.group("stem") if part else f.name.removesuffix(".parquet")
        if owner.setdefault(key, stem) != stem:
            raise NotAParadiseTrace(f"{f}: holds PE {pe}, as does {owner[key]} (two files of one PE)")


FREE_PES = 4096
"""PE counts any trace may claim whatever its size (per-PE arrays of this length cost nothing)."""


def _check_pes_backed(p: Path, claimed: Any, rows: int) -> None:
    """Analyses size per-PE arrays by the metadata's PE count: past FREE_PES it must be backed by
    the data (at least one row per PE), so work and memory follow the trace's size."""
    if isinstance(claimed, int) and claimed > max(rows, FREE_PES):
        raise NotAParadiseTrace(f"{p}: metadata says {claimed:,} PEs, but the trace holds {rows:,} rows "
                                f"(fewer than one per PE): a damaged PE count")


def _convert_spools(directory: Path, one: Path | None = None) -> None:
    """A directory whose tracer never got to convert its spools (a killed launcher), or `one` spool
    of it: converted here, once (paradise.format.compact: under a lock, idempotent)."""
    from paradise.format.compact import SpoolError, convert, spools
    from paradise.store.compaction import compact

    if one is None and not spools(directory):
        return
    try:
        if one is not None:
            convert(one)
        else:
            compact(directory)
    except SpoolError as exc:
        raise NotAParadiseTrace(str(exc)) from None
    except OSError as exc:  # a read-only folder, a full disk
        raise TraceNotFound(f"{directory}: holds raw spools (pe-*.rows) that cannot be converted to Parquet "
                            f"here ({exc.strerror or exc})") from None


def open_trace(path: str | Path, memory_limit: int | None = None) -> TraceHandle:
    """Validates a trace file or directory and returns its handle. `memory_limit` (bytes, default
    the engines'): what aligning the clocks may use where it must be measured here (an older trace)."""
    p = Path(path)
    try:
        exists = p.exists()
    except OSError:  # a symlink loop, a name too long
        exists = False
    if not exists:
        raise TraceNotFound(f"{p}: no such file or directory")
    if p.is_file() and p.name.endswith(SPOOL_SUFFIX):  # one PE's spool named directly
        _convert_spools(p.parent, p)
        p = p.with_name(p.name.removesuffix(SPOOL_SUFFIX) + ".parquet")
    if p.is_dir():
        _convert_spools(p)
        files = _trace_files(p)
        if not files:
            raise TraceNotFound(f"{p}: directory holds no paradise trace files (*.parquet)")
    else:
        files = [p]
    metas, schemas, rows = [], [], 0
    for f in files:
        m, n, schema = _check_file(f)
        metas.append(m)
        schemas.append(schema)
        rows += n
    _check_pes_unique(files, metas)
    merged = dict(metas[0])
    merged.pop("_rows", None)
    merged.pop("_pieces", None)
    merged.pop("pe", None)
    parts_left = any(_PART_RE.match(f.name) for f in files)
    merged["complete"] = all(bool(m.get("complete")) for m in metas) and not parts_left
    pes = sorted({m["pe"] for m in metas if m.get("pe") is not None})
    if pes:
        merged["pes_seen"] = pes
    _check_pes_backed(p, merged.get("pes"), rows)
    clock = clock_summary(files, metas)
    corrections = file_corrections(files, metas)
    stored = clockstore.stored(files, metas)  # every file's stored part checked, the table rebuilt
    if clock is not None and clock["offsets"]:  # per-PE offsets live in each PE's own file
        if refinable(clock):
            names, pes = [str(f) for f in files], [m.get("pe") for m in metas]
            refinement = stored or clockrefine.measure(names, corrections, clock, memory_limit)
            corrections, clock = clockrefine.apply(refinement, names, pes, corrections, clock)
        merged["clock"] = clock
    return TraceHandle(path=p, files=tuple(files), metadata=merged, file_metadata=tuple(metas), num_rows=rows,
                       corrections=corrections, same_columns=_same_columns(schemas))


def _same_columns(schemas: list[pa.Schema]) -> bool:
    """Whether the files' schemas are one (metadata aside) that holds every added column."""
    first = schemas[0]
    return all(c in first.names for c in ADDED_COLUMNS) and all(s.equals(first) for s in schemas[1:])
