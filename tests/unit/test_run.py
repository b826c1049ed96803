"""One run per command (paradise.run): open_run owns the trace, the engine and the session; on exit it
settles and closes, on success and on failure; a damaged file is one line however it was read; the
memory options reach the engine; and `paradise analyze` draws its sparkline on the run's engine."""

from __future__ import annotations

from pathlib import Path

import duckdb
import pytest
from builders import charm_like

from paradise.errors import TruncatedTrace
from paradise.memory import parse_size
from paradise.run import analyze_run, open_run


@pytest.fixture
def trace(tmp_path) -> Path:
    return charm_like(pes=3, steps=2).write(tmp_path / "t")


def _damage(f: Path) -> None:
    """Every third byte of the data pages flipped, the footer kept (the file opens, its pages do not decode)."""
    data = bytearray(f.read_bytes())
    end = len(data) - 8 - int.from_bytes(data[-8:-4], "little")
    for i in range(8, end - 8, 3):
        data[i] ^= 0x5A
    f.write_bytes(bytes(data))


def test_the_run_settles_and_closes_its_engine(trace):
    with open_run(trace, memory_limit=parse_size("256MiB")) as session:
        eng = session.engine
        assert eng.memory_limit == 256 << 20
        assert session.trace.path == trace
        session.prefetch(["exec_graph"])
        spill = Path(eng.spill_dir) if eng.spill_dir else None
    assert session._made["exec_graph"].done()  # settled before the engine closed under it
    with pytest.raises(duckdb.ConnectionException):
        eng.con.execute("SELECT 1")
    assert spill is None or not spill.exists()


def test_a_failure_inside_the_run_still_closes_it_and_passes_unchanged(trace):
    with pytest.raises(KeyError, match="boom"):
        with open_run(trace) as session:
            eng = session.engine
            raise KeyError("boom")
    with pytest.raises(duckdb.ConnectionException):
        eng.con.execute("SELECT 1")


def test_a_damaged_file_read_outside_the_engine_is_one_line(trace):
    _damage(trace / "pe-00001.parquet")
    with pytest.raises(TruncatedTrace, match=r"pe-00001\.parquet: damaged Parquet data"):
        with open_run(trace) as session:  # a raw read, outside the engine's own guard
            session.engine.con.sql("SELECT sum(t0), count(DISTINCT name) FROM events").fetchall()


def test_analyses_of_a_run_share_its_session(trace):
    with open_run(trace) as session:
        results, errors = analyze_run(session, names=("overview", "scheduling"))
        cp = session.get("critical_path")
    assert not errors and set(results) == {"overview", "scheduling"}
    assert cp is session._made["critical_path"].result()  # built once, by whichever asked first


def test_the_sparkline_is_binned_on_the_runs_engine(trace):
    from paradise.cli.analyze import _utilization_bins
    from paradise.report.pictures import SPARK_BINS

    with open_run(trace, memory_limit=parse_size("300MiB")) as session:
        results, _ = analyze_run(session, names=("overview",))
        bins = _utilization_bins(session, results)
    assert len(bins) == SPARK_BINS and all(0.0 <= b <= 1.0 for b in bins) and max(bins) > 0
    with pytest.raises(duckdb.ConnectionException):  # no engine of its own: the run's, now closed
        _utilization_bins(session, results)


@pytest.mark.parametrize("command", ["report", "whatif"])
def test_a_bad_hint_file_is_refused_before_any_analysis(trace, tmp_path, cli, command):
    """The hint files are judged before the run opens its engine: with a trace whose data pages do
    not decode (any analysis would stop there), the one line names the hint file, not the trace's."""
    _damage(trace / "pe-00001.parquet")
    hints = tmp_path / "h"
    hints.mkdir()
    (hints / "mapping.json").write_text('{"format": "paradise-hints/1", "kind": "mapping"')
    out = ["-o", tmp_path / "r.html"] if command == "report" else []
    rc, _, err = cli(command, trace, "--hints", hints, *out)
    lines = err.strip().splitlines()
    assert rc == 2 and len(lines) == 1 and "mapping.json" in lines[0] and "pe-00001" not in lines[0], err
    assert not (tmp_path / "r.html").exists()
    rc, _, err = cli("analyze", trace)  # the damage stops an analysis: what the hint check came before
    assert rc == 2 and "pe-00001.parquet: damaged Parquet data" in err, err
