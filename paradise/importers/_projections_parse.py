"""Reading Charm++ Projections files: the .sts tables and per-PE logs (tokenised with Arrow).

The log parser never loops over records in Python: lines are read in blocks by Arrow's CSV
reader, split into tokens and cast to int64 in C; records are then addressed by offsets into
one flat token array. Only the rare records that carry floats or text (USER_STAT, notes) are
parsed line by line.
"""

from __future__ import annotations

import gzip
import re
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.csv as pacsv

from paradise.errors import ImportFormatError, TruncatedTrace
from paradise.format import MAX_PES
from paradise.importers import regular_file

# Record type numbers (Charm++ src/ck-perf/trace-common.h).
CREATION, BEGIN_PROCESSING, END_PROCESSING = 1, 2, 3
ENQUEUE, DEQUEUE = 4, 5
BEGIN_COMPUTATION, END_COMPUTATION = 6, 7
BEGIN_INTERRUPT, END_INTERRUPT, MESSAGE_RECV = 8, 9, 10
BEGIN_TRACE, END_TRACE, USER_EVENT = 11, 12, 13
BEGIN_IDLE, END_IDLE = 14, 15
BEGIN_PACK, END_PACK, BEGIN_UNPACK, END_UNPACK = 16, 17, 18, 19
CREATION_BCAST, CREATION_MULTICAST = 20, 21
USER_SUPPLIED, MEMORY_USAGE, USER_SUPPLIED_NOTE, USER_SUPPLIED_BRACKETED_NOTE = 26, 27, 28, 29
END_PHASE, USER_STAT = 30, 32
BEGIN_USER_EVENT_PAIR, END_USER_EVENT_PAIR, USER_EVENT_PAIR = 98, 99, 100

RECORD_NAMES = {
    1: "CREATION", 2: "BEGIN_PROCESSING", 3: "END_PROCESSING", 4: "ENQUEUE", 5: "DEQUEUE",
    6: "BEGIN_COMPUTATION", 7: "END_COMPUTATION", 8: "BEGIN_INTERRUPT", 9: "END_INTERRUPT",
    10: "MESSAGE_RECV", 11: "BEGIN_TRACE", 12: "END_TRACE", 13: "USER_EVENT", 14: "BEGIN_IDLE",
    15: "END_IDLE", 16: "BEGIN_PACK", 17: "END_PACK", 18: "BEGIN_UNPACK", 19: "END_UNPACK",
    20: "CREATION_BCAST", 21: "CREATION_MULTICAST", 26: "USER_SUPPLIED", 27: "MEMORY_USAGE_CURRENT",
    28: "USER_SUPPLIED_NOTE", 29: "USER_SUPPLIED_BRACKETED_NOTE", 30: "END_PHASE", 32: "USER_STAT",
    98: "BEGIN_USER_EVENT_PAIR", 99: "END_USER_EVENT_PAIR", 100: "USER_EVENT_PAIR",
}
SKIPPED_TYPES = frozenset({ENQUEUE, DEQUEUE, BEGIN_INTERRUPT, END_INTERRUPT, MESSAGE_RECV})
"""Known records that carry nothing paradise keeps (counted in the import summary)."""
TEXT_TYPES = (USER_SUPPLIED_NOTE, USER_SUPPLIED_BRACKETED_NOTE, USER_STAT)
"""Records whose fields are not all integers: parsed line by line (they are rare)."""

# Minimum number of fields after the type number, per record type.
MIN_FIELDS = {1: 7, 20: 8, 21: 8, 2: 9, 3: 7, 4: 4, 5: 4, 6: 1, 7: 1, 8: 3, 9: 3, 10: 5, 11: 1, 12: 1,
              13: 4, 14: 2, 15: 2, 16: 2, 17: 2, 18: 2, 19: 2, 26: 1, 27: 2, 30: 2,
              98: 4, 99: 4, 100: 4}
# Index (after the type number) of the timestamp field, per record type.
TIME_FIELD = {1: 2, 20: 2, 21: 2, 2: 2, 3: 2, 4: 1, 5: 1, 6: 0, 7: 0, 8: 0, 9: 0, 10: 2, 11: 0, 12: 0,
              13: 1, 14: 0, 15: 0, 16: 0, 17: 0, 18: 0, 19: 0, 26: 1, 27: 1, 30: 1, 98: 1, 99: 1, 100: 1}

_STS_KEYWORD = re.compile(r"^[A-Z][A-Z0-9_]*$")
_LOG_NAME = r"\.(?P<pe>\d+)\.log(?P<gz>\.gz)?$"
MAX_PAPI_EVENTS = 1024
"""Most PAPI counters per record a .sts may declare."""
BLOCK_BYTES = 1 << 24
"""Arrow CSV block size: 16 MiB of log text per tokenising step bounds peak memory per block."""


@dataclass
class Sts:
    """The static tables of a run (.sts)."""

    path: Path
    program: str
    version: float
    pes: int
    machine: str = ""
    smp: tuple[int, int] | None = None
    chares: dict[int, tuple[str, int]] = field(default_factory=dict)   # id -> (name, ndims)
    entries: dict[int, tuple[str, int]] = field(default_factory=dict)  # ep -> (name, chare id)
    events: dict[int, str] = field(default_factory=dict)
    stats: dict[int, str] = field(default_factory=dict)
    papi: list[str] = field(default_factory=list)
    provenance: dict[str, str] = field(default_factory=dict)

    @property
    def worker_pes(self) -> int:
        """PEs that run entry methods; SMP builds may also trace one comm thread per node."""
        return self.smp[0] * self.smp[1] if self.smp else self.pes


def _quoted(rest: str) -> tuple[str, str]:
    """Splits `"a name" tail` (or an unquoted first token) into (name, tail)."""
    rest = rest.strip()
    if rest.startswith('"'):
        end = rest.rfind('"')
        if end <= 0:
            raise ValueError("unbalanced quote")
        return rest[1:end], rest[end + 1:].strip()
    head, _, tail = rest.partition(" ")
    return head, tail.strip()


def read_sts(path: Path) -> Sts:
    """Parses a .sts file; any line that is not `KEYWORD ...` makes it a malformed .sts."""
    try:
        text = path.read_text(encoding="utf-8")
    except UnicodeDecodeError as exc:
        raise ImportFormatError(f"{path}: not a Projections .sts file (not text)") from exc
    sts = Sts(path=path, program=path.name[: -len(".sts")], version=0.0, pes=0)
    seen = set()
    for no, line in enumerate(text.split("\n"), 1):  # only \n ends a record: names may hold \x85, \u2028 ...
        if not line.strip():
            continue
        key, _, rest = line.strip().partition(" ")
        if not _STS_KEYWORD.match(key):
            raise ImportFormatError(f"{path}: not a Projections .sts file (line {no}: {line.strip()[:40]!r})")
        seen.add(key)
        try:
            _sts_line(sts, key, rest)
        except (ValueError, IndexError) as exc:
            raise ImportFormatError(f"{path}: malformed .sts line {no}: {line.strip()[:60]!r}") from exc
        if key == "END":
            break
    missing = [k for k in ("VERSION", "PROCESSORS") if k not in seen]
    if missing:
        raise ImportFormatError(f"{path}: not a Projections .sts file (no {' / '.join(missing)} line)")
    if not 0 < sts.pes <= MAX_PES or (sts.smp and not 0 < sts.worker_pes <= MAX_PES):
        raise ImportFormatError(f"{path}: malformed .sts (PROCESSORS {sts.pes}, SMPMODE {sts.smp}: "
                                f"between 1 and {MAX_PES} PEs expected)")
    bad = sorted({c for _, c in sts.entries.values() if c not in sts.chares})
    if bad:
        raise ImportFormatError(f"{path}: malformed .sts (ENTRY lines name unknown chare ids {bad[:5]})")
    return sts


def _sts_line(sts: Sts, key: str, rest: str) -> None:
    if key == "VERSION":
        sts.version = float(rest.split()[0])
    elif key == "PROCESSORS":
        sts.pes = int(rest.split()[0])
    elif key == "SMPMODE":
        a, b = rest.split()[:2]
        sts.smp = (int(a), int(b))
    elif key == "MACHINE":
        sts.machine = _quoted(rest)[0]
    elif key in ("USERNAME", "HOSTNAME", "COMMANDLINE", "TIMESTAMP", "CHARMVERSION"):
        sts.provenance[key.lower()] = _quoted(rest)[0] if rest.strip() else ""
    elif key == "CHARE":
        cid, _, tail = rest.strip().partition(" ")
        name, tail = _quoted(tail)
        ndims = int(tail.split()[0]) if tail.split() and sts.version >= 9 else -1
        sts.chares[int(cid)] = (name, ndims)
    elif key == "ENTRY":
        _kind, _, tail = rest.strip().partition(" ")
        ep, _, tail = tail.strip().partition(" ")
        name, tail = _quoted(tail)
        chare = tail.split()[0]
        if not 0 <= int(ep) < 2**31:
            raise ValueError("entry id out of range")
        sts.entries[int(ep)] = (name, int(chare))
    elif key in ("EVENT", "STAT"):
        eid, _, name = rest.strip().partition(" ")
        (sts.events if key == "EVENT" else sts.stats)[int(eid)] = name.strip()
    elif key == "PAPI_EVENT":
        idx, name = rest.split()[:2]
        if not 0 <= int(idx) < MAX_PAPI_EVENTS:
            raise ValueError("PAPI event index out of range")
        while len(sts.papi) <= int(idx):
            sts.papi.append("")
        sts.papi[int(idx)] = name
    elif key == "TOTAL_PAPI_EVENTS":
        n = int(rest.split()[0])
        if not 0 <= n <= MAX_PAPI_EVENTS:
            raise ValueError("PAPI event count out of range")
        sts.papi = (sts.papi + [""] * n)[:n]


def find_logs(sts: Sts) -> list[tuple[int, Path]]:
    """Per-PE logs beside the .sts (also in `<prog>.projdir.K/` subfolders), sorted by PE."""
    pat = re.compile("^" + re.escape(sts.program) + _LOG_NAME)
    folder = sts.path.parent
    candidates = list(folder.iterdir()) + [
        p for d in folder.glob(glob_escape(sts.program) + ".projdir.*") if d.is_dir() for p in d.iterdir()
    ]
    by_pe: dict[int, Path] = {}
    for p in candidates:
        m = pat.match(p.name)
        if m:
            regular_file(p, "a Projections log")
            pe = int(m.group("pe"))
            if pe >= sts.pes:
                raise ImportFormatError(f"{p}: a log for PE {m.group('pe')}, but {sts.path.name} declares "
                                        f"{sts.pes} PEs")
            if pe not in by_pe or m.group("gz"):  # both forms present: the .gz is what Charm++ wrote last
                by_pe[pe] = p
    if not by_pe:
        raise ImportFormatError(f"{folder}: no Projections logs {sts.program}.<pe>.log[.gz] beside {sts.path.name}")
    return sorted(by_pe.items())


def glob_escape(s: str) -> str:
    return re.sub(r"([\[\]*?])", r"[\1]", s)


@dataclass
class LogRecords:
    """One PE's log as columns: record i has type `types[i]` and fields flat[starts[i]:starts[i]+lens[i]]."""

    path: Path
    types: np.ndarray
    starts: np.ndarray
    lens: np.ndarray
    flat: np.ndarray
    text: list[tuple[int, int, str]]
    """(record position, type, line) for records parsed line by line (TEXT_TYPES)."""
    malformed: int = 0

    def where(self, rtype: int, min_fields: int | None = None) -> np.ndarray:
        """Positions of records of one type that have at least the fields the format requires."""
        need = MIN_FIELDS.get(rtype, 0) if min_fields is None else min_fields
        return np.flatnonzero((self.types == rtype) & (self.lens >= need))

    def field(self, idx: np.ndarray, k: int | np.ndarray) -> np.ndarray:
        return self.flat[self.starts[idx] + k]

    def times(self) -> np.ndarray:
        """Timestamp of every record (µs), -1 where the record type has none."""
        out = np.full(len(self.types), -1, dtype=np.int64)
        for rtype, k in TIME_FIELD.items():
            idx = np.flatnonzero((self.types == rtype) & (self.lens > k))
            if len(idx):
                out[idx] = self.field(idx, k)
        for pos, _rtype, line in self.text:
            toks = line.split()
            if len(toks) > 1 and toks[1].lstrip("-").isdigit():
                out[pos] = int(toks[1])
        return out


_READ = pacsv.ReadOptions(column_names=["line"], block_size=BLOCK_BYTES)
_PARSE = pacsv.ParseOptions(delimiter="\x1f", quote_char=False, double_quote=False, escape_char=False,
                            newlines_in_values=False, ignore_empty_lines=True)
_CONVERT = pacsv.ConvertOptions(column_types={"line": pa.string()}, strings_can_be_null=False,
                                quoted_strings_can_be_null=False)
_INT_LINE = r"^-?\d+(\s+-?\d+)*$"
_TEXT_LINE = r"^(28|29|32)( |$)"


def read_log(path: Path) -> LogRecords:
    """Tokenises one text log (plain or gzip) into integer columns; raises on truncation."""
    gz = path.name.endswith(".gz")
    with open(path, "rb") as fh:
        head = fh.read(2)
    if gz and head != b"\x1f\x8b":
        raise ImportFormatError(f"{path}: not a gzip file")
    try:
        stream = pa.input_stream(str(path), compression="gzip" if gz else None)
        reader = pacsv.open_csv(stream, read_options=_READ, parse_options=_PARSE, convert_options=_CONVERT)
        return _tokenise(path, reader)
    except (OSError, EOFError, pa.ArrowInvalid) as exc:
        if gz and (isinstance(exc, EOFError) or _gzip_truncated(path)):
            raise TruncatedTrace(f"{path}: truncated gzip stream (the log was cut short)") from exc
        raise ImportFormatError(f"{path}: not a Projections text log (binary or corrupt data; "
                                f"binary logs from +binary-trace are not read)") from exc


def _gzip_truncated(path: Path) -> bool:
    try:
        with gzip.open(path, "rb") as fh:
            while fh.read(1 << 20):
                pass
    except EOFError:
        return True
    except OSError:
        return False
    return False


def _tokenise(path: Path, reader: pacsv.CSVStreamingReader) -> LogRecords:
    flats, types, toks_per_line, text = [], [], [], []
    pos0, malformed, header = 0, 0, None
    for batch in reader:
        lines = pc.utf8_trim_whitespace(batch.column(0))
        if header is None:
            if len(lines) == 0:
                continue
            header = lines[0].as_py()
            if not header.startswith("PROJECTIONS-RECORD"):
                raise ImportFormatError(f"{path}: not a Projections log (first line {header[:40]!r})")
            lines = lines.slice(1)
        n = len(lines)
        is_int = pc.match_substring_regex(lines, _INT_LINE).to_numpy(zero_copy_only=False)
        is_text = pc.match_substring_regex(lines, _TEXT_LINE).to_numpy(zero_copy_only=False)
        line_type = np.full(n, -1, dtype=np.int64)
        line_tok = np.zeros(n, dtype=np.int64)
        ints = np.flatnonzero(is_int & ~is_text)
        if len(ints):
            toks = pc.ascii_split_whitespace(lines.take(pa.array(ints)))
            ln = pc.list_value_length(toks).to_numpy(zero_copy_only=False).astype(np.int64)
            flat = pc.cast(pc.list_flatten(toks), pa.int64()).to_numpy()
            line_type[ints] = flat[np.cumsum(ln) - ln]
            line_tok[ints] = ln
            flats.append(flat)
        for i in np.flatnonzero(is_text):
            line = lines[int(i)].as_py()
            line_type[i] = int(line.split(" ", 1)[0])
            text.append((pos0 + int(i), int(line_type[i]), line))
        malformed += int(np.count_nonzero(~is_int & ~is_text))
        types.append(line_type)
        toks_per_line.append(line_tok)
        pos0 += n
    if header is None:
        raise ImportFormatError(f"{path}: empty Projections log")
    flat = np.concatenate(flats) if flats else np.zeros(0, dtype=np.int64)
    t = np.concatenate(types) if types else np.zeros(0, dtype=np.int64)
    tok = np.concatenate(toks_per_line) if toks_per_line else np.zeros(0, dtype=np.int64)
    starts = np.cumsum(tok) - tok + 1  # first field after the type number
    return LogRecords(path=path, types=t, starts=starts, lens=np.maximum(tok - 1, 0), flat=flat,
                      text=text, malformed=malformed)
