"""What every real tune's record must hold, recomputed in the test from the raw times it records."""

from __future__ import annotations

import itertools
import json
import statistics
from pathlib import Path

from hints.kinds import KINDS


def one_sided_p(h: list[float], b: list[float]) -> float:
    """P(U <= observed) over every split of the pooled times: the test docs/tune.md names."""
    def u_of(xs, ys):
        return sum((x > y) + 0.5 * (x == y) for x in xs for y in ys)

    pooled, u = h + b, u_of(h, b)
    splits = list(itertools.combinations(range(len(pooled)), len(h)))
    return sum(u_of([pooled[i] for i in s], [pooled[i] for i in range(len(pooled)) if i not in s]) <= u
               for s in splits) / len(splits)


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
                p = one_sided_p(times, base)
                assert abs(c["verdict"]["p_value"] - p) < 1e-6
                assert c["verdict"]["kept"] == (p <= t["alpha"] and statistics.median(times) < statistics.median(base)
                                                 and (t["stage"] == "alone" or c["kinds"] == e.get("chosen")))
    if "confirm" in data:  # the best against the plain program, in rounds of its own
        runs = {k: r["outcome"]["seconds"] for k, r in data["runs"].items() if k.startswith("final/") and r["outcome"]["ok"]}
        base = [t for k, t in runs.items() if k.endswith("/baseline")]
        best = [t for k, t in runs.items() if k.endswith("/best")]
        assert abs(data["confirm"]["verdict"]["p_value"] - one_sided_p(best, base)) < 1e-6
        assert abs(data["speedup"] - statistics.median(base) / statistics.median(best)) < 1e-9
    kept_files = {KINDS[k].file for k in data["best"]["kinds"]}
    assert {p.name for p in (out / "best").iterdir()} == kept_files
    for k in data["best"]["kinds"]:
        KINDS[k].load(out / "best" / KINDS[k].file, program=program, pes=procs)
    page = (out / "tune.html").read_text()
    assert page.startswith("<!DOCTYPE html>") and "Plotly.newPlot" in page and "Candidates tried" in page
    return cands
