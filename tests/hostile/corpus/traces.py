"""Item 6: trace metadata, column types and values that must be refused, over every reader.

Each broken trace runs through info, analyze, merge, whatif and compare; each must refuse it in
one line naming it (exit 2), and merge must write nothing.
"""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from tests.hostile import make
from tests.hostile.case import case

R = "r.parquet"


def _meta(raw):
    return lambda d: make.write_raw(d / R, make.table(make.basic_rows()), raw)


def _fields(**fields):
    return lambda d: make.raw_trace(d, name=R, **fields)


def _rows(rows, **fields):
    return lambda d: make.raw_trace(d, rows, name=R, **fields)


def _typed(**cols):
    """basic rows with some columns replaced by arrays of another type."""

    def build(d: Path) -> None:
        t = make.table(make.basic_rows())
        for name, arr in cols.items():
            if name in t.column_names:
                t = t.set_column(t.column_names.index(name), name, arr)
            else:
                t = t.append_column(name, arr)
        make.custom_table_trace(d, t, name=R)

    return build


def _dropped(*names):
    def build(d: Path) -> None:
        t = make.table(make.basic_rows())
        make.custom_table_trace(d, t.drop_columns(list(names)), name=R)

    return build


def _deep_json(depth: int) -> str:
    return "[" * depth + "]" * depth


def _dir_named_parquet(d: Path) -> None:
    (d / R).mkdir()  # a folder is a trace folder: this one holds no trace files


def _dir_with_parquet_dir(d: Path) -> None:
    make.charm_trace(d, "t")
    (d / "t" / "x.parquet").mkdir()


def _two_files_same_pe(d: Path) -> None:
    folder = d / "t"
    make.raw_trace(folder, make.basic_rows(0), name="pe-00000.parquet", pes=2, pe=0)
    make.raw_trace(folder, make.basic_rows(0), name="pe-00001.parquet", pes=2, pe=0)


def _corrupt_page(d: Path) -> None:
    folder = d / "t"
    make.charm_trace(d, "t")
    f = folder / "pe-00001.parquet"
    data = bytearray(f.read_bytes())
    meta_len = int.from_bytes(data[-8:-4], "little")
    end = len(data) - 8 - meta_len
    for i in range(8, end - 8, 3):  # every third byte of the data pages, footer kept
        data[i] ^= 0x5A
    f.write_bytes(bytes(data))


def _truncated(d: Path) -> None:
    make.raw_trace(d, name="full.parquet")
    data = (d / "full.parquet").read_bytes()
    (d / R).write_bytes(data[: len(data) // 2])
    (d / "full.parquet").unlink()


def _mismatched_pe_rows(d: Path) -> None:
    folder = d / "t"
    make.raw_trace(folder, make.basic_rows(0), name="pe-00000.parquet", pes=2, pe=0)
    make.raw_trace(folder, make.basic_rows(7), name="pe-00001.parquet", pes=2, pe=1)


def _huge_metadata(d: Path) -> None:
    make.raw_trace(d, name=R, names={"pad": "x" * (9 << 20)})


def _many_row_groups_ok(d: Path) -> None:
    t = make.table(make.basic_rows(0, 64))
    make.write_raw(d / R, t, make.meta_json())


INT64_MIN, INT64_MAX = -(2**63), 2**63 - 1
_SHIFT = {"shift_ns": 10, "lo_ns": 0, "hi_ns": 20, "error_ns": 10}
_REFINED = {"method": "message_bounds", "min_latency_ns": 1, "messages": 3, "backward_before": 1, "status": "refined",
            "residual_ns": 10, "pes": {"1": _SHIFT}}


def _refined(refinement, pe: int = 0, error_ns: int = 0) -> dict:
    """A per-PE file's `clock` with offsets and a stored refinement (paradise.store.compaction)."""
    entry = {"t_start": 0, "start_ns": 0, "t_end": 1000, "end_ns": 0, "error_ns": error_ns}
    return {"method": "ping_min_rtt", "residual_ns": error_ns, "offsets": {str(pe): entry}, "refinement": refinement}


def _refinements_disagree(d: Path) -> None:
    """Two PEs' files whose trace-wide outcomes differ (one's message count damaged)."""
    folder = d / "t"
    for pe, messages in ((0, 3), (1, 4)):
        make.raw_trace(folder, make.basic_rows(pe), name=f"pe-0000{pe}.parquet", pes=2, pe=pe,
                       clock=_refined({**_REFINED, "messages": messages, "pes": {"1": _SHIFT} if pe else {}}, pe, pe * 10))

BAD_TRACES = {
    # metadata (JSON text under the 'paradise' key)
    "meta-not-json": _meta("{not json"),
    "meta-list": _meta("[1, 2, 3]"),
    "meta-string": _meta('"a trace"'),
    "meta-null": _meta("null"),
    "meta-number": _meta("42"),
    "meta-binary": _meta(b"\xff\xfe\x00\x01"),
    "meta-deep-json": _meta(_deep_json(100_000)),
    "meta-empty": _meta(""),
    "meta-huge": _huge_metadata,
    "pes-2p31": _fields(pes=2**31 - 1),
    "pes-1e12": _fields(pes=10**12),
    "pes-negative": _fields(pes=-4),
    "pes-zero": _fields(pes=0),
    "pes-text": _fields(pes="two"),
    "pes-float": _fields(pes=2.5),
    "pes-inf": _meta('{"format_version": "1.0", "source": "synthetic", "program": "p", "pes": 1e400, "pe": 0}'),
    "pes-list": _fields(pes=[1, 2]),
    "pe-text": _fields(pe="zero"),
    "pe-negative": _fields(pe=-1),
    "pe-huge": _fields(pe=2**40),
    "version-missing": _meta('{"source": "synthetic", "program": "p", "pes": 1, "pe": 0}'),
    "version-2": _fields(format_version="2.0"),
    "version-number": _fields(format_version=1.0),
    "version-list": _fields(format_version=["1", "0"]),
    "source-number": _fields(source=7),
    "program-dict": _fields(program={"a": 1}),
    "complete-text": _fields(complete="yes"),
    "hosts-number": _fields(hosts=5),
    "t0-text": _typed(t0=pa.array(["0", "100", "200", "300"])),
    "t0-float": _typed(t0=pa.array([0.0, float("nan"), 200.0, 300.0])),
    "t1-float-inf": _typed(t1=pa.array([90.0, float("inf"), 290.0, 390.0])),
    "pe-float": _typed(pe=pa.array([0.0, 0.0, 0.0, 0.0])),
    "pe-int64": _typed(pe=pa.array([0, 0, 0, 2**40], pa.int64())),
    "kind-int": _typed(kind=pa.array([1, 1, 1, 1])),
    "name-int": _typed(name=pa.array([1, 2, 3, 4])),
    "step-text": _typed(step=pa.array(["a", "b", "c", "d"])),
    "obj-text": _typed(obj=pa.array(["a", "b", "c", "d"])),
    "bytes-float": _typed(bytes=pa.array([1.5, 2.5, 3.5, 4.5])),
    "t0-struct": _typed(t0=pa.array([{"a": 1}] * 4)),
    "missing-t1": _dropped("t1"),
    "missing-kind": _dropped("kind"),
    "t0-null": _rows([{**r, "t0": None} for r in make.basic_rows()]),
    "pe-null": _rows([{**r, "pe": None} for r in make.basic_rows()]),
    "t0-int64-min": _rows([{**make.basic_rows()[0], "t0": INT64_MIN}] + make.basic_rows()[1:]),
    "t1-int64-max": _rows(make.basic_rows()[:3] + [{**make.basic_rows()[3], "t1": INT64_MAX}]),
    "t0-t1-extremes": _rows([{**r, "t0": INT64_MIN + i, "t1": INT64_MAX - i} for i, r in enumerate(make.basic_rows())]),
    "pe-rows-negative": _rows([{**r, "pe": -3} for r in make.basic_rows()], pe=None),
    "pe-rows-beyond-pes": _rows([{**r, "pe": 5} for r in make.basic_rows()], pe=None, pes=2),
    "clock-refinement-text": _fields(clock=_refined("refined")),
    "clock-refinement-status": _fields(clock=_refined({**_REFINED, "status": "fine"})),
    "clock-refinement-count-negative": _fields(clock=_refined({**_REFINED, "messages": -1})),
    "clock-refinement-shift-text": _fields(clock=_refined({**_REFINED, "pes": {"1": {**_SHIFT, "shift_ns": "x"}}})),
    "clock-refinement-shift-huge": _fields(clock=_refined({**_REFINED, "pes": {"1": {**_SHIFT, "shift_ns": 10**30}}})),
    "clock-refinement-shift-outside": _fields(clock=_refined({**_REFINED, "pes": {"1": {**_SHIFT, "lo_ns": 50}}})),
    "clock-refinement-pe-name": _fields(clock=_refined({**_REFINED, "pes": {"one": _SHIFT}})),
    "clock-refinement-no-pes": _fields(clock=_refined({**_REFINED, "pes": {}})),
    "clock-refinement-detail-list": _fields(clock=_refined({**_REFINED, "status": "inconsistent", "detail": [1]})),
    "clock-refinement-own-entry-missing": _fields(clock=_refined(_REFINED, error_ns=10)),  # PE 0's error: shifted
    "clock-refinement-error-above-residual": _fields(clock=_refined({**_REFINED, "residual_ns": 5})),
    "clock-refinement-pes-not-refined": _fields(clock=_refined({**_REFINED, "status": "no_messages"})),
    "dir-named-parquet": _dir_named_parquet,
    "truncated": _truncated,
    "empty-file": lambda d: (d / R).write_bytes(b""),
    "text-file": lambda d: (d / R).write_text("kind,pe,t0\nexec,0,1\n"),
    "par1-garbage": lambda d: (d / R).write_bytes(b"PAR1" + bytes(range(256)) * 4 + b"PAR1"),
    "no-metadata": _meta(None),
    "symlink-loop": lambda d: (d / R).symlink_to(R),
    "dangling-symlink": lambda d: (d / R).symlink_to("nowhere.parquet"),
    "fifo": lambda d: make.fifo(d / R),
    "dev-zero-link": lambda d: (d / R).symlink_to("/dev/zero"),
}
BAD_DIRS = {
    "dir-with-parquet-dir": _dir_with_parquet_dir,
    "dir-two-files-same-pe": _two_files_same_pe,
    "dir-corrupt-page": _corrupt_page,
    "dir-pe-rows-mismatch": _mismatched_pe_rows,
    "dir-empty": lambda d: (d / "t").mkdir(),
    "dir-only-outputs": lambda d: make.outputs(d, "t") and None,
    "dir-clock-refinement-disagree": _refinements_disagree,
    "dir-fifo-member": lambda d: (make.charm_trace(d, "t"), make.fifo(d / "t" / "pe-00009.parquet")) and None,
}

# Defects whose fix is on another branch, or that are valid input (not refused).
ITEM = "6"


def _commands(arg: str) -> dict[str, tuple[tuple[str, ...], tuple[str, ...]]]:
    """command name -> (argv, outputs) for a trace argument."""
    return {
        "info": (("info", arg), ()),
        "analyze": (("analyze", arg, "--json"), ()),
        "merge": (("merge", arg, "-o", "m.parquet"), ("m.parquet",)),
        "whatif": (("whatif", arg, "--hints", "h"), ()),
        "compare": (("compare", "good", arg), ()),
    }


def _with_context(build, cmd: str):
    """The broken trace, plus what the command needs beside it (a good trace, hints)."""

    def setup(d: Path) -> None:
        if cmd == "compare":
            make.charm_trace(d, "good")
        if cmd == "whatif":
            make.hints_dir(d)
        build(d)

    return setup


ALL_COMMANDS = {"meta-not-json", "meta-list", "pes-2p31", "pes-1e12", "t0-text", "t0-null", "t0-int64-min",
                "pe-rows-negative", "dir-named-parquet", "truncated", "fifo", "version-2", "missing-t1"}
"""Broken traces tried on every command; the others on info, analyze and merge (the same open_trace)."""

for name, build in BAD_TRACES.items():
    for cmd, (argv, outs) in _commands(R).items():
        if cmd in ("whatif", "compare") and name not in ALL_COMMANDS:
            continue
        case(f"trace-{name}-{cmd}", *argv, setup=_with_context(build, cmd), mention=R, outputs=outs, item=ITEM)
for name, build in BAD_DIRS.items():
    for cmd, (argv, outs) in _commands("t").items():
        if cmd in ("whatif", "compare") and name not in ("dir-corrupt-page", "dir-two-files-same-pe"):
            continue
        case(f"trace-{name}-{cmd}", *argv, setup=_with_context(build, cmd), mention="t", outputs=outs, item=ITEM)

# Valid but unusual traces: must work (exit 0), never be refused as bad input.
case("trace-valid-many-rows-info", "info", R, setup=_many_row_groups_ok, rc=(0,), item=ITEM)
case("trace-valid-charm-analyze", "analyze", "t", "--json", setup=lambda d: make.charm_trace(d), rc=(0,), item=ITEM)
case("trace-valid-torch-analyze", "analyze", "tt", setup=lambda d: make.torch_trace(d), rc=(0,), item=ITEM)
case("trace-valid-merge-twice", "merge", "t", "-o", "m.parquet", "--force",
     setup=lambda d: (make.charm_trace(d), pq.write_table(pa.table({"a": [1]}), d / "m.parquet")) and None,
     rc=(0,), outputs=("m.parquet",), item="4")
case("trace-valid-json-info", "info", "t", "--json", setup=lambda d: make.charm_trace(d), rc=(0,), item=ITEM)
case("trace-valid-clock-refinement-info", "info", R, setup=_fields(clock=_refined(_REFINED)), rc=(0,), item="extra")
_ = json
