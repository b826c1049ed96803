"""`paradise demo` end to end on a small stencil: every step runs and the hint is obeyed.

Structure only (a shared machine makes timings meaningless): the steps ran, mapping.json
was written and moves heavy chares off the PE the default map piles them on, and the rerun
placed every element where mapping.json says.
"""

from __future__ import annotations

import json
import subprocess

import pytest

from tests.conftest import bin_path
from tests.decoys import plant
from tests.integration.charm_helpers import events, rows

pytestmark = pytest.mark.timeout(660)

# 4x4 blocks: the default map puts rows 0-1 on PE 0, so the heavy 2x2 corner (x16) is all there
ARGS = "--grid 4 4 --block 128 --iters 30 --heavy 0:2,0:2 --heavy-factor 16"
HEAVY = {f"[{i},{j}]" for i in range(2) for j in range(2)}


@pytest.fixture(scope="module")
def demo(tmp_path_factory):
    """The demo run from a working folder of decoy modules named like paradise's (tests/decoys.py)."""
    base = tmp_path_factory.mktemp("demo")
    out, work = base / "d", base / "work"
    marker = plant(work)
    proc = subprocess.run([bin_path("paradise"), "demo", "-o", str(out), "--args", ARGS, "--json"],
                          capture_output=True, text=True, timeout=600, cwd=work)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert not marker.exists(), marker.read_text()  # every step ran paradise's code, none of the folder's
    return out, json.loads(proc.stdout), proc.stderr


def test_every_step_ran(demo):
    out, result, err = demo
    for step in ("trace charm", "analyze", "whatif", "compare"):
        assert f"$ paradise {step}" in err
    assert err.count("$ paradise trace charm") == 2 and "--hints" in err
    assert (out / "before").is_dir() and (out / "after").is_dir()
    assert {"predicted", "performance", "before", "after"} <= set(result)
    assert result["predicted"]["predicted_makespan_ns"] > 0
    assert any(c["metric"] == "makespan" for c in result["performance"]["changes"])


def test_mapping_moves_heavy_chares(demo):
    out, result, _ = demo
    doc = json.loads((out / "hints" / "mapping.json").read_text())
    assert doc["kind"] == "mapping" and doc["strategy"] != "keep"
    blocks = next(v for k, v in doc["collections"].items() if k.startswith("Block"))
    assert set(blocks) == {f"[{i},{j}]" for i in range(4) for j in range(4)}
    moved = {m["object"].split("#0", 1)[1]: m for m in result["moves"]}
    # the default map holds the whole heavy corner on PE 0; the hint moves some of it to PE 1
    assert HEAVY & set(moved), moved
    assert all(moved[h]["from"] == 0 and moved[h]["to"] == 1 for h in HEAVY & set(moved))
    assert sum(1 for h in HEAVY if blocks[h] == 1) >= 1


def test_rerun_places_every_element_as_mapped(demo):
    out, result, _ = demo
    doc = json.loads((out / "hints" / "mapping.json").read_text())
    con = events(out / "after")
    placed = {(c, i): p for c, i, p in rows(con, "SELECT coll, index, arg_max(pe, t1) FROM ev WHERE kind = 'exec' "
                                                 "AND coll LIKE 'Block%' AND name = 'halo' GROUP BY coll, index")}
    want = {(c, i): p for c, objs in doc["collections"].items() for i, p in objs.items()}
    assert placed == want
    assert result["placed_as_mapped"] == result["mapped_objects"] == len(want)


def test_prediction_checked_and_cross_pe_bytes_stated(demo):
    _, result, _ = demo
    p = result["prediction"]
    predicted, measured = result["predicted"]["predicted_makespan_ns"], result["after"]["makespan_ns"]
    assert p["predicted_ns"] == predicted and p["measured_ns"] == measured
    assert p["off"] == round((measured - predicted) / predicted, 4)
    assert p["missed"] == (abs(measured - predicted) > 0.15 * predicted)
    assert bool(p["causes"]) == p["missed"]  # a miss always comes with its likely causes
    for side in ("before", "after"):
        run = result["runs"][side]
        assert run["wall_s"] > 0 and run["load1_after"] >= 0 and run["pes"] == 2
    gain = result["mapping_gain"]
    assert gain["cross_pe_bytes_before"] > 0 and gain["cross_pe_bytes_after"] >= 0
