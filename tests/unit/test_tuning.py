"""paradise.tuning: machine-specific settings are off unless PARADISE_TUNING names them, and no other
library module makes them."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from paradise import tuning

ROOT = Path(__file__).resolve().parents[2]


def test_knobs_are_off_by_default(monkeypatch):
    monkeypatch.delenv(tuning.ENV, raising=False)  # the variable may or may not be set around the test
    monkeypatch.delenv("ARROW_DEFAULT_MEMORY_POOL", raising=False)
    assert tuning.enabled() == frozenset()
    assert tuning.apply("arrow-pool") is False and "ARROW_DEFAULT_MEMORY_POOL" not in os.environ
    assert tuning.apply("malloc") is False


@pytest.mark.parametrize(("value", "want"), [("malloc", {"malloc"}), ("all", set(tuning.KNOBS)),
                                             (" arrow-pool , nonsense", {"arrow-pool"}), ("", set())])
def test_environment_switches_knobs_on(value, want):
    assert tuning.enabled({tuning.ENV: value}) == want


def test_arrow_pool_knob_sets_the_pool_unless_set(monkeypatch):
    monkeypatch.setenv(tuning.ENV, "arrow-pool")
    monkeypatch.delenv("ARROW_DEFAULT_MEMORY_POOL", raising=False)
    assert tuning.apply("arrow-pool") is True and os.environ["ARROW_DEFAULT_MEMORY_POOL"] == "system"
    monkeypatch.setenv("ARROW_DEFAULT_MEMORY_POOL", "jemalloc")
    tuning.apply("arrow-pool")
    assert os.environ["ARROW_DEFAULT_MEMORY_POOL"] == "jemalloc"


def test_arrow_pool_knob_reaches_pyarrow(tmp_path):
    """A process that applies the knob before pyarrow allocates gets the system pool, and only then."""
    env = {k: v for k, v in os.environ.items() if k not in (tuning.ENV, "ARROW_DEFAULT_MEMORY_POOL")}
    code = ("from paradise import tuning; tuning.apply('arrow-pool'); import pyarrow as pa; "
            "print(pa.default_memory_pool().backend_name)")
    off = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True)
    on = subprocess.run([sys.executable, "-c", code], env={**env, tuning.ENV: "arrow-pool"}, capture_output=True,
                        text=True, check=True)
    assert on.stdout.strip() == "system" and off.stdout.strip() != "system"


@pytest.mark.parametrize(("user_pool", "want"), [(None, "system"), ("jemalloc", "jemalloc")])
def test_arrow_pool_knob_switches_a_loaded_pyarrow(user_pool, want):
    """Applied after pyarrow is loaded (paradise analyze may load it first), the knob still switches
    the pool for later allocations, unless the user chose one."""
    env = {k: v for k, v in os.environ.items() if k not in (tuning.ENV, "ARROW_DEFAULT_MEMORY_POOL")}
    env[tuning.ENV] = "arrow-pool"
    if user_pool:
        env["ARROW_DEFAULT_MEMORY_POOL"] = user_pool
    code = ("import pyarrow as pa; pa.array(range(10**5)); from paradise import tuning; "
            "tuning.apply('arrow-pool'); print(pa.default_memory_pool().backend_name, "
            "pa.array(range(10**5)).buffers()[1].size)")
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True)
    assert out.stdout.split() == [want, str(8 * 10**5)]


def test_no_other_library_module_tunes_the_machine():
    banned = ("mallopt", "ARROW_DEFAULT_MEMORY_POOL", "set_memory_pool", "from_address(id(")
    hits = [f"{p.relative_to(ROOT)}: {b}" for pkg in ("paradise", "hints", "tracers") for p in (ROOT / pkg).rglob("*.py")
            if p != ROOT / "paradise" / "tuning.py" for b in banned if b in p.read_text()]
    assert hits == []
