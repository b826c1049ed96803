"""Kineto importer: every real HTA trace imports, rows match a naive json count, bad input fails cleanly."""

from __future__ import annotations

import gzip
import json
from decimal import Decimal
from pathlib import Path

import duckdb
import msgspec
import pandas as pd
import pyarrow.parquet as pq
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import paradise.importers.kineto_scan as kscan
from paradise.errors import ImportFormatError, OutputExists, TruncatedTrace
from paradise.format import read_metadata
from paradise.importers.kineto import import_trace
from paradise.importers.kineto_events import us_text_to_ns
from paradise.store import open_trace

NOT_CHROME = ("execution_trace/benchmark_simple_add_et.json.gz", "memory_analysis/memory_timeline.raw.gz")


def _load(path: Path, **kw):
    opener = gzip.open if path.read_bytes()[:2] == b"\x1f\x8b" else open
    with opener(path, "rb") as fh:
        return json.loads(fh.read(), **kw)


def _kineto_files(real: Path) -> list[Path]:
    files = sorted(
        p for p in (real / "hta").rglob("*") if p.is_file() and (".json" in p.name or p.suffix == ".gz")
    )
    return [p for p in files if not str(p).endswith(NOT_CHROME)]


def _table(path: Path):
    return pq.read_table(path).to_pandas()


def test_every_real_kineto_trace_imports(real_data, tmp_path):
    files = _kineto_files(real_data)
    assert len(files) >= 20
    for i, f in enumerate(files):
        trace = _load(f)
        naive_x = sum(1 for e in trace["traceEvents"] if e.get("ph") == "X")
        has_rank = isinstance(trace.get("distributedInfo"), dict) and "rank" in trace["distributedInfo"]
        out = import_trace([f], tmp_path / f"t{i}.parquet", rank=None if has_rank else 0)
        handle = open_trace(out)  # validates schema and metadata
        assert handle.source == "kineto" and handle.complete
        t = pq.read_table(out, columns=["t0", "t1", "kind"])
        # one row per complete event, each with an end; nothing else becomes a row
        assert t.num_rows == naive_x, f
        assert t.column("t1").null_count == 0, f
        if naive_x:
            assert min(t.column("t0").to_pylist()) == 0, f


def test_non_chrome_json_gives_one_line_error(real_data, cli, tmp_path):
    for rel in NOT_CHROME:
        f = real_data / "hta" / "tests" / "data" / rel
        code, out, err = cli("import", "kineto", f, "-o", tmp_path / "x.parquet")
        assert code == 2
        assert err.count("\n") == 1 and err.startswith("paradise: error: ") and str(f) in err
        assert "Traceback" not in err and "not a" in err
    assert not (tmp_path / "x.parquet").exists()


def test_nccl_collectives_carry_sizes_and_groups(real_data, tmp_path):
    f = real_data / "hta" / "tests" / "data" / "nccl_parser_config" / "nccl_data.json.gz"
    events = [e for e in _load(f)["traceEvents"] if e.get("ph") == "X"]
    with_args = [e for e in events if "Collective name" in e.get("args", {})]
    df = _table(import_trace([f], tmp_path / "n.parquet"))
    coll = df[df["kind"] == "collective"]
    # 27 record_param_comms + 21 NCCL kernels carry "Collective name" (INVENTORY: comms)
    assert len(with_args) == 48
    carrying = df[df["args"].str.contains('"Collective name"', regex=False, na=False)]
    assert len(carrying) == len(with_args)
    # one row per collective: the rank has NCCL kernels, so they are the collectives and the
    # record_param_comms twins are plain rows without bytes (docs/importers.md, Kineto)
    assert (coll["cat"] == "kernel").all() and len(coll) == 21
    sized = carrying[carrying["bytes"].notna()]
    assert sized.index.equals(coll.index)
    for _, row in carrying.iterrows():
        args = json.loads(row["args"])
        size = {"Float": 4, "Long": 8, "Byte": 1}[args["dtype"]]  # c10 ScalarType element sizes
        if args["Collective name"] == "wait":  # a wait on a work handle: not a collective, not decoded
            assert row["kind"] == "exec" and pd.isna(row["bytes"])
            continue
        if row["kind"] == "collective":
            assert row["bytes"] == args["In msg nelems"] * size
        assert row["dtype"] == args["dtype"]
        assert row["group_size"] == args["Group size"]
        if args["Collective name"] == "wait":  # waits name no process group and no ranks
            assert pd.isna(row["group"]) and args["Process Group Ranks"] == "[]"
        else:
            assert row["group"] == args["Process Group Name"] == "0"
            assert args["Process Group Ranks"] == "[0, 1]"
    kernels = sized[sized["cat"] == "kernel"]
    assert len(kernels) == 21 and set(kernels["group_size"]) == {2} and set(kernels["group"]) == {"0"}
    assert (kernels["stream"].notna()).all() and (kernels["msg"].notna()).all()
    assert set(df.loc[df["kind"] == "step", "step"]) == {4, 5, 6}
    # launch -> kernel: both rows carry the correlation id in msg, and kernels take the launch's step
    con = duckdb.connect()
    n_linked, n_same_step = con.sql(
        f"""SELECT count(*), count(*) FILTER (WHERE k.step IS NOT DISTINCT FROM r.step)
            FROM '{tmp_path / "n.parquet"}' k JOIN '{tmp_path / "n.parquet"}' r
              ON k.msg = r.msg AND k.cat = 'kernel' AND r.cat = 'cuda_runtime'"""
    ).fetchall()[0]
    assert n_linked == 2700  # every kernel (INVENTORY: 2700 GPU kernels) has its launch
    assert n_same_step == n_linked
    meta = read_metadata(pq.read_schema(tmp_path / "n.parquet").metadata)
    assert meta["pes"] == 2 and meta["source"] == "kineto" and meta["complete"] is True
    # ts are 51 days past baseTimeNanoseconds, yet base + ts is right: the file's own INFO log says
    # "2024-05-22 17:15:22" (PDT) when tracing started, i.e. 1716423322 s Unix time
    assert meta["clock"]["method"] == "baseTimeNanoseconds"
    assert abs(meta["origin_ns"] / 1e9 - 1716423322) < 2


def test_ns_resolution_times_are_exact(real_data, tmp_path):
    f = (
        real_data
        / "hta"
        / "tests"
        / "data"
        / "ns_resolution_trace"
        / "rank-0.Apr_03_18_51_38.1102.pt.trace.json.gz"
    )
    events = [e for e in _load(f, parse_float=Decimal)["traceEvents"] if e.get("ph") == "X"]
    ts_ns = [int(Decimal(e["ts"]) * 1000) for e in events]
    origin = min(ts_ns)
    want = sorted((t - origin, t - origin + int(Decimal(e["dur"]) * 1000)) for t, e in zip(ts_ns, events))
    out = import_trace([f], tmp_path / "ns.parquet")
    t = pq.read_table(out, columns=["t0", "t1"])
    got = sorted(zip(t.column("t0").to_pylist(), t.column("t1").to_pylist()))
    assert got == want
    assert any(t0 % 1000 for t0, _ in got)  # sub-microsecond digits survive (float64 would lose them)
    meta = read_metadata(pq.read_schema(out).metadata)
    assert meta["clock"]["method"] == "unix_ts" and meta["origin_ns"] == origin


def test_rank_unavailable_needs_rank(real_data, cli, tmp_path):
    f = real_data / "hta" / "tests" / "data" / "rank_unavailable" / "rank_not_found.json.gz"
    code, _, err = cli("import", "kineto", f, "-o", tmp_path / "r.parquet")
    assert code == 2 and err.count("\n") == 1 and str(f) in err and "--rank" in err
    assert "Traceback" not in err
    code, _, err = cli("import", "kineto", f, "-o", tmp_path / "r.parquet", "--rank", "5")
    assert code == 0, err
    df = _table(tmp_path / "r.parquet")
    assert set(df["pe"]) == {5}
    # a second import must not overwrite without --force
    code, _, err = cli("import", "kineto", f, "-o", tmp_path / "r.parquet", "--rank", "5")
    assert code == 2 and "already exists" in err and err.count("\n") == 1
    code, _, err = cli("import", "kineto", f, "-o", tmp_path / "r.parquet", "--rank", "5", "--force")
    assert code == 0, err


def test_bad_inputs_exit_2_one_line(real_data, cli, tmp_path):
    src = (real_data / "hta" / "tests" / "data" / "nccl_parser_config" / "nccl_data.json.gz").read_bytes()
    cases = {
        "notk.json": b'{"schemaVersion": 1, "foo": [1, 2]}',
        "empty.json": b"",
        "trunc.json.gz": src[: len(src) // 3],
        "trunc.json": gzip.decompress(src)[:200_000],
        "text.json": b"hello, world\n",
    }
    for name, data in cases.items():
        f = tmp_path / name
        f.write_bytes(data)
        code, _, err = cli("import", "kineto", f, "-o", tmp_path / "o.parquet")
        assert code == 2, name
        assert err.count("\n") == 1 and err.startswith("paradise: error: ") and str(f) in err, err
        assert "Traceback" not in err
    assert not (tmp_path / "o.parquet").exists()
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".")] == []  # temp files cleaned


def test_two_ranks_one_job(real_data, tmp_path):
    d = real_data / "hta" / "tests" / "data" / "trace_filter"
    files = [d / "sampled_rank-0.json.gz", d / "sampled_rank-1.json.gz"]
    out = import_trace(files, tmp_path / "two.parquet")
    df = _table(out)
    assert set(df["pe"]) == {0, 1}
    assert df["t0"].min() == 0
    # same job, same window: both ranks start within 0.1 s of each other
    starts = df.groupby("pe")["t0"].min()
    assert starts.max() < 100_000_000
    steps = df[df["kind"] == "step"]
    assert sorted(steps["step"]) == [551, 551, 552, 552]
    nccl = df[(df["kind"] == "collective") & (df["cat"] == "kernel")]
    assert len(nccl) == 20  # 10 ncclKernel_SendRecv per rank
    # msg = rank * 2**40 + correlation: launch and kernel share it, and no id is shared across ranks
    linked = df[df["msg"].notna()]
    assert linked.groupby("msg")["pe"].nunique().max() == 1
    kernels = df[df["cat"] == "kernel"]
    corr = kernels["args"].map(lambda a: json.loads(a)["correlation"])
    assert (kernels["msg"] == kernels["pe"].astype("int64") * 2**40 + corr).all()
    meta = read_metadata(pq.read_schema(out).metadata)
    assert meta["pes"] == 128 and meta["pe"] is None and meta["clock"]["method"] == "unix_ts"
    with pytest.raises(ImportFormatError, match="--rank applies to a single file"):
        import_trace(files, tmp_path / "x.parquet", rank=0)
    with pytest.raises(ImportFormatError, match="rank 0 also comes from"):
        import_trace([files[0], files[0]], tmp_path / "x.parquet")
    with pytest.raises(OutputExists):
        import_trace(files, out)


def test_header_after_events_and_base_time(tmp_path):
    # Newer Kineto: ts are offsets from baseTimeNanoseconds; keys may follow traceEvents.
    events = [
        {"ph": "X", "cat": "cpu_op", "name": "aten::mm", "pid": 1, "tid": 2, "ts": 5.5, "dur": 1.25, "args": {}},
        {"ph": "X", "cat": "user_annotation", "name": "gloo:all_reduce", "pid": 1, "tid": 3, "ts": 6, "dur": 4,
         "args": {"Input type": ["float"], "Input Dims": [[10, 3]]}},
        {"ph": "i", "name": "instant", "pid": 1, "tid": 2, "ts": 1},
        {"ph": "M", "name": "thread_name", "pid": 1, "tid": 2, "args": {"name": "main"}},
    ]  # fmt: skip
    body = {
        "traceEvents": events,
        "baseTimeNanoseconds": 1_700_000_000_000_000_000,
        "distributedInfo": {"rank": 1},
    }
    f = tmp_path / "late.json"
    f.write_text(json.dumps(body))
    out = import_trace([f], tmp_path / "late.parquet")
    df = _table(out)
    assert list(df["t0"]) == [0, 500] and list(df["t1"]) == [1250, 4500]
    assert list(df["kind"]) == ["exec", "collective"] and df["bytes"].iloc[1] == 10 * 3 * 4
    meta = read_metadata(pq.read_schema(out).metadata)
    assert meta["origin_ns"] == 1_700_000_000_000_000_000 + 5_500
    assert meta["clock"]["method"] == "baseTimeNanoseconds"
    assert meta["extra"]["ranks"]["1"]["threads"] == {"1/2": "main"}


def test_us_text_to_ns_exact():
    texts = [b"1712195495406752.797", b"12", b"-1.5", b"0.0004", b"0.0005", b"1e3", b"", b"null", b"7.0",
             b"1e999999999"]
    vals, ok = us_text_to_ns([msgspec.Raw(t) for t in texts])
    assert list(ok) == [True, True, True, True, True, True, False, False, True, False]
    assert list(vals[ok]) == [1712195495406752797, 12000, -1500, 0, 1, 1_000_000, 7000]


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.integers(-(10**15), 10**15), st.integers(0, 3), st.integers(0, 999)), max_size=40))
def test_us_text_to_ns_matches_exact_decimal(items):
    # Whole microseconds with up to three decimals convert exactly, whatever their lengths.
    texts, want = [], []
    for whole, places, frac in items:
        frac_text = str(frac % 10**places).zfill(places) if places else ""
        text = f"{whole}.{frac_text}" if places else str(whole)
        texts.append(text.encode())
        want.append(int(Decimal(text) * 1000))
    vals, ok = us_text_to_ns([msgspec.Raw(t) for t in texts])
    assert ok.all()
    assert vals.tolist() == want


_tricky = st.text(alphabet='ab{}[]",:\\ \u00e9\n', max_size=12)


@settings(max_examples=40, deadline=None)
@given(
    names=st.lists(_tricky, min_size=1, max_size=30),
    chunk=st.integers(min_value=1, max_value=64),
    fast=st.booleans(),
)
def test_scanner_splits_exactly(names, chunk, fast, tmp_path_factory):
    # Events whose strings hold braces, quotes and backslashes, cut at any chunk size, come out whole.
    events = [
        {"ph": "X", "name": n, "ts": i, "dur": 1, "args": {"k": {"n": [n]}}} for i, n in enumerate(names)
    ]
    path = tmp_path_factory.mktemp("scan") / "t.json"
    path.write_text(json.dumps({"a": ']}{[\\"', "traceEvents": events, "z": {"traceEvents": 1}}, indent=1))
    old = kscan.CHUNK_BYTES
    kscan.CHUNK_BYTES = chunk
    try:
        if fast:  # guessed cuts, validated by the decoder, falling back to the exact scan
            scanner = kscan.EventScanner(path, decode=json.loads, retry_on=(ValueError,))
            got = [e for batch in scanner.batches() for e in batch]
        else:
            scanner = kscan.EventScanner(path)
            got = [e for text in scanner.batches() for e in json.loads(text)]
    finally:
        kscan.CHUNK_BYTES = old
    assert got == events
    assert scanner.header == {"a": ']}{[\\"', "z": {"traceEvents": 1}}


@settings(max_examples=30, deadline=None)
@given(
    names=st.lists(_tricky, min_size=1, max_size=60),
    chunk=st.integers(min_value=600, max_value=3000),
    pad=st.integers(min_value=0, max_value=2000),
)
def test_scanner_finds_events_key_in_large_chunks(names, chunk, pad, tmp_path_factory):
    # Chunks larger than the header: the exact scan stops at the events array, decoy keys included.
    events = [{"ph": "X", "name": n, "ts": i, "args": {"k": [n]}} for i, n in enumerate(names)]
    header = {"a": 'x"traceEvents": [', "note": "traceEvents", "pad": "p" * pad, "m": {"traceEvents": [1]}}
    path = tmp_path_factory.mktemp("scan") / "t.json"
    path.write_text(json.dumps({**header, "traceEvents": events, "z": "traceEvents"}))
    old = kscan.CHUNK_BYTES
    kscan.CHUNK_BYTES = chunk
    try:
        scanner = kscan.EventScanner(path, decode=json.loads, retry_on=(ValueError,))
        got = [e for batch in scanner.batches() for e in batch]
    finally:
        kscan.CHUNK_BYTES = old
    assert got == events
    assert scanner.header == {**header, "z": "traceEvents"}


def test_scanner_errors(tmp_path):
    f = tmp_path / "a.json"
    f.write_text('[{"ph": "X"}]')
    with pytest.raises(ImportFormatError, match="JSON array"):
        list(kscan.EventScanner(f).batches())
    f.write_text('{"traceEvents": [{"ph": "X"}, {"ph"')
    with pytest.raises(TruncatedTrace):
        list(kscan.EventScanner(f).batches())


def test_worker_processes_give_the_same_trace(real_data, tmp_path, monkeypatch):
    # Large inputs decode in a forkserver pool; forcing it on a small file must not change a byte of data.
    import paradise.importers.kineto as kineto

    d = real_data / "hta" / "tests" / "data" / "trace_filter"
    files = [d / "sampled_rank-0.json.gz", d / "sampled_rank-1.json.gz"]
    inline = pq.read_table(import_trace(files, tmp_path / "inline.parquet"))
    monkeypatch.setattr(kineto, "PARALLEL_MIN_BYTES", 0)
    monkeypatch.setattr(kineto, "MIN_CPUS_FOR_WORKERS", 2)
    monkeypatch.setattr(kscan, "CHUNK_BYTES", 256 * 1024)  # many batches in flight
    assert kineto._worker_count(1) >= 1 or pytest.skip("one CPU: no worker pool")
    pooled = pq.read_table(import_trace(files, tmp_path / "pooled.parquet"))
    assert pooled.equals(inline.replace_schema_metadata(pooled.schema.metadata))


def test_gloo_collectives_sized_from_shapes(real_data, tmp_path):
    # CPU-only gloo rank 34 of 300: 10 gloo:all_reduce annotations (worker threads) with Input Dims,
    # 10 c10d::allreduce_ launches (main thread) without sizes; 5 ProfilerSteps 551..555.
    f = (
        real_data
        / "hta"
        / "_history"
        / "tests"
        / "data"
        / "cpu_only"
        / "rank-34.Jul_15_10_52_41.1074.pt.trace.json.gz"
    )
    df = _table(import_trace([f], tmp_path / "g.parquet"))
    gloo = df[df["name"] == "gloo:all_reduce"]
    assert len(gloo) == 10 and set(gloo["kind"]) == {"collective"}
    for _, row in gloo.iterrows():
        args = json.loads(row["args"])
        assert args["Input type"] == ["float"]
        assert row["bytes"] == args["Input Dims"][0][0] * 4
    launches = df[df["name"] == "c10d::allreduce_"]
    assert len(launches) == 10 and launches["bytes"].isna().all()
    assert sorted(df.loc[df["kind"] == "step", "step"]) == [551, 552, 553, 554, 555]
    assert set(df.loc[df["kind"] == "collective", "step"]) == {551, 552, 553, 554, 555}
    meta = read_metadata(pq.read_schema(tmp_path / "g.parquet").metadata)
    assert meta["pes"] == 300 and meta["pe"] == 34 and set(df["pe"]) == {34}
    # base + ts lands on the time in the file's name: Jul 15 10:52:41 PDT = 17:52:41 UTC
    assert abs(meta["origin_ns"] / 1e9 - 1721065961) < 2


def _bad_trace(tmp_path, name, events_json, header='{"rank": 0}'):
    f = tmp_path / name
    f.write_text('{"distributedInfo": ' + header + ', "traceEvents": ' + events_json + "}")
    return f


_EV = '{"ph": "X", "cat": "cpu_op", "name": "%s", "pid": 1, "tid": 1, "ts": 10, "dur": %s, "args": %s}'


@pytest.mark.parametrize(
    "name,events,header,message",
    [
        ("deep.json", "[" + _EV % ("x", "1", '{"a": ' * 5000 + "1" + "}" * 5000) + "]", '{"rank": 0}',
         "nested too deeply"),
        ("bigrank.json", "[" + _EV % ("x", "1", "{}") + "]", '{"rank": 2147483648}', "out of range"),
        ("negrank.json", "[" + _EV % ("x", "1", "{}") + "]", '{"rank": -1}', "out of range"),
        ("step.json", "[" + _EV % ("ProfilerStep#" + "9" * 20, "1", "{}") + "]", '{"rank": 0}', "out of range"),
        ("negdur.json", "[" + _EV % ("x", "-5", "{}") + "]", '{"rank": 0}', "negative or non-numeric dur"),
        ("textdur.json", "[" + _EV % ("x", '"abc"', "{}") + "]", '{"rank": 0}', "negative or non-numeric dur"),
        ("dict.json", "{}", '{"rank": 0}', "traceEvents is a dict"),
    ],
)  # fmt: skip
def test_hostile_kineto_inputs_are_refused_in_one_line(tmp_path, name, events, header, message):
    from paradise.errors import ParadiseError

    f = _bad_trace(tmp_path, name, events, header)
    with pytest.raises(ParadiseError) as exc:
        import_trace([f], tmp_path / "o.parquet")
    assert str(f) in str(exc.value) and message in str(exc.value) and "\n" not in str(exc.value)
    assert not (tmp_path / "o.parquet").exists()


def test_odd_input_dims_leave_the_size_unknown(tmp_path):
    args = '{"Input Dims": "abc", "Input type": ["float"]}'
    f = _bad_trace(tmp_path, "dims.json", "[" + _EV.replace("cpu_op", "user_annotation") % ("gloo:all_reduce", "1", args) + "]")
    df = _table(import_trace([f], tmp_path / "o.parquet"))
    assert list(df["kind"]) == ["collective"] and df["bytes"].isna().all()


def test_fifo_is_refused_not_read(tmp_path, cli):
    import os

    fifo = tmp_path / "pipe.json"
    os.mkfifo(fifo)
    code, _, err = cli("import", "kineto", fifo, "-o", tmp_path / "o.parquet")
    assert code == 2 and err.count("\n") == 1 and str(fifo) in err and "not a regular file" in err


@pytest.mark.parametrize(("fmt", "what"), [("kineto", "a Kineto trace file"), ("nsys", "an Nsight Systems export")])
def test_kineto_and_nsys_first_checks_are_one_line(tmp_path, cli, fmt, what):
    """The checks both rank-file importers make before reading (importers.rank_files): a missing
    file, a folder, a pipe, a --rank past the largest PE number; nothing written."""
    import os

    from paradise.format import MAX_RANK

    good = tmp_path / "r0.json"
    good.write_text("{}")
    (tmp_path / "dir").mkdir()
    os.mkfifo(tmp_path / "pipe")
    out = tmp_path / "o.parquet"
    for args, why in (([tmp_path / "missing"], "missing: no such file"),
                      ([good, tmp_path / "dir"], f"dir: is a directory, not {what}"),
                      ([tmp_path / "pipe"], f"pipe: not a regular file (a pipe or device), not {what}"),
                      ([good, "--rank", str(MAX_RANK + 1)], f"--rank {MAX_RANK + 1} is out of range (0 to {MAX_RANK})"),
                      ([good, "--rank", "-1"], "--rank -1 is out of range")):
        code, _, err = cli("import", fmt, *args, "-o", out)
        assert code == 2 and err.count("\n") == 1 and why in err, (fmt, args, err)
    assert not out.exists()


def test_registry_declares_each_source_once_and_agrees_with_the_format():
    from paradise.format import TRACER_SOURCES
    from paradise.importers import IMPORTERS, training_like

    sources = [imp.source for imp in IMPORTERS.values()]
    assert len(sources) == len(set(sources)) and not set(sources) & set(TRACER_SOURCES)
    for imp in IMPORTERS.values():
        assert training_like(imp.source) == imp.training_like, imp.format
    assert training_like("torch") and training_like("kineto")
    assert not training_like("charm4py") and not training_like("projections") and not training_like("synthetic")
