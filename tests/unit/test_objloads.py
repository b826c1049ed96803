"""placement's stage 2 on the object loads (paradise.events.objloads, step_persistence,
creation_table) against plain pandas and SQL definitions, on tables with missing steps, ties,
odd and even step counts."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from builders import TraceBuilder, charm_like, torch_like

from paradise.analyses import placement
from paradise.analyses.session import Session
from paradise.engines.duckdb_engine import DuckDBEngine
from paradise.events import objloads
from paradise.events.steploads import row_medians
from paradise.store import open_trace
from paradise.whatif.model import STEP_LOAD_CLIP

ORACLE_SQL = Path(__file__).resolve().parents[1] / "oracles" / "sql"
ONE_SCAN_CREATION = """
SELECT coll, max(cat) AS cat,
       count(*) FILTER (WHERE kind = 'create') AS creates,
       min(t0) FILTER (WHERE kind = 'create') AS create_first_t0,
       max(t0) FILTER (WHERE kind = 'create') AS create_last_t0,
       count(*) FILTER (WHERE kind = 'migrate') AS migrations,
       min(t0) FILTER (WHERE kind = 'exec' AND name <> '__init__') AS work_first_t0
FROM events
WHERE kind IN ('create', 'exec', 'migrate') AND coll IS NOT NULL
GROUP BY coll ORDER BY coll
"""
"""placement_creation as one scan gave it before it was split (the definition creation_table keeps)."""


def rows_table(seed: int, objects: int = 12, steps: int = 9, missing: float = 0.2,
               unstepped: bool = True, ties: bool = False) -> pd.DataFrame:
    """A table shaped like objloads.object_rows': one row per (oid, step), sorted, step -1 allowed."""
    rng = np.random.default_rng(seed)
    out = []
    for o in range(objects):
        ss = [s for s in range(steps) if rng.random() >= missing] or [0]
        if unstepped and rng.random() < 0.3:
            ss = [-1, *ss]
        for s in ss:
            t1 = 1_000 * (s + 2) if ties else int(rng.integers(0, 10**9))
            out.append({"oid": o, "pe": int(rng.integers(0, 4)), "step": s,
                        "load_ns": int(rng.integers(1, 10**6)), "execs": int(rng.integers(1, 5)), "last_t1": t1})
    return pd.DataFrame(out)


def persistence_by_pandas(obj: pd.DataFrame) -> placement.Characteristic:
    """The pandas persistence placement used before step_persistence (the reference)."""
    per = obj[obj["step"] >= 0].groupby(["oid", "step"])["load_ns"].sum().unstack("step")
    per = per.clip(upper=STEP_LOAD_CLIP * per.median(axis=1), axis=0)
    width = max(1, per.shape[1] // placement.PERSIST_WINDOWS)
    if width > 1:
        per = per.T.groupby(np.arange(per.shape[1]) // width).median().T
    steps = list(per.columns)
    corrs, changes = [], []
    for a, b in zip(steps, steps[1:]):
        pair = per[[a, b]].dropna()
        if len(pair) < 2:
            continue
        x, y = pair[a].to_numpy(float), pair[b].to_numpy(float)
        rx, ry = pair[a].rank().to_numpy(float), pair[b].rank().to_numpy(float)
        corrs.append(float(np.corrcoef(rx, ry)[0, 1]) if rx.std() > 0 and ry.std() > 0 else np.nan)
        d = np.abs(y - x)
        keep = np.argsort(d)[: len(d) - (max(1, int(len(d) * placement.TRIM_SHARE)) if len(d) >= 5 else 0)]
        changes.append(float(d[keep].sum() / max(float(x[keep].sum()), 1.0)))
    return corrs, changes


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("steps", [1, 4, 9, 25, 64])
def test_row_medians_are_pandas_medians(seed, steps):
    from oracles.object_steps import step_matrix

    m, _ = step_matrix(rows_table(seed, steps=steps, missing=0.3 if seed % 2 else 0.0))
    expect = pd.DataFrame(m).median(axis=1).to_numpy()
    assert np.array_equal(row_medians(m), expect, equal_nan=True)


def assert_medians(got: objloads.ObjectSteps, m: np.ndarray) -> None:
    """The engine's per-object medians and step counts (events_object_step_medians) equal the
    oracle's over the step matrix `m`: row_medians, pandas' median, and the non-NaN count."""
    assert np.array_equal(got.med, row_medians(m), equal_nan=True)
    assert np.array_equal(got.med, pd.DataFrame(m).median(axis=1).to_numpy(float), equal_nan=True)
    assert np.array_equal(got.ran, (~np.isnan(m)).sum(axis=1))


@pytest.mark.parametrize(("pattern", "events", "even"), [("grid", 6_000, False), ("grid", 6_500, True),
                                                     ("star", 6_500, True)])
def test_engine_medians_equal_the_row_medians_oracle_on_synth_traces(tmp_path, pattern, events, even):
    """On synth traces (odd and even step counts) the engine's medians equal row_medians over the
    oracle's step matrix; synth objects keep one load per step, so random_trace's tests below are
    where the two middle values differ."""
    from oracles.object_steps import object_steps as oracle
    from oracles.object_steps import step_matrix

    from paradise.synth import synth

    synth(tmp_path / pattern, pattern=pattern, events=events, pes=3, imbalance=1.4, seed=2, jobs=1)
    with DuckDBEngine(open_trace(tmp_path / pattern)) as eng:
        got = objloads.object_steps(eng)
        rows, _, _ = oracle(eng)
    m, _ = step_matrix(rows)
    counts = (~np.isnan(m)).sum(axis=1)
    assert len(m) and (counts > 0).all() and ((counts % 2 == 0) == even).all(), pattern
    assert_medians(got, m)


def test_engine_medians_of_even_counts_are_the_mean_of_the_two_middle_values(tmp_path):
    """An object of 4 steps with loads 1, 4, 3, 10 (us) has the median 3.5 us; one of 3 steps, 4 us;
    loads near 2**51 ns keep their half (within a double's exact range)."""
    b = TraceBuilder(pes=1)
    big = 2**51
    for i, loads in enumerate(([1_000, 4_000, 3_000, 10_000], [5_000, 4_000, 1_000], [big, big + 3])):
        t = 0
        for s, d in enumerate(loads):
            b.exec(0, t, t + d, "X.work", coll="A#0", index=(i,), cat="array", step=s)
            t += d + 1
    with DuckDBEngine(open_trace(b.write(tmp_path / "even"))) as eng:
        got = objloads.object_steps(eng)
    assert got.med.tolist() == [3_500.0, 4_000.0, big + 1.5] and got.ran.tolist() == [4, 3, 2]


def random_trace(tmp_path: Path, seed: int, stepped: bool = True, tie: bool = False):
    """Objects of two collections on 3 PEs, a random subset of 9 steps each (some execs split over
    two PEs in a step), some execs without a step; `tie`: object A#0[0] ends two rows at the same
    instant (a step and a no-step exec), so its current PE is a tie (only with steps: without, an
    object has one row)."""
    rng = np.random.default_rng(seed)
    b = TraceBuilder(pes=3)
    t = 0
    for coll in ("A#0", "B#1"):
        for i in range(7):
            for s in range(9):
                if rng.random() < 0.25:
                    continue
                for _ in range(int(rng.integers(1, 3))):
                    t += int(rng.integers(1, 50))
                    d = int(rng.integers(1, 10**5))
                    b.exec(int(rng.integers(0, 3)), t, t + d, "X.work", coll=coll, index=(i,), cat="array",
                           step=s if stepped else None)
            if rng.random() < 0.3:
                t += 7
                b.exec(int(rng.integers(0, 3)), t, t + 5, "X.late", coll=coll, index=(i,), cat="array")
    if tie:
        end = t + 10**6
        b.exec(0, end - 100, end, "X.work", coll="A#0", index=(0,), cat="array", step=3)
        b.exec(2, end - 50, end, "X.late", coll="A#0", index=(0,), cat="array")
    return open_trace(b.write(tmp_path / f"r{seed}{stepped}{tie}"))


@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize(("stepped", "tie"), [(True, False), (True, True), (False, False)])
def test_object_steps_and_loads_equal_the_pandas_oracle(tmp_path, seed, stepped, tie):
    """The step matrix and per-object loads the engine gives equal the oracle's, from its rows:
    pandas' unstack and placement.object_loads."""
    from oracles.object_steps import object_steps as oracle
    from oracles.object_steps import step_matrix

    trace = random_trace(tmp_path, seed, stepped, tie)
    with DuckDBEngine(trace) as eng:
        got = objloads.object_steps(eng)
        rows, labels, want_stepped = oracle(eng)
    assert got.stepped == want_stepped == stepped
    m, steps = step_matrix(rows)
    assert np.array_equal(got.steps, steps)
    assert np.array_equal(got.matrix, m, equal_nan=True)
    pd.testing.assert_frame_equal(got.labels.reset_index(drop=True), labels, check_dtype=False)
    want = placement.object_loads(rows, ("oid",), stepped)
    assert_medians(got, m)
    by_oid = objloads.oid_loads(got, got.med)
    if tie:
        assert by_oid is None and got.rows is not None
        pd.testing.assert_frame_equal(got.rows.reset_index(drop=True), rows)
    else:
        assert got.rows is None
        pd.testing.assert_frame_equal(by_oid, want)


@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize("steps", [2, 6, 19, 40, 131])
def test_step_persistence_matches_the_pandas_definition(seed, steps):
    obj = rows_table(seed, steps=steps, missing=0.25 if seed % 2 else 0.0)
    corrs, changes = persistence_by_pandas(obj)
    per = obj[obj["step"] >= 0].groupby(["oid", "step"])["load_ns"].sum().unstack("step")
    med = per.median(axis=1).to_numpy(float)
    got = {e.metric: e.value for e in placement.step_persistence(per.to_numpy(float), med).evidence}
    assert got["step_pairs"] == len(changes)
    if changes:
        c = np.nanmedian(corrs) if not all(np.isnan(corrs)) else None
        assert got["mean_step_corr"] == (round(float(c), 4) if c is not None else None)
        assert got["mean_rel_change"] == round(float(np.median(changes)), 4)


def lifecycle_trace(tmp_path):
    """Creations before and after the first work, migrations, a group, __init__ and unnamed execs,
    a non-instant create row and a collection with no create row."""
    b = TraceBuilder(2, source="synthetic")
    b.add(0, "create", 10, None, coll="A#0", index=(0,), cat="array")
    b.add(1, "create", 15, 40, coll="A#0", index=(1,), cat="array")
    b.exec(0, 20, 30, "__init__", coll="A#0", index=(0,), cat="array")
    b.exec(0, 50, 90, "A.work", coll="A#0", index=(0,), cat="array", step=0)
    b.exec(1, 45, 95, "A.work", coll="A#0", index=(1,), cat="array", step=0)
    b.add(1, "create", 60, None, coll="B#1", index=(0,), cat="array")  # created after B's first work
    b.exec(1, 55, 58, "B.go", coll="B#1", index=(0,), cat="array")
    b.exec(1, 70, 80, "B.go", coll="B#1", index=(0,), cat="array")
    b.add(0, "migrate", 100, None, coll="A#0", index=(1,), cat="array")
    b.exec(0, 1, 5, "G.init", coll="G#2", index=(0,), cat="group")
    b.exec(1, 2, 6, None, coll="G#2", index=(1,), cat="group")
    b.exec(0, 96, 99, "Main.done", coll="Main#3", cat="mainchare")
    return open_trace(b.write(tmp_path / "life"))


@pytest.mark.parametrize("make", ["lifecycle", "charm_like"])
def test_creation_table_equals_the_one_scan_query(tmp_path, make):
    trace = lifecycle_trace(tmp_path) if make == "lifecycle" else open_trace(
        charm_like(pes=3, steps=3).write(tmp_path / "charm"))
    with DuckDBEngine(trace) as eng:
        got = placement.creation_table(Session(eng, trace))
        expect = eng.sql(ONE_SCAN_CREATION).to_pandas()
    pd.testing.assert_frame_equal(got, expect, check_dtype=False)
    assert list(got.columns) == list(expect.columns)
    if make == "lifecycle":
        assert placement.creation(got).value == "dynamic"


def test_creation_table_without_creations_runs_one_query(tmp_path):
    b = TraceBuilder(1, source="synthetic")
    b.exec(0, 0, 10, "A.work", coll="A#0", index=(0,), cat="array")
    trace = open_trace(b.write(tmp_path / "plain"))

    class Counting(DuckDBEngine):
        names: list[str] = []

        def query(self, name, **params):
            self.names.append(name)
            return super().query(name, **params)

    with Counting(trace) as eng:
        got = placement.creation_table(Session(eng, trace))
        expect = eng.sql(ONE_SCAN_CREATION).to_pandas()
    assert Counting.names == ["overview_pe"]  # the kinds come from the overview's table
    # the first work is read only for created collections: without creations it is left null
    assert got["work_first_t0"].isna().all()
    pd.testing.assert_frame_equal(got.drop(columns="work_first_t0"), expect.drop(columns="work_first_t0"),
                                  check_dtype=False)
    assert placement.creation(got).value == "unknown"


@pytest.mark.parametrize("make", ["lifecycle", "charm_like", "torch_like"])
def test_collection_kinds_equal_placement_cats(tmp_path, make):
    # tests/oracles/sql/placement_cats.sql is the definition; placement rolls it up from the
    # overview's group table
    trace = lifecycle_trace(tmp_path) if make == "lifecycle" else open_trace(
        (charm_like(pes=3, steps=3) if make == "charm_like" else torch_like(ranks=2, steps=2)).write(tmp_path / make))
    with DuckDBEngine(trace) as eng:
        expect = eng.sql(ORACLE_SQL.joinpath("placement_cats.sql").read_text()).to_pylist()
        got = placement.collection_kinds(eng.query("overview_pe")).to_pylist()
    assert got == expect
    if make == "lifecycle":
        assert {r["coll"]: r["lifecycle"] for r in got} == {"A#0": 3, "B#1": 1, "G#2": 0, "Main#3": 0}


def ties_trace(tmp_path: Path):
    """Objects split over two PEs within a step, ending at the same instant on both (the PE of the
    step is then the higher one), an exec without a step and one without an index."""
    b = TraceBuilder(pes=2)
    for s in range(3):
        b.exec(0, 100 * s, 100 * s + 40, "A.work", coll="A#0", index=(1,), cat="array", step=s)
        b.exec(1, 100 * s + 10, 100 * s + 40, "A.work", coll="A#0", index=(1,), cat="array", step=s)
        b.exec(1, 100 * s + 50, 100 * s + 70 + s, "A.work", coll="A#0", index=(0,), cat="array", step=s)
    b.exec(0, 400, 410, "A.late", coll="A#0", index=(0,), cat="array")
    b.exec(1, 400, 420, "Main.done", coll="Main#1", cat="mainchare", step=2)
    return open_trace(b.write(tmp_path / "ties"))


@pytest.mark.parametrize("make", ["ties", "lifecycle", "charm_like", "charm_like_seed3", "torch_like"])
def test_object_steps_equal_the_pandas_oracle(tmp_path, make):
    from oracles.object_steps import object_steps as oracle
    from oracles.object_steps import step_matrix

    trace = {"ties": lambda: ties_trace(tmp_path), "lifecycle": lambda: lifecycle_trace(tmp_path),
             "charm_like": lambda: open_trace(charm_like(pes=3, steps=4).write(tmp_path / "c")),
             "charm_like_seed3": lambda: open_trace(charm_like(pes=4, objs_per_pe=3, steps=5, seed=3).write(tmp_path / "c3")),
             "torch_like": lambda: open_trace(torch_like(ranks=2, steps=2).write(tmp_path / "t"))}[make]()
    with DuckDBEngine(trace) as eng:
        got = objloads.object_steps(eng)
        want, want_labels, want_stepped = oracle(eng)
    assert got.stepped == want_stepped
    m, steps = step_matrix(want)
    assert np.array_equal(got.steps, steps) and np.array_equal(got.matrix, m, equal_nan=True)
    pd.testing.assert_frame_equal(got.labels.reset_index(drop=True), want_labels.reset_index(drop=True),
                                  check_dtype=False)
    assert_medians(got, m)
    by_oid = objloads.oid_loads(got, got.med)
    loads = placement.object_loads(want, ("oid",), want_stepped)
    pd.testing.assert_frame_equal(by_oid, loads, check_dtype=len(loads) > 0)  # no objects: object columns
    if make == "ties":
        assert got.matrix.shape == (2, 3) and list(got.labels["index"]) == sorted(got.labels["index"])
        assert by_oid["pe"].tolist() == [0, 1]  # [1] ends on both PEs at once in its last step: the higher
