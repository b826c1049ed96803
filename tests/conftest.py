"""Shared fixtures: real third-party traces from ../shared/data/real, fresh temp dirs, CLI runner."""

from __future__ import annotations

import atexit
import os
import shutil
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
REAL_DATA = Path(os.environ.get("PARADISE_REAL_DATA", ROOT.parent / "shared" / "data" / "real"))
VENV_BIN = Path(sys.executable).parent


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption("--fuzz-seconds", type=float, default=0.0,
                     help="tests/hostile: also mutation-fuzz the readers for about this many seconds (fresh seeds)")
    parser.addoption("--update-golden", action="store_true",
                     help="rewrite tests/golden/<case>/expected/ from the current code (review the diff)")


XDIST_GROUPS = {
    "tests/hostile/test_corpus.py": "hostile",
    "tests/integration/test_charm_clock.py": "timing",
    "tests/integration/test_torch_clock.py": "timing",
}
"""Files whose tests share a worker under `pytest -n N --dist loadgroup`: the hostile corpus (one
server runs every selected case for the `outcomes` fixture) and the tests whose figures suffer
most from a busy machine (clock offsets, a run killed at a fixed timeout) in one group, one after
another. Every other file is a group of its own, so its module fixtures run once."""
TIMING_TESTS = {"test_killed_run_keeps_flushed_parts"}


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "xdist_group(name): tests run on one pytest-xdist worker (--dist loadgroup)")


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Gives every test without one an xdist_group (tryfirst: before pytest-xdist reads them)."""
    for item in items:
        if item.get_closest_marker("xdist_group") is not None:
            continue
        path = item.nodeid.split("::")[0]
        name = "timing" if getattr(item, "originalname", None) in TIMING_TESTS else XDIST_GROUPS.get(path, path)
        item.add_marker(pytest.mark.xdist_group(name.replace("/", ".")))


def pytest_unconfigure(config: pytest.Config) -> None:
    """charm4py, once imported in-process (test_charm_emrun), prints at exit that charm was never
    started: true of a test process, so its exit check is dropped."""
    charm4py = sys.modules.get("charm4py")
    check = getattr(charm4py, "checkCharmStarted", None)
    if check is not None:
        atexit.unregister(check)


@pytest.fixture(scope="session")
def real_data() -> Path:
    """The real-trace folder; tests that need it skip (naming the path) when it is absent."""
    if not REAL_DATA.is_dir():
        pytest.skip(f"real traces not found at {REAL_DATA} (a user's clone without ../shared)")
    return REAL_DATA


def bin_path(name: str) -> str:
    """A console script of this interpreter's environment (paradise, charmrun, torchrun)."""
    candidate = VENV_BIN / name
    return str(candidate) if candidate.exists() else (shutil.which(name) or name)


@pytest.fixture(scope="session")
def traced_run(tmp_path_factory):
    """traced_run(kind, program, *args, opts=()) -> (trace folder, finished process) of a real
    `paradise trace` run, run once per session and shared read-only (tests/shared_runs.py)."""
    from tests.shared_runs import run_cache

    return run_cache(tmp_path_factory.mktemp)


@pytest.fixture(scope="session")
def analyzed_json():
    """analyzed_json(trace) -> the finished `paradise analyze TRACE --json` of a shared traced run, run once."""
    from tests.shared_runs import analyze_cache

    return analyze_cache()


@pytest.fixture(scope="session")
def untraced_ddp():
    """DDP_STRAGGLER's program and arguments under plain torchrun (no paradise), run once: the hash
    an uninterrupted, untraced run ends with (test_torch_trace, test_jit_checkpoint)."""
    pytest.importorskip("torch")
    from tests.shared_runs import DDP_STRAGGLER, torchrun_untraced

    _, program, *args = DDP_STRAGGLER
    return torchrun_untraced(program, *args)


@pytest.fixture(scope="session")
def refused_bucket_run(tmp_path_factory):
    """(hints, trace, finished run): plain_ddp.py traced once with a NaN bucket size in comm.json,
    which the run refuses (tests/shared_runs.py: REFUSED_BUCKET_CAP); read only."""
    pytest.importorskip("torch")
    import subprocess

    from tests.shared_runs import PLAIN_DDP, REFUSED_BUCKET_CAP, RUN_TIMEOUT_S, bucket_hint, trace_command

    base = tmp_path_factory.mktemp("refused-bucket")
    hints = bucket_hint(base / "h", REFUSED_BUCKET_CAP)
    proc = subprocess.run(trace_command(base / "t", "torch", PLAIN_DDP, opts=("--hints", str(hints))),
                          capture_output=True, text=True, timeout=RUN_TIMEOUT_S, cwd=ROOT)
    return hints, base / "t", proc


@pytest.fixture
def cli():
    """Runs the installed `paradise` CLI as a subprocess (as a user would) and returns (exit_code, stdout, stderr)."""

    def run(*args: str) -> tuple[int, str, str]:
        import subprocess

        proc = subprocess.run(
            [bin_path("paradise"), *map(str, args)], capture_output=True, text=True, timeout=600
        )
        return proc.returncode, proc.stdout, proc.stderr

    return run


@pytest.fixture()
def world_of_one(tmp_path):
    """A gloo process group of one rank (a FileStore under tmp_path) for in-process DDP tests; torch
    is imported here, not at collection, so test sessions without torch tests do not pay for it."""
    import torch.distributed as dist

    dist.init_process_group("gloo", store=dist.FileStore(str(tmp_path / "store"), 1), rank=0, world_size=1)
    yield
    dist.destroy_process_group()
