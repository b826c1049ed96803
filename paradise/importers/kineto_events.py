"""Turns one batch of Kineto trace events (a JSON array text) into Arrow columns.

Why: the per-event work must stay in C. msgspec decodes the batch into small structs,
keeping `ts`, `dur` and `args` as raw JSON text; times are converted from decimal
microseconds to integer nanoseconds exactly with numpy (float64 cannot hold epoch
microseconds with three decimals); names and categories are classified once per distinct
value, not once per event. Only collective rows (a handful per step) get Python attention.
"""

from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any

import msgspec
import numpy as np
import pyarrow as pa

from paradise.importers.kineto_arrow import (
    from_numpy,
    raw_dict_strings,
    sparse_dict_strings,
    strings,
    to_numpy,
    validity,
)

# --- classification rules (documented in docs/importers.md, "Kineto") ----------------------------

WORK_CATS = frozenset({"kernel", "gpu_memcpy", "gpu_memset", "memcpy", "memset", "mtia_ccp_events"})
"""Categories (lower-cased) of work that runs on a device stream: kernels, copies, sets (and the
MTIA command processor's work). Only these rows get a `stream` and count as device time."""

SYNC_CATS = frozenset({"cuda_sync"})
"""Device-side waits (cudaStreamWaitEvent, cudaEventSynchronize, Context Sync): `mark` rows that
keep their stream, so idle time can be attributed to them, but never count as work."""

SYNC_NAMES = frozenset({"event_wait", "event_record"})
"""Names of wait/record rows inside a work category (MTIA): marks with a stream, as SYNC_CATS."""

SPAN_CATS = frozenset({"gpu_user_annotation", "cuda_profiler_range"})
"""Device-timeline spans over work (user annotations, CUPTI range-profiler ranges): `mark` rows
without a stream; the Kineto thread id stays in `tid`."""

DEVICE_CATS = WORK_CATS | SYNC_CATS | SPAN_CATS
"""Everything on the device timeline (steps reach these rows through their launch)."""

HOST_CATS = frozenset({"cpu_op", "user_annotation", "python_function", "trace"})
"""CPU-side categories whose args hold no correlation or stream (decoded only when collective)."""

MARK_CATS = frozenset({"trace"})
"""The profiler's own window span ("PyTorch Profiler (0)"): a marker, not work."""

TID_IS_STREAM_CATS = frozenset({"kernel", "gpu_memcpy", "gpu_memset", "memcpy", "memset"})
"""CUDA/ROCm work whose Kineto thread id is the stream: the stream when args lack one."""

_STEP_RE = re.compile(r"^ProfilerStep#(\d+)$")


def is_collective_name(name: str, device: bool) -> bool:
    """NCCL/RCCL kernels, record_param_comms, c10d:: ops and gloo:/nccl: annotations."""
    return collective_class(name, device) != CC_NONE


CC_NONE, CC_KERNEL, CC_PARAM_COMMS, CC_C10D, CC_ANNOTATION = range(5)
"""Which twin of a collective a row is. One collective shows up on up to five rows (the c10d::
op, record_param_comms, the CPU and GPU nccl: annotations, the kernel); the importer makes one of
them the `collective` row (see COLLECTIVE_PRIORITY) and keeps the others as plain rows."""

COLLECTIVE_PRIORITY = (CC_KERNEL, CC_PARAM_COMMS, CC_ANNOTATION, CC_C10D)
"""Per rank, the first twin class present carries the collectives: NCCL/RCCL kernels where the
rank has any (count per kernel, the time is the transfer), else the program's calls
(record_param_comms, which carry sizes; else gloo:/nccl: annotations, whose gloo worker spans
cover the transfer and carry input shapes; else c10d:: ops). Where annotations carry, a c10d::
call of a kind (collective_kind) no annotation of the rank has is a collective as well: one
c10d:: call with its backend annotation is one collective, and a call without one still is one."""


_KIND_NOISE = ("coalesced", "intotensor", "base", "tensor")


def collective_kind(name: str) -> str:
    """The operation of a c10d:: op or gloo:/nccl: annotation, the same for both twins of a call:
    c10d::allreduce_ and gloo:all_reduce are "allreduce", c10d::_allgather_base_ and
    nccl:_all_gather_base "allgather", c10d::alltoall_base_ and nccl:all_to_all "alltoall"."""
    low = name.lower().rsplit(":", 1)[-1].replace("_", "")
    for word in _KIND_NOISE:
        low = low.replace(word, "")
    return low

NOT_A_COLLECTIVE = frozenset({"wait", "barrier_wait"})
"""`Collective name` values that are waits on a work handle, not collectives."""


def collective_class(name: str, device: bool) -> int:
    """The twin class of a row from its name and whether it is device work."""
    if device:
        low = name.lower()
        return CC_KERNEL if low.startswith(("nccl", "rccl")) else CC_NONE
    if name == "record_param_comms":
        return CC_PARAM_COMMS
    if name.startswith("c10d::"):
        return CC_C10D
    if name.startswith(("gloo:", "nccl:")):
        return CC_ANNOTATION
    return CC_NONE


MAX_STEP = 2**31 - 1
"""Step numbers are int32 in the trace format."""
_BAD_STEP = -2


def _step_number(name: str) -> int:
    """N of a ProfilerStep#N row, -1 for other names, _BAD_STEP when N does not fit int32."""
    m = _STEP_RE.match(name)
    if m is None:
        return -1
    digits = m.group(1)
    return int(digits) if len(digits) <= 10 and int(digits) <= MAX_STEP else _BAD_STEP


KINDS = ("exec", "collective", "step", "mark")
_EXEC, _COLL, _STEP, _MARK = range(4)

DTYPE_BYTES: dict[str, int] = {
    "float": 4, "float32": 4, "double": 8, "float64": 8, "half": 2, "float16": 2, "bfloat16": 2,
    "int": 4, "int32": 4, "long": 8, "int64": 8, "short": 2, "int16": 2, "char": 1, "int8": 1,
    "byte": 1, "uint8": 1, "bool": 1, "uint16": 2, "uint32": 4, "uint64": 8,
    "complexhalf": 4, "complexfloat": 8, "complexdouble": 16, "complex64": 8, "complex128": 16,
    "float8_e4m3fn": 1, "float8_e5m2": 1, "float8_e4m3fnuz": 1, "float8_e5m2fnuz": 1,
    "int64_t": 8, "int32_t": 4, "int16_t": 2, "int8_t": 1, "uint8_t": 1,
    "c10::half": 2, "c10::bfloat16": 2, "unsigned char": 1, "signed char": 1,
}  # fmt: skip
"""Element sizes by dtype name as profilers write them (c10 ScalarType names and C++ names)."""


def dtype_size(dtype: Any) -> int | None:
    if not isinstance(dtype, str):
        return None
    return DTYPE_BYTES.get(dtype.strip().lower())


# --- msgspec structs --------------------------------------------------------------------------------


class _Event(msgspec.Struct):
    ph: Any = None
    name: msgspec.Raw = msgspec.Raw(b"")  # raw: names repeat, so they are decoded once per distinct text
    cat: msgspec.Raw = msgspec.Raw(b"")
    ts: msgspec.Raw = msgspec.Raw(b"")
    dur: msgspec.Raw = msgspec.Raw(b"")
    pid: Any = None
    tid: Any = None
    args: msgspec.Raw = msgspec.Raw(b"")


_MISSING = -(2**63)


class _Args(msgspec.Struct):
    """Fields paradise promotes to columns; correlation and stream typed for a fast path."""

    correlation: int = _MISSING
    stream: int = _MISSING
    collective: Any = msgspec.field(default=None, name="Collective name")
    in_nelems: Any = msgspec.field(default=None, name="In msg nelems")
    out_nelems: Any = msgspec.field(default=None, name="Out msg nelems")
    dtype: Any = None
    group_size: Any = msgspec.field(default=None, name="Group size")
    pg_name: Any = msgspec.field(default=None, name="Process Group Name")
    pg_desc: Any = msgspec.field(default=None, name="Process Group Description")
    pg_id: Any = msgspec.field(default=None, name="Process Group ID")
    input_dims: msgspec.Raw = msgspec.field(default=msgspec.Raw(b""), name="Input Dims")
    input_type: msgspec.Raw = msgspec.field(default=msgspec.Raw(b""), name="Input type")


class _ArgsLoose(_Args):
    """The same fields, any JSON type (odd traces); values are checked one by one."""

    correlation: Any = None
    stream: Any = None


_EVENTS_DECODER = msgspec.json.Decoder(list[_Event])
_ARGS_DECODER = msgspec.json.Decoder(list[_Args])
_ARGS_LOOSE_DECODER = msgspec.json.Decoder(list[_ArgsLoose])


def _text(raw: bytes | msgspec.Raw) -> str | None:
    """A raw JSON value as text: strings decoded, null/missing -> None, others as their JSON."""
    if not raw:
        return None
    try:
        value = msgspec.json.decode(raw)
    except msgspec.DecodeError:
        return None
    if value is None or isinstance(value, str):
        return value
    return bytes(raw).decode()


def _ints_fast(values: list) -> tuple[np.ndarray, np.ndarray]:
    """(int64 values, present) from ints where _MISSING means absent; odd values via the slow path."""
    try:
        vals = np.fromiter(values, dtype=np.int64, count=len(values))
    except (TypeError, ValueError, OverflowError):
        return _nullable_np(values)
    return vals, vals != _MISSING


class EventDecodeError(ValueError):
    """A batch that is not a JSON array of event objects (message says why)."""


# --- exact decimal microseconds -> integer nanoseconds -------------------------------------------

_POW10 = np.array([10**k for k in range(19)], dtype=np.int64)


def us_text_to_ns(raws: list) -> tuple[np.ndarray, np.ndarray]:
    """Converts raw JSON number texts in microseconds to int64 ns, exactly; returns (values, valid).

    Digits are weighted by their place relative to the decimal point; the fourth decimal
    rounds (half up). Texts with exponents or other oddities go through Decimal one by one.
    Per-byte work is a handful of numpy passes; tokens are found by searchsorted on their
    ends, so only the digits' places need a per-byte index array.
    """
    n = len(raws)
    values = np.zeros(n, dtype=np.int64)
    if n == 0:
        return values, np.zeros(0, dtype=np.bool_)
    lens = np.fromiter(map(len, raws), dtype=np.int64, count=n)
    a = np.frombuffer(b"".join(raws), dtype=np.uint8)
    if a.size == 0:
        return values, np.zeros(n, dtype=np.bool_)
    ends = np.cumsum(lens)
    starts = ends - lens
    digit = a - np.uint8(48)  # wraps around: every non-digit byte becomes >= 10
    isdig = digit < 10
    isdot = a == 46
    isneg = a == 45
    bad_tok = np.zeros(n, dtype=np.bool_)
    odd = np.flatnonzero(~(isdig | isdot | isneg))
    if odd.size:
        bad_tok[np.searchsorted(ends, odd, side="right")] = True
    dots = np.flatnonzero(isdot)
    dot_at = ends.copy()
    if dots.size:
        dot_tok = np.searchsorted(ends, dots, side="right")
        bad_tok |= np.bincount(dot_tok, minlength=n) > 1
        dot_at[dot_tok] = dots
    negative = np.zeros(n, dtype=np.bool_)
    neg = np.flatnonzero(isneg)
    if neg.size:
        neg_tok = np.searchsorted(ends, neg, side="right")
        bad_tok[neg_tok[neg != starts[neg_tok]]] = True  # '-' only as the first char
        negative[neg_tok] = True
    rel = np.repeat(dot_at, lens) - np.arange(a.size)  # > 0 left of the point
    power = rel + 3 - (rel > 0)  # the byte's digit counts 10**power ns (3: one microsecond)
    too_big = isdig & (power > 18) & (digit > 0)
    if too_big.any():
        bad_tok[np.searchsorted(ends, np.flatnonzero(too_big), side="right")] = True
    used = isdig & (power >= 0) & (power <= 18)
    contrib = np.where(used, _POW10[np.clip(power, 0, 18)] * digit, 0)
    contrib += isdig & (power == -1) & (digit >= 5)  # round on the 4th decimal
    nonempty = lens > 0
    sums = np.zeros(n, dtype=np.int64)
    has_digit = np.zeros(n, dtype=np.bool_)
    if nonempty.any():
        sums[nonempty] = np.add.reduceat(contrib, starts[nonempty])
        has_digit[nonempty] = np.add.reduceat(isdig, starts[nonempty], dtype=np.int64) > 0
    values = np.where(negative, -sums, sums)
    valid = nonempty & has_digit & ~bad_tok
    for i in np.flatnonzero(bad_tok & nonempty).tolist():  # rare: exponents, strings, null
        v = _slow_us_to_ns(bytes(raws[i]))
        if v is not None:
            values[i] = v
            valid[i] = True
    return values, valid


def _slow_us_to_ns(text: bytes) -> int | None:
    try:
        t = text.strip().strip(b'"').decode()
        d = Decimal(t) * 1000
    except (ArithmeticError, UnicodeDecodeError, ValueError):  # InvalidOperation, Overflow ("1e999999999")
        return None
    if not d.is_finite():
        return None
    v = int(d.to_integral_value())
    return v if -(2**63) <= v < 2**63 else None


# --- batch -> columns --------------------------------------------------------------------------------


@dataclass
class BatchResult:
    """Pass-1 columns of the X events of one batch, plus what later passes need."""

    table: pa.Table | None
    t0: np.ndarray | None = None
    t1: np.ndarray | None = None
    device: np.ndarray | None = None
    step: np.ndarray | None = None
    is_step: np.ndarray | None = None
    msg: np.ndarray | None = None
    has_msg: np.ndarray | None = None
    meta_events: list[tuple[str, Any, Any, bytes]] = field(default_factory=list)
    """(name, pid, tid, raw args) of `ph: M` metadata events (process/thread names)."""
    other_phases: dict[str, int] = field(default_factory=dict)
    collective_classes: set[int] = field(default_factory=set)
    """Twin classes (CC_*) of the collective rows in the batch."""
    annotation_kinds: set[str] = field(default_factory=set)
    """collective_kind of the batch's gloo:/nccl: annotation rows."""


PASS1_SCHEMA = pa.schema(
    [
        ("kind", pa.dictionary(pa.int32(), pa.string())),
        ("t0", pa.int64()),
        ("t1", pa.int64()),
        ("tid", pa.int64()),
        ("cat", pa.dictionary(pa.int32(), pa.string())),
        ("name", pa.dictionary(pa.int32(), pa.string())),
        ("msg", pa.int64()),
        ("bytes", pa.int64()),
        ("step", pa.int32()),
        ("stream", pa.int32()),
        ("group", pa.dictionary(pa.int32(), pa.string())),
        ("group_size", pa.int32()),
        ("dtype", pa.dictionary(pa.int32(), pa.string())),
        ("args", pa.string()),
        ("_dev", pa.bool_()),
        ("_cc", pa.int8()),
    ]
)
"""Columns written by pass 1 (times still on the file's own clock, no pe, steps only on step rows)."""

_KIND_DICT = strings(list(KINDS))


def _per_unique(dict_arr: pa.DictionaryArray, fn, dtype=np.bool_, null_value=False) -> np.ndarray:
    """Evaluates fn once per distinct value and spreads the result to every row."""
    uniq = dict_arr.dictionary.to_pylist()
    table = np.array([null_value if u is None else fn(u) for u in uniq] + [null_value], dtype=dtype)
    idx = to_numpy(dict_arr.indices, np.int32)
    if dict_arr.null_count:
        idx = np.where(validity(dict_arr.indices), idx, len(uniq))
    return table[idx]


def _nullable_np(values: list) -> tuple[np.ndarray, np.ndarray]:
    """(int64 values, valid) from Python ints/None."""
    ok = np.fromiter(
        (type(v) is int and -(2**63) <= v < 2**63 for v in values), dtype=np.bool_, count=len(values)
    )
    vals = np.fromiter((v if k else 0 for v, k in zip(values, ok)), dtype=np.int64, count=len(values))
    return vals, ok


def _to_int(v: Any) -> int | None:
    if type(v) is int:
        return v
    if isinstance(v, float) and math.isfinite(v):
        return int(v)
    if isinstance(v, str):
        try:
            return int(v)
        except ValueError:
            return None
    return None


def _raw_strings(data: bytes, lens: np.ndarray) -> pa.Array:
    """A string column straight from the joined raw JSON slices; empty slices become nulls."""
    n = len(lens)
    offsets = np.zeros(n + 1, dtype=np.int32)
    np.cumsum(lens, out=offsets[1:])
    present = lens > 0
    nulls = int(n - np.count_nonzero(present))
    bitmap = pa.py_buffer(np.packbits(present, bitorder="little")) if nulls else None
    return pa.StringArray.from_buffers(n, pa.py_buffer(offsets), pa.py_buffer(data), bitmap, nulls)


def _gloo_bytes(dims_raw: bytes, types_raw: bytes) -> int | None:
    """Bytes of the tensor inputs of an annotation recorded with shapes (gloo has no msg sizes)."""
    if not dims_raw or not types_raw:
        return None
    try:
        dims, types = json.loads(dims_raw), json.loads(types_raw)
    except (ValueError, RecursionError):
        return None
    if not isinstance(dims, list) or not isinstance(types, list):
        return None
    total, seen = 0, False
    for shape, typ in zip(dims, types):
        size = dtype_size(typ)
        if size is None or not isinstance(shape, list) or not shape:
            continue
        if not all(type(x) is int for x in shape):
            continue
        total += math.prod(shape) * size
        seen = True
    return total if seen else None


_COLLECTIVE_KEY = b'"Collective name"'


def _find_all(data: bytes, key: bytes) -> np.ndarray:
    """Byte offsets of every occurrence of key (few: collectives only)."""
    found = []
    i = data.find(key)
    while i >= 0:
        found.append(i)
        i = data.find(key, i + 1)
    return np.array(found, dtype=np.int64)


_SPLIT_CHECK = msgspec.json.Decoder(list[msgspec.Raw])


def validate_batch(text: bytes) -> bytes:
    """Checks a guessed batch is whole events (~0.7 ns/byte), leaving the decoding to a worker."""
    try:
        _SPLIT_CHECK.decode(text)
    except (msgspec.DecodeError, msgspec.ValidationError) as exc:
        raise EventDecodeError(str(exc)) from None
    return text


def decode_batch(text: bytes) -> BatchResult:
    """Decodes one `[...]` batch of events into pass-1 columns for its X events."""
    try:
        events = _EVENTS_DECODER.decode(text)
    except (msgspec.DecodeError, msgspec.ValidationError) as exc:
        raise EventDecodeError(str(exc)) from None
    xs = [e for e in events if e.ph == "X"]
    result = BatchResult(table=None)
    if len(xs) != len(events):
        for e in events:
            if e.ph == "M":
                result.meta_events.append((_text(e.name), e.pid, e.tid, bytes(e.args)))
            elif e.ph != "X":
                key = str(e.ph)
                result.other_phases[key] = result.other_phases.get(key, 0) + 1
    n = len(xs)
    if n == 0:
        return result

    t0, t0_ok = us_text_to_ns([e.ts for e in xs])
    if not t0_ok.all():
        bad = int(np.flatnonzero(~t0_ok)[0])
        raise EventDecodeError(f"complete event {_text(xs[bad].name)!r} has no numeric ts")
    durs = [e.dur for e in xs]
    dur, dur_ok = us_text_to_ns(durs)
    given = np.fromiter((len(d) > 0 and bytes(d) != b"null" for d in durs), dtype=np.bool_, count=n)
    bad = np.flatnonzero((~dur_ok & given) | (dur_ok & (dur < 0)))
    if bad.size:
        e = xs[int(bad[0])]
        raise EventDecodeError(f"complete event {_text(e.name)!r} has a negative or non-numeric dur "
                               f"({bytes(e.dur)[:20].decode(errors='replace')})")
    t1 = t0 + np.where(dur_ok, dur, 0)  # an X event without dur (or with null) is zero-length

    names = raw_dict_strings([e.name for e in xs], _text)
    cats = raw_dict_strings([e.cat for e in xs], _text)
    tids = [e.tid for e in xs]
    try:
        tid_np, tid_ok = np.fromiter(tids, dtype=np.int64, count=n), np.ones(n, dtype=np.bool_)
    except (TypeError, ValueError, OverflowError):
        tid_np, tid_ok = _nullable_np(tids)
    tid_arr = from_numpy(tid_np, tid_ok)

    def cat_in(group: frozenset[str]) -> np.ndarray:
        return _per_unique(cats, lambda c: isinstance(c, str) and c.lower() in group)

    device = cat_in(DEVICE_CATS)
    sync_name = _per_unique(names, lambda s: s in SYNC_NAMES)
    work_cat = cat_in(WORK_CATS)
    work = work_cat & ~sync_name
    sync = cat_in(SYNC_CATS) | (work_cat & sync_name)
    tid_stream = cat_in(TID_IS_STREAM_CATS)
    mark = cat_in(MARK_CATS) | (device & ~work)
    host = cat_in(HOST_CATS)
    step_no = _per_unique(names, _step_number, dtype=np.int64, null_value=-1)
    if (step_no == _BAD_STEP).any():
        e = xs[int(np.flatnonzero(step_no == _BAD_STEP)[0])]
        raise EventDecodeError(f"step number of {_text(e.name)!r} is out of range (at most {MAX_STEP})")
    cc_host = _per_unique(names, lambda s: collective_class(s, False), dtype=np.int8, null_value=CC_NONE)
    cc_dev = _per_unique(names, lambda s: collective_class(s, True), dtype=np.int8, null_value=CC_NONE)
    cc = np.where(work, cc_dev, np.where(device, CC_NONE, cc_host)).astype(np.int8)
    named_coll = cc != CC_NONE

    raws = [e.args for e in xs]
    lens = np.fromiter(map(len, raws), dtype=np.int64, count=n)
    joined = b"".join(raws)
    has_coll_arg = np.zeros(n, dtype=np.bool_)
    hits = _find_all(joined, _COLLECTIVE_KEY)
    if hits.size:
        has_coll_arg[np.searchsorted(np.cumsum(lens), hits, side="right")] = True
    # only rows that can carry correlation, stream or collective fields get their args decoded
    need = np.flatnonzero(~host | named_coll | has_coll_arg)
    need_text = b"[" + b",".join([raws[i] or b"{}" for i in need.tolist()]) + b"]"
    try:
        args = _ARGS_DECODER.decode(need_text)
    except msgspec.ValidationError:  # e.g. a null or text correlation: take every value as it comes
        try:
            args = _ARGS_LOOSE_DECODER.decode(need_text)
        except (msgspec.DecodeError, msgspec.ValidationError) as exc:
            raise EventDecodeError(f"event args: {exc}") from None
    except msgspec.DecodeError as exc:
        raise EventDecodeError(f"event args: {exc}") from None
    slot = np.full(n, -1, dtype=np.int64)
    slot[need] = np.arange(need.size)
    corr = (np.zeros(n, dtype=np.int64), np.zeros(n, dtype=np.bool_))
    corr[0][need], corr[1][need] = _ints_fast([a.correlation for a in args])
    sv, sok = np.zeros(n, dtype=np.int64), np.zeros(n, dtype=np.bool_)
    sv[need], sok[need] = _ints_fast([a.stream for a in args])

    is_step = (step_no >= 0) & ~device
    cc[has_coll_arg & ~named_coll & work] = CC_KERNEL
    cc[has_coll_arg & ~named_coll & ~device] = CC_PARAM_COMMS
    cc[is_step] = CC_NONE
    for i in np.flatnonzero(cc == CC_PARAM_COMMS).tolist():  # a few per step
        if str(args[slot[i]].collective).lower() in NOT_A_COLLECTIVE:
            cc[i] = CC_NONE
    is_coll = cc != CC_NONE
    kind_idx = np.full(n, _EXEC, dtype=np.int32)
    kind_idx[mark] = _MARK
    kind_idx[is_coll] = _COLL
    kind_idx[is_step] = _STEP

    step_vals = np.where(is_step, step_no, 0).astype(np.int32)
    stream_vals = np.where(sok, sv, tid_np)
    stream_ok = (work | sync) & (sok | (tid_ok & tid_stream)) & (stream_vals >= -(2**31)) & (stream_vals < 2**32)
    stream_vals = np.where(stream_vals >= 2**31, stream_vals - 2**32, stream_vals)  # uint32 ids: 2**32-1 is -1

    nbytes = np.zeros(n, dtype=np.int64)
    nbytes_ok = np.zeros(n, dtype=np.bool_)
    gsize = np.zeros(n, dtype=np.int32)
    gsize_ok = np.zeros(n, dtype=np.bool_)
    group: list[tuple[int, str]] = []
    dtype: list[tuple[int, str]] = []
    for i in np.flatnonzero(is_coll).tolist():  # a few per step
        a = args[slot[i]]
        size = dtype_size(a.dtype)
        nel = _to_int(a.in_nelems)
        if nel is None:
            nel = _to_int(a.out_nelems)
        nb = nel * size if size is not None and nel is not None else None
        if nb is None and a.input_dims:
            nb = _gloo_bytes(bytes(a.input_dims), bytes(a.input_type))
        if nb is not None and 0 <= nb < 2**63:
            nbytes[i], nbytes_ok[i] = nb, True
        for g in (a.pg_name, a.pg_desc, a.pg_id):
            if g is not None and g != "":
                group.append((i, str(g)))
                break
        gs = _to_int(a.group_size)
        if gs is not None and -(2**31) <= gs < 2**31:
            gsize[i], gsize_ok[i] = gs, True
        if a.dtype is not None:
            dtype.append((i, str(a.dtype)))

    table = pa.Table.from_arrays(
        [
            pa.DictionaryArray.from_arrays(from_numpy(kind_idx), _KIND_DICT),
            from_numpy(t0),
            from_numpy(t1),
            tid_arr,
            cats,
            names,
            from_numpy(corr[0], corr[1]),
            from_numpy(nbytes, nbytes_ok),
            from_numpy(step_vals, is_step),
            from_numpy(stream_vals.astype(np.int32), stream_ok),
            sparse_dict_strings(n, group),
            from_numpy(gsize, gsize_ok),
            sparse_dict_strings(n, dtype),
            _raw_strings(joined, lens),
            from_numpy(device),
            from_numpy(cc),
        ],
        schema=PASS1_SCHEMA,
    )
    result.t0, result.t1, result.device = t0, t1, device
    result.step, result.is_step = step_vals, is_step
    result.msg, result.has_msg = corr
    result.collective_classes = {int(c) for c in np.unique(cc)} - {CC_NONE}
    result.annotation_kinds = {collective_kind(_text(xs[i].name))
                               for i in np.flatnonzero(cc == CC_ANNOTATION).tolist()}
    result.table = table
    return result
