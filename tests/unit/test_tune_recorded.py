"""`paradise tune` replayed on the stencil2d tunes recorded in docs/benchmarks.md (four runs of
bench/tune_examples.py on a loaded machine, times as printed): the paired rounds keep the mapping
hint the unpaired U test missed while the load fell, and what-if's error after calibration, each
hinted run predicted from its own round's baseline run, falls from the 32-69 % the running-median
reference printed to 2.7 % (load 2.6) and 8.9 % (load 3.9); at load 9.6 it stays 30.8 %, the rounds
themselves disagreeing. Expected figures are computed here from the raw times."""

from __future__ import annotations

import math
import statistics
from pathlib import Path

import numpy as np
import pytest

from paradise.tune.loop import Settings, Tune
from paradise.tune.record import Record
from paradise.tune.runner import Outcome

# (load average at the start, replay ratio what-if stated, baseline times per round, mapping times per round)
RECORDED = {
    "run1": (9.60, 0.684, [35.053, 13.860, 14.450, 6.603, 5.872], [19.648, 8.888, 5.994, 4.442, 7.969]),
    "run2": (3.86, 0.660, [23.115, 21.840, 20.677, 9.459, 10.313], [17.112, 16.503, 11.565, 6.936, 6.560]),
    "run3": (2.57, 0.697, [8.449, 9.285, 8.124, 4.676, 4.645], [6.143, 6.718, 5.733, 3.298, 3.205]),
    # run 4 ran with the paired rounds (order rotating: the hinted run first in rounds 2 and 4)
    "run4": (9.91, 0.648, [37.072, 31.994, 33.778, 22.460, 21.205], [27.164, 23.632, 18.437, 20.118, 14.808]),
}
PRINTED = {"run1": 0.323, "run2": 0.692, "run3": 0.438}
"""Per-run error after calibration that docs/benchmarks.md printed for runs 1-3 (the running-median reference)."""
PRINTED_PAIRED = {"run4": 0.118}
"""...and for run 4 (the round's own baseline)."""


class Replay:
    runtime = "charm"

    def __init__(self, base: list[float], mapping: list[float]) -> None:
        self.times = {f"it1/alone/r{r}/{n}": t for n, ts in (("baseline", base), ("mapping", mapping))
                      for r, t in enumerate(ts, 1)}
        self.times["it1/traced"] = base[0]

    def command(self, hints, trace):
        return ["replay"]

    def run(self, key, hints, trace, timeout_s=None):
        t = self.times[key]
        return Outcome(True, t, t, "max_err=0.0e+00")


class Mapping:
    def __init__(self, ratio: float) -> None:
        self.ratio = ratio

    def propose(self, trace: Path, out: Path):
        out.mkdir(parents=True, exist_ok=True)
        (out / "mapping.json").write_text("{}")
        return {"candidates": {"mapping": {"file": "mapping.json", "summary": "refine"}}, "information": {}}

    def predict(self, trace, hints):
        return {"ratio": self.ratio}


def replayed(tmp_path: Path, name: str) -> dict:
    _, ratio, base, mapping = RECORDED[name]
    settings = Settings(rounds=5, iterations=1, confidence=0.99)
    return Tune(tmp_path, Replay(base, mapping), Mapping(ratio), settings, Record.open(tmp_path, {"replay": name}),
                echo=lambda s: None).run()


def paired_p(base: list[float], hinted: list[float]) -> float:
    """One-sided paired t-test on log ratios; df = 4, so P(T <= t) = 1/2 + (t/2) (1/sqrt(4 + t^2))(1 + 2/(4 + t^2))."""
    d = np.log(np.array(hinted) / np.array(base))
    t = d.mean() / (d.std(ddof=1) / math.sqrt(len(d)))
    return 0.5 + t / 2 * (1 / math.sqrt(4 + t * t)) * (1 + 2 / (4 + t * t))


def errors(base: list[float], hinted: list[float], ratio: float, reference) -> list[float]:
    """|predicted - measured| / measured of rounds 2.. (calibrated on the rounds before), the
    prediction scaled from reference(r) and k the median of the earlier rounds' realised share."""
    out, ks = [], []
    for r, h in enumerate(hinted):
        if ks:
            out.append(abs(reference(r) * (1 - statistics.median(ks) * (1 - ratio)) - h) / h)
        ks.append((1 - h / reference(r)) / (1 - ratio))
    return out


@pytest.mark.parametrize("name", ["run2", "run3", "run4"])
def test_the_mapping_the_drifting_load_hid_is_kept(tmp_path, name):
    _, _, base, mapping = RECORDED[name]
    data = replayed(tmp_path, name)
    (c,) = data["iterations"][0]["trials"][0]["candidates"]
    assert c["verdict"]["kept"] and data["best"]["kinds"] == ["mapping"]
    assert c["verdict"]["p_value"] == pytest.approx(paired_p(base, mapping), abs=1e-6) and paired_p(base, mapping) <= 0.01
    gm = math.exp(statistics.mean(math.log(h / b) for b, h in zip(base, mapping)))
    assert c["measured_ratio"] == pytest.approx(gm) and data["speedup"] == pytest.approx(1 / gm) and 1 / gm > 1.39


def test_at_load_9_6_the_rounds_disagree_and_nothing_is_kept(tmp_path):
    _, _, base, mapping = RECORDED["run1"]
    data = replayed(tmp_path, "run1")
    (c,) = data["iterations"][0]["trials"][0]["candidates"]
    assert not c["verdict"]["kept"] and c["verdict"]["p_value"] == pytest.approx(paired_p(base, mapping), abs=1e-6)
    assert mapping[4] > base[4]  # the last round measured the hint slower: the test says unknown, not faster


@pytest.mark.parametrize("name", ["run1", "run2", "run3", "run4"])
def test_calibrated_error_is_measured_against_the_rounds_own_baseline(tmp_path, name):
    load, ratio, base, mapping = RECORDED[name]
    w = replayed(tmp_path, name)["whatif"]
    paired = errors(base, mapping, ratio, lambda r: base[r])
    lagging = errors(base, mapping, ratio, lambda r: statistics.median(base[: r + 1]))  # the reference before
    assert w["calibrated_runs"] == 4 and w["median_abs_error_calibrated"] == pytest.approx(statistics.median(paired))
    if name in PRINTED:  # the old reference reproduces what the tune printed then
        assert statistics.median(lagging) == pytest.approx(PRINTED[name], abs=1e-3)
    else:
        assert statistics.median(paired) == pytest.approx(PRINTED_PAIRED[name], abs=1e-3)
    assert statistics.median(paired) < statistics.median(lagging)
    if load < 3:
        assert statistics.median(paired) <= 0.10  # issue 27's goal: 10 % quiet, 20 % loaded
    elif load < 5:
        assert statistics.median(paired) <= 0.20


# particles, run 5 of bench/tune_examples.py in docs/benchmarks.md (load 4.1-4.5): two candidates in one
# trial, each with the replay ratio what-if stated and its times per round
PARTICLES_RUN5 = {"baseline": [0.304, 0.312, 0.460, 0.347, 0.296],
                  "mapping": (0.963, [0.348, 0.329, 0.363, 0.374, 0.396]),
                  "comm": (0.848, [0.284, 0.287, 0.273, 0.282, 0.278])}
PRINTED_SHARED_K = 0.203
"""The per-run error after calibration that run 5 printed, with one k for both kinds."""


class ReplayTwo(Replay):
    def __init__(self, base: list[float], hinted: dict[str, list[float]]) -> None:
        self.times = {f"it1/alone/r{r}/{n}": t for n, ts in (("baseline", base), *hinted.items())
                      for r, t in enumerate(ts, 1)}
        self.times["it1/traced"] = base[0]

    def run(self, key, hints, trace, timeout_s=None):
        t = self.times[key]
        return Outcome(True, t, t, "check=ok")


class TwoKinds:
    """Proposes mapping and comm; what-if states each kind's recorded replay ratio."""

    def __init__(self, ratios: dict[str, float]) -> None:
        self.ratios = ratios

    def propose(self, trace: Path, out: Path):
        out.mkdir(parents=True, exist_ok=True)
        for kind in self.ratios:
            (out / f"{kind}.json").write_text("{}")
        return {"candidates": {k: {"file": f"{k}.json", "summary": k} for k in self.ratios}, "information": {}}

    def predict(self, trace, hints):
        (kind,) = [k for k in self.ratios if (Path(hints) / f"{k}.json").exists()]
        return {"ratio": self.ratios[kind]}


def shared_k_errors(base: list[float], runs: dict[str, tuple[float, list[float]]]) -> list[float]:
    """The old calibration: one k, learnt from every candidate's runs of the earlier rounds."""
    out, ks = [], []
    for r, b in enumerate(base):
        k = statistics.median(ks) if ks else None
        for ratio, hinted in runs.values():
            if k is not None:
                out.append(abs(b * (1 - k * (1 - ratio)) - hinted[r]) / hinted[r])
        ks += [(1 - hinted[r] / b) / (1 - ratio) for ratio, hinted in runs.values()]
    return out


def power_errors(base: list[float], hinted: list[float], ratio: float) -> list[float]:
    """comm's load-scaled calibration: rounds 2.. predicted as exp(a) x baseline^b, b the least-squares
    slope of log hinted on log baseline over the earlier rounds (clipped to 0..1) and a the median
    residual; the ratio model (k of the earlier rounds) while fewer than 2 earlier rounds span 5 %."""
    out = []
    for r in range(1, len(hinted)):
        x, y = np.log(base[:r]), np.log(hinted[:r])
        if r >= 2 and np.ptp(x) >= 0.05:
            b = float(np.clip(np.polyfit(x, y, 1)[0], 0.0, 1.0))
            pred = math.exp(statistics.median(y - b * x) + b * math.log(base[r]))
        else:
            k = statistics.median((1 - h / bb) / (1 - ratio) for bb, h in zip(base[:r], hinted[:r]))
            pred = base[r] * (1 - k * (1 - ratio))
        out.append(abs(pred - hinted[r]) / hinted[r])
    return out


def test_particles_calibration_learns_per_kind(tmp_path):
    base = PARTICLES_RUN5["baseline"]
    runs = {k: PARTICLES_RUN5[k] for k in ("mapping", "comm")}
    settings = Settings(rounds=5, iterations=1, confidence=0.99)
    data = Tune(tmp_path, ReplayTwo(base, {k: v[1] for k, v in runs.items()}),
                TwoKinds({k: v[0] for k, v in runs.items()}), settings,
                Record.open(tmp_path, {"replay": "particles-run5"}), echo=lambda s: None).run()
    ratio, comm = runs["comm"]
    own = [*errors(base, runs["mapping"][1], runs["mapping"][0], lambda r: base[r]), *power_errors(base, comm, ratio)]
    # comm alone: the power fit misses by 1.7 % (median of rounds 2-5) where the ratio model missed by 10.5 %
    assert statistics.median(power_errors(base, comm, ratio)) == pytest.approx(0.017, abs=1e-3)
    assert statistics.median(errors(base, comm, ratio, lambda r: base[r])) == pytest.approx(0.105, abs=1e-3)
    shared = shared_k_errors(base, runs)
    w = data["whatif"]
    assert w["calibrated_runs"] == 8 and w["median_abs_error_calibrated"] == pytest.approx(statistics.median(own))
    assert statistics.median(shared) == pytest.approx(PRINTED_SHARED_K, abs=1e-3)  # what run 5 printed
    assert statistics.median(own) <= 0.20 < statistics.median(shared)  # issue 27's loaded goal, met per kind
    # comm's second round: mapping's first run (1.145x against a replayed 0.963) no longer makes comm 1.26x
    comm = next(c for t in data["iterations"][0]["trials"] for c in t["candidates"] if c["name"] == "comm")
    assert comm["runs"][1]["predicted_s"] < base[1]


# particles' comm.json at load 7 (run 4, batches of 8) and at load 9.7-11.6 (run 6, batches of 372):
# (replay ratio, baseline times per round, comm times per round)
PARTICLES_LOADED = {"run4": (0.747, [11.669, 5.404, 3.414, 2.157, 1.837], [5.710, 1.591, 1.379, 1.626, 1.640]),
                    "run6": (0.739, [0.336, 1.762, 0.870, 6.401, 13.481], [0.291, 0.896, 0.683, 1.496, 3.380])}
PRINTED_LOADED = {"run4": 0.482, "run6": 1.141}
"""Per-run error after calibration the two tunes printed (docs/benchmarks.md)."""


def hindsight_error(base: list[float], hinted: list[float]) -> float:
    """The smallest median |c x baseline - hinted| / hinted any one ratio c achieves on rounds 2..,
    c chosen knowing every measurement: a floor under every calibration of a per-trial ratio."""
    ratios = [h / b for b, h in zip(base[1:], hinted[1:])]
    grid = np.linspace(min(ratios), max(ratios), 2001)
    return min(statistics.median(abs(c / r - 1) for r in ratios) for c in grid)


@pytest.mark.parametrize(("name", "power"), [("run4", 0.403), ("run6", 0.384)])
def test_particles_loaded_tunes_predicted_by_the_power_fit(tmp_path, name, power):
    """Replayed through the tune, comm's runs at load 7-12 are predicted by the power fit (a slower
    baseline, a busier machine: a larger gain): 40 % and 38 % where the ratio model printed 48 % and
    114 %, still above the 20 % goal (no calibration can beat the rounds disagreeing, below)."""
    ratio, base, hinted = PARTICLES_LOADED[name]
    data = Tune(tmp_path, ReplayTwo(base, {"comm": hinted}), TwoKinds({"comm": ratio}),
                Settings(rounds=5, iterations=1, confidence=0.99), Record.open(tmp_path, {"replay": name}),
                echo=lambda s: None).run()
    w = data["whatif"]
    assert w["calibrated_runs"] == 4
    assert w["median_abs_error_calibrated"] == pytest.approx(statistics.median(power_errors(base, hinted, ratio)))
    assert w["median_abs_error_calibrated"] == pytest.approx(power, abs=1e-3)
    assert power < PRINTED_LOADED[name]


@pytest.mark.parametrize("name", ["run4", "run6"])
def test_particles_per_run_error_above_7_load_is_beyond_any_one_ratio(name):
    """Combining's gain grows with the load of the moment (fewer wire messages to wait for), so at
    load 7-12 the rounds' ratios spread 0.23-0.89 and even the best ratio chosen in hindsight misses
    the runs by more than the 20 % goal: per run, the calibration cannot meet it there."""
    ratio, base, hinted = PARTICLES_LOADED[name]
    assert all(h < b for b, h in zip(base, hinted))  # combining won every round
    assert hindsight_error(base, hinted) > 0.20
    calibrated = statistics.median(errors(base, hinted, ratio, lambda r: base[r]))
    assert calibrated == pytest.approx(PRINTED_LOADED[name], abs=1e-3) and calibrated >= hindsight_error(base, hinted)


# every recorded particles tune with comm.json alone or beside mapping (docs/benchmarks.md): load at the
# start, the replay ratio what-if stated, baseline and comm times per round
PARTICLES_ALL = {
    "run4 (load 7)": (7.0, *PARTICLES_LOADED["run4"]),
    "run5 (load 4.1)": (4.1, PARTICLES_RUN5["comm"][0], PARTICLES_RUN5["baseline"], PARTICLES_RUN5["comm"][1]),
    "run6 (load 11.6)": (11.6, *PARTICLES_LOADED["run6"]),
    "run8 (load 4.2)": (4.2, 0.721, [1.771, 0.834, 1.368, 6.020, 1.484, 1.486, 1.644, 4.230],
                        [0.842, 0.653, 1.388, 1.044, 1.096, 1.248, 1.224, 1.010]),
    "run9 5 rounds (load 2.7)": (2.7, 0.848, [0.759, 0.803, 1.195, 1.592, 0.900], [0.890, 0.728, 0.860, 0.720, 0.703]),
    "run9 8 rounds (load 3.9)": (3.9, 0.817, [3.232, 3.766, 3.202, 1.976, 1.161, 2.130, 1.540, 2.172],
                                 [2.117, 2.232, 1.576, 2.418, 1.246, 1.466, 1.036, 1.476]),
    "quiet (load 1.3)": (1.3, 0.855, [0.281, 0.277, 0.277, 0.269, 0.274], [0.232, 0.238, 0.226, 0.228, 0.232]),
    # runs 11 and 12: comm.json on all four streams, sends packed unpickled
    "run11 (load 3.3)": (3.3, 0.466, [1.684, 0.738, 0.339, 1.054, 1.382], [0.647, 0.684, 0.663, 0.472, 0.545]),
    "run12 (load 4.5)": (4.5, 0.521, [0.657, 0.713, 0.710, 0.639, 0.268], [0.572, 0.357, 0.584, 0.300, 0.129]),
}


def test_the_power_fit_beats_the_ratio_model_on_most_recorded_particles_tunes():
    """Over the nine recorded tunes the power fit misses by less in seven, ties the quiet one and
    misses by more in one (run 9's 8 rounds: 34 % against 10.5 %); the median over tunes falls from
    38 % to 30 %. At load 2.7 and above it stays over the 20 % goal in six of eight tunes."""
    ratio_err, power_err = {}, {}
    for name, (_, ratio, base, hinted) in PARTICLES_ALL.items():
        ratio_err[name] = statistics.median(errors(base, hinted, ratio, lambda r, base=base: base[r]))
        power_err[name] = statistics.median(power_errors(base, hinted, ratio))
    better = [n for n in PARTICLES_ALL if power_err[n] < ratio_err[n] - 0.005]
    worse = [n for n in PARTICLES_ALL if power_err[n] > ratio_err[n] + 0.005]
    assert len(better) == 7 and worse == ["run9 8 rounds (load 3.9)"]
    assert statistics.median(power_err.values()) < statistics.median(ratio_err.values())
    assert power_err["quiet (load 1.3)"] <= 0.10
    assert sum(power_err[n] > 0.20 for n, v in PARTICLES_ALL.items() if v[0] >= 2.5) == 6
