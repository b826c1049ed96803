"""The paradise trace schema: the one module that tracers, importers and hints share.

Documented column by column in docs/trace-format.md (a test checks that every column here is
documented there). Names, metadata and index packing need nothing but the standard library, so a
traced program imports them without pyarrow (~50 ms); the Arrow schema (SCHEMA, COLUMNS,
empty_table, conform) lives in paradise.format.schema and is loaded on first use.
"""

from __future__ import annotations

import json
from enum import Enum
from typing import Any

FORMAT_VERSION = "1.1"
"""Major.minor. Readers accept every minor of the majors they know."""

SUPPORTED_MAJORS = ("1",)

META_KEY = b"paradise"
"""Parquet key-value metadata key holding the JSON trace metadata."""

OUTPUTS_FILE = "outputs.parquet"
"""Model outputs for distance metrics live beside the event files under this name."""


class Kind(str, Enum):
    """Event kinds; the value is what the `kind` column holds."""

    EXEC = "exec"
    IDLE = "idle"
    SEND = "send"
    RECV = "recv"
    CREATE = "create"
    MIGRATE = "migrate"
    COLLECTIVE = "collective"
    STEP = "step"
    PHASE = "phase"
    CHECKPOINT = "checkpoint"
    RESTORE = "restore"
    FAILURE = "failure"
    RESTART = "restart"
    MARK = "mark"
    PIECE = "piece"


# (name, type name, meaning). Order is the on-disk column order; paradise.format.schema.ARROW_TYPES
# gives each type name its Arrow type ("dict": dictionary<int32, string>).
COLUMN_SPECS: tuple[tuple[str, str, str], ...] = (
    ("kind", "dict", "event kind, one of Kind"),
    ("pe", "int32", "processor: Charm PE or PyTorch global rank"),
    ("t0", "int64", "start, ns since the run's start, clock offsets applied"),
    ("t1", "int64", "end, ns (null for instants)"),
    ("active", "int64", "ns actually running within [t0, t1] (coroutines: suspended time excluded)"),
    ("tid", "int64", "thread id (Kineto) or 0"),
    ("cat", "dict", "source category: Kineto cat (cpu_op, kernel, ...), Charm chare kind, ..."),
    ("coll", "dict", "object collection: chare class + creation ordinal (e.g. 'Cell#0'), process group"),
    ("obj", "int64", "object index within coll, packed (see pack_index)"),
    ("index", "dict", "object index as JSON list text, e.g. '[3,4]'"),
    ("name", "dict", "entry method / op / kernel / collective / step / checkpoint name"),
    ("msg", "int64", "id linking a cause to its effects: send -> exec(s), launch -> kernel"),
    ("peer_pe", "int32", "the other side's PE of a message"),
    ("peer_coll", "dict", "the other side's collection"),
    ("peer_obj", "int64", "the other side's packed object index"),
    ("bytes", "int64", "payload bytes"),
    ("step", "int32", "iteration number where known"),
    ("stream", "int32", "device stream"),
    ("prio", "int32", "message priority"),
    ("group", "dict", "process group name or description (collectives)"),
    ("group_size", "int32", "process group size (collectives)"),
    ("dtype", "dict", "element type (collectives)"),
    ("args", "string", "other attributes as JSON object text (sparse)"),
    ("exec_t0", "int64", "piece rows: t0 of the exec row (same pe) whose running piece this is; else null"),
)

COLUMN_NAMES = tuple(n for n, _, _ in COLUMN_SPECS)
LOW_CARDINALITY_STRINGS = ["kind", "cat", "name", "group", "dtype", "index", "coll", "peer_coll"]
"""The string columns with few distinct values, which a writer dictionary-encodes (pyarrow's default
of every column also tries times and ids, which never fit a dictionary)."""
DELTA_COLUMNS = ("t0", "t1", "exec_t0", "msg")
"""The integer columns written DELTA_BINARY_PACKED and uncompressed: times in each PE's row order and
message ids change little from row to row, so their deltas take a few bits each, about as small as
zstd over their plain values and several times cheaper to decode (10^8 rows against zstd throughout:
the scan 0.65-0.68x the CPU, a full analyze 0.83-0.93x; docs/benchmarks.md "Trace files with
delta-encoded times")."""
WRITE_OPTIONS: dict[str, Any] = {
    "use_dictionary": LOW_CARDINALITY_STRINGS,
    "column_encoding": dict.fromkeys(DELTA_COLUMNS, "DELTA_BINARY_PACKED"),
    "compression": {name: "none" if name in DELTA_COLUMNS else "zstd" for name in COLUMN_NAMES},
}
"""How every trace file is written (pyarrow.parquet writer options: tracers' compaction, importers,
synth, merge): the format's layout on disk. Readers accept any Parquet encoding."""
REQUIRED_COLUMNS = ("kind", "pe", "t0", "t1")
ADDED_COLUMNS: dict[str, str] = {"exec_t0": "1.1"}
"""Columns added by a minor version -> the version that added them: readers of older files
supply them as nulls (conform; the engines' events view)."""

# Metadata keys (JSON object stored under META_KEY) and their meaning.
METADATA_FIELDS: dict[str, str] = {
    "format_version": "trace format version, FORMAT_VERSION of the writer",
    "source": "charm4py | torch | kineto | projections | nsys | synthetic",
    "program": "program name (script stem or .sts name)",
    "pes": "number of PEs / world size of the run",
    "world_size": "PyTorch world size (same as pes for torch traces)",
    "pe": "the PE this file holds (per-PE files), else null",
    "hosts": "host name per PE when known",
    "clock": "{method, residual_ns[, offsets: {pe: {t_start, start_ns, t_end, end_ns, error_ns}}]}: how per-PE "
             "clocks were aligned; offsets are added by the reader (paradise.store.clock), refined by the messages "
             "(paradise.store.clockrefine: `refinement`, the trace-wide outcome and the file's own PE's entry in "
             "each per-PE file, written at compaction (paradise.store.clockstore), and "
             "`final_method` in the read trace's clock)",
    "origin_ns": "Unix time (ns) of t0 == 0",
    "complete": "true when the writer closed cleanly (the run reached its end)",
    "names": "name tables needed to read the rest (e.g. chare types), free form",
    "extra": "source-specific extras",
}

TRACER_SOURCES = {"charm4py": False, "torch": True}
"""The `source` each of paradise's tracers writes, and whether it is a PyTorch training trace
(ranks, ops, collectives) rather than Charm-style (objects, entry methods, messages). Importers
declare theirs in paradise.importers.IMPORTERS; paradise.importers.training_like reads both."""

MAX_PES = 1 << 22
"""Largest PE count (and PE number + 1) a trace may claim, imported, exported or validated: 4M PEs,
above any machine that runs charm4py or torchrun today; analyses size per-PE arrays by it (and a
rank below it packs into Kineto's 64-bit msg ids: rank * 2**40)."""
MAX_RANK = MAX_PES - 1
"""Largest PE number or rank."""

INDEX_BITS = 21
"""Bits per dimension when packing an N-D index (up to 3 dims of 2M each) into `obj`."""


def row_tuple(**fields: Any) -> tuple:
    """A row in COLUMN_NAMES order from keyword fields by column name (absent: null); a name that
    is not a trace column raises ValueError. What the writers' `append_dict` takes for rare rows."""
    unknown = set(fields) - set(COLUMN_NAMES)
    if unknown:
        raise ValueError(f"unknown trace columns: {sorted(unknown)}")
    return tuple(fields.get(c) for c in COLUMN_NAMES)


def pack_index(index: tuple[int, ...] | list[int] | int) -> int:
    """Packs an object index into one int64 so joins on objects stay integer joins."""
    if isinstance(index, int):
        return index
    if len(index) == 1:
        return int(index[0])
    value = 0
    for i in index:
        value = (value << INDEX_BITS) | (int(i) & ((1 << INDEX_BITS) - 1))
    return value


def index_text(index: tuple[int, ...] | list[int] | int) -> str:
    """The canonical text of an index, as stored in `index` and keyed in mapping.json."""
    if isinstance(index, int):
        index = (index,)
    return "[" + ",".join(str(int(i)) for i in index) + "]"


def make_metadata(**fields: Any) -> dict[bytes, bytes]:
    """Parquet key-value metadata for a trace file; unknown keys are refused."""
    unknown = set(fields) - set(METADATA_FIELDS)
    if unknown:
        raise ValueError(f"unknown trace metadata fields: {sorted(unknown)}")
    meta = {"format_version": FORMAT_VERSION, **fields}
    return {META_KEY: json.dumps(meta, sort_keys=True).encode()}


def read_metadata(schema_metadata: dict[bytes, bytes] | None) -> dict[str, Any] | None:
    """The JSON trace metadata of a Parquet schema, or None when it is not a paradise file."""
    if not schema_metadata or META_KEY not in schema_metadata:
        return None
    return json.loads(schema_metadata[META_KEY])


_LAZY = frozenset({"SCHEMA", "COLUMNS", "empty_table", "conform"})


def __getattr__(name: str) -> Any:
    """The Arrow side of the format (SCHEMA, COLUMNS, empty_table, conform), imported on first use."""
    if name in _LAZY:
        from paradise.format import schema

        return getattr(schema, name)
    raise AttributeError(f"module 'paradise.format' has no attribute {name!r}")
