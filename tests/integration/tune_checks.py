"""What every real tune's record must hold, recomputed in the test from the raw times it records."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np

from hints.kinds import KINDS


def paired_p(pairs: list[tuple[float, float]]) -> float:
    """One-sided paired t-test on log(hinted / baseline) per round, the test docs/tune.md names: p by
    integrating Student's density numerically (an oracle independent of paradise.tune.stats)."""
    d = np.log([h / b for b, h in pairs])
    n = len(d)
    if n < 2:
        return 1.0
    t = d.mean() / (d.std(ddof=1) / math.sqrt(n))
    nu = n - 1
    # x = sqrt(nu) tan(u): the density times dx is c sqrt(nu) cos(u)^(nu - 1) du on (-pi/2, atan(t / sqrt(nu)))
    u = np.linspace(-math.pi / 2, math.atan(t / math.sqrt(nu)), 1_000_001)
    f = np.cos(u) ** (nu - 1) * math.gamma((nu + 1) / 2) / (math.sqrt(math.pi) * math.gamma(nu / 2))
    return float(np.sum((f[1:] + f[:-1]) / 2 * np.diff(u)))


def round_pairs(runs: dict, prefix: str, name: str) -> list[tuple[float, float]]:
    """(baseline, hinted) seconds of each round under `prefix` where both ran and succeeded."""
    out, r = [], 1
    while f"{prefix}r{r}/baseline" in runs or f"{prefix}r{r}/{name}" in runs:
        b, h = runs.get(f"{prefix}r{r}/baseline"), runs.get(f"{prefix}r{r}/{name}")
        if b and h and b["outcome"]["ok"] and h["outcome"]["ok"]:
            out.append((b["outcome"]["seconds"], h["outcome"]["seconds"]))
        r += 1
    return out


def check_record(out: Path, data: dict, program: str, procs: int) -> list[dict]:
    """Every verdict follows from its recorded times; best/ holds exactly the kept kinds' files,
    each usable as a hint; every accepted run printed the baseline's check lines. The candidates."""
    assert data == json.loads((out / "tune.json").read_text())
    ref = data["steps"]["reference_check"]["value"]
    assert ref  # the --check regex matched the baseline's result lines
    cands = []
    for e in data["iterations"]:
        for t in e["trials"]:
            base = t["baseline_times"]
            for c in t["candidates"]:
                cands.append(c)
                keys = [k for k in data["runs"] if k.startswith(f"it{e['index']}/{t['stage']}/") and
                        k.endswith("/" + c["name"])]
                times = [data["runs"][k]["outcome"]["seconds"] for k in keys if data["runs"][k]["outcome"]["ok"]]
                assert all(data["runs"][k]["outcome"]["check"] == ref for k in keys if c["verdict"]["kept"])
                if c["verdict"]["reason"] and c["verdict"]["reason"].startswith(("run failed", "check differs")):
                    assert not c["verdict"]["kept"]
                    continue
                assert c["times"] == times and len(times) == len(base)
                pairs = round_pairs(data["runs"], f"it{e['index']}/{t['stage']}/", c["name"])
                p = paired_p(pairs)
                assert abs(c["verdict"]["p_value"] - p) < 1e-4
                ratio = math.exp(float(np.mean(np.log([h / b for b, h in pairs])))) if pairs else None
                assert c["verdict"]["kept"] == (p <= t["alpha"] and ratio is not None and ratio < 1
                                                 and (t["stage"] == "alone" or c["kinds"] == e.get("chosen")))
    if "confirm" in data:  # the best against the plain program, in rounds of its own
        pairs = round_pairs(data["runs"], "final/confirm/", "best")
        assert abs(data["confirm"]["verdict"]["p_value"] - paired_p(pairs)) < 1e-4
        assert abs(data["speedup"] - 1 / math.exp(float(np.mean(np.log([h / b for b, h in pairs]))))) < 1e-9
    kept_files = {KINDS[k].file for k in data["best"]["kinds"]}
    assert {p.name for p in (out / "best").iterdir()} == kept_files
    for k in data["best"]["kinds"]:
        KINDS[k].load(out / "best" / KINDS[k].file, program=program, pes=procs)
    page = (out / "tune.html").read_text()
    assert page.startswith("<!DOCTYPE html>") and "Plotly.newPlot" in page and "Candidates tried" in page
    return cands
