"""Resilience analysis (paradise/analyses/resilience.py) on tiny synthetic training traces."""

from __future__ import annotations

import json

import pytest

from hints.format import load_hint
from hints.generators.checkpoint_policy import HOURS, default_mtbf_s
from paradise.analyses import resilience
from paradise.analyses.base import AnalysisConfig
from paradise.analyses.session import Session
from paradise.engines.duckdb_engine import DuckDBEngine
from paradise.run import open_run
from paradise.store import open_trace
from tests.builders import TraceBuilder

S = 10**9  # ns per second


def _run_with_failure(tmp_path):
    """2 ranks; 1 s steps 0..6, a periodic checkpoint after step 4 (0.2 s stall), rank 1 dies in step 6
    at 6.5 s, rank 0 records the failure at 6.6 s; restart at 10 s, restore of step 5 (0.3 s), then
    steps 5..9 again from 11 s."""
    b = TraceBuilder(2, source="torch", program="train", world_size=2)
    for pe in (0, 1):
        t = 0
        for s in range(6):
            b.step(pe, s, t, t + S)
            t += S
            if s == 4:
                b.add(pe, "checkpoint", t, t + S // 5, name="periodic", step=5)
                t += S // 5
        b.add(pe, "restart", 10 * S, None, name="restart", args=json.dumps({"attempt": 1}))
        b.add(pe, "restore", 10 * S + S // 2, 10 * S + 8 * S // 10, name="periodic", step=5)
        for s in range(5, 10):
            t = 11 * S + (s - 5) * S
            b.step(pe, s, t, t + S)
    b.add(1, "failure", 6 * S + S // 2, None, name="exit", step=6)
    b.add(0, "failure", 6 * S + 6 * S // 10, None, name="RuntimeError", step=6)
    return b.write(tmp_path / "trace")


def _analyze(path, **cfg):
    trace = open_trace(path)
    with DuckDBEngine(trace) as eng:
        return resilience.analyze(Session(eng, trace), AnalysisConfig(**cfg))


def _inputs(result):
    return {r["input"]: r for r in result.sections["inputs"]}


def test_inputs_from_trace(tmp_path):
    result = _analyze(_run_with_failure(tmp_path))
    inp = _inputs(result)
    # every step row lasts 1 s
    assert inp["iteration_s"]["value"] == pytest.approx(1.0) and inp["iteration_s"]["source"] == "trace"
    # the checkpoint rows stall 0.2 s
    assert inp["checkpoint_s"]["value"] == pytest.approx(0.2) and inp["checkpoint_s"]["source"] == "trace"
    # first failure at 6.5 s; first step after the restart at 11 s: 4.5 s
    assert inp["restart_s"]["value"] == pytest.approx(4.5) and inp["restart_s"]["source"] == "trace"
    assert inp["gpus"]["value"] == 2 and inp["gpus"]["source"] == "trace"
    # one incident (two ranks recorded it) over a 16 s span (0 .. 11 + 5 s): MTBF 16 s
    assert inp["mtbf_s"]["value"] == pytest.approx(16.0) and inp["mtbf_s"]["source"] == "trace"
    failures = next(c for c in result.characteristics if c.name == "failures_seen")
    assert failures.value == 1
    # failed in step 6, restored to the start of step 5: steps 5 and 6 run again
    assert result.sections["incidents"][0]["replayed"] == 2


def test_options_override_and_gpus_scale_default(tmp_path):
    b = TraceBuilder(2, source="torch", program="train", world_size=2)
    for pe in (0, 1):
        for s in range(4):
            b.step(pe, s, s * S, (s + 1) * S)
    path = b.write(tmp_path / "clean")
    result = _analyze(path, gpus=16384)
    inp = _inputs(result)
    assert inp["mtbf_s"]["source"] == "default"
    assert inp["mtbf_s"]["value"] == pytest.approx(default_mtbf_s(16384))
    assert inp["checkpoint_s"]["source"] == "default" and inp["restart_s"]["source"] == "default"
    assert inp["gpus"]["source"] == "option"
    result = _analyze(path, mtbf_hours=2.0)
    assert _inputs(result)["mtbf_s"]["value"] == pytest.approx(2 * HOURS)
    assert _inputs(result)["mtbf_s"]["source"] == "option"


def test_checkpoint_hint_round_trips(tmp_path):
    from hints.format import write_hint

    result = _analyze(_run_with_failure(tmp_path), gpus=4096)
    (doc,) = result.hints
    path = write_hint(tmp_path / "hints", doc)
    loaded = load_hint(path, "checkpoint")
    assert loaded["mode"] in ("periodic", "jit", "jit+periodic")
    assert set(loaded["expected_waste"]) == {"periodic", "jit", "jit+periodic"}
    assert loaded["inputs"]["sources"]["iteration_s"] == "trace"
    assert loaded["inputs"]["sources"]["gpus"] == "option"
    if loaded["mode"] == "jit":
        assert loaded["interval_steps"] is None and loaded["interval_s"] is None
    else:
        assert loaded["interval_steps"] == round(loaded["interval_s"] / loaded["inputs"]["iteration_s"])
    from hints.kinds import KINDS  # the consumer's validation accepts what the generator wrote

    assert KINDS["checkpoint"].load(path) == {"mode": loaded["mode"], "interval_steps": loaded["interval_steps"]}


def test_applies_only_to_training_traces(tmp_path):
    b = TraceBuilder(1, source="charm4py")
    b.exec(0, 0, 10, "work")
    with open_run(b.write(tmp_path / "charm")) as session:
        assert not resilience.applies(session)
