"""The tune loop: trace the current best, analyze, try every proposed kind alone against the current
best in interleaved rounds, then the kept ones together; keep what the test says is faster; repeat on
the hinted program until nothing helps, or the iterations or the budget are spent (docs/tune.md)."""

from __future__ import annotations

import copy
import json
import os
import shutil
import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from paradise.tune import calibrate, stats
from paradise.tune.advisor import AdviceFailed, Advisor, same_hint
from paradise.tune.record import Record
from paradise.tune.runner import Outcome, Runner

HANG_FACTOR = 5.0
HANG_MIN_S = 60.0


class BudgetSpent(Exception):
    """The --budget-min is used up; the tune stops where it is."""


class BaselineFailed(Exception):
    """The program without hints failed: there is nothing to tune."""


@dataclass(frozen=True)
class Settings:
    rounds: int = 5
    confidence: float = stats.DEFAULT_CONFIDENCE
    iterations: int = 3
    budget_s: float = 30 * 60.0
    kinds: tuple[str, ...] | None = None
    """Only these kinds are tried (None: every kind the analyses propose)."""


def _median(xs: list[float]) -> float | None:
    return statistics.median(xs) if xs else None


def _f3(x: float | None) -> str:
    return "-" if x is None else f"{x:.3f}"


class Tune:
    """One tune into `out`; `runner` and `advisor` are the real program and analyses, or a test's."""

    def __init__(self, out: Path, runner: Runner, advisor: Advisor, settings: Settings, record: Record,
                 echo: Callable[[str], None] = print) -> None:
        self.out, self.runner, self.advisor, self.s, self.rec, self.echo = out, runner, advisor, settings, record, echo
        self.cals: dict[str, calibrate.Calibration] = {}
        """Per candidate (its kinds joined by '+'): what-if's calibration, learnt from that candidate's
        runs only (one kind's replay error says nothing of another's)."""
        self.best: dict[str, Path] = {}  # hint file name -> the file kept
        self.best_kinds: list[str] = []
        self.predictions: list[dict[str, Any]] = []
        self.budget_hit: str | None = None
        self.recorded: set[str] = set()
        """Runs this session took from tune.json instead of running them (a resume)."""

    def cal(self, name: str) -> calibrate.Calibration:
        """What-if's calibration for the candidate `name` (its kinds joined by '+'; its own runs so far)."""
        if name not in self.cals:
            self.cals[name] = calibrate.Calibration.for_kinds(name.split("+"))
        return self.cals[name]

    # -- runs and steps, each recorded once ------------------------------------------------------
    def measure(self, key: str, hints: Path | None, trace: Path | None, **extra: Any) -> Outcome:
        """The run `key`: from tune.json when it was measured before, else run now and recorded."""
        if key in self.rec.runs:
            self.recorded.add(key)
            return Outcome.from_dict(self.rec.runs[key]["outcome"])
        if self.rec.spent_s() >= self.s.budget_s:
            raise BudgetSpent(key)
        if trace is not None and trace.exists():
            shutil.rmtree(trace)
        o = self.runner.run(key, hints, trace, self.hang_limit() if hints is not None else None)
        self.rec.runs[key] = {"hints": sorted(p.name for p in hints.iterdir()) if hints else [],
                              "hints_dir": str(hints) if hints else None, "traced": trace is not None,
                              "command": self.runner.command(hints, trace), "outcome": o.to_dict(),
                              "load": round(os.getloadavg()[0], 2), **extra}
        self.rec.save()
        return o

    def hang_limit(self) -> float:
        """A hinted run longer than HANG_FACTOR x the longest successful run so far (at least
        HANG_MIN_S) is taken as hung, ended and counted as failed (a combining hint has been seen
        to spin both PEs for minutes)."""
        walls = [r["outcome"]["wall_s"] for r in self.rec.runs.values() if r["outcome"]["ok"]]
        return max(HANG_MIN_S, HANG_FACTOR * max(walls, default=HANG_MIN_S))

    def step(self, key: str, fn: Callable[[], Any]) -> Any:
        if key in self.rec.steps:
            return self.rec.steps[key]["value"]
        t0 = time.monotonic()
        value = json.loads(json.dumps(fn()))  # as a resumed tune will read it
        self.rec.steps[key] = {"value": value, "seconds": round(time.monotonic() - t0, 3)}
        self.rec.save()
        return value

    # -- hint folders ------------------------------------------------------------------------------
    def folder(self, where: Path, files: dict[str, Path]) -> Path | None:
        if not files:
            return None
        if where.exists():
            shutil.rmtree(where)
        where.mkdir(parents=True)
        for name, src in files.items():
            shutil.copyfile(src, where / name)
        return where

    # -- the loop ----------------------------------------------------------------------------------
    def run(self) -> dict[str, Any]:
        self.rec.data["iterations"] = []
        self.rec.data.pop("confirm", None)
        stopped = f"{self.s.iterations} iteration(s) done"
        try:
            for it in range(1, self.s.iterations + 1):
                why = self.iteration(it)
                if why:
                    stopped = why
                    break
            if not self.budget_hit and sum(1 for e in self.rec.data["iterations"] if e.get("chosen")) > 1:
                self.confirm()
        except BudgetSpent as exc:
            stopped = f"budget of {self.s.budget_s / 60:g} min spent (before run {exc})"
        self.finish(stopped)
        return self.rec.data

    def reference_check(self) -> str | None:
        return self.rec.steps.get("reference_check", {}).get("value")

    def iteration(self, it: int) -> str | None:
        """One iteration; the reason to stop, or None to go on."""
        base = self.folder(self.out / f"it{it}" / "base", self.best)
        entry: dict[str, Any] = {"index": it, "baseline_kinds": list(self.best_kinds), "trials": []}
        self.rec.data["iterations"].append(entry)
        trace = self.out / f"it{it}" / "trace"
        self.echo(f"iteration {it}: traced run of the {'baseline' if not base else 'current best (' + ', '.join(self.best_kinds) + ')'}")
        t = self.measure(f"it{it}/traced", base, trace)
        if not t.ok:
            if it == 1:
                raise BaselineFailed(f"the traced baseline run failed: {t.error}")
            return f"the traced run of iteration {it} failed: {t.error}"
        try:
            prop = self.step(f"it{it}/propose", lambda: self.advisor.propose(trace, self.out / f"it{it}" / "hints"))
        except AdviceFailed as exc:
            return f"analysis of iteration {it} failed: {exc}"
        prop = {**prop, "information": dict(prop.get("information", {}))}  # the recorded step stays as proposed
        entry["proposed"] = prop
        from hints.kinds import KINDS

        cands = {k: prop["candidates"][k] for k in KINDS  # registry order, on resume too
                 if k in prop["candidates"] and (self.s.kinds is None or k in self.s.kinds)}
        for k in [k for k, v in cands.items() if self.kept_already(it, v["file"], k)]:
            del cands[k]
            prop.setdefault("information", {})[k] = f"{KINDS[k].file} proposed as kept already: nothing to try"
        for k, v in cands.items():
            self.echo(f"  proposed {k}: {v['summary']}")
        for k, v in prop.get("information", {}).items():
            self.echo(f"  information, not timed: {k}: {v}")
        if not cands:
            return f"iteration {it}: the analyses propose no hint that changes the run"
        singles = self.trial(it, "alone", [[k] for k in cands], base, trace)
        entry["trials"].append(singles)
        kept = [c for c in singles["candidates"] if c["verdict"]["kept"]]
        if not kept:
            return self.budget_hit or f"iteration {it}: no candidate is faster at {self.s.confidence:.0%} confidence"
        choice = min(kept, key=lambda c: c["measured_ratio"])
        if len(kept) > 1:
            together = self.trial(it, "together", [[k for c in kept for k in c["kinds"]]], base, trace)
            entry["trials"].append(together)
            both = together["candidates"][0]
            if both["verdict"]["kept"] and both["measured_ratio"] <= choice["measured_ratio"]:
                choice = both
            else:
                both["verdict"]["kept"] = False
                both["verdict"]["reason"] = (both["verdict"].get("reason") or
                                             f"not faster than {'+'.join(choice['kinds'])} alone")
        for k in choice["kinds"]:
            self.best[cands[k]["file"]] = self.out / f"it{it}" / "hints" / cands[k]["file"]
            if k not in self.best_kinds:
                self.best_kinds.append(k)
        entry["chosen"] = choice["kinds"]
        self.echo(f"  kept {'+'.join(choice['kinds'])}: {choice['measured_ratio']:.3f} x the baseline "
                  f"(medians {choice['median_s']:.3f} s against {choice['baseline_median_s']:.3f} s)")
        self.rec.save()
        return self.budget_hit

    def kept_already(self, it: int, file: str, kind: str) -> bool:
        """A proposal equal to the file of its kind already kept (a run that already combines
        streams is traced with them, and the analyses propose them again)."""
        return file in self.best and same_hint(kind, self.out / f"it{it}" / "hints" / file, self.best[file])

    def trial(self, it: int, stage: str, kinds: list[list[str]], base: Path | None, trace: Path) -> dict[str, Any]:
        """Interleaved rounds of the current best and each candidate (kinds over the current best)."""
        hints = self.out / f"it{it}" / "hints"
        alpha = stats.alpha_each(self.s.confidence, len(kinds))
        cands: list[dict[str, Any]] = []
        for ks in kinds:
            name = "+".join(ks)
            new = {self._file(k): hints / self._file(k) for k in ks}
            folder = self.folder(self.out / f"it{it}" / "try" / name, {**self.best, **new})
            only = self.folder(self.out / f"it{it}" / "new" / name, new)
            pred = self.step(f"it{it}/predict/{name}", lambda only=only: self.advisor.predict(trace, only))
            ratio = (pred or {}).get("ratio")
            cal = self.cal(name)
            ahead = cal.ratio(ratio) if ratio else None  # the trial's ratio, calibrated on the runs before it
            if ahead is not None:
                self.echo(f"  {name}: what-if predicts {ahead:.3f} x the baseline (replay {ratio:.3f}; share of the "
                          f"replayed gain realised so far {cal.factor:.2f}, from {len(cal.factors)} run(s) of {name})")
            cands.append({"kinds": ks, "name": name, "hints": folder, "prediction": pred, "times": [],
                          "predicted_ratio": ahead, "calibrated": cal.fitted,
                          "pairs": [], "runs": [], "dropped": None})
        base_times: list[float] = []
        for r in range(1, self.s.rounds + 1):
            if all(c["dropped"] for c in cands):
                break  # every candidate failed: no more baseline runs for nothing
            try:
                self.round(f"it{it}", stage, r, base, cands, base_times)
            except BudgetSpent:
                if r == 1:
                    raise
                self.echo(f"  budget spent: judged on {r - 1} round(s)")
                self.budget_hit = f"budget of {self.s.budget_s / 60:g} min spent during iteration {it} " \
                                  f"(its {stage} trial judged on {r - 1} of {self.s.rounds} rounds)"
                break
        return {"stage": stage, "alpha": alpha, "baseline_times": base_times,
                "candidates": [self.judge(c, base_times, alpha) for c in cands]}

    def _file(self, kind: str) -> str:
        from hints.kinds import KINDS

        return KINDS[kind].file

    def round(self, at: str, stage: str, r: int, base: Path | None, cands: list[dict[str, Any]],
              base_times: list[float]) -> None:
        """The current best and every live candidate once, back to back, in an order that rotates
        from round to round, the baseline included (round 1 starts with it: its check lines are the
        reference), so load that drifts favours no one. A hinted run pairs with its round's baseline
        run: the test compares the rounds' ratios, and what-if predicts it as the calibrated ratio
        (fixed before the round) x that baseline run. A round the budget cuts keeps what it ran."""
        live = [c for c in cands if c["dropped"] is None]
        seq: list[dict[str, Any] | None] = [None, *live]
        shift = (r - 1) % len(seq)
        stated = {c["name"]: self.cal(c["name"]).ratio(x) if (x := (c["prediction"] or {}).get("ratio")) else None
                  for c in live}
        factor = {c["name"]: self.cal(c["name"]).factor for c in live}
        fitted = {c["name"]: self.cal(c["name"]).fitted for c in live}
        before = {c["name"]: copy.deepcopy(self.cal(c["name"])) for c in live}  # as it stood before the round
        done: dict[str, Outcome] = {}
        b: Outcome | None = None
        spent: BudgetSpent | None = None
        try:
            for c in seq[shift:] + seq[:shift]:
                if c is not None:
                    done[c["name"]] = self.measure(f"{at}/{stage}/r{r}/{c['name']}", c["hints"], None,
                                                   predicted_ratio=stated[c["name"]],
                                                   calibration_factor=factor[c["name"]])
                    continue
                b = self.measure(f"{at}/{stage}/r{r}/baseline", base, None)
                if b.ok:
                    self.step("reference_check", lambda b=b: b.check)
                elif at == "it1" and r == 1:
                    raise BaselineFailed(f"the baseline run failed: {b.error}")
        except BudgetSpent as exc:
            if b is None and not done:
                raise
            spent = exc
        b_s = b.seconds if b is not None and b.ok else None
        if b_s is not None:
            base_times.append(b_s)
        line = [f"  {stage} round {r}/{self.s.rounds}: baseline " + (f"{b_s:.3f} s" if b_s else "failed")]
        for c in live:
            if c["name"] in done:
                line.append(self.account(c, f"{at}/{stage}/r{r}/{c['name']}", done[c["name"]], b_s,
                                         before[c["name"]], fitted[c["name"]]))
        keys = [f"{at}/{stage}/r{r}/{n}" for n in ["baseline", *(c["name"] for c in live)]]
        loads = [self.rec.runs[k]["load"] for k in keys if k in self.rec.runs and "load" in self.rec.runs[k]]
        self.echo(" | ".join(line) + (f" (load {max(loads):.2f})" if loads else "")
                  + (" (from tune.json)" if all(k in self.recorded for k in keys) else ""))
        if spent is not None:
            raise spent

    def account(self, c: dict[str, Any], key: str, o: Outcome, b_s: float | None,
                cal: calibrate.Calibration, fitted: bool) -> str:
        """A hinted run into its candidate: dropped (failed, or its check differs), or its time, its
        pair with the round's baseline, its prediction and what the calibration learns from it."""
        ref = self.reference_check()
        if not o.ok:
            c["dropped"] = f"run failed: {o.error}"
        elif ref is not None and o.check != ref:
            c["dropped"] = f"check differs from the baseline's: {o.check!r} (baseline {ref!r})"
        if c["dropped"]:
            return f"{c['name']} dropped ({c['dropped'][:120]})"
        c["times"].append(o.seconds)
        if b_s is not None:
            c["pairs"].append([b_s, o.seconds])
        ratio = (c["prediction"] or {}).get("ratio")
        pred = cal.predict(b_s, ratio)
        raw = b_s * ratio if b_s and ratio else None
        run = {"key": key, "predicted_s": pred, "measured_s": o.seconds, "error": calibrate.error(pred, o.seconds),
               "raw_error": calibrate.error(raw, o.seconds), "calibrated": fitted}
        c["runs"].append(run)
        self.predictions.append(run)
        self.cal(c["name"]).learn(o.seconds, b_s, ratio)
        said = f"predicted {pred / b_s:.3f} x baseline = {pred:.3f} s, " if pred is not None and b_s else ""
        return f"{c['name']} {said}measured {o.seconds:.3f} s"

    def judge(self, c: dict[str, Any], base_times: list[float], alpha: float) -> dict[str, Any]:
        test = stats.faster(c["pairs"])
        med, bmed = _median(c["times"]), _median(base_times)
        kept = c["dropped"] is None and test.p_value <= alpha and test.ratio is not None and test.ratio < 1.0
        reason = c["dropped"] or (None if kept else f"p = {test.p_value:.4g} > {alpha:.4g}" if test.p_value > alpha
                                  else "not faster than the baseline")
        pred = c["prediction"] or {}
        measured_ratio = test.ratio
        self.echo(f"  {c['name']}: {_f3(measured_ratio)} x the baseline over {test.rounds} paired round(s) "
                  f"(medians {_f3(med)} s vs {_f3(bmed)} s), t = {test.t:.3g}, p = {test.p_value:.4g} "
                  f"(kept when <= {alpha:.4g}): {'KEPT' if kept else 'not kept'}"
                  + (f" ({reason})" if reason and not kept else ""))
        return {"kinds": c["kinds"], "name": c["name"], "hints_dir": str(c["hints"]), "times": c["times"],
                "pairs": c["pairs"], "median_s": med, "baseline_median_s": bmed, "measured_ratio": measured_ratio,
                "replay_ratio": pred.get("ratio"), "predicted_ratio": c["predicted_ratio"],
                "calibrated": c["calibrated"], "ratio_error": calibrate.error(c["predicted_ratio"], measured_ratio),
                "raw_ratio_error": calibrate.error(pred.get("ratio"), measured_ratio), "runs": c["runs"],
                "verdict": {"kept": kept, "reason": reason, **test.to_dict(), "alpha": alpha}}

    def confirm(self) -> None:
        """The best found over several iterations against the plain program, in rounds of their own:
        the speedup measured directly rather than as a product of the iterations' ratios."""
        self.echo(f"confirming: the plain program against {'+'.join(self.best_kinds)}")
        best = self.folder(self.out / "final" / "best", self.best)
        cand = {"kinds": list(self.best_kinds), "name": "best", "hints": best, "prediction": None, "times": [],
                "pairs": [], "runs": [], "dropped": None, "predicted_ratio": None, "calibrated": False}
        base_times: list[float] = []
        for r in range(1, self.s.rounds + 1):
            self.round("final", "confirm", r, None, [cand], base_times)
        self.rec.data["confirm"] = self.judge(cand, base_times, 1 - self.s.confidence)

    def finish(self, stopped: str) -> None:
        best = self.out / "best"
        if best.exists():
            shutil.rmtree(best)
        best.mkdir()
        for name, src in self.best.items():
            shutil.copyfile(src, best / name)
        self.rec.data["best"] = {"kinds": self.best_kinds, "files": sorted(self.best), "folder": str(best)}
        self.rec.data["stopped"] = stopped
        trials = [c for e in self.rec.data["iterations"] for t in e["trials"] for c in t["candidates"]]
        self.rec.data["whatif"] = {**calibrate.summary(self.predictions), **calibrate.trial_summary(trials)}
        self.rec.data["runs_measured"] = len(self.rec.runs)
        self.rec.data["speedup"] = speedup(self.rec.data["iterations"], self.rec.data.get("confirm"))
        self.rec.save()


def speedup(iterations: list[dict[str, Any]], confirm: dict[str, Any] | None = None) -> float | None:
    """Baseline / best: 1 / the confirmation's paired ratio when one ran, else the product over
    iterations of 1 / each kept choice's paired ratio (each iteration measures its choice against
    the previous best); None when nothing was kept."""
    if confirm and confirm.get("measured_ratio"):
        return 1.0 / confirm["measured_ratio"]
    total, any_kept = 1.0, False
    for entry in iterations:
        for trial in entry["trials"]:
            for c in trial["candidates"]:
                if c["verdict"]["kept"] and c["kinds"] == entry.get("chosen"):
                    total /= c["measured_ratio"]
                    any_kept = True
    return total if any_kept else None
