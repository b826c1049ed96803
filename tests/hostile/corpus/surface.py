"""Issue 23: the surface added since issue 15 (synth, export projections, engine and report
options, names that act as layout, sizes that pass int64): each case one line, exit 2, or a safe
success that writes only its output and deletes nothing paradise did not write."""

from __future__ import annotations

import gzip
from pathlib import Path

from tests.hostile import make
from tests.hostile.case import case

SMALL = ("--pes", "2", "--events", "1e4", "--jobs", "1")
"""A synthetic trace of ~10^4 rows in two files (about 0.3 s)."""
SYNTH_FILES = ("pe-00000.parquet", "pe-00001.parquet", "synth-truth.json")
FULL = 4096
"""RLIMIT_FSIZE of the synth full-disk cases: smaller than any trace file they write."""
FULL_LOGS = 64
"""RLIMIT_FSIZE of the export full-disk cases: smaller than any log or .sts of a small trace."""


def _files(folder: str = "") -> tuple[str, ...]:
    return tuple(f"{folder}/{f}" if folder else f for f in SYNTH_FILES)


def _user_files(d: Path, folder: str = "") -> None:
    base = d / folder if folder else d
    base.mkdir(parents=True, exist_ok=True)
    (base / "notes.txt").write_text("mine\n")
    (base / "src").mkdir()
    (base / "src" / "main.py").write_text("print(1)\n")
    (base / "pe-notes.parquet.bak").write_text("not a trace file\n")


def _link_to_folder(d: Path) -> None:
    _user_files(d, "real")
    (d / "ln").symlink_to("real")


def _old_trace(d: Path) -> None:
    """An earlier synth of more PEs, beside a user's file: --force replaces the trace only."""
    _user_files(d, "o")
    for pe in range(4):
        (d / "o" / f"pe-{pe:05d}.parquet").write_text("old")
    (d / "o" / ".pe-00003.parquet.tmp").write_text("old")
    (d / "o" / "synth-truth.json").write_text("{}")


# item 1: synth --force removes only what a trace consists of
case("synth-force-dot", "synth", "-o", ".", "--force", *SMALL, setup=_user_files, rc=(0, 2), outputs=_files(),
     item="23.1")
case("synth-force-empty-name", "synth", "-o", "", "--force", *SMALL, setup=_user_files, mention="-o", item="23.1")
case("synth-force-user-folder", "synth", "-o", "proj", "--force", *SMALL, setup=lambda d: _user_files(d, "proj"),
     rc=(0,), outputs=_files("proj"), item="23.1")
case("synth-user-folder-no-force", "synth", "-o", "proj", *SMALL, setup=lambda d: _user_files(d, "proj"),
     mention="proj", item="23.1")
case("synth-force-link-to-folder", "synth", "-o", "ln", "--force", *SMALL, setup=_link_to_folder, rc=(0,),
     outputs=_files("real"), item="23.1")
case("synth-force-old-trace", "synth", "-o", "o", "--force", *SMALL, setup=_old_trace, rc=(0,),
     outputs=(*_files("o"), "o/pe-00002.parquet", "o/pe-00003.parquet", "o/.pe-00003.parquet.tmp"),
     gone=("o/pe-00002.parquet", "o/pe-00003.parquet", "o/.pe-00003.parquet.tmp"), item="23.1")
case("synth-link-to-file", "synth", "-o", "ln", "--force", *SMALL,
     setup=lambda d: ((d / "f").write_text("x"), (d / "ln").symlink_to("f")) and None, mention="ln", item="23.1")
case("synth-dangling-link", "synth", "-o", "ln", "--force", *SMALL,
     setup=lambda d: (d / "ln").symlink_to("/nonexistent/zz"), mention="ln", item="23.1")

# item 5: sizes bounded and checked before allocation; -o that cannot be a folder
for label, args, mention in (
    ("pes-4194305", ("--pes", "4194305", "--events", "1000"), "--pes"),
    ("pes-zero", ("--pes", "0"), "--pes"), ("pes-neg", ("--pes", "-2"), "--pes"),
    ("pes-huge", ("--pes", str(2**70)), "--pes"), ("pes-text", ("--pes", "many"), "--pes"),
    ("events-nan", ("--events", "nan"), "--events"), ("events-inf", ("--events", "inf"), "--events"),
    ("events-1e400", ("--events", "1e400"), "--events"), ("events-1e13", ("--events", "1e13"), "--events"),
    ("events-neg", ("--events", "-5"), "--events"), ("events-zero", ("--events", "0"), "--events"),
    ("events-fraction", ("--events", "1e4.5"), "--events"), ("events-half", ("--events", "2.5"), "--events"),
    ("events-text", ("--events", "lots"), "--events"), ("events-huge-int", ("--events", "9" * 400), "--events"),
    ("events-fewer-than-pes", ("--pes", "4096", "--events", "100"), "--events"),
    ("events-too-few", ("--pes", "2", "--events", "10"), "--events"),
    ("imbalance-near-pes", ("--imbalance", "1.99999999999", "--pes", "2", "--events", "1e4"), "--imbalance"),
    ("imbalance-nan", ("--imbalance", "nan", *SMALL), "--imbalance"),
    ("imbalance-inf", ("--imbalance", "inf", *SMALL), "--imbalance"),
    ("imbalance-neg", ("--imbalance", "-1", *SMALL), "--imbalance"),
    ("imbalance-1e308", ("--imbalance", "1e308", *SMALL), "--imbalance"),
    ("imbalance-text", ("--imbalance", "lots", *SMALL), "--imbalance"),
    ("imbalance-torch-near", ("--kind", "torch", "--imbalance", "3.9999999", "--pes", "4", "--events", "1e5"),
     "--imbalance"),
    ("seed-neg", ("--seed", "-1", *SMALL), "--seed"), ("seed-2p64", ("--seed", str(2**64), *SMALL), "--seed"),
    ("seed-text", ("--seed", "x", *SMALL), "--seed"),
    ("jobs-zero", ("--pes", "2", "--events", "1e4", "--jobs", "0"), "--jobs"),
    ("jobs-huge", ("--pes", "2", "--events", "1e4", "--jobs", "100000"), "--jobs"),
    ("jobs-neg", ("--pes", "2", "--events", "1e4", "--jobs", "-1"), "--jobs"),
    ("kind-bogus", ("--kind", "mpi", *SMALL), "--kind"), ("pattern-bogus", ("--pattern", "ring", *SMALL), "--pattern"),
):
    case(f"synth-{label}", "synth", "-o", "o", *args, mention=mention, item="23.5")
case("synth-pes-1", "synth", "-o", "o", "--pes", "1", "--events", "1e4", rc=(0,),
     outputs=("o",), item="23.5")
case("synth-pes-1-torch", "synth", "-o", "o", "--kind", "torch", "--pes", "1", "--events", "2e4", rc=(0,),
     outputs=("o",), item="23.5")
case("synth-pes-1-imbalance", "synth", "-o", "o", "--pes", "1", "--imbalance", "1.5", "--events", "1e4",
     mention="--imbalance", item="23.5")
case("synth-under-file", "synth", "-o", "f/o", *SMALL, setup=lambda d: (d / "f").write_text("x"), mention="f",
     item="23.5")
case("synth-proc", "synth", "-o", "/proc/paradise-synth", *SMALL, mention="/proc/paradise-synth", item="23.5")
case("synth-sys", "synth", "-o", "/sys/paradise-synth", *SMALL, mention="/sys/paradise-synth", item="23.5")
case("synth-onto-file", "synth", "-o", "f", "--force", *SMALL, setup=lambda d: (d / "f").write_text("x"),
     mention="f", item="23.5")
case("synth-full-disk", "synth", "-o", "o", *SMALL, fsize_bytes=FULL, mention="o", outputs=("o",), item="23.5")
case("synth-full-disk-pool", "synth", "-o", "o", "--pes", "2", "--events", "1e4", "--jobs", "2",
     fsize_bytes=FULL, mention="o", outputs=("o",), item="23.5")


# item 2: export projections writes like every other writer
def _trace_victim(d: Path) -> None:
    make.charm_trace(d)
    (d / "victim.txt").write_text("precious\n")


PROG = "stencil"
"""The program name of make.charm_trace (its files' stem in the export)."""
NAMES = (f"{PROG}.sts", f"{PROG}.0.log.gz", f"{PROG}.1.log.gz")
OUT = tuple(f"pj/{n}" for n in NAMES)


def _plant(*names: str, target: str = "../victim.txt"):
    def setup(d: Path) -> None:
        _trace_victim(d)
        (d / "pj").mkdir(exist_ok=True)
        for n in names:
            (d / "pj" / n).symlink_to(target)

    return setup


for n in NAMES:
    tag = n.replace(".", "_")
    case(f"exproj-link-at-{tag}", "export", "projections", "t", "-o", "pj", setup=_plant(n), mention=n, item="23.2")
    case(f"exproj-link-at-{tag}-force", "export", "projections", "t", "-o", "pj", "--force", setup=_plant(n),
         rc=(0,), outputs=OUT, item="23.2")
    case(f"exproj-dangling-at-{tag}", "export", "projections", "t", "-o", "pj", setup=_plant(n, target="/tmp/zz/x"),
         mention=n, item="23.2")
    case(f"exproj-dangling-at-{tag}-force", "export", "projections", "t", "-o", "pj", "--force",
         setup=_plant(n, target="../nowhere.txt"), rc=(0,), outputs=OUT, item="23.2")
case("exproj-links-at-every-name-force", "export", "projections", "t", "-o", "pj", "--force", setup=_plant(*NAMES),
     rc=(0,), outputs=OUT, item="23.2")
BODY = tuple(f".{PROG}.{pe}.log.body.gz" for pe in (0, 1))
case("exproj-link-at-old-body-temporaries", "export", "projections", "t", "-o", "pj", setup=_plant(*BODY),
     rc=(0,), outputs=OUT, item="23.2")


def _others(d: Path) -> None:
    _trace_victim(d)
    pj = d / "pj"
    pj.mkdir()
    for n in (f"{PROG}.v2.0.log.gz", f"{PROG}.notes.log.gz", f"{PROG}.sts.bak", f"{PROG}.0.log", "other.sts"):
        (pj / n).write_bytes(gzip.compress(b"another run\n"))
    for n in NAMES + (f"{PROG}.7.log.gz",):  # an earlier export of more PEs
        (pj / n).write_text("old")


case("exproj-force-keeps-other-runs", "export", "projections", "t", "-o", "pj", "--force", setup=_others, rc=(0,),
     outputs=(*OUT, f"pj/{PROG}.7.log.gz"), gone=(f"pj/{PROG}.7.log.gz",), item="23.2")
case("exproj-no-force-other-runs", "export", "projections", "t", "-o", "pj", setup=_others, mention=PROG,
     item="23.2")
case("exproj-full-disk", "export", "projections", "t", "-o", "pj", setup=_trace_victim, fsize_bytes=FULL_LOGS,
     mention="pj", outputs=("pj",), item="23.2")
case("exproj-full-disk-force-over-old", "export", "projections", "t", "-o", "pj", "--force", setup=_others,
     fsize_bytes=FULL_LOGS, mention="pj", item="23.2")
case("exproj-onto-file", "export", "projections", "t", "-o", "victim.txt", "--force", setup=_trace_victim,
     mention="victim.txt", item="23.2")
case("exproj-under-file", "export", "projections", "t", "-o", "victim.txt/pj", setup=_trace_victim,
     mention="victim.txt", item="23.2")
case("exproj-proc", "export", "projections", "t", "-o", "/proc/paradise-pj", setup=_trace_victim,
     mention="/proc/paradise-pj", item="23.2")
case("exproj-folder-at-log-name", "export", "projections", "t", "-o", "pj", "--force",
     setup=lambda d: (_trace_victim(d), (d / "pj" / f"{PROG}.0.log.gz").mkdir(parents=True)) and None,
     mention=f"{PROG}.0.log.gz", item="23.2")
case("exproj-fifo-at-sts", "export", "projections", "t", "-o", "pj", "--force",
     setup=lambda d: (_trace_victim(d), (d / "pj").mkdir(), make.fifo(d / "pj" / f"{PROG}.sts")) and None,
     mention=f"{PROG}.sts", item="23.2")


# items 4 and 7: sizes that pass int64, PE counts the data does not back, plain values
def _sends(pe: int, n: int, nbytes: int, peer: int = 1) -> list[dict]:
    return [{"kind": "send", "pe": pe, "t0": i * 100 + 50, "name": "Cell.work", "coll": "Cell#0", "msg": pe * 1000 + i,
             "peer_pe": peer, "peer_coll": "Cell#0", "bytes": nbytes, "step": 0} for i in range(n)]


def _trace_with(rows_of, **meta):
    def setup(d: Path) -> None:
        make.raw_trace(d, rows_of(), name="w.parquet", **{"pes": 2, "pe": None, **meta})

    return setup


BYTES_MAX = _trace_with(lambda: make.basic_rows(0) + make.basic_rows(1) + _sends(0, 4, (1 << 63) - 1))
PES_2P22 = _trace_with(lambda: make.basic_rows(0) + make.basic_rows(1), pes=1 << 22)
NEG_PEER = _trace_with(lambda: make.basic_rows(0) + make.basic_rows(1) + _sends(0, 4, 10, peer=-5))
NONE_PEER = _trace_with(lambda: make.basic_rows(0) + make.basic_rows(1) + _sends(0, 4, 10, peer=-1))
"""peer_pe -1: no source PE, as `import projections` writes it on executions: read, never drawn."""


def _device_rows(**over) -> list[dict]:
    rows = make.basic_rows(0)
    for i, r in enumerate(rows):
        r.update({k: (v[i] if isinstance(v, list) else v) for k, v in over.items()})
    return make.basic_rows(1) + rows


STREAM_HIGH = _trace_with(lambda: _device_rows(stream=(1 << 31) - 1, cat="kernel"), source="torch")
TID_64 = _trace_with(lambda: _device_rows(tid=[(1 << 63) - 1, -5, 139872349872349, 12]))
for cmd in (("analyze", "w.parquet"), ("report", "w.parquet", "-o", "r.html"), ("compare", "w.parquet", "w.parquet"),
            ("export", "chrome", "w.parquet", "-o", "c.json"), ("export", "projections", "w.parquet", "-o", "pj")):
    tag = cmd[1] if cmd[0] == "export" else cmd[0]
    for label, setup in (("bytes-sum-past-int64", BYTES_MAX), ("pes-2p22-two-pes-of-data", PES_2P22),
                         ("negative-peer-pe", NEG_PEER)):
        case(f"value-{tag}-{label}", *cmd, setup=setup, mention="w.parquet", item="23.4")
for label, setup in (("stream-2p31", STREAM_HIGH), ("tid-64-bit", TID_64), ("peer-pe-minus-1", NONE_PEER)):
    case(f"value-chrome-{label}", "export", "chrome", "w.parquet", "-o", "c.json", setup=setup, rc=(0,),
         outputs=("c.json",), item="23.7")
    case(f"value-report-{label}", "report", "w.parquet", "-o", "r.html", setup=setup, rc=(0,),
         outputs=("r.html",), item="23.7")

BAD_SIZES = (("20-digits-tib", "99999999999999999999TiB"), ("400-digits", "9" * 400), ("nan", "nan"), ("inf", "inf"),
             ("neg", "-1GiB"), ("zero", "0"), ("text", "lots"), ("tiny", "1KiB"), ("exa", "2EiB"),
             ("1e400", "1e400"))
for label, value in BAD_SIZES:
    case(f"opt-analyze-memory-limit-{label}", "analyze", "t", "--memory-limit", value, setup=make.charm_trace,
         mention="--memory-limit", item="23.7")
    case(f"opt-report-memory-limit-{label}", "report", "t", "-o", "r.html", "--memory-limit", value,
         setup=make.charm_trace, mention="--memory-limit", item="23.9")
case("opt-report-memory-limit-ok", "report", "t", "-o", "r.html", "--memory-limit", "512MiB", setup=make.charm_trace,
     rc=(0,), outputs=("r.html",), item="23.9")
MEMORY_LIMITED = {"merge": ("merge", "t", "-o", "m.parquet"), "chrome": ("export", "chrome", "t", "-o", "c.json"),
                  "projections": ("export", "projections", "t", "-o", "pj"), "whatif": ("whatif", "t", "--hints", "t"),
                  "compare": ("compare", "t", "t"), "info": ("info", "t")}
"""Every other command that reads a trace takes --memory-limit, parsed as analyze parses it."""
for command, words in MEMORY_LIMITED.items():
    for label, value in BAD_SIZES[::3]:
        case(f"opt-{command}-memory-limit-{label}", *words, "--memory-limit", value, setup=make.charm_trace,
             mention="--memory-limit", item="23.9")
case("opt-merge-memory-limit-ok", "merge", "t", "-o", "m.parquet", "--memory-limit", "512MiB", setup=make.charm_trace,
     rc=(0,), outputs=("m.parquet",), item="23.9")
case("opt-chrome-memory-limit-ok", "export", "chrome", "t", "-o", "c.json", "--memory-limit", "512MiB",
     setup=make.charm_trace, rc=(0,), outputs=("c.json",), item="23.9")
for label, value in (("int64-range", "-9223372036854775808:9223372036854775807"), ("past-int64", f"0:{2**64}"),
                     ("400-digits", "1:" + "9" * 400), ("5000-digits", "1:" + "9" * 5000), ("nan", "nan:inf"),
                     ("reversed", "10:5"), ("text", "a:b"), ("one-number", "5"), ("three", "1:2:3"),
                     ("empty", ":"), ("float", "1.5:2.5")):
    case(f"opt-report-window-{label}", "report", "t", "-o", "r.html", "--window", value, setup=make.charm_trace,
         mention="--window", item="23.7")
case("opt-report-window-huge-ok", "report", "t", "-o", "r.html", "--window", f"{-(2**60)}:{2**60}",
     setup=make.charm_trace, rc=(0,), outputs=("r.html",), item="23.7")
for label, value in (("100000", "100000"), ("zero", "0"), ("neg", "-1"), ("text", "many"), ("2p70", str(2**70))):
    case(f"opt-analyze-workers-{label}", "analyze", "t", "--scheduler", "local", "--workers", value,
         setup=make.charm_trace, mention="--workers", item="23.4")
case("opt-analyze-worker-memory-400-digits", "analyze", "t", "--scheduler", "local", "--worker-memory", "9" * 400,
     setup=make.charm_trace, mention="--worker-memory", item="23.7")

# item 8: names that act as layout are shown as visible escapes in the terminal
LAYOUT_NAME = "Cell.\u202eexe.txt\u200b\ufeff\u2066x\u2069\x00\x07\x1b[31m"


def _layout_trace(d: Path) -> None:
    rows = make.basic_rows(0) + make.basic_rows(1)
    for r in rows:
        r["name"] = LAYOUT_NAME
    make.raw_trace(d, rows, name="w.parquet", pes=2, pe=None, program="p\u202egnp.exe")


for cmd in (("analyze", "w.parquet"), ("info", "w.parquet")):
    case(f"layout-names-{cmd[0]}", *cmd, setup=_layout_trace, rc=(0,), env=(("COLUMNS", "300"),),
         stdout_has=("\\u202e",), stdout_lacks=("\u202e", "\u200b", "\ufeff", "\u2066", "\x00", "\x07"), item="23.8")
case("layout-names-report", "report", "w.parquet", "-o", "r.html", setup=_layout_trace, rc=(0,), outputs=("r.html",),
     item="23.8")

for label, value in (("nan", "nan"), ("inf", "inf"), ("neg", "-2GiB"), ("text", "lots"), ("20-digits-tib", "9" * 20 + "TiB")):
    case(f"opt-analyze-worker-memory-{label}", "analyze", "t", "--scheduler", "local", "--worker-memory", value,
         setup=make.charm_trace, mention="--worker-memory", item="23.7")
# --scheduler addresses that cannot be a scheduler: one line naming it, each wait bounded
for label, value in (("port-99999", "tcp://127.0.0.1:99999"), ("port-0", "tcp://127.0.0.1:0"),
                     ("refused", "tcp://127.0.0.1:1"), ("no-host", "tcp://:8786"), ("bad-scheme", "http://127.0.0.1:80"),
                     ("nul", "tcp://a\x00b:8786"), ("huge-port", "tcp://127.0.0.1:" + "9" * 400)):
    case(f"opt-analyze-scheduler-{label}", "analyze", "t", "--scheduler", value, setup=make.charm_trace,
         mention="--scheduler" if label != "refused" else "dask scheduler",
         item="23.4")
