"""What-if replay: reproduces synthetic runs, predicts remappings, refuses foreign or damaged hints."""

from __future__ import annotations

import json

import numpy as np
import pytest

from hints.format import make_hint, provenance, write_hint
from paradise.run import open_run
from paradise.store import open_trace
from paradise.whatif import Replayer, predict_from_hints
from paradise.whatif.sim import simulate
from tests.unit import charm_synth as cs


@pytest.fixture
def grid(tmp_path):
    prog, pl = cs.grid2d(4, 4, 2, 4, cost=lambda i, j, s: 500_000 if i < 2 and j < 2 else 100_000)
    return prog, pl, open_trace(prog.write(tmp_path / "grid", pl))


def replayer(trace):
    with open_run(trace) as session:
        return Replayer.from_session(session)


@pytest.mark.parametrize("builder", [lambda: cs.grid2d(4, 4, 2, 4), lambda: cs.master_worker(5, 2, 25),
                                     lambda: cs.pipeline(5, 2, 5), lambda: cs.histsort(6, 2),
                                     lambda: cs.ping_filler(8, 10)])
def test_unchanged_mapping_reproduces_makespan(tmp_path, builder):
    prog, pl = builder()
    rp = replayer(open_trace(prog.write(tmp_path / "t", pl)))
    out = rp.replay()
    assert out["baseline_replay_makespan_ns"] == pytest.approx(out["measured_makespan_ns"], rel=0.03)
    assert out["predicted_makespan_ns"] == out["measured_makespan_ns"]


def test_remapping_prediction_matches_rerun(tmp_path, grid):
    prog, pl, trace = grid
    new = {k: (0 if (k[1][0] + k[1][1]) % 2 else 1) for k in pl}  # checkerboard
    out = replayer(trace).replay({"Cell#0": {f"[{i},{j}]": p for (_, (i, j)), p in new.items()}})
    times = prog.timing(new)
    actual = max(t1 for _, _, t1 in times) - min(t0 for _, t0, _ in times)
    assert out["replay_makespan_ns"] == pytest.approx(actual, rel=0.05)
    assert sum(out["pe_load_ns"]) == sum(out["baseline_pe_load_ns"])  # work moves, it is not lost


def test_fitted_latency(grid):
    _, _, trace = grid
    m = replayer(trace).model
    # the builder's message cost: 20 µs + 1 ns/byte (64-byte starts and 4 kB ghosts pin both terms)
    assert m.a_ns == pytest.approx(20_000, rel=0.05) and m.ns_per_byte == pytest.approx(1.0, rel=0.05)


def test_simulator_is_deterministic(grid):
    _, _, trace = grid
    rp = replayer(trace)
    a = simulate(rp.graph, rp.graph.pe, rp.model, pes=2)
    b = simulate(rp.graph, rp.graph.pe, rp.model, pes=2)
    assert (a.start == b.start).all() and a.makespan_ns == b.makespan_ns


def _mapping_doc(trace, cells, **prov):
    p = provenance(trace_fingerprint=trace.fingerprint, program=trace.program, pes=2, source="synthetic")
    p.update(prov)
    return make_hint("mapping", {"collections": {"Cell#0": cells}, "strategy": "greedy"}, provenance=p,
                     justified_by=[])


def test_cli_json(tmp_path, grid, cli):
    _, _, trace = grid
    cells = {f"[{i},{j}]": (i + j) % 2 for i in range(4) for j in range(4)}
    write_hint(tmp_path / "h", _mapping_doc(trace, cells))
    rc, out, err = cli("whatif", trace.path, "--hints", tmp_path / "h", "--json")
    assert rc == 0, err
    doc = json.loads(out)
    assert set(doc) >= {"predicted_makespan_ns", "pe_load_ns", "baseline_replay_makespan_ns",
                        "measured_makespan_ns"}
    assert len(doc["pe_load_ns"]) == 2 and doc["hints"] == ["mapping"]


@pytest.mark.parametrize("case,needle", [
    ("program", "made for program 'other'"),
    ("pes", "made for 4 PEs"),
    ("fingerprint", "made for trace deadbeef"),
    ("damaged", "damaged hint file"),
    ("bad_pe", "the PE should be an integer in 0..1, not 7"),
    ("empty", "holds none of mapping.json, schedule.json, comm.json"),
    ("bad_comm", "combine[0].batch should be an integer in 2..65536, not None"),
])
def test_cli_refuses_bad_hints(tmp_path, grid, cli, case, needle):
    _, _, trace = grid
    d = tmp_path / "h"
    d.mkdir()
    cells = {"[0,0]": 1}
    if case == "program":
        write_hint(d, _mapping_doc(trace, cells, program="other"))
    elif case == "pes":
        write_hint(d, _mapping_doc(trace, cells, pes=4))
    elif case == "fingerprint":
        write_hint(d, _mapping_doc(trace, cells, trace_fingerprint="deadbeef"))
    elif case == "damaged":
        (d / "mapping.json").write_text('{"format": "paradise-hints/1", "kind": "mapp')
    elif case == "bad_pe":
        write_hint(d, _mapping_doc(trace, {"[0,0]": 7}))
    elif case == "bad_comm":
        write_hint(d, _comm_doc(trace, {"src_pe": 0, "dst_pe": 1, "entry": "take"}))
    rc, out, err = cli("whatif", trace.path, "--hints", d)
    assert rc == 2
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("paradise: error: ") and needle in lines[0]


def _comm_doc(trace, *streams):
    p = provenance(trace_fingerprint=trace.fingerprint, program=trace.program, pes=2, source="synthetic")
    return make_hint("comm", {"combine": list(streams), "threshold": {}}, provenance=p, justified_by=[])


def test_comm_replay_counts_batches(tmp_path, cli):
    """One exec on PE 0 sends 40 small messages to 4 elements on PE 1: combined in batches of 8 they
    become 5 messages, and each batch pays the per-message dispatch cost once."""
    prog = cs.Prog(2)
    root = prog.exec("Src#0", 0, "burst", 400_000)
    for k in range(40):
        prog.exec("Dst#0", k % 4, "take", 50_000, msg=prog.send(root, 10_000 * k, 64))
    pl = {("Src#0", (0,)): 0, **{("Dst#0", (k,)): 1 for k in range(4)}}
    trace = open_trace(prog.write(tmp_path / "t", pl))
    write_hint(tmp_path / "h", _comm_doc(trace, {"src_pe": 0, "dst_pe": 1, "entry": "take", "batch": 8}))
    rc, out, err = cli("whatif", trace.path, "--hints", tmp_path / "h", "--json")
    assert rc == 0, err
    doc = json.loads(out)
    assert doc["hints"] == ["comm"]
    c = doc["comm"]
    assert (c["combined_messages"], c["messages_before"] - c["messages_after"]) == (40, 40 - 5)
    assert doc["replay_makespan_ns"] <= doc["baseline_replay_makespan_ns"]


def test_whatif_reads_the_sessions_graph_fit_and_replayer(tmp_path, grid):
    """One run: the replay graph is the session's exec graph, the latency model is the session's fit
    calibrated, and predict_from_hints replays on the replayer the analyses share (no second one)."""
    prog, _, trace = grid
    cells = {f"[{i},{j}]": (i + j) % 2 for i in range(4) for j in range(4)}
    write_hint(tmp_path / "h", _mapping_doc(trace, cells))
    with open_run(trace) as session:
        rp = session.get("replayer")
        assert rp.graph.n == session.get("exec_graph").execs == len(prog.execs)
        fit = session.get("latency_fit")
        assert rp.model.samples == fit.samples and session.get("latency_model") is rp.model
        assert rp._baseline is None
        out = predict_from_hints(session, tmp_path / "h")
        assert rp._baseline is not None  # the shared replayer's baseline served the prediction
        assert out["baseline_replay_makespan_ns"] == rp.baseline.makespan_ns


@pytest.mark.parametrize("builder", [lambda: cs.grid2d(4, 4, 2, 4), lambda: cs.master_worker(5, 2, 25),
                                     lambda: cs.pipeline(5, 2, 5), lambda: cs.histsort(6, 2),
                                     lambda: cs.ping_filler(8, 10)])
def test_compiled_loop_agrees_with_the_python_oracle(tmp_path, builder):
    """The compiled event loop (_replay.c) starts every exec when the heapq loop does, under the run's
    placement and under a proposal that moves execs, ranks them and charges each its own overhead."""
    from paradise.whatif.sim import replay_arrays
    from tests.oracles.replay import replay_python

    prog, pl = builder()
    rp = replayer(open_trace(prog.write(tmp_path / "t", pl)))
    g, rng = rp.graph, np.random.default_rng(3)
    proposals = [(g.pe, None, None),
                 ((g.pe + 1) % rp.pes, rng.integers(0, 3, g.n), rng.integers(0, 50_000, g.n))]
    for pe, prio, ovh in proposals:
        sim = simulate(g, pe, rp.model, prio, pes=rp.pes, overhead_ns=ovh)
        start, finish = replay_python(replay_arrays(g, pe, rp.model, prio, rp.pes, ovh))
        assert g.n > 0 and (sim.start == start).all() and (sim.finish == finish).all()
        assert sim.makespan_ns == int(finish.max() - min(start.min(), 0))


def test_compiled_loop_refuses_arrays_that_do_not_fit(grid):
    """Inputs that would read outside the arrays are a ValueError, not a crash."""
    from paradise.whatif import _replay
    from paradise.whatif.sim import replay_arrays

    _, _, trace = grid
    rp = replayer(trace)
    a = replay_arrays(rp.graph, rp.graph.pe, rp.model, pes=rp.pes)
    out = np.zeros(rp.graph.n, np.int64)

    def run(npes=None, **bad):
        f = {**vars(a), **bad}
        _replay.replay(len(f["free_at"]) if npes is None else npes, f["pending"].copy(), f["msg_off"], f["msg_kids"], f["obj_off"],
                       f["obj_kids"], f["hold_off"], f["hold_kids"], f["arrive_after"], f["cost"], f["gap"],
                       f["pe"], f["prio"], f["orig"], f["ovh"], f["free_at"].copy(), out, out.copy())

    run()  # the arrays as prepared replay
    for bad, why in [({"pe": np.full(rp.graph.n, rp.pes, np.int64)}, "PE is outside"),
                     ({"cost": a.cost[:-1]}, "lengths do not agree"),
                     ({"msg_kids": np.full(len(a.msg_kids), rp.graph.n, np.int64)}, "child exec is outside"),
                     ({"obj_off": a.obj_off[::-1].copy()}, "offsets out of range")]:
        with pytest.raises(ValueError, match=why):
            run(**bad)
    with pytest.raises(ValueError, match="npes is negative"):
        run(npes=-1)


def test_a_budget_without_room_for_the_replay_says_so_instead_of_judging(grid, cli):
    """Under a budget whose client part cannot hold the replay, no candidate is replayed and the hint
    says why (not that none beat the current placement); under a larger one the candidates are judged."""
    from paradise.whatif import CLIENT_RESERVE_BYTES

    _, _, trace = grid
    small = 512 << 20  # DuckDB's half and the reserve take it all
    assert small // 2 + CLIENT_RESERVE_BYTES >= small
    rc, out, err = cli("analyze", trace.path, "--json", "--memory-limit", "512MiB")
    assert rc in (0, 1), err
    placement = json.loads(out)["analyses"]["placement"]
    assert placement["mapping_candidates"] == []
    text = " ".join(placement["hint_explanations"])
    assert "too large to replay under --memory-limit 512.0 MiB" in text and "was judged" in text
    assert "beat it" not in text
    rc, out, err = cli("analyze", trace.path, "--json", "--memory-limit", "2GiB")
    assert rc in (0, 1), err
    judged = json.loads(out)["analyses"]["placement"]["mapping_candidates"]
    assert {c["strategy"] for c in judged} >= {"keep", "greedy"}


def test_whatif_refuses_a_replay_the_budget_cannot_hold(tmp_path, grid, cli):
    """`paradise whatif` replays above analyze's exec count, but not beyond its memory budget: one line,
    exit 2, naming the trace and the budget."""
    _, _, trace = grid
    write_hint(tmp_path / "h", _mapping_doc(trace, {f"[{i},{j}]": (i + j) % 2 for i in range(4) for j in range(4)}))
    rc, out, err = cli("whatif", trace.path, "--hints", tmp_path / "h", "--memory-limit", "512MiB")
    assert rc == 2 and out == ""
    (line,) = err.strip().splitlines()
    assert str(trace.path) in line and "--memory-limit 512.0 MiB leaves room for 0" in line
    assert "or more holds it" in line
    assert "Traceback" not in err
    rc, out, err = cli("whatif", trace.path, "--hints", tmp_path / "h", "--memory-limit", "2GiB", "--json")
    assert rc == 0, err
    assert json.loads(out)["execs"] > 0
