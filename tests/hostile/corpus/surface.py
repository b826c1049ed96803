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
