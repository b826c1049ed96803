"""The lean exec arrays (traces too large to replay) agree with the SQL exec graph."""

from __future__ import annotations

import numpy as np
import pytest

from paradise.analyses import scheduling
from paradise.engines.duckdb_engine import DuckDBEngine
from paradise.events import eventload, execarrays, groupkeys
from paradise.store import open_trace
from paradise.whatif.model import exec_graph
from tests.unit import charm_synth as cs

FIELDS = ("pe", "t0", "t1", "cost", "src", "src_pe", "send_t0", "nbytes", "pe_prev", "gap", "crit_pred", "wait_msg")


@pytest.mark.parametrize("prog", [cs.pipeline(4, 2, 3), cs.ping_filler(10, 20), cs.histsort(6, 2)],
                         ids=["pipeline", "ping_filler", "histsort"])
def test_lean_graph_matches_sql_exec_graph(tmp_path, prog):
    trace = open_trace(prog[0].write(tmp_path / "t", prog[1]))
    with DuckDBEngine(trace) as eng:
        lean = execarrays.build(eng)
        full = exec_graph(eng.query("scheduling_exec_graph"))
    assert lean.n == full.n > 0
    for f in FIELDS:  # same ids (pe, t0, t1 order), same message matching and pointers
        assert np.array_equal(getattr(lean, f), getattr(full, f)), f
    names = [lean.entry_names[c] for c in lean.name_code]
    assert names == [str(n) for n in full.name]


def test_scheduling_lean_path_finds_the_same_critical_path(tmp_path, monkeypatch):
    # the pipeline has no preemption spikes, so robust and measured costs agree: both paths
    # (replay graph, lean arrays) must walk the same 4 execs and 3 message hops
    prog, pl = cs.pipeline(4, 2, 1)
    trace = open_trace(prog.write(tmp_path / "t", pl))
    with DuckDBEngine(trace) as eng:
        small = scheduling.analyze(eng, trace)
    monkeypatch.setattr("paradise.whatif.REPLAY_MAX_EXECS", 0)
    with DuckDBEngine(trace) as eng:
        assert execarrays.too_large_to_replay(eng)
        big = scheduling.analyze(eng, trace)
    ev = [{e.metric: e.value for e in r.characteristics[0].evidence} for r in (small, big)]
    for k in ("execs", "message_hops", "length_ns", "entries"):
        assert ev[0][k] == ev[1][k], k
    assert "priority_replay" not in big.sections  # no replay above the limit



@pytest.mark.parametrize("scale", [1, 1 << 40], ids=["table", "hash"])
def test_group_ids_are_equal_keys_in_value_order(scale):
    rng = np.random.default_rng(1)
    a, b = rng.integers(0, 5, 1000) * scale, rng.integers(0, 7, 1000)
    g, n = groupkeys.group_ids([b, a])
    pairs = sorted(set(zip(a.tolist(), b.tolist())))
    assert n == len(pairs)
    assert [pairs[i] for i in g.tolist()] == list(zip(a.tolist(), b.tolist()))


def test_group_ids_order_nulls_and_wide_values():
    # small ranges, random 63-bit values (digits, then a hash), few wide values, packed 3-D
    # indices (21-bit digits): ids follow the key order (last column first), NULL last
    rng = np.random.default_rng(3)
    null = eventload.NULL
    for _ in range(100):
        n = int(rng.integers(1, 200))
        cols = []
        for kind in rng.integers(0, 4, int(rng.integers(1, 5))):
            c = [rng.integers(-5, 5, n), rng.integers(-2**62, 2**62, n),
                 rng.choice(rng.integers(-2**63 + 1, 2**63 - 1, 5), n),
                 (rng.integers(0, 40, n) << 42) | (rng.integers(0, 40, n) << 21) | rng.integers(0, 40, n)][kind]
            cols.append(np.where(rng.random(n) < 0.2, null, c))

        def key(i, cols=cols):
            return tuple((1, 0) if c[i] == null else (0, int(c[i])) for c in reversed(cols))

        keys = sorted({key(i) for i in range(n)})
        g, k = groupkeys.group_ids(list(cols))
        assert k == len(keys)
        assert g.tolist() == [keys.index(key(i)) for i in range(n)]
