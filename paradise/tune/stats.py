"""The test `tune` keeps a hint by: a one-sided paired t-test on the per-round log ratios
log(hinted / baseline), "the hinted runs are faster".

Each round runs the baseline and every candidate back to back, so the machine's load, which
scales every run of a round alike, divides out of the round's ratio; load that drifts across
the rounds (a busy machine quietening) no longer widens the samples the test compares. Within a
round, under H0 ("the hint changes nothing") the two runs are exchangeable, so the log ratio is
symmetric about 0: the t-test's level holds closely there, and heavy tails make it conservative.
The confidence is family-wise per trial: with k candidates each is tested at (1 - confidence) / k
(Bonferroni), so noise alone keeps a hint in at most 1 - confidence of the trials.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

DEFAULT_CONFIDENCE = 0.99
"""Family-wise confidence of one trial's decisions."""
TEST_NAME = "paired t-test one-sided on per-round log(hinted / baseline)"


def student_t_cdf(t: float, df: int) -> float:
    """P(T <= t) for Student's t with `df` (integer >= 1) degrees of freedom, exact (Abramowitz and
    Stegun 26.7.3-4: a finite series in cos(theta), theta = atan(|t| / sqrt(df)))."""
    if math.isinf(t):
        return 1.0 if t > 0 else 0.0
    theta = math.atan(abs(t) / math.sqrt(df))
    c2, s = math.cos(theta) ** 2, math.sin(theta)
    if df % 2:  # odd
        series, term = 0.0, 1.0
        if df > 1:
            series = 1.0
            for k in range(3, df - 1, 2):  # 1 + (2/3)c^2 + (2*4)/(3*5)c^4 + ...
                term *= (k - 1) / k * c2
                series += term
        inside = (2 / math.pi) * (theta + s * math.cos(theta) * series)
    else:
        series, term = 1.0, 1.0
        for k in range(2, df - 1, 2):  # 1 + (1/2)c^2 + (1*3)/(2*4)c^4 + ...
            term *= (k - 1) / k * c2
            series += term
        inside = s * series
    return 0.5 + 0.5 * inside if t >= 0 else 0.5 - 0.5 * inside


@dataclass(frozen=True)
class Faster:
    """One-sided paired test of `hinted` against `baseline` (smaller is faster), round by round."""

    t: float
    """mean / standard error of the per-round log ratios (negative: the hinted runs are faster)."""
    p_value: float
    ratio: float | None
    """exp(mean log ratio): the hinted / baseline time the rounds measured (the geometric mean)."""
    rounds: int

    def to_dict(self) -> dict[str, float | int | str | None]:
        return {"test": TEST_NAME, "t": None if math.isnan(self.t) else round(self.t, 4),
                "p_value": round(self.p_value, 6), "df": max(self.rounds - 1, 0), "rounds": self.rounds,
                "paired_ratio": None if self.ratio is None else round(self.ratio, 6)}


def faster(pairs: list[tuple[float, float]]) -> Faster:
    """p = P(T <= t) under "the hint changes nothing", for the rounds' (baseline, hinted) times."""
    d = np.log(np.array([h / b for b, h in pairs if b > 0 and h > 0], float))
    n = len(d)
    if n == 0:
        return Faster(float("nan"), 1.0, None, 0)
    ratio = float(np.exp(d.mean()))
    if n < 2:
        return Faster(float("nan"), 1.0, ratio, n)
    sd = float(d.std(ddof=1))
    if sd == 0.0:  # every round measured the same ratio
        return Faster(-math.inf if d[0] < 0 else math.inf if d[0] > 0 else 0.0,
                      0.0 if d[0] < 0 else 1.0, ratio, n)
    t = float(d.mean() / (sd / math.sqrt(n)))
    return Faster(t, student_t_cdf(t, n - 1), ratio, n)


def alpha_each(confidence: float, candidates: int) -> float:
    """The level each of `candidates` tests of one trial is held to."""
    return (1.0 - confidence) / max(1, candidates)
