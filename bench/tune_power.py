"""Level and power of `tune`'s test (paradise.tune.stats.faster: one-sided paired t-test on the
per-round log ratios) by simulation, beside a trimmed-mean (Yuen, 20 %) paired test, at the level
one of two candidates is held to at 99 % (0.005).

    .venv/bin/python bench/tune_power.py [--reps 4000]

Each round: a baseline and a hinted time, each lognormal with 5 % noise, the hinted one x the
hint's effect; "bursty": each run also has a 1 in 5 chance of taking 1-4x its time (the OS giving
the CPUs to another job for part of the run). Prints the share of trials each test keeps.
"""

from __future__ import annotations

import argparse
import math
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from paradise.tune.stats import faster, student_t_cdf  # noqa: E402

ALPHA = 0.005


def yuen_p(pairs: list[tuple[float, float]], gamma: float = 0.2) -> float:
    """One-sided one-sample trimmed-mean t-test (Tukey-McLaughlin / Yuen) on the log ratios."""
    d = np.sort(np.log([h / b for b, h in pairs]))
    n = len(d)
    g = int(math.floor(gamma * n))
    h = n - 2 * g
    if h < 2:
        return 1.0
    tm = d[g:n - g].mean()
    w = d.copy()
    w[:g], w[n - g:] = d[g], d[n - g - 1]
    sw = w.std(ddof=1)
    if sw == 0:
        return 0.0 if tm < 0 else 1.0
    return student_t_cdf(tm / (sw / ((1 - 2 * g / n) * math.sqrt(n))), h - 1)


def keep_rates(rng: np.random.Generator, bursty: bool, effect: float, rounds: int, reps: int) -> tuple[float, float]:
    kept_t = kept_y = 0
    for _ in range(reps):
        b = np.exp(rng.normal(0, 0.05, rounds))
        h = np.exp(rng.normal(0, 0.05, rounds)) * effect
        if bursty:
            b *= np.where(rng.random(rounds) < 0.2, rng.uniform(1, 4, rounds), 1)
            h *= np.where(rng.random(rounds) < 0.2, rng.uniform(1, 4, rounds), 1)
        pairs = list(zip(b.tolist(), h.tolist()))
        kept_t += faster(pairs).p_value <= ALPHA
        kept_y += yuen_p(pairs) <= ALPHA
    return kept_t / reps, kept_y / reps


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--reps", type=int, default=4000)
    a = ap.parse_args(argv)
    rng = np.random.default_rng(1)
    print(f"{'noise':<7}{'effect':>8}{'rounds':>8}{'paired t kept':>15}{'Yuen kept':>11}   (level {ALPHA}, {a.reps} trials)")
    for bursty in (False, True):
        for effect in (1.0, 1 / 1.4, 1 / 1.1):
            for rounds in (5, 8):
                t, y = keep_rates(rng, bursty, effect, rounds, a.reps)
                print(f"{'bursty' if bursty else 'clean':<7}{effect:>8.3f}{rounds:>8}{t:>15.2%}{y:>11.2%}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
