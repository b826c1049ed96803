"""`paradise analyze --json` on every golden case (tests/golden/cases.py) equals the reviewed file
tests/golden/<case>/expected/analyze.json, after scrubbing paths, fingerprints and versions.
Run with --update-golden to rewrite the files (review the diff before committing)."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from paradise.cli.main import app
from tests.golden.cases import CASES, make, needs_real_data

HERE = Path(__file__).parent
SCRUBBED = {"path", "fingerprint", "paradise_version", "generated_at", "created_at", "created"}
"""Keys whose values change from run to run or machine to machine."""
REL_TOL = 1e-9
"""Floats agree to this relative tolerance: a change in summation order may move the last bits."""


def scrub(value: Any) -> Any:
    """The --json document without the values listed in SCRUBBED."""
    if isinstance(value, dict):
        return {k: ("<scrubbed>" if k in SCRUBBED else scrub(v)) for k, v in value.items()}
    if isinstance(value, list):
        return [scrub(v) for v in value]
    return value


def analyze_json(trace: Path) -> dict[str, Any]:
    """`paradise analyze TRACE --json`, run in-process, parsed and scrubbed."""
    result = CliRunner().invoke(app, ["analyze", str(trace), "--json"], catch_exceptions=False)
    assert result.exit_code in (0, 1), result.output
    return scrub(json.loads(result.stdout))


def diffs(got: Any, want: Any, where: str = "") -> list[str]:
    """Where two JSON values differ (floats within REL_TOL are equal)."""
    if isinstance(got, dict) and isinstance(want, dict):
        out = [f"{where}/{k}: missing" for k in want.keys() - got.keys()]
        out += [f"{where}/{k}: unexpected" for k in got.keys() - want.keys()]
        for k in sorted(got.keys() & want.keys()):
            out += diffs(got[k], want[k], f"{where}/{k}")
        return out
    if isinstance(got, list) and isinstance(want, list):
        if len(got) != len(want):
            return [f"{where}: {len(got)} items, expected {len(want)}"]
        return [d for i, (g, w) in enumerate(zip(got, want)) for d in diffs(g, w, f"{where}[{i}]")]
    if isinstance(got, float) and isinstance(want, (int, float)) and not isinstance(want, bool):
        ok = math.isclose(got, want, rel_tol=REL_TOL, abs_tol=1e-12)
        return [] if ok else [f"{where}: {got!r}, expected {want!r}"]
    return [] if got == want and type(got) is type(want) else [f"{where}: {got!r}, expected {want!r}"]


@pytest.mark.parametrize("case", CASES)
def test_analyze_json_matches_golden(case, tmp_path, request, monkeypatch):
    from paradise.errors import ParadiseError

    if case.endswith("@no_replay"):  # the session reads the limit from paradise.whatif when it runs
        monkeypatch.setattr("paradise.whatif.REPLAY_MAX_EXECS", 0)

    real = request.getfixturevalue("real_data") if needs_real_data(case) else None
    try:
        trace = make(case, tmp_path, real)
    except ParadiseError as exc:  # a file the importer refuses: its one-line error is the output
        text = str(exc).replace(str(real), "<real>").replace(str(tmp_path), "<tmp>")
        got = {"import_error": f"{type(exc).__name__}: {text}"}
    else:
        got = analyze_json(trace)
    expected = HERE / case / "expected" / "analyze.json"
    if request.config.getoption("--update-golden"):
        expected.parent.mkdir(parents=True, exist_ok=True)
        expected.write_text(json.dumps(got, indent=1, sort_keys=True) + "\n")
        return
    assert expected.exists(), f"{expected}: no golden file; run pytest --update-golden and review it"
    found = diffs(got, json.loads(expected.read_text()))
    assert not found, f"{case}: " + "\n".join(found[:30])
