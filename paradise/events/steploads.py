"""Step loads (ns) of objects, one row per object and one column per step, and what placement
reads of them: each object's median and step count (events_object_step_medians, by the engine), and
the windows its persistence compares. The same functions run on a whole matrix (the embedded
engine's client) and on an object-hash bucket's rows (a Dask worker: paradise.events.objbuckets):
every figure is row-wise, so a bucket's rows give those rows of the whole.
"""

from __future__ import annotations

from typing import Any

import numpy as np


class MatrixLoads:
    """Step loads held as the whole object x step matrix (the embedded engine's client)."""

    def __init__(self, matrix: np.ndarray) -> None:
        self.whole = matrix

    def matrix(self, objects: int, steps: np.ndarray) -> np.ndarray:
        return self.whole

    def windows(self, oids: np.ndarray, med: np.ndarray, clip: float, windows: int,
                steps: np.ndarray | None = None) -> np.ndarray:
        """windowed() of the rows `oids` over the steps any of them ran in (`steps`, when known, is
        every column)."""
        sub = self.whole[oids]
        return windowed(sub if steps is not None else sub[:, ~np.isnan(sub).all(axis=0)], med, clip, windows)


def windowed(per: np.ndarray, med: np.ndarray, clip: float, windows: int) -> np.ndarray:
    """Step loads as placement's persistence compares them: each row clipped at `clip` x its
    median (`med`: a descheduled step is a spike, not a pattern), then,
    with at least 2 x `windows` steps, the median of each window of len // windows steps (columns in
    step order; the last window may be shorter), so that noise of single steps does not pass for
    changing loads. Row-wise: a subset of rows gives those rows of the whole."""
    per = np.minimum(per, clip * med[:, None])
    width = max(1, per.shape[1] // windows)
    if width > 1:
        per = np.column_stack([row_medians(per[:, w:w + width]) for w in range(0, per.shape[1], width)])
    return per


def fill(matrix: np.ndarray, steps: np.ndarray, batches: Any, row_of: np.ndarray | None = None) -> np.ndarray:
    """Writes events_object_step_loads batches (oid, step, load_ns) into `matrix` (rows: oids, or
    row_of[oid] when given; columns: `steps`, which holds every step of the batches)."""
    for batch in batches:
        oid = batch.column("oid").to_numpy()
        col = np.searchsorted(steps, batch.column("step").to_numpy())
        matrix[oid if row_of is None else row_of[oid], col] = batch.column("load_ns").to_numpy()
    return matrix


def per_object(medians: Any, objects: int) -> tuple[np.ndarray, np.ndarray]:
    """(median step load, steps ran) per oid 0..objects-1 from events_object_step_medians rows
    (NaN and 0 for an object without a step load)."""
    med, ran = np.full(objects, np.nan), np.zeros(objects, np.int64)
    oid = medians.column("oid").to_numpy()
    med[oid], ran[oid] = medians.column("med").to_numpy(), medians.column("ran").to_numpy()
    return med, ran


def row_medians(m: np.ndarray) -> np.ndarray:
    """Along the last axis, the median of the non-NaN values (NaN for none), as pandas computes
    it: the middle value, or the mean of the two middle values (windowed's window medians; an
    object's median over all its steps is the engine's, events_object_step_medians). A sort, not
    np.median: numpy's SIMD sort is several times faster than the two-point partition np.median
    uses."""
    if m.shape[-1] == 0:
        return np.full(m.shape[:-1], np.nan)
    srt = np.sort(m, axis=-1)  # NaN last
    k = m.shape[-1] - np.isnan(m).sum(axis=-1)
    lo = np.take_along_axis(srt, (np.maximum(k - 1, 0) // 2)[..., None], axis=-1)[..., 0]
    hi = np.take_along_axis(srt, (k // 2)[..., None], axis=-1)[..., 0]
    return np.where(k > 0, (lo + hi) / 2, np.nan)
