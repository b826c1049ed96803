"""Did the change alter the model's answers? Accuracy, flips and KL divergence over evaluation items.

Accuracy alone hides changed answers (Dutta et al., NeurIPS 2024): a candidate can keep its
accuracy while many items flip between correct and incorrect. DuckDB aligns the two tables
(a full outer join on `item` that returns row numbers); the per-item arithmetic then runs on
numpy matrices of log-probabilities, so 10 M items × 4 options take seconds.
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from paradise.engines import load_sql
from paradise.errors import NotAParadiseTrace, TraceNotFound, TruncatedTrace
from paradise.format import OUTPUTS_FILE
from paradise.store.connection import connect

FLIPPED_ITEMS_SHOWN = 20
"""Flipped items listed in the report, smallest baseline margin first (where flips concentrate)."""
KL_QUANTILES = (0.5, 0.9, 0.99)
EXAMPLES_SHOWN = 5


@dataclass
class OutputsComparison:
    """The figures of one baseline/candidate comparison; `to_dict` is the --json payload."""

    base: str
    candidate: str
    items_common: int
    items_only_base: int
    items_only_candidate: int
    accuracy_base: float
    accuracy_candidate: float
    flips: float
    flips_correct_to_incorrect: int
    flips_incorrect_to_correct: int
    prediction_changes: int
    kl_mean: float | None
    kl_items: int
    kl_quantiles: dict[str, float] = field(default_factory=dict)
    kl_max: float | None = None
    flipped_items: list[dict[str, Any]] = field(default_factory=list)
    only_base_examples: list[str] = field(default_factory=list)
    only_candidate_examples: list[str] = field(default_factory=list)
    noise_floor: dict[str, Any] | None = None

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass
class _Side:
    """One outputs table as numpy: labels, predictions, normalised log-probs (or None)."""

    path: Path
    label: np.ndarray
    pred: np.ndarray
    logp: np.ndarray | None  # (n, width) log-probabilities as given, -inf padding
    width: np.ndarray | None  # options per item
    lse: np.ndarray | None = None  # log-sum-exp per row: logp - lse is the normalised log-softmax
    padded: bool = False  # rows of fewer options than the widest carry -inf padding
    _items: pa.ChunkedArray | None = None

    @property
    def items(self) -> pa.ChunkedArray:
        """Item names, read only when a message or an example needs them (strings are the slow column)."""
        if self._items is None:
            self._items = _read(self.path, ["item"]).column("item")
        return self._items


def outputs_path(path: str | Path) -> Path:
    """The outputs table of a trace folder, or the given file itself."""
    p = Path(path)
    if p.is_dir():
        p = p / OUTPUTS_FILE
    if not p.exists():
        raise TraceNotFound(f"{p}: no model outputs ({OUTPUTS_FILE}) found")
    if not p.is_file():
        raise NotAParadiseTrace(f"{p}: not a regular file (a folder, FIFO or device)")
    return p


def _check_schema(p: Path) -> str:
    """Validates the outputs table; returns 'logprobs' or 'pred' (where predictions come from)."""
    try:
        schema = pq.read_schema(p)
    except Exception:
        raise NotAParadiseTrace(f"{p}: not a Parquet file") from None
    names = set(schema.names)
    missing = {"item", "label"} - names
    if missing:
        raise NotAParadiseTrace(f"{p}: not a model-outputs table (missing column(s) {', '.join(sorted(missing))})")
    item_t, label_t = schema.field("item").type, schema.field("label").type
    if not (pa.types.is_string(item_t) or pa.types.is_large_string(item_t)):
        raise NotAParadiseTrace(f"{p}: column 'item' must be a string, found {item_t}")
    if not pa.types.is_integer(label_t):
        raise NotAParadiseTrace(f"{p}: column 'label' must be an integer, found {label_t}")
    if "logprobs" in names:
        t = schema.field("logprobs").type
        is_list = pa.types.is_list(t) or pa.types.is_large_list(t) or pa.types.is_fixed_size_list(t)
        if not is_list or not pa.types.is_floating(t.value_type):
            raise NotAParadiseTrace(f"{p}: column 'logprobs' must be a list of floats, found {t}")
        return "logprobs"
    if "pred" in names:
        if not pa.types.is_integer(schema.field("pred").type):
            raise NotAParadiseTrace(f"{p}: column 'pred' must be an integer, found {schema.field('pred').type}")
        return "pred"
    raise NotAParadiseTrace(f"{p}: model-outputs table has neither 'logprobs' nor 'pred'")


def _logp_matrix(col: pa.ChunkedArray) -> tuple[np.ndarray, np.ndarray]:
    """List column -> ((n, max width) float32 matrix, -inf padded; widths)."""
    arr = col.combine_chunks()
    if pa.types.is_fixed_size_list(arr.type):
        arr = arr.cast(pa.list_(arr.type.value_type))
    if arr.null_count:
        raise ValueError("null logprobs")
    offsets = np.asarray(arr.offsets)
    values = np.asarray(arr.flatten(), dtype=np.float32)
    width = np.diff(offsets)  # int32 for list, int64 for large_list
    n, kmax = len(width), int(width.max()) if len(width) else 0
    if n and (width == kmax).all():
        return values.reshape(n, kmax), width
    m = np.full((n, kmax), -np.inf, dtype=np.float32)
    rows = np.repeat(np.arange(n), width)
    m[rows, np.arange(len(values)) - offsets[:-1][rows]] = values
    return m, width


def _row_stats(m: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per row: argmax (first on ties; int8 up to 127 options) and log-sum-exp.

    Loops over the few answer options, never over items, on strided columns with reused
    temporaries: a transposed copy of the matrix costs more in fresh memory than it saves
    (10 M x 4: 0.4 s strided against 1.2-1.5 s transposed, in a fresh process).
    """
    top = m[:, 0].copy()
    arg = np.zeros(len(top), dtype=np.int8 if m.shape[1] <= 127 else np.int32)
    better = np.empty(len(top), dtype=bool)
    for j in range(1, m.shape[1]):
        np.greater(m[:, j], top, out=better)
        np.copyto(top, m[:, j], where=better)
        arg[better] = j
    total = np.zeros_like(top)
    tmp = np.empty_like(top)
    for j in range(m.shape[1]):
        np.subtract(m[:, j], top, out=tmp)
        np.exp(tmp, out=tmp)
        total += tmp
    lse = np.log(total, dtype=np.float64)
    lse += top
    return arg, lse


def _margin(m: np.ndarray, lse: np.ndarray) -> np.ndarray:
    """Top-1 minus top-2 probability per row (only for the rows that need it: flipped items)."""
    if m.shape[1] < 2:
        return np.ones(len(m))
    top2 = -np.partition(-m, 1, axis=1)[:, :2].astype(np.float64)
    return np.exp(top2[:, 0] - lse) - np.exp(top2[:, 1] - lse)


def _labels(p: Path, col: pa.Array | pa.ChunkedArray) -> np.ndarray:
    """The label column as numpy in the file's integer type (no widening copy)."""
    if col.null_count:
        raise NotAParadiseTrace(f"{p}: column 'label' has null rows")
    return np.asarray(col.to_numpy())


def _read_side(p: Path, mode: str) -> _Side:
    cols = ["label", "logprobs" if mode == "logprobs" else "pred"]
    t = _read(p, cols)
    label = _labels(p, t.column("label"))
    if mode == "logprobs":
        try:
            logp, width = _logp_matrix(t.column("logprobs"))
        except ValueError:
            raise NotAParadiseTrace(f"{p}: column 'logprobs' has null rows") from None
        if logp.shape[1] == 0:
            raise NotAParadiseTrace(f"{p}: column 'logprobs' holds only empty lists")
        bad = np.isnan(logp) | (logp == np.inf)  # logits are normalised; -inf (probability 0) is fine
        if bad.any():
            row = int(np.argmax(bad.any(axis=1)))
            raise NotAParadiseTrace(f"{p}: column 'logprobs' holds {logp[row][bad[row]][0]} in row {row} "
                                    "(log-probabilities or logits are finite numbers, or -inf)")
        pred, lse = _row_stats(logp)
        return _Side(p, label, pred, logp, width, lse=lse, padded=bool((width != logp.shape[1]).any()))
    pred = t.column("pred").fill_null(-1).to_numpy().astype(np.int64)
    return _Side(p, label, pred, None, None)


def _read_items(p: Path) -> pa.ChunkedArray:
    return _read(p, ["item"]).column("item")


def _read(p: Path, columns: list[str]) -> pa.Table:
    """Columns of an outputs table; a damaged file is one line naming it, not a traceback."""
    try:
        return pq.read_table(p, columns=columns)
    except (OSError, pa.ArrowException) as exc:
        first = (str(exc).splitlines() or [type(exc).__name__])[0]
        raise TruncatedTrace(f"{p}: damaged Parquet data ({first[:120]})") from None


def _align(b: Path, c: Path) -> tuple[np.ndarray, np.ndarray]:
    """Row numbers of each side for every item of either side (-1 where absent)."""
    con = connect()  # outputs tables are no trace, so no engine: the engines' DuckDB settings, over two files
    try:
        t = con.sql(load_sql("compare_outputs_align"), params={"base": str(b), "candidate": str(c)}).to_arrow_table()
    finally:
        con.close()
    rb = t.column("rb").fill_null(-1).to_numpy()
    rc = t.column("rc").fill_null(-1).to_numpy()
    return rb, rc


def _check_unique(side: _Side, rows: np.ndarray, matched: np.ndarray, other: Path) -> None:
    """Items must be unique: a row joined twice, or a repeated unmatched item, is refused."""
    n = len(side.label)
    counts = np.bincount(rows[rows >= 0], minlength=n)
    repeated = np.flatnonzero(counts > 1)
    if len(repeated):
        raise NotAParadiseTrace(f"{other}: item {side.items[int(repeated[0])].as_py()!r} appears more than once")
    alone_rows = rows[(rows >= 0) & ~matched]
    if len(alone_rows) < 2:
        return
    alone = side.items.take(pa.array(alone_rows))
    if len(alone) != len(pc.unique(alone)):
        dup = pc.value_counts(alone)
        first = [v["values"] for v in dup.to_pylist() if v["counts"] > 1][0]
        raise NotAParadiseTrace(f"{side.path}: item {first!r} appears more than once")


class _Rows:
    """Takes rows by an index array, skipping the copy when the index is the identity
    (both files list their items in the same order, the common case)."""

    def __init__(self, idx: np.ndarray, n: int) -> None:
        self.idx = idx
        self.identity = len(idx) == n and (n == 0 or bool((np.diff(idx) == 1).all()) and idx[0] == 0)

    def __call__(self, m: np.ndarray) -> np.ndarray:
        # np.take, not m[idx]: on an (n, options) matrix a fancy index gathers rows several
        # times slower than take along axis 0 (1.07 s vs 0.10 s for 10 M rows of 4 float32).
        return m if self.identity else np.take(m, self.idx, axis=0)


def _examples(side: _Side, rows: np.ndarray) -> list[str]:
    if not len(rows):
        return []
    return sorted(side.items.take(pa.array(rows[:EXAMPLES_SHOWN])).to_pylist())


def compare_outputs(
    base: str | Path,
    candidate: str | Path,
    *,
    baseline_repeat: str | Path | None = None,
    flipped_shown: int = FLIPPED_ITEMS_SHOWN,
) -> OutputsComparison:
    """Compares two outputs tables item by item; items missing on one side are counted, not dropped."""
    bp, cp = outputs_path(base), outputs_path(candidate)
    modes = _check_schema(bp), _check_schema(cp)
    with ThreadPoolExecutor(2) as pool:  # Arrow reads, DuckDB and numpy release the GIL
        items_b, items_c = pool.map(_read_items, (bp, cp))
        sides = pool.map(_read_side, (bp, cp), modes)
        # Same items in the same order (the usual case): rows pair by position, no join needed;
        # else DuckDB joins on item here while the pool reads the log-probabilities.
        aligned = None if items_b.equals(items_c) else _align(bp, cp)
        b, c = sides
    b._items, c._items = items_b, items_c
    if aligned is None:
        rb = rc = np.arange(len(b.label), dtype=np.int64)
    else:
        rb, rc = aligned
        both = (rb >= 0) & (rc >= 0)
        _check_unique(b, rb, both, cp)
        _check_unique(c, rc, both, bp)
    # Pairs in baseline row order, so a side whose rows line up needs no gather of its matrix.
    rc_of_b = np.full(len(b.label), -1, dtype=np.int64)
    rc_of_b[rb[rb >= 0]] = rc[rb >= 0]
    ib = np.flatnonzero(rc_of_b >= 0)
    ic = rc_of_b[ib]
    take_b, take_c = _Rows(ib, len(b.label)), _Rows(ic, len(c.label))
    label = take_b(b.label)
    bad = np.flatnonzero(label != take_c(c.label))
    if len(bad):
        item = b.items[int(ib[bad[0]])].as_py()
        raise NotAParadiseTrace(f"{cp}: item {item!r} has a different label than in {bp}; not the same evaluation set")
    pred_b, pred_c = take_b(b.pred), take_c(c.pred)
    ok_b, ok_c = pred_b == label, pred_c == label
    c2i, i2c = ok_b & ~ok_c, ~ok_b & ok_c
    common = len(ib)

    kl = None
    if b.logp is not None and c.logp is not None:
        wb, wc = take_b(b.width), take_c(c.width)
        if (wb != wc).any():
            k = int(np.flatnonzero(wb != wc)[0])
            raise NotAParadiseTrace(
                f"{cp}: item {b.items[int(ib[k])].as_py()!r} has a different number of answer options than in {bp}"
            )
        lse_b, lse_c = take_b(b.lse), take_c(c.lse)
        # KL(b||c) = sum_j p_b,j (lb_j - lc_j) - lse_b + lse_c on the raw values, since sum_j p_b,j = 1.
        # Temporaries are reused (out=): fresh 80 MB arrays per option cost more than the arithmetic.
        acc = np.zeros(common, dtype=np.float64)
        term, diff = np.empty(common, dtype=np.float64), np.empty(common, dtype=np.float32)
        mb, mc = take_b(b.logp), take_c(c.logp)
        for j in range(min(mb.shape[1], mc.shape[1])):
            xb, xc = mb[:, j], mc[:, j]
            np.exp(np.subtract(xb, lse_b, out=term), out=term)
            with np.errstate(invalid="ignore"):  # -inf padding: inf - inf
                np.multiply(term, np.subtract(xb, xc, out=diff), out=term)
            if b.padded or c.padded:
                term[~np.isfinite(xb)] = 0.0
            acc += term
        acc -= lse_b
        acc += lse_c
        kl = np.maximum(acc, 0.0, out=acc)  # clip float rounding below zero

    flip_idx = np.flatnonzero(c2i | i2c)
    margin = None
    if b.logp is not None:
        rows_b = ib[flip_idx]
        margin = _margin(b.logp[rows_b], b.lse[rows_b])
        order = np.argsort(margin, kind="stable")[:flipped_shown]
        flip_idx, margin = flip_idx[order], margin[order]
    else:
        flip_idx = flip_idx[:flipped_shown]
    flipped = [
        {
            "item": b.items[int(ib[k])].as_py(),
            "label": int(label[k]),
            "pred_base": int(pred_b[k]),
            "pred_candidate": int(pred_c[k]),
            "direction": "correct->incorrect" if ok_b[k] else "incorrect->correct",
            "margin_base": None if margin is None else float(margin[pos]),
            "kl": None if kl is None else float(kl[k]),
        }
        for pos, k in enumerate(flip_idx)
    ]
    only_b, only_c = np.flatnonzero(rc_of_b < 0), rc[rb < 0]
    result = OutputsComparison(
        base=str(bp),
        candidate=str(cp),
        items_common=common,
        items_only_base=len(only_b),
        items_only_candidate=len(only_c),
        accuracy_base=float(ok_b.mean()) if common else 0.0,
        accuracy_candidate=float(ok_c.mean()) if common else 0.0,
        flips=float((c2i | i2c).sum() / common) if common else 0.0,
        flips_correct_to_incorrect=int(c2i.sum()),
        flips_incorrect_to_correct=int(i2c.sum()),
        prediction_changes=int((pred_b != pred_c).sum()),
        kl_mean=float(kl.mean()) if kl is not None and len(kl) else None,
        kl_items=0 if kl is None else len(kl),
        kl_quantiles={f"p{int(q * 100)}": float(v) for q, v in zip(KL_QUANTILES, np.quantile(kl, KL_QUANTILES))}
        if kl is not None and len(kl)
        else {},
        kl_max=float(kl.max()) if kl is not None and len(kl) else None,
        flipped_items=flipped,
        only_base_examples=_examples(b, only_b),
        only_candidate_examples=_examples(c, only_c),
    )
    if baseline_repeat is not None:
        floor = compare_outputs(base, baseline_repeat, flipped_shown=0)
        result.noise_floor = {
            "repeat": floor.candidate,
            "flips": floor.flips,
            "kl_mean": floor.kl_mean,
            "accuracy_delta": floor.accuracy_candidate - floor.accuracy_base,
            "items_common": floor.items_common,
        }
    return result
