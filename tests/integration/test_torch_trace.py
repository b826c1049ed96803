"""`paradise trace torch` on real torchrun jobs (gloo, 2 ranks): what the trace must hold, and
what `paradise analyze` finds in it. Few, small runs: each torchrun start costs 5-10 s here."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from paradise.engines.duckdb_engine import DuckDBEngine
from paradise.store import open_trace
from tests import shared_runs
from tests.conftest import ROOT, bin_path

pytest.importorskip("torch")

TRAIN = ROOT / "examples" / "ddp_train.py"
STEPS = shared_runs.DDP_STEPS
TIMEOUT_S = 300


def _paradise(*args: str | Path) -> subprocess.CompletedProcess:
    return subprocess.run(
        [bin_path("paradise"), *map(str, args)], capture_output=True, text=True, timeout=TIMEOUT_S
    )


@pytest.fixture(scope="module")
def traced(traced_run):
    """shared_runs.DDP_STRAGGLER (small model, 40 ms more in every forward of rank 1) traced once per session (shared with test_time_accounting and the consistency suite)."""
    out, proc = traced_run(*shared_runs.DDP_STRAGGLER)
    assert proc.returncode == 0, proc.stderr
    return out, proc


def _rows(trace_dir: Path, sql: str) -> list[dict]:
    with DuckDBEngine(open_trace(trace_dir)) as eng:
        return eng.sql(sql).to_pylist()


def test_traced_run_ends_with_the_model_hash_and_matches_an_untraced_run(traced, untraced_ddp):
    _, proc = traced
    last = proc.stdout.strip().splitlines()[-1]
    assert last.startswith("param_sha256=")
    plain = untraced_ddp  # the same program and arguments under plain torchrun (shared with test_jit_checkpoint)
    assert plain.returncode == 0, plain.stderr[-2000:]
    assert plain.stdout.strip().splitlines()[-1] == last  # tracing changes nothing the model computes


def test_every_step_recorded_on_both_ranks(traced):
    out, _ = traced
    trace = open_trace(out)
    assert trace.complete and trace.source == "torch" and trace.metadata["pes_seen"] == [0, 1]
    rows = _rows(
        out,
        "SELECT pe, list(step ORDER BY step) AS steps FROM events WHERE kind = 'step' GROUP BY pe ORDER BY pe",
    )
    assert rows == [{"pe": pe, "steps": list(range(STEPS))} for pe in (0, 1)]
    phases = _rows(
        out, "SELECT pe, name, count(*) AS n FROM events WHERE kind = 'phase' GROUP BY ALL ORDER BY ALL"
    )
    assert {(r["pe"], r["name"]): r["n"] for r in phases} == {
        (pe, name): STEPS for pe in (0, 1) for name in ("backward", "forward", "loss", "optimizer")
    }


def test_bucket_collectives_match_across_ranks(traced):
    out, _ = traced
    per_step = _rows(
        out,
        "SELECT step, pe, count(*) AS buckets, sum(bytes) AS bytes, count(t1) AS ended FROM events "
        "WHERE kind = 'collective' AND cat = 'ddp_bucket' GROUP BY step, pe ORDER BY step, pe",
    )
    assert {r["step"] for r in per_step} == set(range(2, STEPS))  # buckets known once DDP rebuilt them
    by_step: dict[int, list[dict]] = {}
    for r in per_step:
        by_step.setdefault(r["step"], []).append(r)
    for step, ranks in by_step.items():
        assert [r["pe"] for r in ranks] == [0, 1], step
        assert ranks[0]["buckets"] == ranks[1]["buckets"] >= 1, step
        assert ranks[0]["bytes"] == ranks[1]["bytes"] > 0, step
        assert all(r["ended"] == r["buckets"] for r in ranks), step  # every bucket has its end
    # The final dist.barrier() of the script is recorded on both ranks as a c10d collective.
    barriers = _rows(out, "SELECT pe FROM events WHERE kind = 'collective' AND name = 'barrier' ORDER BY pe")
    assert [r["pe"] for r in barriers] == [0, 1]


def test_metadata_has_placement_and_clock(traced):
    out, _ = traced
    meta = open_trace(out).file_metadata
    assert len(meta) == 2  # one file per rank, each checked
    for m in meta:
        assert len(m["hosts"]) == 2 and m["extra"]["backend"] == "gloo"
        assert m["extra"]["devices"] == ["cpu", "cpu"]
        assert m["clock"] == {"method": "shared_host_clock", "residual_ns": 0}  # one host: nothing to correct


def test_analyze_breakdown_sums_and_finds_the_straggler(traced, analyzed_json):
    out, _ = traced
    with DuckDBEngine(open_trace(out)) as eng:
        steps = eng.query("training_breakdown").to_pylist()
    assert len(steps) == 2 * STEPS
    for r in steps:
        parts = r["compute_ns"] + r["comm_ns"] + r["overlap_ns"] + r["idle_ns"]
        assert min(r["compute_ns"], r["comm_ns"], r["overlap_ns"], r["idle_ns"]) >= 0
        assert abs(parts - r["step_ns"]) <= 0.02 * r["step_ns"]
    proc = analyzed_json(out)  # shared with test_time_accounting
    assert proc.returncode == 0, proc.stderr
    training = json.loads(proc.stdout)["analyses"]["training"]
    found = training["stragglers"]
    assert [s["rank"] for s in found] == [1]
    assert found[0]["cost_ns"] > 0 and found[0]["slow_steps"] >= 0.75 * STEPS
    per_rank = {r["pe"]: r for r in training["breakdown"]}
    assert per_rank[0]["steps"] == per_rank[1]["steps"] == STEPS
    # the slow rank reaches each gradient all-reduce last: it is the slowest rank of the collective
    # that carries most calls, though rank 0 spends more time inside it (waiting for rank 1)
    arrivals = {a["name"]: a for a in training["collective_arrivals"]}
    busiest = max(arrivals.values(), key=lambda a: a["met_calls"])
    assert busiest["met_calls"] >= STEPS - 2 and busiest["slowest_rank"] == 1, arrivals
    inside = {r["pe"]: r["total_ns"] for r in json.loads(proc.stdout)["analyses"]["overview"]["collectives"]
              if r["name"] == busiest["name"]}
    assert inside[0] > inside[1]  # the rank with the most time inside is the one that waited


BAD = """
import torch.distributed as dist
dist.init_process_group("gloo")
raise ValueError("no data found")
"""


def test_script_failing_before_its_first_step(tmp_path):
    script = tmp_path / "bad.py"
    script.write_text(BAD)
    out = tmp_path / "trace"
    proc = _paradise("trace", "torch", "--nproc", "2", "-o", out, script)
    assert proc.returncode != 0
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in proc.stderr
    assert (
        lines[0].startswith("paradise: error: ")
        and "before its first step: ValueError: no data found" in lines[0]
    )
    rows = _rows(out, "SELECT pe, kind, name FROM events WHERE kind IN ('failure', 'step') ORDER BY pe")
    assert rows == [{"pe": pe, "kind": "failure", "name": "ValueError"} for pe in (0, 1)]
    assert not open_trace(out).complete


def test_existing_output_is_refused_without_force(tmp_path):
    (tmp_path / "trace").mkdir()
    (tmp_path / "trace" / "pe-00000.parquet").write_bytes(b"x")
    proc = _paradise("trace", "torch", "--nproc", "2", "-o", tmp_path / "trace", TRAIN)
    assert proc.returncode == 2
    assert (
        proc.stderr.strip()
        == f"paradise: error: {tmp_path / 'trace'}: already exists and is not empty; pass --force to overwrite it"
    )


FLAKY = """
import os, torch, torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP
dist.init_process_group("gloo")
torch.manual_seed(0)
model = DDP(torch.nn.Linear(8, 2))
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for step in range(4):
    model(torch.randn(4, 8)).sum().backward()
    opt.step()
    if step == 1 and dist.get_rank() == 1 and os.environ["TORCHELASTIC_RESTART_COUNT"] == "0":
        raise RuntimeError("injected")
dist.barrier()
dist.destroy_process_group()
"""


def test_restart_attempts_write_distinct_files(tmp_path):
    script = tmp_path / "flaky.py"
    script.write_text(FLAKY)
    out = tmp_path / "trace"
    proc = _paradise("trace", "torch", "--nproc", "2", "--max-restarts", "1", "-o", out, script)
    assert proc.returncode == 0, proc.stderr
    names = {p.name for p in out.glob("pe-*.parquet")}
    assert {"pe-00000.restart-01.parquet", "pe-00001.restart-01.parquet", "pe-00001.parquet"} <= names
    failures = _rows(out, "SELECT pe, name, step FROM events WHERE kind = 'failure' AND cat = 'script'")
    assert {"pe": 1, "name": "RuntimeError", "step": 2} in failures
    restarts = _rows(out, "SELECT pe, obj FROM events WHERE kind = 'restart' ORDER BY pe")
    assert restarts == [{"pe": 0, "obj": 1}, {"pe": 1, "obj": 1}]
    with DuckDBEngine(open_trace(out)) as eng:
        steps = eng.query("training_breakdown").to_pylist()
    assert sorted({(r["pe"], r["step"]) for r in steps}) == [(pe, s) for pe in (0, 1) for s in range(4)]


def test_profiler_output_is_imported_beside_the_trace(traced_run):
    out, proc = traced_run(*shared_runs.DDP_PROFILED, opts=("--profiler",))  # shared with the consistency suite
    assert proc.returncode == 0, proc.stderr
    profile = out / "kineto" / "profile.parquet"
    assert "profiler trace in" in proc.stderr and profile.exists()
    trace = open_trace(profile)
    assert trace.source == "kineto"
    rows = _rows(profile, "SELECT pe, count(*) AS n FROM events WHERE kind = 'step' GROUP BY pe ORDER BY pe")
    # one ProfilerStep#N per step of the run: 6, not 7 (the window after the last step is no step)
    n = shared_runs.DDP_PROFILED_STEPS
    assert rows == [{"pe": 0, "n": n}, {"pe": 1, "n": n}]
    with DuckDBEngine(trace) as eng:
        steps = eng.query("training_breakdown").to_pylist()
    assert steps and all(
        r["compute_ns"] + r["comm_ns"] + r["overlap_ns"] + r["idle_ns"] == r["step_ns"] for r in steps
    )
    assert open_trace(out).source == "torch"  # the tracer's own files are untouched


def _ddp_hint(d: Path, cap_mb: float, program: str = "plain_ddp", pes: int = 2) -> Path:
    from hints.format import make_hint, provenance, write_hint

    doc = make_hint("comm", {"combine": [], "threshold": {}, "ddp": {"bucket_cap_mb": cap_mb, "verdict": "too_large"}},
                    provenance=provenance(trace_fingerprint="test", program=program, pes=pes, source="torch"),
                    justified_by=[])
    write_hint(d, doc, force=True)
    return d


def _buckets_per_step(trace_dir: Path) -> float:
    (row,) = _rows(trace_dir, "SELECT median(n) AS n FROM (SELECT step, pe, count(*) AS n FROM events "
                              "WHERE kind = 'collective' AND cat = 'ddp_bucket' AND step > 0 GROUP BY step, pe)")
    return float(row["n"])


def test_hinted_bucket_size_gives_more_buckets_without_editing_the_script(tmp_path, refused_bucket_run):
    """4 x 1 MiB of parameters: DDP's default 25 MB cap makes 2 buckets (its first is 1 MiB), 1 MB makes 4+.
    The unhinted run is plain_ddp.py traced with a comm.json it refuses (shared with test_hint_refusals)."""
    _, plain_trace, plain = refused_bucket_run
    assert plain.returncode == 0, plain.stderr
    assert "comm.json refused" in plain.stderr  # DDP kept its default bucket size
    hinted = _paradise("trace", "torch", "--nproc", "2", "--hints", _ddp_hint(tmp_path / "h", 1.0),
                       "-o", tmp_path / "hinted", shared_runs.PLAIN_DDP)
    assert hinted.returncode == 0, hinted.stderr
    before, after = _buckets_per_step(plain_trace), _buckets_per_step(tmp_path / "hinted")
    assert before <= 2 and after >= 4 > before
    assert plain.stdout.splitlines()[-1] == hinted.stdout.splitlines()[-1]  # same training result


RELEASED = """
import atexit
import weakref
import torch
import torch.distributed as dist
dist.init_process_group("gloo")
m = torch.nn.parallel.DistributedDataParallel(torch.nn.Linear(4, 4))
opt = torch.optim.SGD(m.parameters(), lr=0.1)
for _ in range(3):  # from the second step on DDP has rebuilt its buckets and the tracer hooks them
    opt.zero_grad(); m(torch.ones(2, 4)).sum().backward(); opt.step()
del opt
alive = weakref.ref(m)
del m
atexit.register(lambda: print("DDP module alive at exit:", alive() is not None, flush=True))
dist.destroy_process_group()
"""


def test_traced_rank_frees_its_ddp_modules_before_the_interpreter_ends(tmp_path):
    """The tracer's hooks tie a DDP module into a reference cycle; the rank unhooks and collects it
    once the script is done, while the interpreter is whole (a gloo worker releasing its last work
    during finalization aborts the process: SIGABRT, 'terminate called without an active exception')."""
    script = tmp_path / "released.py"
    script.write_text(RELEASED)
    proc = _paradise("trace", "torch", "--nproc", "1", "-o", tmp_path / "trace", script)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert "DDP module alive at exit: False" in proc.stdout
    (row,) = _rows(tmp_path / "trace", "SELECT count(*) AS n FROM events WHERE kind = 'collective' AND cat = 'ddp_bucket'")
    assert row["n"] >= 1  # the bucket hooks were on: the module was in the tracer's cycle


ABORTS = """
import os
import sys
import torch.distributed as dist
dist.init_process_group("gloo")
dist.barrier()
if dist.get_rank() == 1:
    print("rank 1 gives up here", file=sys.stderr, flush=True)
    os.abort()
dist.barrier()
"""


def test_a_rank_killed_by_a_signal_is_named_with_its_last_stderr_line(tmp_path):
    """No failure row (os.abort raises nothing): the one line names torchrun's root cause instead."""
    script = tmp_path / "aborts.py"
    script.write_text(ABORTS)
    proc = _paradise("trace", "torch", "--nproc", "2", "-o", tmp_path / "trace", script)
    assert proc.returncode == 2
    (line,) = proc.stderr.strip().splitlines()
    assert "exit status 1; rank 1 ended by SIGABRT (its last stderr line: rank 1 gives up here)" in line, line


HEAVY = """
import sys
import torch
import torch.distributed as dist
dist.init_process_group("gloo")
m = torch.nn.parallel.DistributedDataParallel(torch.nn.Linear(4, 4))
opt = torch.optim.SGD(m.parameters(), lr=0.1)
for _ in range(3):
    opt.zero_grad(); m(torch.ones(2, 4)).sum().backward(); opt.step()
print("HEAVY", [k for k in ("pyarrow", "pandas", "duckdb") if k in sys.modules], flush=True)
dist.destroy_process_group()
"""


def test_traced_rank_imports_no_pyarrow(tmp_path):
    """A rank appends raw rows to its spool (no Parquet in the training process, no pyarrow import);
    the launcher converts the spool after torchrun and says how long that took."""
    script = tmp_path / "heavy.py"
    script.write_text(HEAVY)
    out = tmp_path / "trace"
    proc = _paradise("trace", "torch", "--nproc", "1", "-o", out, script)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert "HEAVY []" in proc.stdout
    assert "(compacted " in proc.stderr and not list(out.glob("*.rows"))
    assert [r["steps"] for r in _rows(out, "SELECT count(*) AS steps FROM events WHERE kind = 'step'")] == [3]
