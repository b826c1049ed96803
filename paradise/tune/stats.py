"""The test `tune` keeps a hint by: one-sided Mann-Whitney U, "the hinted runs are faster".

Exact p-value from the U distribution (paradise.compare.stats) when there are no ties and the
samples are small; otherwise the normal approximation with tie and continuity correction. The
confidence is family-wise per iteration: with k candidates each is tested at (1 - confidence) / k
(Bonferroni), so noise alone keeps a hint in at most 1 - confidence of the iterations.
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass

import numpy as np
import pandas as pd

from paradise.compare.stats import EXACT_MAX_CELLS, _u_distribution

EXACT_SPLITS_MAX = 50_000
"""Up to this many splits of the pooled times (C(n, n1): 12 against 12 rounds is 2.7 million, 8
against 8 is 12,870) the p-value is exact over every split, ties included (mid-ranks)."""

DEFAULT_CONFIDENCE = 0.99
"""Family-wise confidence of one iteration's decisions."""


@dataclass(frozen=True)
class Faster:
    """One-sided test of `hinted` against `baseline` (smaller is faster)."""

    u: float
    """U of the hinted sample: pairs (h, b) with h > b, ties counting one half (small = faster)."""
    p_value: float
    method: str
    n_hinted: int
    n_baseline: int

    def to_dict(self) -> dict[str, float | int | str]:
        return {"test": "mann-whitney-u one-sided (hinted < baseline)", "u": self.u,
                "p_value": round(self.p_value, 6), "method": self.method,
                "n_hinted": self.n_hinted, "n_baseline": self.n_baseline}


def faster(hinted: list[float], baseline: list[float]) -> Faster:
    """P(U <= observed) under "same distribution": small when the hinted times are lower."""
    a, b = np.asarray(hinted, float), np.asarray(baseline, float)
    n1, n2 = len(a), len(b)
    if not n1 or not n2:
        return Faster(float("nan"), 1.0, "none", n1, n2)
    both = np.concatenate([a, b])
    ranks = pd.Series(both).rank(method="average").to_numpy()
    u = float(ranks[:n1].sum() - n1 * (n1 + 1) / 2)
    ties = pd.Series(both).value_counts().to_numpy()
    if math.comb(n1 + n2, n1) <= EXACT_SPLITS_MAX:  # timed runs tie often (ms resolution): enumerate
        splits = np.array(list(itertools.combinations(range(n1 + n2), n1)))
        u_split = ranks[splits].sum(axis=1) - n1 * (n1 + 1) / 2
        return Faster(u, float(np.mean(u_split <= u + 1e-9)), "exact", n1, n2)
    if not (ties > 1).any() and n1 * n2 <= EXACT_MAX_CELLS:
        counts = _u_distribution(n1, n2)
        return Faster(u, min(1.0, sum(counts[: int(round(u)) + 1]) / sum(counts)), "exact", n1, n2)
    n = n1 + n2
    tie_term = float((ties**3 - ties).sum()) / (n * (n - 1))
    var = n1 * n2 / 12 * ((n + 1) - tie_term)
    if var <= 0:
        return Faster(u, 1.0, "normal", n1, n2)
    z = (u - n1 * n2 / 2 + 0.5) / math.sqrt(var)  # continuity correction towards "no shift"
    return Faster(u, 0.5 * math.erfc(-z / math.sqrt(2)), "normal", n1, n2)


def smallest_p(rounds: int) -> float:
    """The smallest p-value `rounds` hinted against `rounds` baseline runs can reach: 1 / C(2r, r)."""
    return 1.0 / math.comb(2 * rounds, rounds)


def alpha_each(confidence: float, candidates: int) -> float:
    """The level each of `candidates` tests of one iteration is held to."""
    return (1.0 - confidence) / max(1, candidates)
