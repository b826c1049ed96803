"""Training analysis on small synthetic traces with hand-computed answers, on real Kineto
traces (HTA test data), and the tracer's public API without torch."""

from __future__ import annotations

import json
import time

import pytest
from accounting import merged_intervals, union_length
from builders import TraceBuilder, charm_like

from hints.generators import ddp as ddp_gen
from paradise.analyses import training
from paradise.analyses.base import AnalysisConfig
from paradise.analyses.session import Session
from paradise.engines.duckdb_engine import DuckDBEngine
from paradise.run import open_run
from paradise.store import open_trace

MS = 1_000_000


def _analyze(path):
    trace = open_trace(path)
    with DuckDBEngine(trace) as eng:
        return training.analyze(Session(eng, trace), AnalysisConfig()), eng, trace


def _ddp_step(b, pe, step, t, *, fwd, bwd, opt, comm, nbytes=4 * MS, buckets=1, gap=1 * MS):
    """One traced-DDP-like step at t: forward, backward, bucket all-reduces launched during
    backward (the last at its end), optimizer after the reduction; returns the step's end."""
    t0 = t
    b.add(pe, "phase", t, t + fwd, name="forward", cat="compute", step=step)
    t += fwd
    b.add(pe, "phase", t, t + bwd, name="backward", cat="compute", step=step)
    for k in range(buckets):
        launch = t + bwd * (k + 1) // buckets
        b.add(
            pe,
            "collective",
            launch,
            launch + comm,
            name="allreduce",
            cat="ddp_bucket",
            coll="ddp",
            obj=k,
            bytes=nbytes // buckets,
            dtype="float32",
            step=step,
            group="default_pg",
            group_size=b.pes,
        )
    t = t + bwd + comm
    b.add(pe, "phase", t, t + opt, name="optimizer", cat="compute", step=step)
    t += opt
    b.step(pe, step, t0, t, name="step")
    return t + gap


def test_breakdown_parts_are_interval_unions(tmp_path):
    # Window [0, 100]: C = [10, 70] u [90, 95] = 65, M = [60, 85] = 25, C n M = [60, 70] = 10.
    b = TraceBuilder(1, source="torch")
    b.step(0, 0, 0, 100)
    b.add(0, "phase", 10, 40, name="forward")
    b.add(0, "phase", 40, 70, name="backward")
    b.add(0, "phase", 20, 30, name="loss")  # nested in forward: counted once
    b.add(0, "phase", 90, 95, name="optimizer")
    b.add(0, "phase", 96, 99, name="eval")  # not a compute phase
    b.add(0, "collective", 60, 85, name="allreduce", cat="ddp_bucket")
    b.add(0, "collective", 97, 130, name="barrier", cat="c10d")  # clipped to [97, 100]
    with DuckDBEngine(open_trace(b.write(tmp_path / "t"))) as eng:
        row = eng.query("training_breakdown").to_pylist()[0]
    assert row["step_ns"] == 100
    assert (row["compute_ns"], row["comm_ns"], row["overlap_ns"]) == (55, 15 + 3, 10)
    assert row["idle_ns"] == 100 - (65 + 28 - 10)
    assert row["compute_ns"] + row["comm_ns"] + row["overlap_ns"] + row["idle_ns"] == row["step_ns"]


def test_breakdown_matches_plain_unions_on_random_overlaps(tmp_path):
    """Random compute phases and bucket all-reduces on 2 ranks x 6 steps (nested, overlapping,
    touching, equal starts, crossing step boundaries): every step's parts equal the ones computed here
    from the raw intervals by merging them (C, M, their intersection)."""
    import random

    rng = random.Random(26)
    b = TraceBuilder(2, source="torch")
    want = {}
    names = ("forward", "loss", "backward", "optimizer")
    for pe in range(2):
        raw_c, raw_m, windows = [], [], []
        for step in range(6):
            w0 = step * 1_000 + rng.randrange(0, 50)
            w1 = w0 + rng.randrange(600, 950)
            b.step(pe, step, w0, w1)
            windows.append((step, w0, w1))
            for _ in range(rng.randrange(0, 9)):
                t0 = rng.choice([w0, w0 + 100, rng.randrange(w0 - 100, w1)])
                t1 = t0 + rng.choice([1, 50, rng.randrange(1, 400)])
                b.add(pe, "phase", t0, t1, name=rng.choice(names))
                raw_c.append((t0, t1))
            for _ in range(rng.randrange(0, 6)):
                t0 = rng.randrange(w0 - 50, w1 + 50)
                t1 = t0 + rng.randrange(1, 300)
                b.add(pe, "collective", t0, t1, name="allreduce", cat="ddp_bucket")
                raw_m.append((t0, t1))
        for step, w0, w1 in windows:
            c, m = ([(max(a, w0), min(b_, w1)) for a, b_ in raw if a < w1 and b_ > w0] for raw in (raw_c, raw_m))
            both = sum(min(b_, y) - max(a, x) for a, b_ in merged_intervals(c) for x, y in merged_intervals(m) if max(a, x) < min(b_, y))
            c_ns, m_ns = union_length(c), union_length(m)
            want[(pe, step)] = {"step_ns": w1 - w0, "compute_ns": c_ns - both, "comm_ns": m_ns - both,
                                "overlap_ns": both, "idle_ns": w1 - w0 - union_length(c + m),
                                "compute_all_ns": c_ns, "comm_all_ns": m_ns}
    with DuckDBEngine(open_trace(b.write(tmp_path / "t"))) as eng:
        rows = eng.query("training_breakdown").to_pylist()
    got = {(r["pe"], r["step"]): {k: r[k] for k in want[(0, 0)]} for r in rows}
    assert got == want
    assert any(v["overlap_ns"] for v in want.values()) and any(v["idle_ns"] for v in want.values())


def test_collective_arrivals_count_a_unique_last_start_only(tmp_path):
    """The k-th call of a collective on each of 3 ranks: a rank arrived last only when its start is
    the one latest; ties at the latest start (or every rank at once) name no rank. Expected values
    computed here from the starts."""
    starts = [(10, 20, 20), (30, 35, 40), (50, 50, 50), (70, 80, 75), (90, 91, 99)]
    b = TraceBuilder(3, source="torch")
    for call in starts:
        for pe, t0 in enumerate(call):
            b.add(pe, "collective", t0, max(call) + 5, name="allreduce", cat="ddp_bucket")
    want = {pe: {"calls": len(starts), "last": 0, "wait_ns": 0} for pe in range(3)}
    for call in starts:
        top = max(call)
        if call.count(top) == 1:
            want[call.index(top)]["last"] += 1
            want[call.index(top)]["wait_ns"] += top - min(call)
    with DuckDBEngine(open_trace(b.write(tmp_path / "t"))) as eng:
        rows = eng.query("training_collective_arrivals").to_pylist()
    assert {r["pe"]: {k: r[k] for k in ("calls", "last", "wait_ns")} for r in rows} == want
    assert [want[pe]["last"] for pe in range(3)] == [0, 1, 2]


def test_repeated_step_after_restart_counts_once(tmp_path):
    b = TraceBuilder(1, source="torch")
    b.step(0, 3, 0, 100)
    b.add(0, "restart", 150, None, name="restart", obj=1)
    b.step(0, 3, 200, 260)  # the re-run of step 3 after the restart
    with DuckDBEngine(open_trace(b.write(tmp_path / "t"))) as eng:
        rows = eng.query("training_breakdown").to_pylist()
    assert [(r["step"], r["step_ns"]) for r in rows] == [(3, 60)]


def test_injected_straggler_found_with_cost(tmp_path):
    # 3 ranks, 10 steps; rank 2 computes 5 ms longer each step; median compute is rank 0/1's.
    b = TraceBuilder(3, source="torch")
    for pe in range(3):
        t = 0
        for s in range(10):
            t = _ddp_step(b, pe, s, t, fwd=(8 if pe == 2 else 3) * MS, bwd=6 * MS, opt=1 * MS, comm=2 * MS)
    result, _, _ = _analyze(b.write(tmp_path / "t"))
    assert result.sections["stragglers"] == [
        {
            "rank": 2,
            "cost_ns": 10 * 5 * MS,
            "slow_steps": 10,
            "steps": 10,
            "share": 1.0,
            "mean_compute_ns": 15 * MS,
        }
    ]
    char = next(c for c in result.characteristics if c.name == "stragglers")
    assert char.value == [2]


def test_no_straggler_when_the_slowest_rank_changes(tmp_path):
    b = TraceBuilder(2, source="torch")
    for pe in range(2):
        t = 0
        for s in range(12):
            slow = (s % 2) == pe
            t = _ddp_step(b, pe, s, t, fwd=(6 if slow else 3) * MS, bwd=6 * MS, opt=MS, comm=MS)
    result, _, _ = _analyze(b.write(tmp_path / "t"))
    assert result.sections["stragglers"] == []


def test_single_large_bucket_with_exposed_comm_gets_a_smaller_bucket_hint(tmp_path):
    from hints.format import load_hint, write_hint

    b = TraceBuilder(2, source="torch", program="train")
    for pe in range(2):
        t = 0
        for s in range(6):
            t = _ddp_step(b, pe, s, t, fwd=3 * MS, bwd=6 * MS, opt=MS, comm=8 * MS, nbytes=40 * MS, buckets=1)
    result, _, trace = _analyze(b.write(tmp_path / "t"))
    sizing = result.sections["ddp_buckets"]
    assert sizing["verdict"] == "too_large"
    assert sizing["buckets_per_step"] == 1
    assert 1.0 <= sizing["suggested_bucket_cap_mb"] < 40
    assert sizing["predicted_gain_ns_per_step"] > 0
    [doc] = result.hints
    assert doc["kind"] == "comm" and doc["ddp"]["bucket_cap_mb"] == sizing["suggested_bucket_cap_mb"]
    path = write_hint(tmp_path / "hints", doc)
    assert load_hint(path, "comm", program="train", pes=2)["ddp"]["verdict"] == "too_large"


def test_latency_bound_small_buckets_get_a_larger_bucket_hint(tmp_path):
    # 8 buckets of 100 kB, each 1 ms; a 32-byte all_reduce takes 0.9 ms: latency dominates.
    b = TraceBuilder(2, source="torch")
    for pe in range(2):
        t = 0
        for s in range(6):
            t = _ddp_step(b, pe, s, t, fwd=3 * MS, bwd=16 * MS, opt=MS, comm=MS, nbytes=800_000, buckets=8)
            b.add(pe, "collective", t, t + 900_000, name="all_reduce", cat="c10d", bytes=32, step=s)
            t += 2 * MS
    result, _, _ = _analyze(b.write(tmp_path / "t"))
    sizing = result.sections["ddp_buckets"]
    assert sizing["latency_ns"] == 900_000
    assert sizing["latency_share"] > training.LATENCY_SHARE_MAX
    assert sizing["verdict"] == "too_small"
    assert sizing["suggested_bucket_cap_mb"] >= ddp_gen.MIN_BUCKET_MB


def test_input_stalls_exclude_checkpoint_time(tmp_path):
    b = TraceBuilder(1, source="torch")
    b.step(0, 0, 0, 100)
    b.step(0, 1, 150, 250)  # gap 50
    b.step(0, 2, 400, 500)  # gap 150, of which a 100-long checkpoint
    b.add(0, "checkpoint", 260, 360, name="dcp.save", bytes=10)
    with DuckDBEngine(open_trace(b.write(tmp_path / "t"))) as eng:
        rows = eng.query("training_stalls").to_pylist()
    assert [(r["step"], r["gap_ns"], r["io_ns"], r["stall_ns"]) for r in rows] == [
        (1, 50, 0, 50),
        (2, 150, 100, 50),
    ]


def _applies(path) -> bool:
    with open_run(path) as session:
        return training.applies(session)


def test_applies_to_torch_not_charm(tmp_path):
    b = TraceBuilder(1, source="torch")
    b.step(0, 0, 0, 10)
    assert _applies(b.write(tmp_path / "torch"))
    assert not _applies(charm_like(pes=2, steps=2).write(tmp_path / "charm"))


def test_applies_to_an_undeclared_source_only_with_training_rows(tmp_path):
    """A source that neither a tracer nor an importer declares (the builder's `synthetic`) is a
    training trace when a file holds a phase or a DDP bucket collective, read on the run's engine."""
    plain = TraceBuilder(2)
    plain.exec(0, 0, 10)
    plain.add(1, "collective", 0, 5, name="allreduce", cat="c10d")
    phase, bucket = TraceBuilder(2), TraceBuilder(2)
    for b in (phase, bucket):
        b.exec(0, 0, 10)
    phase.add(1, "phase", 0, 5, name="forward")
    bucket.add(1, "collective", 0, 5, name="allreduce", cat="ddp_bucket")
    assert [_applies(b.write(tmp_path / n)) for n, b in (("plain", plain), ("phase", phase), ("bucket", bucket))] \
        == [False, True, True]


# --- real Kineto traces (HTA test data) --------------------------------------------------------

HTA = ("hta", "tests", "data")


def _import(real_data, tmp_path, *rels, rank=None):
    from paradise.importers.kineto import import_trace

    files = [real_data / "hta" / r if r.startswith("_history") else real_data.joinpath(*HTA, r) for r in rels]
    return import_trace(files, tmp_path / "k.parquet", rank=rank)


def test_two_gpu_ranks_kernel_time_by_stream(real_data, tmp_path):
    path = _import(
        real_data, tmp_path, "trace_filter/sampled_rank-0.json.gz", "trace_filter/sampled_rank-1.json.gz"
    )
    result, eng, _ = _analyze(path)
    streams = result.sections["streams"]
    assert {s["pe"] for s in streams} == {0, 1}
    per_stream = [s for s in streams if s["stream"] >= 0]
    assert len(per_stream) >= 2 and all(s["kernel_ns"] > 0 and s["busy_ns"] > 0 for s in per_stream)
    # NCCL SendRecv kernels are collectives on a stream: counted as communication kernels.
    assert any(s["comm_ns"] > 0 for s in per_stream)
    for s in streams:
        assert s["busy_ns"] + s["idle_ns"] == s["last_ns"] - s["first_ns"]
    assert any(c.name == "device_idle" for c in result.characteristics)
    for r in result.sections["breakdown_steps"]:
        assert r["compute_ns"] + r["comm_ns"] + r["overlap_ns"] + r["idle_ns"] == r["step_ns"]
    json.dumps(result.to_dict())  # JSON-safe


def test_nccl_trace_collectives_by_kind_and_size(real_data, tmp_path):
    result, _, _ = _analyze(_import(real_data, tmp_path, "nccl_parser_config/nccl_data.json.gz"))
    coll = result.sections["collectives"]
    assert any(c["on_device"] for c in coll)  # NCCL kernels
    assert any(c["bucket_log2"] >= 0 and c["bytes"] > 0 for c in coll)  # sizes from record_param_comms
    assert result.sections["stragglers"] == []  # one rank: nothing to compare


def test_cpu_gloo_trace_has_breakdown(real_data, tmp_path):
    path = _import(
        real_data, tmp_path, "_history/tests/data/cpu_only/rank-34.Jul_15_10_52_41.1074.pt.trace.json.gz"
    )
    result, _, _ = _analyze(path)
    rows = result.sections["breakdown_steps"]
    assert len(rows) == 5 and all(r["pe"] == 34 for r in rows)
    assert all(r["comm_ns"] + r["overlap_ns"] > 0 for r in rows)  # gloo:all_reduce annotations
    assert result.sections["streams"] == []


# --- the tracer's public API, without torch -------------------------------------------------------


def test_api_is_a_noop_when_not_tracing():
    import tracers.torch as api

    assert not api.enabled()
    with api.step(1), api.phase("data"):
        api.record_event("checkpoint", "x", time.time_ns(), time.time_ns(), bytes=1)
    assert api.current_step() is None


def test_record_event_converts_times_and_replaces_automatic_rows(tmp_path):
    import tracers.torch as api
    from tracers.torch.tracer import Tracer

    origin = time.time_ns()
    tr = Tracer(tmp_path, rank=1, world_size=2, origin_ns=origin, program="p")
    api._tracer = tr
    try:
        auto = tr.new_row("checkpoint", "torch.save", 5_000, 6_000)  # as the torch.save wrapper makes
        tr.auto_io(auto)
        api.record_event(
            "checkpoint", "periodic", origin + 4_000, origin + 7_000, bytes=123, step=9, kind_of="dcp"
        )
        with api.phase("data"):
            pass
        tr.end_step(9, None, tr.now())
    finally:
        api._tracer = None
        tr.close(complete=True)
    trace = open_trace(tmp_path)
    with DuckDBEngine(trace) as eng:
        rows = eng.sql("SELECT kind, name, t0, t1, bytes, step, args FROM events ORDER BY t0").to_pylist()
    ck = [r for r in rows if r["kind"] == "checkpoint"]
    assert ck == [
        {
            "kind": "checkpoint",
            "name": "periodic",
            "t0": 4_000,
            "t1": 7_000,
            "bytes": 123,
            "step": 9,
            "args": json.dumps({"kind_of": "dcp"}),
        }
    ]
    assert [r["step"] for r in rows if r["kind"] == "phase"] == [9]
    assert trace.complete and trace.metadata["source"] == "torch"


@pytest.mark.parametrize("restart", [0, 2])
def test_rank_files_per_restart_are_distinct(tmp_path, restart):
    from tracers.torch.tracer import Tracer

    tr = Tracer(tmp_path, rank=3, world_size=4, restart=restart)
    tr.close(complete=False)
    trace = open_trace(tmp_path)  # converts the rank's spool
    expected = "pe-00003.parquet" if restart == 0 else "pe-00003.restart-02.parquet"
    assert [p.name for p in tmp_path.glob("*.parquet")] == [expected]
    assert trace.file_metadata[0]["extra"]["restart"] == restart


def test_ddp_train_reads_bucket_cap_from_a_comm_hint(tmp_path, capsys):
    pytest.importorskip("torch")
    import importlib.util
    from pathlib import Path

    from hints.format import make_hint, provenance, write_hint

    spec = importlib.util.spec_from_file_location(
        "ddp_train", Path(__file__).resolve().parents[2] / "examples" / "ddp_train.py"
    )
    ddp_train = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(ddp_train)

    def doc(program):
        prov = provenance(trace_fingerprint="f", program=program, pes=2, source="torch")
        return make_hint(
            "comm",
            {"ddp": {"bucket_cap_mb": 6.5}, "combine": [], "threshold": {}},
            provenance=prov,
            justified_by=[],
        )

    write_hint(tmp_path / "good", doc("ddp_train"))
    write_hint(tmp_path / "other", doc("another_program"))
    args = ddp_train.parse_args(["--hints", str(tmp_path / "good")])
    assert ddp_train.bucket_cap_mb(args, 2) == 6.5
    assert (
        ddp_train.bucket_cap_mb(
            ddp_train.parse_args(["--hints", str(tmp_path / "good"), "--bucket-cap-mb", "3"]), 2
        )
        == 3
    )
    assert ddp_train.bucket_cap_mb(ddp_train.parse_args(["--hints", str(tmp_path / "other")]), 2) == 25.0
    assert "made for program 'another_program'" in capsys.readouterr().err


TRAINING_QUERIES = (
    "training_breakdown",
    "training_collectives",
    "training_buckets",
    "training_phases",
    "training_stalls",
    "training_streams",
    "training_events",
)


def test_duckdb_and_dask_engines_agree(tmp_path):
    from builders import torch_like
    from dask.distributed import Client, LocalCluster

    from paradise.engines import load_sql
    from paradise.engines.dask_engine import DaskEngine
    from paradise.engines.merge import parse_merge_rule

    b = TraceBuilder(3, source="torch")
    for pe in range(3):
        t = 0
        for s in range(4):
            t = _ddp_step(
                b, pe, s, t, fwd=(5 if pe == 2 else 3) * MS, bwd=6 * MS, opt=MS, comm=2 * MS, buckets=3
            )
        b.add(pe, "checkpoint", t, t + MS, name="dcp.save", bytes=100)
        b.add(pe, "failure", t + 2 * MS, t + 2 * MS, name="RuntimeError")
    traces = [
        b.write(tmp_path / "ddp", parts_per_pe=2),
        torch_like(ranks=3, steps=3).write(tmp_path / "like"),
    ]

    def rows(table, name):
        keys = parse_merge_rule(load_sql(name), name).key_columns(table.column_names)
        return sorted(table.to_pylist(), key=lambda r: tuple((r[k] is not None, r[k]) for k in keys))

    cluster = LocalCluster(n_workers=2, threads_per_worker=1, processes=False, dashboard_address=":0")
    client = Client(cluster)
    try:
        for path in traces:
            trace = open_trace(path)
            with DuckDBEngine(trace) as duck, DaskEngine(trace, client=client, files_per_task=1) as dask:
                for name in TRAINING_QUERIES:
                    a, d = duck.query(name), dask.query(name)
                    assert rows(a, name) == rows(d, name), name
    finally:
        client.close()
        cluster.close()


def test_one_failure_incident_is_recorded_once(tmp_path):
    from tracers.torch.tracer import FAILURE_DEDUP_NS, Tracer

    origin = time.time_ns()
    tr = Tracer(tmp_path, rank=0, world_size=2, origin_ns=origin)
    err = RuntimeError("Connection closed by peer")
    tr.failure(err, "backward")
    tr.failure(err, "script")  # the same exception escaping the script
    tr.record_wall("failure", "RuntimeError", time.time_ns())  # the checkpoint manager's log of it
    tr.record_wall("failure", "Later", origin + tr.now() + 2 * FAILURE_DEDUP_NS)  # another incident
    tr.close(complete=False)
    with DuckDBEngine(open_trace(tmp_path)) as eng:
        rows = eng.sql("SELECT name, cat FROM events WHERE kind = 'failure' ORDER BY t0").to_pylist()
    assert rows == [{"name": "RuntimeError", "cat": "backward"}, {"name": "Later", "cat": None}]


def test_hooks_uninstall_restores_every_patch(tmp_path):
    import torch
    import torch.distributed as dist
    from torch.nn.parallel import DistributedDataParallel

    from tracers.torch import hooks
    from tracers.torch.tracer import Tracer

    targets = [(torch.autograd, "backward"), (DistributedDataParallel, "__init__"),
               (dist.distributed_c10d, "all_reduce"), (dist, "all_reduce")]
    before = [getattr(o, a) for o, a in targets]
    tr = Tracer(tmp_path, rank=0, world_size=1)
    hooks.install(tr)
    try:
        assert any(getattr(o, a) is not b for (o, a), b in zip(targets, before))
    finally:
        hooks.uninstall()
        tr.close(complete=True)
    assert [getattr(o, a) for o, a in targets] == before
