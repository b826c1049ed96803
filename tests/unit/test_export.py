"""`paradise export chrome|projections`: round trips against the trace's own rows, read with
pyarrow in the test (a small Chrome-format reader here; `paradise import projections` for
Projections), on synthetic traces with hostile names and on the real Projections ping-pong run."""

from __future__ import annotations

import gzip
import json
import sys
from collections import Counter
from decimal import Decimal
from pathlib import Path

import pyarrow.parquet as pq
import pytest
from report_traces import HOSTILE, hostile_charm, hostile_torch

from paradise.engines.duckdb_engine import DuckDBEngine
from paradise.export import chrome, projections
from paradise.importers.projections import import_trace
from paradise.store import open_trace

PINGPONG = Path("pipit/pipit/tests/data/ping-pong-projections/pingpong.prj.sts")


def run_cli(monkeypatch, capsys, *args):
    from paradise.cli.main import main

    monkeypatch.setattr(sys, "argv", ["paradise", *map(str, args)])
    with pytest.raises(SystemExit) as exc:
        main()
    out = capsys.readouterr()
    return int(exc.value.code or 0), out.out, out.err


def raw(path: Path) -> list[dict]:
    files = [path] if path.is_file() else sorted(path.glob("*.parquet"))
    return pq.read_table(files, columns=["kind", "pe", "t0", "t1", "name", "msg", "cat", "coll", "index",
                                         "bytes"]).to_pylist()


def ns(us: object) -> int:
    """A Chrome ts / dur (µs, decimal text) back to integer ns."""
    return int(Decimal(str(us)) * 1000)


def read_chrome(path: Path) -> dict:
    opener = gzip.open if path.name.endswith(".gz") else open
    with opener(path, "rt") as fh:
        return json.load(fh)


def links_of(rows: list[dict]) -> Counter:
    """(send pe, send t0, exec pe, exec t0) for every send and the execs sharing its msg."""
    execs: dict[int, list[dict]] = {}
    for r in rows:
        if r["kind"] == "exec" and r["msg"] is not None:
            execs.setdefault(r["msg"], []).append(r)
    return Counter((s["pe"], s["t0"], e["pe"], e["t0"]) for s in rows if s["kind"] == "send" and s["msg"] is not None
                   for e in execs.get(s["msg"], []))


@pytest.mark.parametrize("which,suffix", [("charm", ".json"), ("torch", ".json.gz")])
def test_chrome_round_trip(tmp_path, which, suffix):
    path = (hostile_charm() if which == "charm" else hostile_torch()).write(tmp_path / which)
    out = tmp_path / f"t{suffix}"
    handle = open_trace(path)
    with DuckDBEngine(handle) as eng:
        chrome.export(eng, handle, out)
    doc = read_chrome(out)
    ev = doc["traceEvents"]
    rows = raw(path)
    got = Counter((e["pid"], e["name"], ns(e["ts"]), ns(e["dur"])) for e in ev if e["ph"] == "X" and e["args"]["kind"] == "exec")
    want = Counter((r["pe"], r["name"], r["t0"], r["t1"] - r["t0"]) for r in rows if r["kind"] == "exec")
    assert got == want and HOSTILE in {k[1] for k in got}
    starts = {e["id"]: e for e in ev if e["ph"] == "s"}
    flows = Counter((starts[e["id"]]["pid"], ns(starts[e["id"]]["ts"]), e["pid"], ns(e["ts"]))
                    for e in ev if e["ph"] == "f" and e["id"] in starts)
    assert flows == links_of(rows)
    idle = [e for e in ev if e["ph"] == "C"]
    assert len(idle) == 2 * sum(r["kind"] == "idle" for r in rows)
    names = {(e["pid"], e["args"]["name"]) for e in ev if e["ph"] == "M" and e["name"] == "process_name"}
    unit = "PE" if which == "charm" else "rank"
    assert names == {(pe, f"{unit} {pe}") for pe in {r["pe"] for r in rows}}
    if which == "torch":  # kernels on their stream's lane, named after it
        lanes = {(e["pid"], e["tid"]): e["args"]["name"] for e in ev if e["ph"] == "M" and e["name"] == "thread_name"}
        kern = {(e["pid"], e["tid"]) for e in ev if e["ph"] == "X" and e["name"] == "sgemm_kernel"}
        assert kern and all(lanes[k] == "stream 7" for k in kern)


def test_chrome_lanes_of_every_kind_of_row(tmp_path):
    """Each record's tid, and the thread_name records' lanes, are the row's lane as computed here
    from its kind, stream and tid (the one definition: events_lane.sql)."""
    from builders import TraceBuilder

    def lane(kind: str, stream: int | None, tid: int | None) -> int:
        special = {"step": 2_000_000_001, "phase": 2_000_000_001, "collective": 2_000_000_002,
                   "checkpoint": 2_000_000_003, "restore": 2_000_000_003}
        if kind in special:
            return special[kind]
        if stream is not None:
            return 1_000_000_000 + stream % 10**9
        if tid is None:
            return 0
        return tid if 0 <= tid < 10**9 else 3_000_000_000 + tid % 10**9

    b = TraceBuilder(pes=1, source="torch")
    b.exec(0, 10, 20, "cpu_op", tid=7)
    b.exec(0, 30, 40, "no_tid")
    b.exec(0, 50, 60, "handle_op", tid=139_872_349_872_349)
    b.exec(0, 70, 80, "negative_tid", tid=-5)
    b.exec(0, 90, 100, "sgemm_kernel", stream=(1 << 31) - 1, cat="kernel")
    b.step(0, 0, 5, 200)
    b.add(0, "phase", 10, 90, name="forward")
    b.collective(0, "allreduce", 110, 150, nbytes=64)
    b.add(0, "checkpoint", 160, 170, name="save")
    b.add(0, "restore", 175, 180, name="load")
    b.add(0, "mark", 185, None, name="mark", tid=3)
    path = b.write(tmp_path / "lanes")
    out = tmp_path / "lanes.json"
    handle = open_trace(path)
    with DuckDBEngine(handle) as eng:
        chrome.export(eng, handle, out)
    ev = read_chrome(out)["traceEvents"]
    rows = pq.read_table(sorted(path.glob("*.parquet")), columns=["kind", "name", "stream", "tid"]).to_pylist()
    want = {(r["name"], lane(r["kind"], r["stream"], r["tid"])) for r in rows}
    got = {(e["name"], e["tid"]) for e in ev if e["ph"] in ("X", "i")}
    assert got == want and len(want) == 11
    named = {e["tid"] for e in ev if e["ph"] == "M" and e["name"] == "thread_name"}
    assert named == {t for _, t in want}


def test_chrome_launch_flows_on_a_real_kineto_trace(real_data, tmp_path):
    from paradise.importers.kineto import import_trace as import_kineto

    src = real_data / "hta/tests/data/amd_trace/mi250_minitoy_train_ROCm6_2_kineto.json.gz"
    path = import_kineto([src], tmp_path / "amd.parquet", rank=0)
    handle = open_trace(path)
    with DuckDBEngine(handle) as eng:
        chrome.export(eng, handle, tmp_path / "amd.json")
    ev = read_chrome(tmp_path / "amd.json")["traceEvents"]
    rows = raw(path)
    launches = {r["msg"]: r for r in rows if r["kind"] == "exec" and r["msg"] is not None and r["cat"] == "cuda_runtime"}
    want = Counter((launches[r["msg"]]["t0"], r["t0"]) for r in rows
                   if r["kind"] == "exec" and r["msg"] in launches and r["cat"] != "cuda_runtime")
    starts = {e["id"]: e for e in ev if e["ph"] == "s" and e["cat"] == "launch"}
    got = Counter((ns(starts[e["id"]]["ts"]), ns(e["ts"])) for e in ev if e["ph"] == "f" and e["id"] in starts)
    assert want and got == want


def _projections_view(path: Path) -> tuple[Counter, Counter, Counter]:
    """Execs, sends and links at the µs resolution of Projections logs."""
    rows = raw(path)
    execs = Counter((r["pe"], r["name"], r["coll"], r["index"], r["t0"] // 1000, r["t1"] // 1000)
                    for r in rows if r["kind"] == "exec")
    sends = Counter((r["pe"], r["t0"] // 1000, r["bytes"]) for r in rows if r["kind"] == "send")
    links = Counter((a, b // 1000, c, d // 1000) for (a, b, c, d) in links_of(rows).elements())
    return execs, sends, links


def test_projections_round_trip(tmp_path):
    path = hostile_charm().write(tmp_path / "charm")
    handle = open_trace(path)
    with DuckDBEngine(handle) as eng:
        sts = projections.export(eng, handle, tmp_path / "proj")
    back = import_trace(sts, tmp_path / "back.parquet")
    e0, s0, l0 = _projections_view(path)
    e1, s1, l1 = _projections_view(back)
    assert e1 == e0 and s1 == s0 and l1 == l0 and sum(l0.values()) > 20


def test_projections_round_trip_of_a_real_charm_run(real_data, tmp_path):
    first = import_trace(real_data / PINGPONG, tmp_path / "first.parquet")
    handle = open_trace(first)
    with DuckDBEngine(handle) as eng:
        sts = projections.export(eng, handle, tmp_path / "proj")
    second = import_trace(sts, tmp_path / "second.parquet")
    e0, s0, l0 = _projections_view(first)
    e1, s1, l1 = _projections_view(second)
    assert e1 == e0 and s1 == s0 and l1 == l0 and sum(l0.values()) > 100


def test_export_commands_refuse_existing_outputs_and_bad_traces(tmp_path, monkeypatch, capsys):
    path = hostile_charm(pes=2, steps=2).write(tmp_path / "t")
    out = tmp_path / "t.json"
    assert run_cli(monkeypatch, capsys, "export", "chrome", path, "-o", out)[0] == 0
    code, _, err = run_cli(monkeypatch, capsys, "export", "chrome", path, "-o", out)
    assert code == 2 and err == f"paradise: error: {out}: already exists; pass --force to overwrite it\n"
    assert run_cli(monkeypatch, capsys, "export", "chrome", path, "-o", out, "--force")[0] == 0
    d = tmp_path / "p"
    assert run_cli(monkeypatch, capsys, "export", "projections", path, "-o", d)[0] == 0
    code, _, err = run_cli(monkeypatch, capsys, "export", "projections", path, "-o", d)
    assert code == 2 and err == f"paradise: error: {d / 'stencil.sts'}: already exists; pass --force to overwrite it\n"
    assert run_cli(monkeypatch, capsys, "export", "projections", path, "-o", d, "--force")[0] == 0
    assert sorted(p.name for p in d.iterdir()) == ["stencil.0.log.gz", "stencil.1.log.gz", "stencil.sts"]
    missing = tmp_path / "nope"
    code, _, err = run_cli(monkeypatch, capsys, "export", "chrome", missing, "-o", tmp_path / "x.json")
    assert code == 2 and err.count("\n") == 1 and str(missing) in err and not (tmp_path / "x.json").exists()
    code, _, err = run_cli(monkeypatch, capsys, "export", "chrome", path, "-o", tmp_path / "no" / "x.json")
    assert code == 0 and read_chrome(tmp_path / "no" / "x.json")["traceEvents"], err  # its folder is made
    code, _, err = run_cli(monkeypatch, capsys, "export", "chrome", path, "-o", out / "x.json")
    assert code == 2 and err == f"paradise: error: {out / 'x.json'}: {out} is not a folder\n"


def test_export_chrome_never_writes_over_its_input(tmp_path, monkeypatch, capsys):
    path = hostile_charm(pes=2, steps=2).write(tmp_path / "t")
    files = sorted(path.glob("*.parquet"))
    before = {f: f.read_bytes() for f in files}
    code, _, err = run_cli(monkeypatch, capsys, "export", "chrome", files[0], "-o", files[0], "--force")
    assert code == 2 and err == f"paradise: error: {files[0]}: is one of the inputs; choose another output\n"
    code, _, err = run_cli(monkeypatch, capsys, "export", "chrome", path, "-o", files[-1], "--force")
    assert code == 2 and err == f"paradise: error: {files[-1]}: is one of the inputs; choose another output\n"
    assert sorted(path.iterdir()) == files and {f: f.read_bytes() for f in files} == before
    beside = path / "t.json"  # not a trace file: the folder's next read takes only *.parquet
    assert run_cli(monkeypatch, capsys, "export", "chrome", path, "-o", beside)[0] == 0
    assert read_chrome(beside)["traceEvents"] and {f: f.read_bytes() for f in files} == before


LINE_SEPARATORS = "\x85\u2028\u2029\x0c\x0b\x1c\x1d\x1e\r\n"
"""Every character Python's str.splitlines() ends a line at (NEL, LS, PS, FF, VT, FS, GS, RS, CR, LF)."""


def test_projections_round_trip_of_names_with_line_separators_and_any_index(tmp_path):
    from tests.hostile import make

    indexes = ["[3]", "[1,2,3]", "[-1]", "[a b]", '{"k": 1}', "[99999999999999999999999]", "[]", "[1.5]", None]
    rows = []
    for pe in (0, 1):
        for i, idx in enumerate(indexes):
            sep = LINE_SEPARATORS[i % len(LINE_SEPARATORS)]
            rows.append({"kind": "exec", "pe": pe, "t0": i * 10_000, "t1": i * 10_000 + 9_000, "coll": "Cell#0",
                         "name": f"e{i}{sep}x{LINE_SEPARATORS[-i - 1]}", "index": idx, "step": 0})
    path = make.raw_trace(tmp_path, rows, name="w.parquet", pes=2, pe=None)
    handle = open_trace(path)
    with DuckDBEngine(handle) as eng:
        sts = projections.export(eng, handle, tmp_path / "proj")
    back = [r for r in raw(import_trace(sts, tmp_path / "back.parquet")) if r["kind"] == "exec"]
    want = Counter((r["pe"], r["name"].replace("\n", " ").replace("\r", " "), r["t0"] // 1000) for r in rows)
    assert Counter((r["pe"], r["name"], r["t0"] // 1000) for r in back) == want  # every name, unsplit
    integer_lists = {"[3]", "[1,2,3]", "[-1]"}
    got = Counter(r["index"] for r in back)
    assert got == Counter({i: 2 for i in integer_lists} | {"[0]": 2 * (len(indexes) - len(integer_lists))}), got


def test_projections_pe_count_is_one_the_importer_reads_or_refused(tmp_path):
    from types import SimpleNamespace

    from paradise.errors import ImportFormatError, OutputUnwritable
    from paradise.format import MAX_PES
    from paradise.importers._projections_parse import read_sts

    def pes(meta: int, written: list[int]) -> int:
        return projections.export_pes(SimpleNamespace(metadata={"pes": meta}, path=tmp_path), written)

    assert MAX_PES == 1 << 22  # as many PEs as a trace may hold (store.validate): 2**22, not 2**22 - 1
    assert pes(MAX_PES, [0, 1]) == pes(2, [MAX_PES - 1]) == MAX_PES
    for meta, written in ((MAX_PES + 1, [0, 1]), (2, [MAX_PES])):
        with pytest.raises(OutputUnwritable, match=f"at most {MAX_PES}"):
            pes(meta, written)
    sts = tmp_path / "p.sts"  # the importer reads what the export may write, and no more
    sts.write_text(f"VERSION 11.0\nPROCESSORS {MAX_PES}\nTOTAL_CHARES 0\nTOTAL_EPS 0\nEND\n")
    assert read_sts(sts).pes == MAX_PES
    sts.write_text(f"VERSION 11.0\nPROCESSORS {MAX_PES + 1}\nTOTAL_CHARES 0\nTOTAL_EPS 0\nEND\n")
    with pytest.raises(ImportFormatError, match=f"between 1 and {MAX_PES} PEs"):
        read_sts(sts)
