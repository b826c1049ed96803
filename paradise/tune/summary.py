"""The tune's figures as rows, read from tune.json only: the terminal table and the HTML page show
the same rows."""

from __future__ import annotations

from typing import Any


def rows(data: dict[str, Any]) -> list[dict[str, Any]]:
    """One row per candidate tried: iteration, stage, kinds, medians, predicted and measured ratio, verdict."""
    out = []
    trials = [(e["index"], t["stage"], c) for e in data.get("iterations", []) for t in e["trials"]
              for c in t["candidates"]]
    if data.get("confirm"):
        trials.append(("final", "confirm", data["confirm"]))
    for index, stage, c in trials:
        v = c["verdict"]
        out.append({"iteration": index, "stage": stage, "candidate": c["name"], "rounds": len(c["times"]),
                    "median_s": c["median_s"], "baseline_median_s": c["baseline_median_s"],
                    "measured_ratio": c["measured_ratio"], "replay_ratio": c["replay_ratio"],
                    "predicted_ratio": c.get("predicted_ratio"), "p_value": v["p_value"], "alpha": v["alpha"],
                    "kept": v["kept"], "reason": v["reason"]})
    return out


def _f(v: float | None, fmt: str) -> str:
    return "-" if v is None else format(v, fmt)


def table(data: dict[str, Any]) -> str:
    """The terminal summary."""
    head = f"{'it':>5}  {'stage':<8} {'candidate':<16}{'n':>3}{'median s':>10}{'base s':>9}{'paired':>7}" \
           f"{'what-if':>8}{'p':>9}  verdict"
    lines = [head, "-" * len(head)]
    for r in rows(data):
        verdict = "KEPT" if r["kept"] else f"no: {r['reason']}"
        lines.append(f"{str(r['iteration']):>5}  {r['stage']:<8} {r['candidate']:<16}{r['rounds']:>3}"
                     f"{_f(r['median_s'], '.3f'):>10}{_f(r['baseline_median_s'], '.3f'):>9}"
                     f"{_f(r['measured_ratio'], '.3f'):>7}{_f(r['predicted_ratio'], '.3f'):>8}"
                     f"{_f(r['p_value'], '.3g'):>9}  {verdict[:90]}")
    best = data.get("best", {})
    sp = data.get("speedup")
    w = data.get("whatif") or {}
    lines.append(f"best: {'+'.join(best.get('kinds') or []) or 'no hint (the default run)'}"
                 + (f", {sp:.2f}x faster than the plain program ("
                    + ("measured against it in the final rounds" if data.get("confirm") else "the kept trial's paired ratio")
                    + ")" if sp else "")
                 + f"; hint files in {best.get('folder')}")
    if w.get("predicted_trials"):
        lines.append(f"what-if error per trial (predicted ratio before its rounds vs the rounds' paired ratio): "
                     f"{_f(w.get('trial_abs_error_uncalibrated'), '.1%')} as replayed, "
                     f"{_f(w.get('trial_abs_error_calibrated'), '.1%')} after calibration "
                     f"({w.get('calibrated_trials')} trial(s))")
    if w.get("predicted_runs"):
        cal = w.get("median_abs_error_calibrated")
        lines.append(f"what-if error per hinted run (median |predicted - measured| / measured; predicted = "
                     f"ratio x its round's baseline run): "
                     f"{_f(w.get('median_abs_error_uncalibrated'), '.1%')} as replayed, "
                     f"{_f(cal, '.1%')} after calibration ({w.get('calibrated_runs')} run(s))")
    lines.append(f"stopped: {data.get('stopped')}; {data.get('runs_measured')} run(s) measured"
                 + (f"; load average {data['load']}" if data.get("load") else ""))
    return "\n".join(lines)
