"""paradise synth: traces of every pattern are classified as their ground truth says.

The truth comes from the design (paradise.synth.charm / .torch: object loads, step period, who
sends to whom), never from paradise's analyses; the analyses run here on the written rows.
"""

from __future__ import annotations

import json

import pyarrow.parquet as pq
import pytest
from typer.testing import CliRunner

from paradise.cli.main import app
from paradise.format import SCHEMA
from paradise.synth import TRUTH_FILE, read_truth, synth
from paradise.synth.charm import PATTERNS

EVENTS = 12_000
PES = 4
runner = CliRunner()


def _analyze(path) -> dict:
    res = runner.invoke(app, ["analyze", "--json", str(path)])
    assert res.exit_code == 0, res.output
    return json.loads(res.stdout)


def _char(doc: dict, analysis: str, name: str) -> dict:
    (c,) = [c for c in doc["characteristics"] if c["analysis"] == analysis and c["name"] == name]
    return c


def _ev(c: dict) -> dict:
    return {e["metric"]: e["value"] for e in c["evidence"]}


@pytest.fixture(scope="module")
def charm_runs(tmp_path_factory):
    """pattern -> (truth, analyze --json) for a small synth trace of each pattern."""
    out = {}
    for i, pattern in enumerate(PATTERNS):
        path = tmp_path_factory.mktemp("synth") / pattern
        synth(path, pattern=pattern, events=EVENTS, pes=PES, imbalance=1.3 + 0.1 * i, seed=i, jobs=1)
        out[pattern] = (read_truth(path), _analyze(path), path)
    return out


@pytest.mark.parametrize("pattern", PATTERNS)
def test_charm_trace_is_classified_as_its_truth(charm_runs, pattern):
    truth, doc, _ = charm_runs[pattern]
    assert doc["errors"] == {}
    assert truth["pattern"] == pattern
    assert _char(doc, "communication", "pattern:Cell#0")["value"] == [pattern]
    assert _char(doc, "overview", "load_imbalance")["value"] == pytest.approx(truth["imbalance"], rel=0.02)
    cp = _char(doc, "scheduling", "critical_path")
    assert cp["value"] == pytest.approx(truth["critical_path"]["length_ns"], rel=0.01)
    ev = _ev(cp)
    assert ev["message_hops"] == truth["critical_path"]["hops"]
    assert ev["execs"] == truth["critical_path"]["execs"]
    top = _ev(_char(doc, "placement", "object_load_distribution"))["top_objects"][0]
    assert (top["object"], top["pe"]) == (truth["heaviest_object"], truth["heaviest_object_pe"])


def test_charm_truth_follows_from_the_rows(charm_runs):
    # imbalance recomputed from the written rows (sum of exec durations per PE), not from the design
    truth, _, path = charm_runs["grid"]
    t = pq.read_table(sorted(path.glob("*.parquet")), columns=["kind", "pe", "t0", "t1"]).to_pandas()
    x = t[t["kind"] == "exec"]
    busy = (x["t1"] - x["t0"]).groupby(x["pe"]).sum()
    assert list(busy) == truth["pe_busy_ns"]
    assert busy.max() / busy.mean() == pytest.approx(truth["imbalance"])
    assert abs(truth["imbalance"] - 1.3) < 0.01  # the requested ratio, up to whole-ns rounding
    assert x["t1"].max() == truth["makespan_ns"] == truth["critical_path"]["length_ns"]


def test_torch_trace_straggler_and_imbalance(tmp_path):
    path = tmp_path / "ddp"
    truth = synth(path, kind="torch", events=EVENTS, pes=PES, imbalance=1.4, seed=3, jobs=1)
    doc = _analyze(path)
    assert doc["errors"] == {}
    assert _char(doc, "training", "stragglers")["value"] == [truth["straggler_rank"]]
    assert _char(doc, "overview", "load_imbalance")["value"] == pytest.approx(truth["imbalance"], rel=0.02)
    assert truth["imbalance"] == pytest.approx(1.4, rel=0.01)


def test_files_are_per_pe_and_valid(tmp_path):
    path = tmp_path / "t"
    truth = synth(path, pattern="star", events=5_000, pes=3, jobs=2)
    files = sorted(p.name for p in path.iterdir())
    assert files == ["pe-00000.parquet", "pe-00001.parquet", "pe-00002.parquet", TRUTH_FILE]
    f = pq.ParquetFile(path / "pe-00001.parquet")
    assert f.schema_arrow.remove_metadata() == SCHEMA
    assert sum(pq.ParquetFile(path / n).metadata.num_rows for n in files[:3]) == truth["rows"]
    assert 4_000 < truth["rows"] <= 5_000


@pytest.mark.parametrize("args, line", [
    (["--pattern", "ring"], "paradise: error: --pattern 'ring': choose one of grid, all-to-all, star, tree, chain"),
    (["--events", "100"], "paradise: error: --events 100: too few for 8 steps of a grid on 8 PEs (needs at least 640)"),
    (["--imbalance", "9"], "paradise: error: --imbalance 9.0: must be at least 1 and below the PE count (8); 1 with one PE"),
    (["--events", "1e"], "paradise: error: --events '1e': not a number"),
])
def test_bad_options_are_one_line(tmp_path, capsys, monkeypatch, args, line):
    from paradise.cli import main

    monkeypatch.setattr("sys.argv", ["paradise", "synth", "-o", str(tmp_path / "x"), *args])
    with pytest.raises(SystemExit) as ex:
        main.main()
    assert ex.value.code == 2
    assert capsys.readouterr().err.strip() == line
    assert not (tmp_path / "x").exists()


def test_existing_output_needs_force(tmp_path, capsys, monkeypatch):
    from paradise.cli import main

    (tmp_path / "x").mkdir()
    (tmp_path / "x" / "keep").write_text("")
    monkeypatch.setattr("sys.argv", ["paradise", "synth", "-o", str(tmp_path / "x"), "--events", "1000"])
    with pytest.raises(SystemExit) as ex:
        main.main()
    assert ex.value.code == 2
    assert capsys.readouterr().err.strip() == (f"paradise: error: {tmp_path / 'x'}: already exists and is not empty; "
                                               "pass --force to replace the trace in it")
    assert (tmp_path / "x" / "keep").exists()
    monkeypatch.setattr("sys.argv", ["paradise", "synth", "-o", str(tmp_path / "x"), "--events", "1000", "--pes", "2",
                                     "--force"])
    with pytest.raises(SystemExit) as ex:
        main.main()
    assert ex.value.code in (0, None)  # --force replaces the trace, never the folder's other files
    assert (tmp_path / "x" / "keep").exists() and (tmp_path / "x" / "pe-00001.parquet").exists()
