"""The Charm-style examples run as real charm4py programs (charmrun +p2) and check themselves.

Each test launches `charmrun +p2 python examples/<name>.py ARGS` as a subprocess with small
sizes and asserts on the program's own `RESULT ok key=value ...` line: structure and
correctness, never wall-clock time.
"""

from __future__ import annotations

import subprocess
import sys

import pytest

from tests.conftest import ROOT, bin_path

pytestmark = pytest.mark.timeout(300)

EXAMPLES = ROOT / "examples"
RUN_TIMEOUT_S = 180


def run(name: str, *args: str, pes: int = 2) -> subprocess.CompletedProcess:
    """`charmrun +pN python examples/<name>.py ARGS` (plain `python` for 1 PE)."""
    cmd = [sys.executable, str(EXAMPLES / f"{name}.py"), *args]
    if pes > 1:
        cmd = [bin_path("charmrun"), f"+p{pes}", *cmd]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=RUN_TIMEOUT_S, cwd=ROOT)


def result(proc: subprocess.CompletedProcess) -> dict[str, str]:
    """The key=value pairs of the single `RESULT ok` line; fails with the output otherwise."""
    lines = [ln for ln in proc.stdout.splitlines() if ln.startswith("RESULT ")]
    if proc.returncode != 0 or len(lines) != 1 or not lines[0].startswith("RESULT ok "):
        pytest.fail(f"exit {proc.returncode}, RESULT lines {lines}\n{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}")
    pairs = dict(kv.split("=", 1) for kv in lines[0].split()[2:])
    assert float(pairs["elapsed_s"]) >= 0
    return pairs


def test_stencil2d_matches_serial():
    r = result(run("stencil2d", "--grid", "4", "4", "--block", "16", "--iters", "12"))
    assert r["grid"] == "4x4" and r["pes"] == "2"
    assert r["heavy"] == "0:2,0:2"  # default: the top-left quarter
    assert float(r["max_err"]) == 0.0 and int(r["checked_blocks"]) >= 5


def test_stencil2d_default_map_puts_the_heavy_quarter_on_pe0():
    proc = run("stencil2d", "--grid", "4", "4", "--block", "8", "--iters", "2", "--show-placement")
    r = result(proc)
    # charm4py's default map splits a 4x4 array in row blocks: rows 0-1 on PE 0, rows 2-3 on PE 1,
    # so PE 0 has the 4 heavy chares (x8) and 4 light ones: 36 units vs 8, max/mean 36/22 = 1.64
    assert "work units per PE: {0: 36, 1: 8}  max/mean=1.64" in proc.stdout
    assert r["final_work_ratio"] == "1.64"


def test_stencil2d_with_load_balancer():
    # AtSync every 3 iterations; elements resumed early must not run ahead of migrated neighbours
    r = result(run("stencil2d", "--grid", "4", "4", "--block", "16", "--iters", "12", "--lb-period", "3",
                   "+balancer", "GreedyRefineLB"))
    assert r["lb_period"] == "3" and float(r["max_err"]) == 0.0


@pytest.mark.parametrize("dist", ["uniform", "skewed"])
def test_histsort_sorts_with_balanced_counts(dist):
    tol = 0.02
    r = result(run("histsort", "--elements", "6", "--keys-per-element", "5000", "--dist", dist,
                   "--tol", str(tol), "--seed", "3"))
    assert int(r["keys"]) == 6 * 5000
    # each element lies between two splitters whose ranks are within tol*n/p of their targets
    assert float(r["max_mean_ratio"]) <= 1 + 2 * tol
    assert int(r["rounds"]) >= 1 and r["dist"] == dist


def test_histsort_is_deterministic_for_a_seed_on_one_pe():
    a = result(run("histsort", "--elements", "4", "--keys-per-element", "2000", "--dist", "skewed", pes=1))
    b = result(run("histsort", "--elements", "4", "--keys-per-element", "2000", "--dist", "skewed", pes=1))
    assert {k: v for k, v in a.items() if k != "elapsed_s"} == {k: v for k, v in b.items() if k != "elapsed_s"}


def test_masterworker_sums_all_tasks():
    r = result(run("masterworker", "--workers", "4", "--tasks", "30", "--mean-units", "2"))
    assert r["tasks"] == "30" and int(r["tasks_per_worker_min"]) >= 1  # 30 tasks, 4 workers, all busy


def test_wavefront_result_independent_of_window():
    args = ("--elements", "6", "--waves", "4", "--block", "2000", "--block-reps", "2", "--local-reps", "2")
    full = result(run("wavefront", *args))
    windowed = result(run("wavefront", *args, "--window", "1"))
    assert full["chain_sum"] == windowed["chain_sum"] and full["local_sum"] == windowed["local_sum"]


@pytest.mark.parametrize(("name", "args", "message"), [
    ("stencil2d", ["--heavy", "9:12,0:1"], "stencil2d.py: error: --heavy '9:12,0:1' is not a non-empty region"),
    ("histsort", ["--dist", "zipf"], "histsort.py: error: argument --dist: invalid choice: 'zipf'"),
    ("masterworker", ["--workers", "0"], "masterworker.py: error: --workers"),
    ("wavefront", ["--bogus"], "wavefront.py: error: unrecognized arguments: --bogus"),
])
def test_wrong_usage_is_a_clear_error(name, args, message):
    proc = run(name, *args, pes=1)
    assert proc.returncode == 2
    assert message in proc.stderr and "Traceback" not in proc.stderr
    assert "RESULT" not in proc.stdout
