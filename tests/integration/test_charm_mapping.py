"""mapping.json consumed by charm4py runs (hints/runtime/charm_map.py), checked from the run's own trace."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from hints.format import HintError, make_hint, provenance, schema, write_hint
from hints.runtime.charm_map import default_pe, parse_mapping
from tests import shared_runs
from tests.conftest import bin_path
from tests.integration.charm_helpers import PROGRAMS, ROOT, events, require_ok, rows, trace_charm

pytestmark = pytest.mark.timeout(300)

RING = PROGRAMS / "ring.py"
DEFAULT = {"[0,0]": 0, "[0,1]": 0, "[0,2]": 0, "[1,0]": 1, "[1,1]": 1, "[1,2]": 1}  # 2x3 on 2 PEs
WANTED = {"[0,0]": 1, "[0,1]": 1, "[0,2]": 0, "[1,0]": 1, "[1,1]": 0, "[1,2]": 0}


def _hints(tmp: Path, entries: dict, program: str = "ring", pes: int = 2, coll: str = "Cell#0") -> Path:
    doc = make_hint("mapping", {"collections": {coll: entries}, "strategy": "test"},
                    provenance=provenance(trace_fingerprint="test", program=program, pes=pes, source="charm4py"),
                    justified_by=[])
    d = tmp / "hints"
    write_hint(d, doc, force=True)
    return d


def _placement(trace: Path) -> dict[str, int]:
    return dict(rows(events(trace), "SELECT index, pe FROM ev WHERE kind='create' AND coll='Cell#0'"))


def _run(tmp: Path, hints: Path) -> subprocess.CompletedProcess:
    proc = trace_charm(tmp / "trace", RING, "2", hints=hints)
    require_ok(proc)
    assert "RESULT ok" in proc.stdout
    return proc


def test_mapping_places_every_element(tmp_path):
    proc = _run(tmp_path, _hints(tmp_path, WANTED))
    assert _placement(tmp_path / "trace") == WANTED
    assert "refused" not in proc.stderr and "warning" not in proc.stderr


def test_mapping_for_other_program_is_refused(tmp_path):
    proc = _run(tmp_path, _hints(tmp_path, WANTED, program="stencil2d"))
    lines = [ln for ln in proc.stderr.splitlines() if "mapping.json refused" in ln]
    assert len(lines) == 1 and "made for program 'stencil2d', not 'ring'" in lines[0]
    assert lines[0].endswith("using the default map")
    assert _placement(tmp_path / "trace") == DEFAULT


def test_mapping_for_other_pe_count_is_refused(tmp_path):
    proc = _run(tmp_path, _hints(tmp_path, WANTED, pes=4))
    assert "mapping.json refused" in proc.stderr and "made for 4 PEs, this run has 2" in proc.stderr
    assert _placement(tmp_path / "trace") == DEFAULT


def test_mapping_for_other_objects_is_refused(tmp_path):
    proc = _run(tmp_path, _hints(tmp_path, {**WANTED, "[5,5]": 1}))
    assert "mapping.json refused" in proc.stderr and "has no element [5, 5]" in proc.stderr
    assert _placement(tmp_path / "trace") == DEFAULT


def test_unnamed_elements_fall_back_with_one_warning(tmp_path):
    partial = {"[0,0]": 1, "[1,2]": 0}
    proc = _run(tmp_path, _hints(tmp_path, partial))
    warnings = [ln for ln in proc.stderr.splitlines() if "warning" in ln]
    assert len(warnings) == 1 and "4 of 6 elements of 'Cell#0'" in warnings[0]
    assert _placement(tmp_path / "trace") == {**DEFAULT, **partial}


def test_round_trip_through_analyze(tmp_path, traced_run):
    """trace -> paradise analyze --hints-out -> rerun with the hints: placement as the file says."""
    first, proc = traced_run(*shared_runs.RING)  # ring.py, 3 steps, shared with test_charm_trace
    require_ok(proc)
    hints = tmp_path / "h"
    an = subprocess.run([bin_path("paradise"), "analyze", str(first), "--hints-out", str(hints)],
                        capture_output=True, text=True, timeout=300, cwd=ROOT)
    assert an.returncode == 0, an.stderr[-2000:]
    assert (hints / "mapping.json").exists(), f"analyze wrote no mapping.json: {an.stdout[-2000:]}"
    wanted = json.loads((hints / "mapping.json").read_text())["collections"].get("Cell#0")
    assert wanted, "the mapping hint does not name Cell#0"
    proc = _run(tmp_path, hints)
    assert "refused" not in proc.stderr
    assert _placement(tmp_path / "trace") == wanted


@pytest.mark.parametrize(
    ("dims", "pes", "seen"),
    [  # placements printed by charm4py 1.1 runs without a map (see docs/tracing-charm.md)
        ((10,), 2, [0] * 5 + [1] * 5),
        ((7,), 2, [0, 0, 0, 0, 1, 1, 1]),
        ((10,), 3, [0, 0, 0, 0, 1, 1, 1, 2, 2, 2]),
        ((4, 4), 3, [0] * 6 + [1] * 5 + [2] * 5),
        ((3, 5), 2, [0] * 8 + [1] * 7),
    ],
)
def test_default_placement_matches_charm4py(dims, pes, seen):
    import itertools

    idx = list(itertools.product(*(range(d) for d in dims)))
    assert [default_pe(i, dims, pes) for i in idx] == seen


def test_parse_mapping_refuses_damaged_entries(tmp_path):
    from hints.format import make_hint, provenance, write_hint

    def path(colls):
        prov = provenance(trace_fingerprint="f", program="prog", pes=2, source="charm")
        return write_hint(tmp_path, make_hint("mapping", {"collections": colls}, provenance=prov, justified_by=[]),
                          force=True)

    with pytest.raises(HintError, match="bad index"):
        parse_mapping(path({"Cell#0": {"0,1": 1}}), "prog", 2)
    with pytest.raises(HintError, match=r"the PE should be an integer in 0\.\.1, not 7"):
        parse_mapping(path({"Cell#0": {"[0,1]": 7}}), "prog", 2)
    assert parse_mapping(path({"Cell#0": {"[0,1]": 1}}), "prog", 2) == {"Cell#0": {(0, 1): 1}}


def test_schema_names_the_fields():
    sch = schema("mapping")
    assert set(sch["required"]) == {"format", "kind", "provenance", "collections"}
    assert {"collections", "pes", "program", "strategy"} <= set(sch["properties"])


def test_hints_doc_lists_mapping_fields():
    text = (ROOT / "docs" / "hints.md").read_text()
    section = text.split("## mapping.json", 1)[1].split("\n## ", 1)[0]
    for field in ("collections", "strategy", "pes", "program", "provenance.program", "provenance.pes"):
        assert f"`{field}`" in section, field
