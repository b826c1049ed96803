"""The golden cases: every kind of trace the suite builds, both Projections traces and the Kineto
traces under ../shared/data/real. Each case writes (or imports) its trace into a directory and
returns the trace's path; tests/golden/test_golden.py compares `paradise analyze --json` on it
with tests/golden/<case>/expected/analyze.json."""

from __future__ import annotations

import random
from collections.abc import Callable
from pathlib import Path

from tests.builders import charm_like, torch_like
from tests.unit import charm_synth as cs

HEAVY = {(0, 0), (0, 1), (1, 0), (1, 1)}


def _heavy(i: int, j: int, s: int) -> int:
    return 800_000 if (i, j) in HEAVY else 100_000


def _corner(i: int, j: int, s: int) -> int:
    return 500_000 if i < 2 and j < 2 else 100_000


_RNG = random.Random(3)
_TABLE = {(i, j, s): _RNG.choice([10_000, 900_000]) for i in range(3) for j in range(3) for s in range(5)}

SYNTH: dict[str, Callable[[], tuple]] = {
    "grid_4x4_p2_s4": lambda: cs.grid2d(4, 4, 2, 4),
    "grid_heavy_4x4_p2_s4": lambda: cs.grid2d(4, 4, 2, 4, cost=_heavy),
    "grid_corner_4x4_p2_s4": lambda: cs.grid2d(4, 4, 2, 4, cost=_corner),
    "grid_heavy_3x3_p2_s5": lambda: cs.grid2d(3, 3, 2, 5, cost=_heavy),
    "grid_rand_3x3_p2_s5": lambda: cs.grid2d(3, 3, 2, 5, cost=lambda i, j, s: _TABLE[(i, j, s)]),
    "grid_periodic_4x4_p2_s3": lambda: cs.grid2d(4, 4, 2, 3, periodic=True),
    "grid_4x5_p2_s3": lambda: cs.grid2d(4, 5, 2, 3),
    "grid_4x4_p1_s2": lambda: cs.grid2d(4, 4, 1, 2),
    "grid_4x3_p3_s3": lambda: cs.grid2d(4, 3, 3, 3),
    "master_worker_5_p2_25": lambda: cs.master_worker(5, 2, 25),
    "master_worker_6_p2_30": lambda: cs.master_worker(6, 2, 30),
    "pipeline_4_p2_3": lambda: cs.pipeline(4, 2, 3),
    "pipeline_5_p2_5": lambda: cs.pipeline(5, 2, 5),
    "pipeline_4_p2_1": lambda: cs.pipeline(4, 2, 1),
    "histsort_6_p2": lambda: cs.histsort(6, 2),
    "tree_3_p2": lambda: cs.binary_tree(3, 2),
    "tree_4_p2": lambda: cs.binary_tree(4, 2),
    "all_to_all_4_p2_r2": lambda: cs.all_to_all(4, 2, rounds=2),
    "all_to_all_5_p2": lambda: cs.all_to_all(5, 2),
    "all_to_all_4_p2_r40": lambda: cs.all_to_all(4, 2, nbytes=100, rounds=40),
    "ping_filler_10_20": lambda: cs.ping_filler(10, 20),
    "ping_filler_8_10": lambda: cs.ping_filler(8, 10),
    "scatter_reduce_6_p2": lambda: cs.scatter_reduce(6, 2),
    "scatter_reduce_6_p2_r3": lambda: cs.scatter_reduce(6, 2, rounds=3),
}

BUILT: dict[str, Callable[[Path], Path]] = {
    "charm_like_p4_s3": lambda d: charm_like(pes=4, steps=3).write(d),
    "charm_like_p2_s2": lambda d: charm_like(pes=2, steps=2).write(d),
    "charm_like_p1_s1": lambda d: charm_like(pes=1, steps=1).write(d),
    "charm_like_p5_s3_parts": lambda d: charm_like(pes=5, steps=3).write(d, parts_per_pe=2),
    "torch_like_r2_s3": lambda d: torch_like(ranks=2, steps=3).write(d),
    "torch_like_r3_s2": lambda d: torch_like(ranks=3, steps=2).write(d),
    "torch_like_r2_s2_parts": lambda d: torch_like(ranks=2, steps=2).write(d, parts_per_pe=2),
}

PIPIT = Path("pipit/pipit/tests/data")
PROJECTIONS = {
    "projections_pingpong": PIPIT / "ping-pong-projections",
    "projections_hello": PIPIT / "projections-data/hello-1darray-projections/hello.sts",
}

HTA = Path("hta/tests/data")
KINETO: dict[str, tuple[Path, ...]] = {
    "kineto_large_integer": (HTA / "large_integer_trace/rank-70.Mar_25_20_48_12.2861.pt.trace.json.gz",),
    "kineto_inference_rank_1": (HTA / "trace_file_list/inference_rank_1.json.gz",),
    "kineto_compare_base": (HTA / "trace_compare/base/base.json.gz",),
    "kineto_compare_test": (HTA / "trace_compare/test/test.json.gz",),
    "kineto_simple_add_trace": (HTA / "execution_trace/benchmark_simple_add_trace.json.gz",),
    "kineto_triton": (HTA / "triton_example/triton_example.json.gz",),
    "kineto_cpu_only": (HTA / "cpu_only/rank-34.Jul_15_10_52_41.1074.pt.trace.json.gz",),
    "kineto_event_sync": (HTA / "critical_path/cuda_event_sync/event_sync_trace.json.gz",),
    "kineto_event_sync_multi": (HTA / "critical_path/cuda_event_sync_multi_stream/event_sync_trace.json.gz",),
    "kineto_backward_thread": (HTA / "call_stack/backward_thread.json",),
    "kineto_amd": (HTA / "amd_trace/mi250_minitoy_train_ROCm6_2_kineto.json.gz",),
    "kineto_gpu_user_annotation": (HTA / "with_gpu_user_annotation/step_based_trace_2543932.json.gz",),
    "kineto_simple_add": (HTA / "critical_path/simple_add/benchmark_result_493459_1694039959_trace.json.gz",),
    "kineto_alexnet": (HTA / "critical_path/alexnet/benchmark_result_2869224_1695835535_trace.json.gz",),
    "kineto_overlaid": (HTA / "critical_path/end_to_end/simple_add/output/overlaid_critical_path_trace.json.gz",),
    "kineto_cupti": (HTA / "cupti_profiler/benchmark_result_924719_1679055439_trace.json.gz",),
    "kineto_rank_non_gpu": (HTA / "rank_non_gpu/rank_non_gpu.json.gz",),
    "kineto_rank_not_found": (HTA / "rank_unavailable/rank_not_found.json.gz",),
    "kineto_distributed_info_not_found": (HTA / "distributed_info_unavailable/distributed_info_not_found.json.gz",),
    "kineto_sampled_ranks": (HTA / "trace_filter/sampled_rank-0.json.gz", HTA / "trace_filter/sampled_rank-1.json.gz"),
    "kineto_cpu_only_full": (Path("hta/_history/tests/data/cpu_only/rank-34.Jul_15_10_52_41.1074.pt.trace.json.gz"),),
    "kineto_mtia": (HTA / "mtia_inference_trace/mtia_inference_rank_0.json.gz",),
    "kineto_nccl": (HTA / "nccl_parser_config/nccl_data.json.gz",),
    "kineto_ns_resolution": (HTA / "ns_resolution_trace/rank-0.Apr_03_18_51_38.1102.pt.trace.json.gz",),
}

NSYS: dict[str, Path] = {
    "nsys_cloverleaf": PIPIT / "cloverleaf-nsys/perlmutter-cloverleaf-cuda.sqlite",
    "nsys_saxpy_mpi": PIPIT / "saxpy-mpi-cuda_nsys_perlmutter0.sqlite",
}

NO_RANK = {"kineto_large_integer", "kineto_amd", "kineto_mtia", "kineto_rank_not_found",
           "kineto_distributed_info_not_found", "kineto_triton"}
"""Files without distributedInfo.rank: imported as rank 0 (`--rank 0`)."""
NO_REPLAY = ("grid_heavy_4x4_p2_s4", "charm_like_p4_s3", "scatter_reduce_6_p2", "tree_4_p2",
             "all_to_all_4_p2_r40", "projections_pingpong")
"""Cases also run as if too large to replay (REPLAY_MAX_EXECS = 0), as '<case>@no_replay': the
path that traces of millions of executions take."""

CASES: tuple[str, ...] = (*SYNTH, *BUILT, *PROJECTIONS, *KINETO, *NSYS, *(f"{c}@no_replay" for c in NO_REPLAY))


def needs_real_data(case: str) -> bool:
    case = case.split("@")[0]
    return case in PROJECTIONS or case in KINETO or case in NSYS


def make(case: str, work: Path, real_data: Path | None) -> Path:
    """Writes or imports the case's trace under `work`; returns the trace's path."""
    case = case.split("@")[0]
    if case in SYNTH:
        prog, placement = SYNTH[case]()
        return prog.write(work / "t", placement)
    if case in BUILT:
        return BUILT[case](work / "t")
    assert real_data is not None
    if case in PROJECTIONS:
        from paradise.importers.projections import import_trace

        return import_trace(real_data / PROJECTIONS[case], work / "t.parquet")
    if case in NSYS:
        from paradise.importers.nsys import import_trace as import_nsys

        return import_nsys(real_data / NSYS[case], work / "t.parquet")
    from paradise.importers.kineto import import_trace as import_kineto

    rank = 0 if case in NO_RANK else None
    return import_kineto([real_data / f for f in KINETO[case]], work / "t.parquet", rank=rank)
