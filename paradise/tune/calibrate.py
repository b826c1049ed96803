"""What-if that learns from every run: a hinted run's predicted time is its round's baseline run
(the machine's state then: the two ran back to back) x (1 - k x the replay's gain), the gain being
1 - replay(hints) / replay(current) and k the share of the replayed gain that the same candidate's
hinted runs measured before this round realised (the median over them of measured gain / replayed gain, each
measured against its own round's baseline). k carries what the replay does not model (per-message
costs it misjudges, the machine's slowdown of one layout against another); a hint the replay sees
as no change stays predicted as no change. The error of the predictions made with it is a figure
of the tune.

Kinds whose gain grows with the machine's load (LOAD_SCALED: combining, whose batches save the
wake-ups a loaded machine makes dear) are predicted from the round's baseline as a power of it:
log hinted = a + b log baseline, fitted on the candidate's earlier pairs (b within 0..1, 1 being
the ratio model), so a slower baseline (a busier machine) predicts a larger gain; before two
pairs with baselines apart, the ratio model (tests/unit/test_tune_recorded.py replays it on
recorded particles tunes). stencil2d's mapping keeps the ratio model, its gain being the balance of
the CPU work.

A reference other than the round's own baseline run (the median of the trial's baseline runs so
far) lags a machine whose load drifts and teaches k the drift instead of the replay's error
(tests/unit/test_tune_recorded.py shows it on recorded stencil2d tunes)."""

from __future__ import annotations

import math
import statistics
from dataclasses import dataclass, field

MIN_GAIN = 0.02
"""Replayed gains under 2 % teach nothing about the replay's scale (their ratio is mostly noise)."""
LOAD_SCALED = frozenset({"comm"})
"""Kinds whose measured gain grows with the load (module doc): a candidate with one of them is
predicted by the power fit."""
MIN_LOG_SPREAD = 0.05
"""The earlier baselines must span at least 5 % (in log) for the power fit to have a slope to see."""


@dataclass
class Calibration:
    factors: list[float] = field(default_factory=list)
    """Per hinted run: measured gain / replayed gain."""
    scaled: bool = False
    """The power fit of the module doc (a LOAD_SCALED kind), else the ratio model."""
    pairs: list[tuple[float, float]] = field(default_factory=list)
    """Per hinted run with a baseline: (the round's baseline s, the hinted run's s)."""

    @classmethod
    def for_kinds(cls, kinds: list[str]) -> Calibration:
        return cls(scaled=bool(LOAD_SCALED.intersection(kinds)))

    @property
    def factor(self) -> float:
        """k: 1.0 (the replay as is) until a hinted run with a replayed gain has been measured."""
        return statistics.median(self.factors) if self.factors else 1.0

    def ratio(self, ratio: float) -> float:
        """The calibrated hinted / baseline ratio for a replayed ratio."""
        return 1.0 - self.factor * (1.0 - ratio)

    @property
    def fitted(self) -> bool:
        return bool(self.factors)

    def learn(self, measured_s: float, baseline_s: float | None, ratio: float | None) -> None:
        if baseline_s and ratio and abs(1.0 - ratio) >= MIN_GAIN:
            self.factors.append((1.0 - measured_s / baseline_s) / (1.0 - ratio))
        if baseline_s and measured_s and baseline_s > 0 and measured_s > 0:
            self.pairs.append((baseline_s, measured_s))

    def power_fit(self) -> tuple[float, float] | None:
        """(a, b) of log hinted = a + b log baseline over the earlier pairs (b clipped to 0..1, a
        their median residual); None until the pairs' baselines span MIN_LOG_SPREAD."""
        if not self.scaled or len(self.pairs) < 2:
            return None
        x = [math.log(b) for b, _ in self.pairs]
        y = [math.log(h) for _, h in self.pairs]
        if max(x) - min(x) < MIN_LOG_SPREAD:
            return None
        mx, my = statistics.fmean(x), statistics.fmean(y)
        slope = sum((xi - mx) * (yi - my) for xi, yi in zip(x, y)) / sum((xi - mx) ** 2 for xi in x)
        slope = min(max(slope, 0.0), 1.0)
        return statistics.median(yi - slope * xi for xi, yi in zip(x, y)), slope

    def predict(self, baseline_s: float | None, ratio: float | None) -> float | None:
        """The hinted run's predicted seconds from its round's baseline run: the power fit when it
        has one, else the calibrated ratio x the baseline; None without a baseline or a replay."""
        if not baseline_s or not ratio:
            return None
        fit = self.power_fit()
        if fit is not None:
            return math.exp(fit[0] + fit[1] * math.log(baseline_s))
        return baseline_s * self.ratio(ratio)


def error(predicted: float | None, measured: float | None) -> float | None:
    """(predicted - measured) / measured, None without either."""
    if predicted is None or not measured:
        return None
    return (predicted - measured) / measured


def summary(runs: list[dict]) -> dict[str, float | int | None]:
    """Median absolute error of the per-run predictions, with and without a fitted calibration."""
    cal = [abs(r["error"]) for r in runs if r.get("error") is not None and r.get("calibrated")]
    raw = [abs(r["raw_error"]) for r in runs if r.get("raw_error") is not None]
    return {"calibrated_runs": len(cal), "median_abs_error_calibrated": statistics.median(cal) if cal else None,
            "predicted_runs": len(raw), "median_abs_error_uncalibrated": statistics.median(raw) if raw else None}


def trial_summary(trials: list[dict]) -> dict[str, float | int | None]:
    """Median absolute error of each trial's predicted ratio (hinted / baseline, stated before its
    rounds) against the ratio of the medians it measured: with a calibration fitted on earlier runs,
    and as replayed. The per-trial figure is the one that noise of single runs does not swamp."""
    cal = [abs(c["ratio_error"]) for c in trials if c.get("ratio_error") is not None and c.get("calibrated")]
    raw = [abs(c["raw_ratio_error"]) for c in trials if c.get("raw_ratio_error") is not None]
    return {"calibrated_trials": len(cal), "trial_abs_error_calibrated": statistics.median(cal) if cal else None,
            "predicted_trials": len(raw), "trial_abs_error_uncalibrated": statistics.median(raw) if raw else None}
