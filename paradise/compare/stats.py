"""Mann-Whitney U test (two-sided): is one sample of step times or run times shifted against another?

Exact p-value from the U distribution when neither sample has ties and n1*n2 <= EXACT_MAX_CELLS;
otherwise the normal approximation with tie correction and continuity correction.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import pandas as pd

EXACT_MAX_CELLS = 10_000
"""Largest n1*n2 for which the exact distribution of U is enumerated (a polynomial of that degree)."""


@dataclass(frozen=True)
class UTest:
    u: float
    """U of the first sample: pairs (x, y) with x > y, ties counting one half."""
    p_value: float
    method: str
    """"exact" or "normal"."""


def _u_distribution(n1: int, n2: int) -> list[int]:
    """Counts of arrangements per value of U (0..n1*n2): the coefficients of the Gaussian binomial
    [n1+n2 choose n1]_q = prod_{i=1..n1} (1 - q^(n2+i)) / (1 - q^i), computed with exact integers."""
    size = n1 * n2 + 1
    poly = [0] * size
    poly[0] = 1
    for i in range(1, n1 + 1):
        k = n2 + i  # multiply by (1 - q^k)
        for d in range(size - 1, k - 1, -1):
            poly[d] -= poly[d - k]
        for d in range(i, size):  # divide by (1 - q^i): a running sum with stride i
            poly[d] += poly[d - i]
    return poly


def mann_whitney_u(x: pd.Series | list[float], y: pd.Series | list[float]) -> UTest:
    """Two-sided Mann-Whitney U test of samples x and y (each of at least one value)."""
    a = np.asarray(x, dtype=float)
    b = np.asarray(y, dtype=float)
    n1, n2 = len(a), len(b)
    both = np.concatenate([a, b])
    ranks = pd.Series(both).rank(method="average").to_numpy()
    u1 = float(ranks[:n1].sum() - n1 * (n1 + 1) / 2)
    ties = pd.Series(both).value_counts().to_numpy()
    has_ties = bool((ties > 1).any())
    if not has_ties and n1 * n2 <= EXACT_MAX_CELLS:
        counts = _u_distribution(n1, n2)
        total = sum(counts)
        u_low = int(round(min(u1, n1 * n2 - u1)))
        p = 2 * sum(counts[: u_low + 1]) / total
        return UTest(u1, min(1.0, p), "exact")
    n = n1 + n2
    mean = n1 * n2 / 2
    tie_term = float((ties**3 - ties).sum()) / (n * (n - 1)) if n > 1 else 0.0
    var = n1 * n2 / 12 * ((n + 1) - tie_term)
    if var <= 0:  # every value equal: no evidence of a shift
        return UTest(u1, 1.0, "normal")
    z = (abs(u1 - mean) - 0.5) / math.sqrt(var)
    p = math.erfc(max(z, 0.0) / math.sqrt(2))
    return UTest(u1, min(1.0, p), "normal")
