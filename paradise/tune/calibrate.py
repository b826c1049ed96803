"""What-if that learns from every run: a hinted run's predicted time is the median of the trial's
baseline runs so far (this round's included: the machine's state now, without one run's noise)
x the replay's ratio (replay(hints) / replay(current)) x a factor fitted on every hinted run
measured so far (the median of measured / (baseline x ratio)). The factor carries what the replay
does not model (per-message costs it misjudges, the machine's slowdown of one layout against
another); the error of the predictions made with it is a figure of the tune."""

from __future__ import annotations

import statistics
from dataclasses import dataclass, field


@dataclass
class Calibration:
    factors: list[float] = field(default_factory=list)

    @property
    def factor(self) -> float:
        """1.0 (the replay as is) until a hinted run has been measured."""
        return statistics.median(self.factors) if self.factors else 1.0

    @property
    def fitted(self) -> bool:
        return bool(self.factors)

    def predict(self, baseline_s: float | None, ratio: float | None) -> float | None:
        if baseline_s is None or ratio is None:
            return None
        return baseline_s * ratio * self.factor

    def learn(self, measured_s: float, baseline_s: float | None, ratio: float | None) -> None:
        if baseline_s and ratio and measured_s > 0:
            self.factors.append(measured_s / (baseline_s * ratio))


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
