"""`paradise tune`'s loop with a runner that replays recorded times (paradise.tune.runner.Runner):
what is kept, what never is, and resuming after a kill. The real program runs in
tests/integration/test_tune.py; here the times are drawn from known distributions, so the test
knows which hint is faster."""

from __future__ import annotations

import json
import zlib
from pathlib import Path

import numpy as np
import pytest

from paradise.tune import stats
from paradise.tune.loop import Settings, Tune
from paradise.tune.record import Record
from paradise.tune.runner import Outcome

FILES = {"mapping": "mapping.json", "comm": "comm.json"}


class FakeRunner:
    """Times by run key: base x the factor of each hint file in the folder x noise drawn from one
    lognormal distribution seeded by (seed, key): the same key gives the same time, as a record would."""

    runtime = "charm"

    def __init__(self, factors: dict[str, float], seed: int, *, fail: set[str] = frozenset(),
                 bad_check: set[str] = frozenset(), stop_after: int | None = None) -> None:
        self.factors, self.seed, self.fail, self.bad_check = factors, seed, fail, bad_check
        self.stop_after, self.calls, self.limits = stop_after, [], {}

    def command(self, hints, trace):
        return ["fake", str(hints), str(trace)]

    def run(self, key: str, hints: Path | None, trace: Path | None, timeout_s: float | None = None) -> Outcome:
        self.limits[key] = timeout_s
        if self.stop_after is not None and len(self.calls) >= self.stop_after:
            raise KeyboardInterrupt  # the tune is killed during this run
        self.calls.append(key)
        kinds = [k for k, f in FILES.items() if hints is not None and (hints / f).exists()]
        if set(kinds) & self.fail:
            return Outcome(False, None, 0.1, None, "exit status 1: boom", 1)
        rng = np.random.default_rng([self.seed, zlib.crc32(key.encode())])
        t = 10.0 * float(np.prod([self.factors[k] for k in kinds])) * float(rng.lognormal(0.0, 0.05))
        check = "checksum=bad" if set(kinds) & self.bad_check else "checksum=42"
        return Outcome(True, t, t, check)


class FakeAdvisor:
    """Proposes mapping.json and comm.json in every iteration; what-if predicts `ratios`."""

    def __init__(self, ratios: dict[str, float] | None = None, kinds=("mapping", "comm")) -> None:
        self.ratios, self.kinds = ratios or {"mapping": 0.8, "comm": 0.95}, kinds

    def propose(self, trace: Path, out: Path):
        out.mkdir(parents=True, exist_ok=True)
        for k in self.kinds:
            (out / FILES[k]).write_text(json.dumps({"kind": k}))
        return {"candidates": {k: {"file": FILES[k], "summary": k} for k in self.kinds}, "information": {}}

    def predict(self, trace: Path, hints: Path):
        kinds = [k for k, f in FILES.items() if (hints / f).exists()]
        return {"ratio": float(np.prod([self.ratios[k] for k in kinds]))}


def tune(out: Path, runner, advisor=None, **kw) -> dict:
    out.mkdir(parents=True, exist_ok=True)
    settings = Settings(**{"rounds": 6, "iterations": 3, **kw})
    return Tune(out, runner, advisor or FakeAdvisor(), settings, Record.open(out, {"fake": True}),
                echo=lambda s: None).run()


def verdicts(data: dict) -> list[tuple[int, str, bool]]:
    return [(e["index"], c["name"], c["verdict"]["kept"]) for e in data["iterations"]
            for t in e["trials"] for c in t["candidates"]]


@pytest.mark.parametrize(("q", "df", "t"), [(0.95, 1, 6.314), (0.975, 2, 4.303), (0.95, 3, 2.353), (0.99, 4, 3.747),
                                          (0.995, 7, 3.499), (0.99, 10, 2.764)])
def test_student_t_matches_the_printed_table(q, df, t):
    """Quantiles as printed in any table of Student's t (three decimals)."""
    assert stats.student_t_cdf(t, df) == pytest.approx(q, abs=2e-5)
    assert stats.student_t_cdf(-t, df) == pytest.approx(1 - q, abs=2e-5)


def test_paired_test_is_the_t_test_on_log_ratios():
    """t and p computed here from the raw times: p by integrating Student's density numerically."""
    import math

    pairs = [(10.0, 7.9), (12.0, 9.1), (8.0, 6.5), (9.0, 7.4), (11.0, 7.8)]
    d = np.log([h / b for b, h in pairs])
    t = d.mean() / (d.std(ddof=1) / math.sqrt(len(d)))
    x = np.linspace(-200.0, t, 2_000_001)
    dens = (1 + x**2 / 4) ** -2.5 * math.gamma(2.5) / (math.sqrt(4 * math.pi) * math.gamma(2))
    p = float(np.sum((dens[1:] + dens[:-1]) / 2 * np.diff(x)))
    got = stats.faster(pairs)
    assert got.t == pytest.approx(t) and got.p_value == pytest.approx(p, rel=1e-3)
    assert got.ratio == pytest.approx(math.exp(d.mean()))
    assert stats.faster([(b, h) for h, b in pairs]).p_value == pytest.approx(1 - p, rel=1e-3)  # slower: p near 1


def test_a_faster_hint_is_kept_and_written_to_best(tmp_path):
    data = tune(tmp_path, FakeRunner({"mapping": 0.7, "comm": 1.0}, seed=1), iterations=1)
    assert ("mapping" in data["best"]["kinds"]) and (tmp_path / "best" / "mapping.json").is_file()
    assert (1, "mapping", True) in verdicts(data) and (1, "comm", False) in verdicts(data)
    kept = [c for t in data["iterations"][0]["trials"] for c in t["candidates"] if c["name"] == "mapping"][0]
    assert kept["verdict"]["p_value"] <= kept["verdict"]["alpha"] and kept["median_s"] < kept["baseline_median_s"]


@pytest.mark.parametrize("seed", range(5))
def test_a_slower_hint_is_never_kept(tmp_path, seed):
    data = tune(tmp_path, FakeRunner({"mapping": 1.3, "comm": 1.02}, seed=seed))
    assert data["best"]["kinds"] == [] and not (tmp_path / "best" / "mapping.json").exists()
    assert not any(kept for *_, kept in verdicts(data))


def test_noise_alone_keeps_nothing_in_ten_tunes(tmp_path):
    """A balanced program: every hint leaves the time's distribution as it is."""
    for seed in range(10):
        data = tune(tmp_path / str(seed), FakeRunner({"mapping": 1.0, "comm": 1.0}, seed=100 + seed))
        assert data["best"]["kinds"] == [], (seed, verdicts(data))


def test_a_pair_that_hurts_together_keeps_the_best_single(tmp_path):
    class Clash(FakeRunner):
        def run(self, key, hints, trace, timeout_s=None):
            o = super().run(key, hints, trace, timeout_s)
            if hints is not None and all((hints / f).exists() for f in FILES.values()):
                o.seconds = o.wall_s = o.seconds * 2.0  # each helps alone; together they clash
            return o

    data = tune(tmp_path, Clash({"mapping": 0.7, "comm": 0.85}, seed=3), iterations=1)
    assert data["best"]["kinds"] == ["mapping"]
    assert (1, "mapping+comm", False) in verdicts(data)


def test_failed_and_wrong_runs_drop_the_hint_not_the_tune(tmp_path):
    data = tune(tmp_path, FakeRunner({"mapping": 0.7, "comm": 0.7}, seed=4, fail={"comm"}, bad_check={"mapping"}),
                iterations=1)
    cands = {c["name"]: c for t in data["iterations"][0]["trials"] for c in t["candidates"]}
    assert cands["comm"]["verdict"]["reason"].startswith("run failed: exit status 1")
    assert "check differs" in cands["mapping"]["verdict"]["reason"]
    assert data["best"]["kinds"] == [] and "no candidate" in data["stopped"]
    assert len([k for k in data["runs"] if k.endswith("/baseline")]) == 1  # both dropped in round 1: no more rounds


def test_killed_tune_resumes_without_measuring_again_and_chooses_the_same(tmp_path):
    whole = tune(tmp_path / "whole", FakeRunner({"mapping": 0.7, "comm": 0.9}, seed=7))
    killed = FakeRunner({"mapping": 0.7, "comm": 0.9}, seed=7, stop_after=9)
    with pytest.raises(KeyboardInterrupt):
        tune(tmp_path / "resumed", killed)
    assert len(json.loads((tmp_path / "resumed" / "tune.json").read_text())["runs"]) == 9
    again = FakeRunner({"mapping": 0.7, "comm": 0.9}, seed=7)
    resumed = tune(tmp_path / "resumed", again)
    assert not set(again.calls) & set(killed.calls)  # no run measured twice
    assert len(killed.calls) + len(again.calls) == len(whole["runs"])
    assert resumed["best"]["kinds"] == whole["best"]["kinds"] and verdicts(resumed) == verdicts(whole)
    assert {k: r["outcome"] for k, r in resumed["runs"].items()} == {k: r["outcome"] for k, r in whole["runs"].items()}


def test_predictions_learn_from_measured_runs(tmp_path):
    """What-if says 0.5x, the runs show 0.7x: after the first hinted run the calibrated prediction
    is within the noise, the uncalibrated one stays 29 % low."""
    data = tune(tmp_path, FakeRunner({"mapping": 0.7, "comm": 1.0}, seed=5), FakeAdvisor({"mapping": 0.5, "comm": 1.0},
                kinds=("mapping",)), iterations=1)
    w = data["whatif"]
    assert w["median_abs_error_uncalibrated"] == pytest.approx(1 - 0.5 / 0.7, abs=0.08)
    assert w["median_abs_error_calibrated"] < 0.12 and w["calibrated_runs"] == 5
    (trial,) = data["iterations"][0]["trials"]
    (c,) = trial["candidates"]
    assert c["predicted_ratio"] == c["replay_ratio"] == 0.5 and not c["calibrated"]  # nothing to learn from yet
    assert w["trial_abs_error_uncalibrated"] == pytest.approx(abs(0.5 / c["measured_ratio"] - 1))
    assert w["calibrated_trials"] == 0 and w["trial_abs_error_calibrated"] is None


def test_a_later_trial_is_predicted_with_the_calibration(tmp_path):
    """Iteration 2 states its ratio with the factor learnt in iteration 1: the median over its runs
    of measured gain / replayed gain, each run measured against its own round's baseline."""
    data = tune(tmp_path, FakeRunner({"mapping": 0.7, "comm": 1.0}, seed=8), FakeAdvisor({"mapping": 0.5, "comm": 1.0},
                kinds=("mapping",)), iterations=2)
    second = data["iterations"][1]["trials"][0]["candidates"][0]
    import statistics

    runs = data["runs"]
    factors = [(1 - runs[f"it1/alone/r{r}/mapping"]["outcome"]["seconds"]
                / runs[f"it1/alone/r{r}/baseline"]["outcome"]["seconds"]) / (1 - 0.5) for r in range(1, 7)]
    k = statistics.median(factors)  # the share of the replayed gain the runs realised: about 0.3 / 0.5
    assert 0.45 < k < 0.75 and second["calibrated"] and second["predicted_ratio"] == pytest.approx(1 - k * 0.5)


def test_budget_stops_the_tune(tmp_path):
    data = tune(tmp_path, FakeRunner({"mapping": 0.7, "comm": 1.0}, seed=6), budget_s=35.0)
    assert data["stopped"].startswith("budget of") and "judged on 1 of 6 rounds" in data["stopped"]
    walls = [r["outcome"]["wall_s"] for r in data["runs"].values()]
    assert sum(walls[:-1]) < 35.0 <= sum(walls) and data["best"]["kinds"] == []  # no run began past the budget


def test_measure_reads_time_and_check_lines_from_the_output():
    from paradise.tune.runner import Measure

    out = "step 1\nRESULT ok max_err=1.0e-07 elapsed_s=2.500\nRESULT ok max_err=2.0e-07 elapsed_s=1.250\n"
    m = Measure(r"elapsed_s=([0-9.]+)", "ms", r"max_err=\S+")
    o = m.outcome(0, False, 9.0, out, "")
    assert o.ok and o.seconds == pytest.approx(1.25e-3) and o.check == "max_err=1.0e-07 | max_err=2.0e-07"
    assert Measure().outcome(0, False, 9.0, out, "").seconds == 9.0  # no regex: the launch's wall time
    missing = Measure(r"wall_s=([0-9.]+)").outcome(0, False, 9.0, out, "")
    assert not missing.ok and "no match of --time-regex" in missing.error
    failed = Measure().outcome(3, False, 1.0, "", "a\nb\nboom: bad\n")
    assert not failed.ok and failed.error == "exit status 3: a b boom: bad" and failed.rc == 3
    hung = Measure().outcome(-9, True, 30.2, "", "")
    assert not hung.ok and hung.rc == 124 and "ran past 30 s" in hung.error


def test_hints_kept_in_two_iterations_are_confirmed_against_the_plain_program(tmp_path):
    class OneAtATime(FakeAdvisor):
        def propose(self, trace, out):
            self.kinds = ("mapping",) if "it1" in str(out) else ("comm",)
            return super().propose(trace, out)

    data = tune(tmp_path, FakeRunner({"mapping": 0.7, "comm": 0.8}, seed=9), OneAtATime(), iterations=2)
    assert [e.get("chosen") for e in data["iterations"]] == [["mapping"], ["comm"]]
    final = {k: r["outcome"]["seconds"] for k, r in data["runs"].items() if k.startswith("final/confirm/")}
    base = [t for k, t in final.items() if k.endswith("/baseline")]
    best = [t for k, t in final.items() if k.endswith("/best")]
    assert len(base) == len(best) == 6
    assert all(data["runs"][k]["hints"] == ["comm.json", "mapping.json"] for k in final if k.endswith("/best"))
    ratios = [final[f"final/confirm/r{r}/best"] / final[f"final/confirm/r{r}/baseline"] for r in range(1, 7)]
    assert data["speedup"] == pytest.approx(1 / float(np.exp(np.mean(np.log(ratios)))))
    assert data["confirm"]["verdict"]["kept"] and 1.5 < data["speedup"] < 2.0  # 1 / (0.7 x 0.8) = 1.79


def test_hinted_runs_get_a_hang_limit_from_the_runs_before(tmp_path):
    runner = FakeRunner({"mapping": 0.7, "comm": 1.0}, seed=10)
    data = tune(tmp_path, runner, iterations=1)
    assert runner.limits["it1/traced"] is None and runner.limits["it1/alone/r1/baseline"] is None
    walls = [data["runs"][k]["outcome"]["wall_s"] for k in ("it1/traced", "it1/alone/r1/baseline")]
    assert runner.limits["it1/alone/r1/mapping"] == max(60.0, 5 * max(walls))


def test_a_proposal_equal_to_the_kept_file_is_not_tried_again(tmp_path):
    """A run that combines streams is traced with them and the analyses propose them again: the
    same comm.json is information (nothing to try), not a candidate timed against itself."""
    from hints.format import make_hint, provenance, write_hint

    class SameComm(FakeAdvisor):
        def propose(self, trace, out):
            streams = [{"src_pe": s, "dst_pe": 1 - s, "entry": "arrive", "batch": 8} for s in (0, 1)]
            doc = make_hint("comm", {"combine": streams, "threshold": {}}, justified_by=[],
                            provenance=provenance(trace_fingerprint=str(trace), program="prog", pes=2, source="charm"))
            write_hint(out, doc, force=True)
            return {"candidates": {"comm": {"file": "comm.json", "summary": "combine 2 stream(s)"}}, "information": {}}

    runner = FakeRunner({"mapping": 1.0, "comm": 0.7}, seed=11)
    data = tune(tmp_path, runner, SameComm({"mapping": 1.0, "comm": 0.7}, kinds=("comm",)), iterations=3)
    assert [e.get("chosen") for e in data["iterations"]] == [["comm"], None]
    assert "kept already" in data["iterations"][1]["proposed"]["information"]["comm"]
    assert "propose no hint" in data["stopped"] and not any(k.startswith("it2/alone") for k in data["runs"])


class Quietening(FakeRunner):
    """A shared machine whose load falls during the tune: the n-th run takes (1 + 2 e^(-n/8)) x its
    time, 3x at the start, close to 1x after thirty runs (the recorded stencil2d tunes fell 8.4 -> 4.6 s
    and 35 -> 6 s over five rounds)."""

    def run(self, key, hints, trace, timeout_s=None):
        n = len(self.calls)
        o = super().run(key, hints, trace, timeout_s)
        if o.ok:
            o.seconds = o.wall_s = o.seconds * (1.0 + 2.0 * float(np.exp(-n / 8.0)))
        return o


def test_a_gain_of_1_4x_is_kept_while_the_load_falls(tmp_path):
    data = tune(tmp_path, Quietening({"mapping": 1 / 1.4, "comm": 1.0}, seed=12), iterations=1, rounds=5)
    (trial,) = data["iterations"][0]["trials"]
    c = {c["name"]: c for c in trial["candidates"]}
    assert c["mapping"]["verdict"]["kept"] and not c["comm"]["verdict"]["kept"]
    assert 1 / 1.4 * 0.9 < c["mapping"]["measured_ratio"] < 1 / 1.4 * 1.1  # the rounds' ratio: the load divides out
    base = trial["baseline_times"]
    assert max(base) > 1.5 * min(base)  # the drift the rounds spanned


@pytest.mark.parametrize("factors", [{"mapping": 1.0, "comm": 1.0}, {"mapping": 1.3, "comm": 1.02}])
def test_while_the_load_falls_no_useless_or_slower_hint_is_kept_in_ten_tunes(tmp_path, factors):
    """Runs later in a round are faster only because the machine quietens: the order rotates, the
    baseline included, so that favours no candidate."""
    for seed in range(10):
        data = tune(tmp_path / str(seed), Quietening(factors, seed=200 + seed), rounds=5)
        assert data["best"]["kinds"] == [], (seed, verdicts(data))


def test_the_order_of_a_round_rotates_with_the_baseline_in_it(tmp_path):
    runner = FakeRunner({"mapping": 0.7, "comm": 1.0}, seed=13)
    tune(tmp_path, runner, iterations=1, rounds=3)
    order = [k.split("/")[-1] for k in runner.calls if k.startswith("it1/alone/")]
    assert order == ["baseline", "mapping", "comm", "mapping", "comm", "baseline", "comm", "baseline", "mapping"]


def test_a_round_the_budget_cuts_keeps_the_runs_it_made(tmp_path):
    """Round 2 starts with mapping (the order rotates); the budget ends the round before its baseline:
    mapping's run is counted, unpaired (a round's ratio needs its baseline run)."""
    data = tune(tmp_path, FakeRunner({"mapping": 0.7, "comm": 1.0}, seed=6), budget_s=40.0)
    walls = [r["outcome"]["wall_s"] for r in data["runs"].values()]
    assert list(data["runs"])[-1] == "it1/alone/r2/mapping" and sum(walls[:-1]) < 40.0 <= sum(walls)
    c = {c["name"]: c for c in data["iterations"][0]["trials"][0]["candidates"]}
    assert len(c["mapping"]["times"]) == 2 and len(c["mapping"]["pairs"]) == 1 and len(c["comm"]["times"]) == 1
    assert data["stopped"].startswith("budget of") and data["best"]["kinds"] == []


class Bursty(FakeRunner):
    """Heavy tails: one run in five also takes a burst of 1-4x its time (the OS giving the CPUs to
    another job for part of the run), drawn like the noise from (seed, key)."""

    def run(self, key, hints, trace, timeout_s=None):
        o = super().run(key, hints, trace, timeout_s)
        rng = np.random.default_rng([self.seed, zlib.crc32(key.encode()), 1])
        if o.ok and rng.random() < 0.2:
            o.seconds = o.wall_s = o.seconds * float(rng.uniform(1.0, 4.0))
        return o


def test_bursts_of_load_keep_no_useless_hint_in_ten_tunes(tmp_path):
    for seed in range(10):
        data = tune(tmp_path / str(seed), Bursty({"mapping": 1.0, "comm": 1.0}, seed=300 + seed), rounds=5)
        assert data["best"]["kinds"] == [], (seed, verdicts(data))


def test_a_comm_proposal_with_its_streams_reordered_is_the_kept_file(tmp_path):
    """The analysis sorts streams by message count, which moves from run to run: the same streams
    in another order ask for the same thing; another batch does not."""
    from hints.format import make_hint, provenance, write_hint
    from paradise.tune.advisor import same_hint

    streams = [{"src_pe": s, "dst_pe": d, "entry": "arrive", "batch": 372} for s in (0, 1) for d in (0, 1)]

    def comm(name: str, combine: list[dict]) -> Path:
        doc = make_hint("comm", {"combine": combine, "threshold": {}}, justified_by=[],
                        provenance=provenance(trace_fingerprint="f", program="particles", pes=2, source="charm4py"))
        return write_hint(tmp_path / name, doc, force=True)

    kept = comm("a", streams)
    assert same_hint("comm", comm("b", streams[::-1]), kept, program="particles", pes=2)
    assert not same_hint("comm", comm("c", [{**streams[0], "batch": 8}, *streams[1:]]), kept, program="particles", pes=2)
