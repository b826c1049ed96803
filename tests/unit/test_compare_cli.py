"""`paradise compare` through the real CLI: the quantize example, --json fields, bad input."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import ROOT

JSON_KEYS = {
    "accuracy_base",
    "accuracy_candidate",
    "flips",
    "flips_correct_to_incorrect",
    "flips_incorrect_to_correct",
    "kl_mean",
    "items_common",
    "items_only_base",
    "items_only_candidate",
}


@pytest.fixture(scope="module")
def quant_runs(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("quant")
    proc = subprocess.run(
        [sys.executable, str(ROOT / "examples" / "quantize_eval.py"), "--out", str(out), "--items", "4000",
         "--train-items", "8000", "--epochs", "2"],
        capture_output=True, text=True, timeout=300,
    )
    assert proc.returncode == 0, proc.stderr
    assert "accuracy_base=" in proc.stdout
    return out


def test_quantize_example_report_has_all_figures(quant_runs, cli):
    rc, out, err = cli("compare", quant_runs / "base", quant_runs / "int8", "--baseline-repeat", quant_runs / "base_repeat")
    assert rc == 0, err
    for figure in ("accuracy base", "accuracy candidate", "flips", "correct → incorrect", "incorrect → correct",
                   "mean KL", "noise floor"):
        assert figure in out
    rc, out, err = cli("compare", quant_runs / "base", quant_runs / "int8", "--json")
    assert rc == 0, err
    data = json.loads(out)
    assert JSON_KEYS <= set(data)
    assert data["items_common"] == 4000 and data["items_only_base"] == 0
    # flips can never be smaller than the accuracy difference
    assert data["flips"] >= abs(data["accuracy_candidate"] - data["accuracy_base"])
    assert data["kl_mean"] > 0  # int8 weights change the probabilities


def test_bad_input_one_line(tmp_path, quant_runs, cli):
    junk = tmp_path / "outputs.parquet"
    junk.write_text("garbage")
    rc, out, err = cli("compare", quant_runs / "base", junk)
    assert rc == 2 and err.count("\n") == 1 and "Traceback" not in err and str(junk) in err
    rc, out, err = cli("compare", quant_runs / "base", tmp_path / "missing")
    assert rc == 2 and "no such file" in err and "Traceback" not in err
    empty = tmp_path / "empty"
    empty.mkdir()
    rc, out, err = cli("compare", quant_runs / "base", empty)
    assert rc == 2 and "nothing to compare" in err
