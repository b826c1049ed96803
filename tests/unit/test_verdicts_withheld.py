"""Every verdict sentence is withheld, with its reason, when the evidence for it is missing:
straggler, communication pattern, slowest rank of a collective, significant (compare). Balanced /
imbalanced are the overview's (tests of their own)."""

from __future__ import annotations

from builders import TraceBuilder, torch_like

from paradise.analyses import communication, training
from paradise.analyses.base import AnalysisConfig
from paradise.analyses.session import Session
from paradise.compare.perf import compare_traces
from paradise.engines.duckdb_engine import DuckDBEngine
from paradise.store import open_trace


def _run(analysis, path):
    trace = open_trace(path)
    with DuckDBEngine(trace) as eng:
        if analysis is training:
            return analysis.analyze(Session(eng, trace), AnalysisConfig())
        return analysis.analyze(Session(eng, trace))


def _char(result, name):
    return next(c for c in result.characteristics if c.name == name)


def test_straggler_withheld_on_too_few_steps(tmp_path):
    # rank 1 is 1.5x slower in every step, but 2 steps say nothing about persistence
    r = _run(training, torch_like(ranks=2, steps=2).write(tmp_path / "t"))
    c = _char(r, "stragglers")
    assert c.value is None and c.summary.startswith("Straggler unknown")
    assert "only 2 step(s)" in c.summary and f"at least {training.MIN_STEPS}" in c.summary
    assert "No straggler" not in c.summary  # never a verdict drawn from missing data


def test_straggler_withheld_on_one_rank(tmp_path):
    r = _run(training, torch_like(ranks=1, steps=6).write(tmp_path / "t"))
    c = _char(r, "stragglers")
    assert c.value is None and "no step was recorded by two or more ranks" in c.summary


def test_straggler_verdict_with_enough_steps(tmp_path):
    r = _run(training, torch_like(ranks=2, steps=8).write(tmp_path / "t"))
    c = _char(r, "stragglers")  # the evidence is there: a verdict is given, whichever it is
    assert c.value is not None and not c.summary.startswith("Straggler unknown")


def test_pattern_withheld_with_too_few_objects(tmp_path):
    # two objects ping-pong: no pattern is meaningful below 3 objects
    b = TraceBuilder(2, program="pingpong")
    for i in range(20):
        src, dst = i % 2, (i + 1) % 2
        msg = b.send(src, i * 1000, dst, 64, name="Ping.pong", coll="Ping#0", obj=src, index=(src,),
                     peer_coll="Ping#0", peer_obj=dst)
        b.exec(dst, i * 1000 + 100, i * 1000 + 500, "Ping.pong", msg=msg, bytes=64, peer_pe=src,
               coll="Ping#0", obj=dst, index=(dst,))
    r = _run(communication, b.write(tmp_path / "t"))
    c = _char(r, "pattern:Ping#0")
    assert c.value is None and "unknown" in c.summary and "at most 2 object(s)" in c.summary
    assert "Ping#0" not in r.sections["patterns"]


def test_pattern_withheld_without_receivers(tmp_path):
    # sends that name no receiving object or PE: there is no object graph to read a pattern from
    b = TraceBuilder(2, program="blind")
    for i in range(10):
        b.send(0, i * 1000, None, 128, name="Cell.halo")
        b.exec(0, i * 1000, i * 1000 + 500, "Cell.work", coll="Cell#0", obj=0)
    r = _run(communication, b.write(tmp_path / "t"))
    c = _char(r, "pattern")
    assert c.value is None and "no message in the trace names its receiving object or PE" in c.summary


def test_significant_withheld_on_one_run_each(tmp_path):
    def run(name, work):
        b = TraceBuilder(1, program="p")
        b.exec(0, 0, work, "main")
        return b.write(tmp_path / name)

    r = compare_traces(run("a", 1_000_000), run("b", 500_000))  # 2x, but one number per side
    mk = r.get("makespan")
    assert mk.relative == -0.5 and not mk.significant and mk.verdict == "one run each"
