"""Projections importer on real Charm++ logs (pipit's ping-pong and 1-D array hello), checked
against a naive line-by-line reading of the same raw records."""

from __future__ import annotations

import gzip
import json
import shutil
import subprocess
import warnings
from pathlib import Path

import duckdb
import numpy as np
import pyarrow.parquet as pq
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from paradise.analyses.session import Session
from paradise.errors import ImportFormatError, OutputExists, TruncatedTrace
from paradise.format import SCHEMA, read_metadata
from paradise.importers._projections_tachyon import read_tachyon_shifts
from paradise.importers.projections import ProjectionsImportWarning, import_trace, pair_nested
from paradise.store import open_trace

PIPIT = Path("pipit/pipit/tests/data")
PINGPONG = PIPIT / "ping-pong-projections"
HELLO = PIPIT / "projections-data/hello-1darray-projections"

# A real tachyonShifts.dat written by Java's ObjectOutputStream (TreeMap<Integer, Long> {0: 0, 1: 250, 2: 0};
# the second 0L is a back-reference to the cached Long, as Projections' own file would have).
TACHYON_HEX = (
    "aced0005737200116a6176612e7574696c2e547265654d61700cc1f63e2d256ae60300014c000a636f6d70617261746f72"
    "7400164c6a6176612f7574696c2f436f6d70617261746f723b787070770400000003737200116a6176612e6c616e672e49"
    "6e746567657212e2a0a4f781873802000149000576616c7565787200106a6176612e6c616e672e4e756d62657286ac951d"
    "0b94e08b0200007870000000007372000e6a6176612e6c616e672e4c6f6e673b8be490cc8f23df0200014a000576616c75"
    "657871007e000400000000000000007371007e0003000000017371007e000600000000000000fa7371007e000300000002"
    "71007e000778"
)


def raw_records(folder: Path) -> dict[int, list[list[str]]]:
    """Naive reading: every log line split on spaces, per PE (from the file name)."""
    out = {}
    for f in sorted(folder.glob("*.log.gz")):
        pe = int(f.name.split(".")[-3])
        lines = gzip.open(f, "rt").read().splitlines()
        assert lines[0].startswith("PROJECTIONS-RECORD")
        out[pe] = [ln.split() for ln in lines[1:] if ln.strip()]
    return out


def naive_busy_idle(recs: dict[int, list[list[str]]]) -> tuple[dict[int, int], dict[int, int]]:
    """Per-PE busy and idle ns with a plain stack; an interval still open ends at END_COMPUTATION."""
    busy, idle = {}, {}
    for pe, rs in recs.items():
        end = [int(r[1]) for r in rs if r[0] == "7"][-1]
        open_b, open_i, b, i = [], [], 0, 0
        for r in rs:
            if r[0] == "2":
                open_b.append(int(r[3]))
            elif r[0] == "3" and open_b:
                b += int(r[3]) - open_b.pop()
            elif r[0] == "14":
                open_i.append(int(r[1]))
            elif r[0] == "15" and open_i:
                i += int(r[1]) - open_i.pop()
        busy[pe] = (b + sum(end - t for t in open_b)) * 1000
        idle[pe] = (i + sum(end - t for t in open_i)) * 1000
    return busy, idle


@pytest.fixture(scope="module")
def imported(real_data, tmp_path_factory):
    out = tmp_path_factory.mktemp("proj")
    return {
        "pingpong": import_trace(real_data / PINGPONG, out / "pingpong.parquet"),
        "hello": import_trace(real_data / HELLO / "hello.sts", out / "hello.parquet"),
    }


RUNNING = """SELECT * FROM events e WHERE kind = 'piece' OR (kind = 'exec' AND NOT EXISTS (
    SELECT 1 FROM events p WHERE p.kind = 'piece' AND p.pe = e.pe AND p.exec_t0 = e.t0 AND p.name = e.name
    AND p.msg = e.msg AND p.coll = e.coll AND p.obj IS NOT DISTINCT FROM e.obj))"""
"""Running intervals written out from the format's definition (an oracle for events_running.sql)."""


def q(path: Path, sql: str) -> list[tuple]:
    con = duckdb.connect()
    con.execute(f"CREATE VIEW events AS SELECT * FROM read_parquet('{path}')")
    return con.sql(sql).fetchall()


@pytest.mark.parametrize("name,program", [("pingpong", "pingpong.prj"), ("hello", "hello")])
def test_import_metadata_and_schema(imported, name, program, cli):
    path = imported[name]
    t = pq.read_table(path)
    assert t.schema.remove_metadata() == SCHEMA
    meta = read_metadata(t.schema.metadata)
    assert (meta["source"], meta["program"], meta["pes"], meta["complete"]) == ("projections", program, 2, True)
    assert open_trace(path).complete
    rc, out, err = cli("info", path, "--json")
    assert rc == 0, err
    assert json.loads(out)["pes_seen"] is None and json.loads(out)["source"] == "projections"


@pytest.mark.parametrize("name,folder", [("pingpong", PINGPONG), ("hello", HELLO)])
def test_row_counts_follow_the_records(imported, real_data, name, folder):
    recs = raw_records(real_data / folder)
    assert recs and all(recs.values())  # every PE's log has records to count
    for pe, rs in recs.items():
        kinds = [r[0] for r in rs]
        got = dict(q(imported[name], f"SELECT kind, count(*) FROM events WHERE pe = {pe} GROUP BY kind"))
        pairs = q(imported[name], f"SELECT count(*) FROM ({RUNNING}) WHERE pe = {pe}")[0][0]
        assert pairs == kinds.count("2")  # one running interval (exec or piece) per BEGIN_PROCESSING
        assert got.get("idle", 0) == kinds.count("14")
        assert got.get("send", 0) == kinds.count("1") + kinds.count("20") + kinds.count("21")


@pytest.mark.parametrize("name,folder", [("pingpong", PINGPONG), ("hello", HELLO)])
def test_busy_and_idle_totals_match_naive_sums(imported, real_data, name, folder):
    busy, idle = naive_busy_idle(raw_records(real_data / folder))
    got = {(k, pe): v for k, pe, v in q(imported[name], f"SELECT 'exec', pe, sum(t1 - t0) FROM ({RUNNING}) GROUP BY ALL "
                                                         "UNION ALL SELECT kind, pe, sum(t1 - t0) FROM events "
                                                         "WHERE kind = 'idle' GROUP BY ALL")}
    assert busy and {pe for _, pe in got} == set(busy)  # the same PEs, each checked
    for pe in busy:
        assert got[("exec", pe)] == busy[pe]
        assert got[("idle", pe)] == idle[pe]


def test_a_threaded_entry_method_is_one_delivery_in_pieces(imported, real_data):
    # pingpong's trecv is threaded: Projections logs a BEGIN/END_PROCESSING pair per resumed piece,
    # each naming the same message (ep, event, source PE). One message = one execution.
    recs = raw_records(real_data / PINGPONG)
    for pe, rs in recs.items():
        trecv = {int(e) for e in (154, 171)}
        begins = [(int(r[2]), int(r[4]), int(r[5])) for r in rs if r[0] == "2" and int(r[2]) in trecv]
        got = dict(q(imported["pingpong"], f"SELECT kind, count(*) FROM events WHERE pe = {pe} "
                                           "AND name LIKE 'trecv%' AND kind IN ('exec', 'piece') GROUP BY kind"))
        assert got["exec"] == len(set(begins)) < len(begins) == got["piece"]
    per_msg = q(imported["pingpong"], "SELECT msg, count(*) FROM events WHERE kind = 'exec' AND msg IS NOT NULL "
                                      "AND name LIKE 'trecv%' GROUP BY msg HAVING count(*) > 1")
    assert per_msg == []
    pieces = q(imported["pingpong"], """SELECT e.active, sum(p.t1 - p.t0), min(p.t0) = e.t0, max(p.t1) = e.t1
        FROM events e JOIN events p ON p.kind = 'piece' AND p.pe = e.pe AND p.exec_t0 = e.t0
          AND p.name = e.name AND p.msg = e.msg AND p.coll = e.coll AND p.obj IS NOT DISTINCT FROM e.obj
        WHERE e.kind = 'exec' GROUP BY e.pe, e.t0, e.active, e.t1""")
    assert pieces and all(a == s and first and last for a, s, first, last in pieces)


def test_every_pingpong_creation_reaches_its_execution(imported, real_data):
    path = imported["pingpong"]
    unlinked = q(path, """SELECT s.cat, s.name, count(*) FROM events s WHERE s.kind = 'send' AND NOT EXISTS
                          (SELECT 1 FROM events e WHERE e.kind = 'exec' AND e.msg = s.msg) GROUP BY ALL""")
    # Point-to-point CREATION records: all 145 (77 on PE 0 + 68 on PE 1) reach an execution.
    assert [u for u in unlinked if u[0] == "creation"] == []
    assert q(path, "SELECT count(*) FROM events WHERE kind = 'send' AND cat = 'creation'") == [(145,)]
    # The only unlinked sends are 35 CREATION_BCAST records of PE 0 whose receivers are outside the
    # trace: 31 broadcasts that create runtime/user groups (FutureBOC, CkLocMgr, PingG, ...), whose
    # constructors Charm++ runs without BEGIN_PROCESSING records (no BEGIN of those entries exists on
    # any PE); 3 remoteDoneInserting() broadcasts whose deliveries are not traced either; and the final
    # traceProjectionsParallelShutdown() broadcast, delivered after tracing was switched off.
    assert {u[0] for u in unlinked} == {"creation_bcast"} and sum(u[2] for u in unlinked) == 35
    recs = raw_records(real_data / PINGPONG)
    begun = {(r[5], r[4], r[2]) for rs in recs.values() for r in rs if r[0] == "2"}  # (src pe, event, ep)
    naive_unlinked = [r for r in recs[0] if r[0] == "20" and ("0", r[4], r[2]) not in begun]
    assert len(naive_unlinked) == 35
    no_exec_at_all = [u for u in unlinked if not q(path, f"SELECT 1 FROM events WHERE kind = 'exec' "
                                                        f"AND name = '{u[1]}'")]
    assert sum(u[2] for u in no_exec_at_all) == 31  # the group constructors (incl. PingG(), PingN())


def test_links_agree_on_both_sides(imported):
    path = imported["pingpong"]
    # The exec's peer_pe is the sender's PE, the p2p send's peer_pe the executing PE, msg packs (pe, event).
    bad = q(path, """SELECT count(*) FROM events s JOIN events e ON e.msg = s.msg
                     WHERE s.kind = 'send' AND e.kind = 'exec'
                       AND (e.peer_pe <> s.pe OR (s.cat = 'creation' AND s.peer_pe <> e.pe)
                            OR s.msg >> 32 <> s.pe OR e.name <> s.name OR e.t0 < s.t0)""")
    assert bad == [(0,)]
    # 221 BEGIN_PROCESSING pairs name a traced message; 114 of them are the pieces of 38 threaded trecv
    # executions (3 each), so 221 - 114 + 38 executions have one.
    assert q(path, "SELECT count(*) FROM events WHERE kind = 'exec' AND msg IS NOT NULL") == [(145,)]


def test_object_ids_arrays_and_non_arrays(imported):
    path = imported["pingpong"]
    # Ping1/2/3 are 1-, 2-, 3-D arrays: their index has ndims values; non-array chares carry 4 raw
    # id ints (e.g. `2 4 185 ... 0 1936877926 116 0 0 81759`) and get no index.
    dims = dict(q(path, """SELECT coll, max(len(string_split(index, ','))) FROM events
                           WHERE kind = 'exec' AND index IS NOT NULL GROUP BY coll"""))
    assert dims == {"Ping1": 1, "Ping2": 2, "Ping3": 3, "PingMarshall": 1}
    assert q(path, "SELECT count(*) FROM events WHERE kind = 'exec' AND cat = 'chare' AND obj IS NOT NULL") == [(0,)]
    # Busy time of an execution never comes out negative (cpu time misread as an id would do that).
    assert q(path, "SELECT count(*) FROM events WHERE t1 < t0") == [(0,)]


def test_hello_placement_and_chain(imported):
    path = imported["hello"]
    placed = q(path, "SELECT pe, index FROM events WHERE name = 'Hello()' ORDER BY index")
    assert placed == [(0, "[0]"), (0, "[1]"), (0, "[2]"), (1, "[3]"), (1, "[4]")]
    # SayHi is passed along the array: element i's SayHi sends SayHi to element i+1.
    chain = q(path, """SELECT s.index, e.index FROM events s JOIN events e ON e.msg = s.msg
                       WHERE s.kind = 'send' AND e.kind = 'exec' AND e.name = 'SayHi(int hiNo)'
                         AND s.index IS NOT NULL ORDER BY s.index""")
    assert chain == [("[0]", "[1]"), ("[1]", "[2]"), ("[2]", "[3]"), ("[3]", "[4]")]


def test_hello_user_events_pairs_stats_kept(imported):
    marks = q(imported["hello"], "SELECT cat, name, t0, t1, args FROM events WHERE kind = 'mark' AND cat NOT IN ('computation', 'pack', 'unpack') ORDER BY t0, cat")
    by_cat: dict[str, list] = {}
    for cat, name, t0, t1, args in marks:
        by_cat.setdefault(cat, []).append((name, t0, t1, json.loads(args)))
    # `13 0 1604 8 0`: user event 0 ("Time Step Begin") at 1604 µs.
    assert by_cat["user_event"] == [("Time Step Begin", 1_604_000, None, {"event_id": 0})]
    # `98 1 1605 9 0 0` ... `99 1 1767 14 0 0`: event 1 ("For Bracket Events") from 1605 to 1767 µs.
    assert by_cat["user_event_pair"] == [("For Bracket Events", 1_605_000, 1_767_000, {"event_id": 1, "nested_id": 0})]
    # `32 1604 -1 0 0 200` twice: stat 200 ("tracing user stat") = 0, no user time (-1).
    assert by_cat["user_stat"] == [("tracing user stat", 1_604_000, None,
                                    {"stat_id": 200, "value": 0.0, "user_time": -1.0})] * 2
    # `26 -2 1605`: user-supplied value -2.
    assert by_cat["user_supplied"] == [("user supplied", 1_605_000, None, {"value": -2})]


def _copy_set(real_data: Path, folder: Path, tmp: Path) -> Path:
    dst = tmp / folder.name
    shutil.copytree(real_data / folder, dst)
    return dst


def _one_line_exit_2(cli, *args) -> str:
    rc, out, err = cli(*args)
    assert rc == 2, (rc, out, err)
    assert len(err.strip().splitlines()) == 1 and "Traceback" not in err
    return err.strip()


def test_truncated_log_gz(real_data, tmp_path, cli):
    d = _copy_set(real_data, PINGPONG, tmp_path)
    log = d / "pingpong.prj.1.log.gz"
    data = log.read_bytes()
    log.write_bytes(data[: len(data) // 2])
    err = _one_line_exit_2(cli, "import", "projections", d, "-o", tmp_path / "o.parquet")
    assert str(log) in err and "truncated" in err
    with pytest.raises(TruncatedTrace):
        import_trace(d, tmp_path / "o.parquet")
    assert not (tmp_path / "o.parquet").exists()


def test_foreign_json_as_sts(real_data, tmp_path, cli):
    d = _copy_set(real_data, HELLO, tmp_path)
    sts = d / "hello.sts"
    sts.write_text(json.dumps({"traceEvents": [], "schemaVersion": 1}, indent=1))
    err = _one_line_exit_2(cli, "import", "projections", sts, "-o", tmp_path / "o.parquet")
    assert str(sts) in err and "not a Projections .sts" in err
    with pytest.raises(ImportFormatError):
        import_trace(d, tmp_path / "o.parquet")


def test_refuses_to_overwrite(imported, real_data, cli):
    before = imported["hello"].read_bytes()
    err = _one_line_exit_2(cli, "import", "projections", real_data / HELLO, "-o", imported["hello"])
    assert "--force" in err
    assert imported["hello"].read_bytes() == before
    with pytest.raises(OutputExists):
        import_trace(real_data / HELLO, imported["hello"])


def test_unknown_records_warn_once_with_counts(real_data, tmp_path, cli):
    d = _copy_set(real_data, HELLO, tmp_path)
    log = d / "hello.1.log.gz"
    lines = gzip.open(log, "rt").read().splitlines()
    lines[5:5] = ["77 1500 1", "77 1501 1", "31 1502"]  # 31 (SURROGATE_BLOCK) is analysis-only, 77 unknown
    with gzip.open(log, "wt") as fh:
        fh.write("\n".join(lines) + "\n")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        import_trace(d, tmp_path / "o.parquet")
    ours = [w for w in caught if issubclass(w.category, ProjectionsImportWarning)]
    assert len(ours) == 1 and "type 31: 1" in str(ours[0].message) and "type 77: 2" in str(ours[0].message)
    rc, out, err = cli("import", "projections", d, "-o", tmp_path / "o2.parquet")
    assert rc == 0 and err.count("paradise: warning:") == 1 and "type 77: 2" in err


def test_tachyon_shifts_are_applied(real_data, tmp_path):
    d = _copy_set(real_data, HELLO, tmp_path)
    (d / "tachyonShifts.dat").write_bytes(bytes.fromhex(TACHYON_HEX))
    assert read_tachyon_shifts(d) == {0: 0, 1: 250, 2: 0}
    shifted = import_trace(d, tmp_path / "shifted.parquet")
    plain = import_trace(real_data / HELLO, tmp_path / "plain.parquet")
    a, b = pq.read_table(plain).to_pandas(), pq.read_table(shifted).to_pandas()
    assert (b.loc[b.pe == 1, "t0"].to_numpy() - a.loc[a.pe == 1, "t0"].to_numpy() == 250_000).all()
    assert (b.loc[b.pe == 0, "t0"].to_numpy() == a.loc[a.pe == 0, "t0"].to_numpy()).all()
    assert read_metadata(pq.read_schema(shifted).metadata)["clock"]["method"] == "projections+tachyon_shifts"


@pytest.mark.skipif(shutil.which("javac") is None, reason="javac not installed")
@pytest.mark.timeout(300)
def test_tachyon_file_written_by_java(tmp_path):
    (tmp_path / "W.java").write_text(
        "import java.io.*; import java.util.*; public class W { public static void main(String[] a) "
        "throws Exception { TreeMap<Integer, Long> m = new TreeMap<Integer, Long>(); m.put(3, -7L); "
        "m.put(0, 123456789012L); m.put(5, -7L); ObjectOutputStream o = new ObjectOutputStream("
        "new FileOutputStream(\"tachyonShifts.dat\")); o.writeObject(m); o.close(); } }"
    )
    subprocess.run(["javac", "W.java"], cwd=tmp_path, check=True, timeout=240)
    subprocess.run(["java", "W"], cwd=tmp_path, check=True, timeout=60)
    assert read_tachyon_shifts(tmp_path) == {0: 123456789012, 3: -7, 5: -7}


def _stack_pairs(seq: list[bool]) -> dict[int, int]:
    stack, pairs, nb, ne = [], {}, 0, 0
    for is_begin in seq:
        if is_begin:
            stack.append(nb)
            nb += 1
        else:
            if stack:
                pairs[stack.pop()] = ne
            ne += 1
    return pairs


@settings(max_examples=200, deadline=None)
@given(st.lists(st.booleans(), max_size=40))
def test_vectorised_pairing_equals_a_stack(seq):
    pos = np.arange(len(seq))
    flags = np.array(seq, dtype=bool)
    end_of, level, parent = pair_nested(pos[flags], pos[~flags])
    assert {i: int(e) for i, e in enumerate(end_of) if e >= 0} == _stack_pairs(seq)
    assert all(level[p] == level[i] - 1 for i, p in enumerate(parent) if p >= 0)


def test_nested_executions_pair_and_active_time(tmp_path):
    """B(outer) B(inner) E(inner) E(outer), as Charm++ writes without +tracenested: both pair on one PE."""
    (tmp_path / "n.sts").write_text(
        'VERSION 11.0\nPROCESSORS 1\nTOTAL_CHARES 1\nTOTAL_EPS 2\nCHARE 0 "A" 1\n'
        'ENTRY CHARE 0 "outer()" 0 0\nENTRY CHARE 1 "inner(int x)" 0 0\nEND\n'
    )
    log = ["PROJECTIONS-RECORD 7", "6 0", "2 4 0 10 1 0 64 0 3 10", "1 4 1 12 0 0 64 1",
           "2 4 1 13 0 0 64 0 3 13", "3 0 1 20 0 0 0 20", "3 0 0 30 1 0 0 30", "7 40"]
    (tmp_path / "n.0.log").write_text("\n".join(log) + "\n")
    out = import_trace(tmp_path / "n.sts", tmp_path / "n.parquet")
    rows = q(out, "SELECT name, t0, t1, active, msg, coll, index FROM events WHERE kind = 'exec' ORDER BY t0")
    assert rows == [("outer()", 10_000, 30_000, 13_000, None, "A", "[3]"),
                    ("inner(int x)", 13_000, 20_000, 7_000, 0, "A", "[3]")]
    # The send inside outer() is attributed to outer's object and linked to inner().
    assert q(out, "SELECT coll, index, peer_pe FROM events WHERE kind = 'send'") == [("A", "[3]", 0)]


def test_pe_span_starts_at_begin_computation(imported, real_data):
    # ping-pong: BEGIN_COMPUTATION (6) precedes the first execution by ~2.9 ms; the PE's span is
    # BEGIN_COMPUTATION .. END_COMPUTATION, so the overview's busy share is exec time over that.
    recs = raw_records(real_data / PINGPONG)
    from paradise.analyses import overview
    from paradise.analyses.base import AnalysisConfig
    from paradise.engines.duckdb_engine import DuckDBEngine

    trace = open_trace(imported["pingpong"])
    with DuckDBEngine(trace) as eng:
        res = overview.analyze(Session(eng, trace), AnalysisConfig())
    busy, _ = naive_busy_idle(recs)
    assert sorted(row["pe"] for row in res.sections["per_pe"]) == sorted(recs)  # every PE, each checked
    for row in res.sections["per_pe"]:
        rs = recs[row["pe"]]
        begin, end = (int(next(r[1] for r in rs if r[0] == k)) for k in ("6", "7"))
        assert row["span_ns"] == (end - begin) * 1000
        assert row["busy_share"] == pytest.approx(busy[row["pe"]] / ((end - begin) * 1000), abs=1e-4)
        assert row["busy_share"] < 0.07  # was 15 % with the span starting at the first event


def test_pack_and_unpack_intervals_kept(imported, real_data):
    recs = raw_records(real_data / PINGPONG)
    assert len(recs) == 2  # ping-pong's two PEs
    for pe, rs in recs.items():
        kinds = [r[0] for r in rs]
        got = dict(q(imported["pingpong"], f"SELECT cat, count(*) FROM events WHERE kind = 'mark' AND pe = {pe} "
                                           "GROUP BY cat"))
        assert got["pack"] == kinds.count("16") and got["unpack"] == kinds.count("18")
        assert got["computation"] == kinds.count("6") == 1


def test_missing_pe_log_marks_the_trace_incomplete(real_data, tmp_path, cli):
    d = _copy_set(real_data, HELLO, tmp_path)
    (d / "hello.1.log.gz").unlink()
    with pytest.warns(ProjectionsImportWarning, match=r"no log for PE\(s\) 1 of 2"):
        out = import_trace(d, tmp_path / "o.parquet")
    meta = read_metadata(pq.read_schema(out).metadata)
    assert meta["complete"] is False and meta["extra"]["missing_pes"] == [1]


def test_pe_numbers_and_counts_out_of_range_are_one_line(real_data, tmp_path, cli):
    d = _copy_set(real_data, HELLO, tmp_path)
    (d / "hello.1.log.gz").rename(d / f"hello.{10**20}.log.gz")
    err = _one_line_exit_2(cli, "import", "projections", d, "-o", tmp_path / "o.parquet")
    assert f"hello.{10**20}.log.gz" in err and "declares 2 PEs" in err
    d2 = _copy_set(real_data, HELLO, tmp_path / "b")
    sts = d2 / "hello.sts"
    sts.write_text(sts.read_text().replace("PROCESSORS 2", f"PROCESSORS {10**20}"))
    err = _one_line_exit_2(cli, "import", "projections", sts, "-o", tmp_path / "o.parquet")
    assert "hello.sts" in err and "PROCESSORS" in err
