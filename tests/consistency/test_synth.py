"""Cross-view consistency on `paradise synth` traces of every pattern and kind."""

from __future__ import annotations

import pytest
from consistency import checks
from consistency.views import cli

CASES = {f"synth_charm_{p}": ("charm", p) for p in ("grid", "all-to-all", "star", "tree", "chain")}
CASES["synth_torch"] = ("torch", None)
EVENTS = "2e4"


def _build(kind: str, pattern: str | None):
    def build(work):
        out = work / "trace"
        args = ["synth", "-o", out, "--kind", kind, "--pes", "4" if kind == "charm" else "2", "--events", EVENTS,
                "--jobs", "1"]
        cli(*args, *(["--pattern", pattern] if pattern else []))
        return out
    return build


@pytest.mark.parametrize("case", list(CASES))
@pytest.mark.parametrize("check", list(checks.ALL))
def test_synth_views_agree(trace_cache, case, check):
    kind, pattern = CASES[case]
    t = trace_cache(case, _build(kind, pattern), kind == "charm")
    if check not in checks.applicable(t):
        pytest.skip(f"{check} does not apply to {case}")
    checks.ALL[check](t)
