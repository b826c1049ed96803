"""What-if that learns from every run: a hinted run's predicted time is its round's baseline run
(the machine's state then: the two ran back to back) x (1 - k x the replay's gain), the gain being
1 - replay(hints) / replay(current) and k the share of the replayed gain that the same candidate's
hinted runs measured before this round realised (the median over them of measured gain / replayed gain, each
measured against its own round's baseline). k carries what the replay does not model (per-message
costs it misjudges, the machine's slowdown of one layout against another); a hint the replay sees
as no change stays predicted as no change. The error of the predictions made with it is a figure
of the tune.

A reference other than the round's own baseline run (the median of the trial's baseline runs so
far) lags a machine whose load drifts and teaches k the drift instead of the replay's error
(tests/unit/test_tune_recorded.py shows it on recorded stencil2d tunes)."""

from __future__ import annotations

import statistics
from dataclasses import dataclass, field

MIN_GAIN = 0.02
"""Replayed gains under 2 % teach nothing about the replay's scale (their ratio is mostly noise)."""


@dataclass
class Calibration:
    factors: list[float] = field(default_factory=list)
    """Per hinted run: measured gain / replayed gain."""

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
