"""Items 2 and 4: where outputs go. Planted temp-file symlinks, outputs that are inputs, full
disks, read-only and pseudo file systems, paths under regular files, --force onto folders."""

from __future__ import annotations

from pathlib import Path

from tests.hostile import make
from tests.hostile.case import case

FULL = 2048
"""RLIMIT_FSIZE of the full-disk cases: larger than any case's input, smaller than any output."""


def _victim(d: Path) -> None:
    (d / "victim.txt").write_text("precious\n")


def _trace_and_victim(d: Path) -> None:
    make.charm_trace(d)
    _victim(d)


def _kineto_and_victim(d: Path) -> None:
    make.kineto_file(d, make.kineto_doc())
    _victim(d)


def _proj_and_victim(d: Path) -> None:
    make.projections(d)
    _victim(d)


def _plus(*builds):
    def setup(d: Path) -> None:
        for b in builds:
            b(d)

    return setup


def _link(name: str, target: str):
    return lambda d: (d / name).symlink_to(target)


def _file(name: str, text: str = "x"):
    return lambda d: (d / name).write_text(text)


def _dir(name: str, *files: str):
    def build(d: Path) -> None:
        (d / name).mkdir()
        for f in files:
            (d / name / f).write_text("keep")

    return build


# (id, input setup, argv before -o, mention of the input)
WRITERS = {
    "merge": (_trace_and_victim, ("merge", "t")),
    "kineto": (_kineto_and_victim, ("import", "kineto", "k.json")),
    "projections": (_proj_and_victim, ("import", "projections", "proj/hello.sts")),
    "report": (_trace_and_victim, ("report", "t")),
    "chrome": (_trace_and_victim, ("export", "chrome", "t")),
}

for w, (base, pre) in WRITERS.items():
    out = "m.parquet"
    # item 2: a planted symlink at every temp name the writer may use must not be followed
    for tmp in (f".{out}.tmp", f"{out}.tmp", f".{out}.part", f"{out}.part"):
        case(f"out-{w}-planted-{tmp.replace('.', '_')}", *pre, "-o", out, setup=_plus(base, _link(tmp, "victim.txt")),
             rc=(0,), outputs=(out, tmp), item="2")
    case(f"out-{w}-planted-dangling-tmp", *pre, "-o", out, setup=_plus(base, _link(f".{out}.tmp", "/nonexistent/x")),
         rc=(0,), outputs=(out, f".{out}.tmp"), item="2")
    case(f"out-{w}-stale-tmp-folder", *pre, "-o", out,
         setup=_plus(base, _dir(".paradise-merge-stale", "spill.tmp"), _dir(f".{out}.tmp-stale")),
         rc=(0,), outputs=(out, ".paradise-merge-stale", f".{out}.tmp-stale"), item="2")
    dead = f".{out}.paradise-tmp-999999999-x1"  # a writer that was killed (no such pid: above pid_max)
    case(f"out-{w}-removes-dead-writers-temporaries", *pre, "-o", out,
         setup=_plus(base, _dir(dead, "spill-0.tmp"), _file(dead + "y.tmp")),
         rc=(0,), outputs=(out, dead, dead + "y.tmp"), gone=(dead, dead + "y.tmp"), item="2")
    # item 4: outputs that cannot be written, or must not be
    case(f"out-{w}-proc", *pre, "-o", "/proc/paradise-x.parquet", setup=base, mention="/proc/paradise-x.parquet",
         item="4")
    case(f"out-{w}-sys", *pre, "-o", "/sys/paradise-x.parquet", setup=base, mention="/sys/paradise-x.parquet",
         item="4")
    case(f"out-{w}-under-file", *pre, "-o", "victim.txt/x.parquet", setup=base, mention="victim.txt", item="4")
    case(f"out-{w}-under-file-force", *pre, "-o", "victim.txt/x.parquet", "--force", setup=base,
         mention="victim.txt", item="4")
    case(f"out-{w}-existing", *pre, "-o", "victim.txt", setup=base, mention="victim.txt", item="4")
    case(f"out-{w}-force-onto-folder", *pre, "-o", "folder", "--force", setup=_plus(base, _dir("folder", "a.txt")),
         mention="folder", item="4")
    case(f"out-{w}-force-onto-empty-folder", *pre, "-o", "folder", "--force", setup=_plus(base, _dir("folder")),
         mention="folder", item="4")
    case(f"out-{w}-full-disk", *pre, "-o", out, setup=base, fsize_bytes=FULL, mention=out, item="4")
    # devices only through links in the case folder: a writer that wrongly replaces its output
    # then replaces the link, never /dev/null itself (the corpus may run as root)
    case(f"out-{w}-fifo-force", *pre, "-o", "fifo.parquet", "--force", setup=_plus(base, lambda d: make.fifo(
        d / "fifo.parquet") and None), mention="fifo.parquet", item="4")
    case(f"out-{w}-link-to-dev-full-force", *pre, "-o", "full.parquet", "--force",
         setup=_plus(base, _link("full.parquet", "/dev/full")), mention="full.parquet", item="4")
    case(f"out-{w}-link-to-dev-null-force", *pre, "-o", "null.parquet", "--force",
         setup=_plus(base, _link("null.parquet", "/dev/null")), mention="null.parquet", item="4")
    case(f"out-{w}-empty-name", *pre, "-o", "", setup=base, item="4")
    case(f"out-{w}-dot", *pre, "-o", ".", "--force", setup=base, mention=".", item="4")
    case(f"out-{w}-symlink-to-victim", *pre, "-o", "ln.parquet", setup=_plus(base, _link("ln.parquet", "victim.txt")),
         mention="ln.parquet", item="4")

# an output that is one of the inputs, or inside the input folder
case("out-merge-onto-own-file", "merge", "t/pe-00000.parquet", "-o", "t/pe-00000.parquet", "--force",
     setup=make.charm_trace, mention="t/pe-00000.parquet", item="4")
case("out-merge-onto-file-in-folder", "merge", "t", "-o", "t/pe-00001.parquet", "--force",
     setup=make.charm_trace, mention="t/pe-00001.parquet", item="4")
case("out-merge-into-own-folder", "merge", "t", "-o", "t/merged.parquet", setup=make.charm_trace,
     mention="t/merged.parquet", item="4")
case("out-merge-into-own-folder-via-dotdot", "merge", "t", "-o", "t/../t/merged.parquet", setup=make.charm_trace,
     mention="merged.parquet", item="4")
case("out-merge-onto-outputs", "merge", "t", "-o", "t/outputs.parquet", "--force",
     setup=lambda d: (make.charm_trace(d), make.outputs(d, "t")) and None, mention="t/outputs.parquet", item="4")
case("out-merge-onto-link-to-input", "merge", "t", "-o", "ln.parquet", "--force",
     setup=lambda d: (make.charm_trace(d), (d / "ln.parquet").symlink_to("t/pe-00000.parquet")) and None,
     mention="ln.parquet", item="4")
for w, pre in (("report", ("report",)), ("chrome", ("export", "chrome"))):
    case(f"out-{w}-onto-file-in-folder", *pre, "t", "-o", "t/pe-00001.parquet", "--force",
         setup=make.charm_trace, mention="t/pe-00001.parquet", item="4")
    case(f"out-{w}-onto-link-to-input", *pre, "t", "-o", "ln.parquet", "--force",
         setup=lambda d: (make.charm_trace(d), (d / "ln.parquet").symlink_to("t/pe-00000.parquet")) and None,
         mention="ln.parquet", item="4")
case("out-projections-onto-sts", "import", "projections", "proj/hello.sts", "-o", "proj/hello.sts", "--force",
     setup=make.projections, mention="proj/hello.sts", item="4")
case("out-projections-onto-log", "import", "projections", "proj", "-o", "proj/hello.0.log.gz", "--force",
     setup=make.projections, mention="proj/hello.0.log.gz", item="4")
case("out-projections-into-own-folder", "import", "projections", "proj", "-o", "proj/out.parquet",
     setup=make.projections, rc=(0, 2), outputs=("proj/out.parquet",), item="4")
case("out-kineto-onto-input", "import", "kineto", "k.json", "-o", "k.json", "--force",
     setup=lambda d: make.kineto_file(d, make.kineto_doc()) and None, mention="k.json", item="4")
case("out-kineto-onto-second-input", "import", "kineto", "k.json", "k2.json", "-o", "k2.json", "--force",
     setup=lambda d: (make.kineto_file(d, make.kineto_doc(0)), make.kineto_file(d, make.kineto_doc(1), "k2.json"))
     and None, mention="k2.json", item="4")

# analyze --hints-out
for name, target, extra in (
    ("proc", "/proc/paradise-h", ()), ("under-file", "victim.txt/h", ()), ("is-file", "victim.txt", ("--force",)),
    ("sys", "/sys/paradise-h", ()),
):
    case(f"out-analyze-hints-{name}", "analyze", "t", "--hints-out", target, *extra, setup=_trace_and_victim,
         mention=target.split("/")[0] if name != "proc" and name != "sys" else target, item="4")
case("out-analyze-hints-full-disk", "analyze", "t", "--hints-out", "h", setup=_trace_and_victim,
     fsize_bytes=16, mention="h", outputs=("h",), item="4")

# trace charm / torch -o checked before anything runs (in-process: nothing is launched)
for cmd in (("trace", "charm"), ("trace", "torch")):
    prog = "app.py"
    w = cmd[1]
    base = _plus(_file(prog, "print('hi')\n"), _victim)
    case(f"out-trace-{w}-under-file", *cmd, "-o", "victim.txt/t", prog, setup=base, mention="victim.txt", item="4")
    case(f"out-trace-{w}-proc", *cmd, "-o", "/proc/paradise-t", prog, setup=base, mention="/proc/paradise-t",
         item="4")
    case(f"out-trace-{w}-existing-file", *cmd, "-o", "victim.txt", prog, setup=base, mention="victim.txt", item="4")
    case(f"out-trace-{w}-existing-file-force", *cmd, "-o", "victim.txt", "--force", prog, setup=base,
         mention="victim.txt", item="4")
    case(f"out-trace-{w}-onto-program-folder", *cmd, "-o", ".", "--force", prog, setup=base, mention=".",
         item="4")
    case(f"out-trace-{w}-sys", *cmd, "-o", "/sys/paradise-t", prog, setup=base, mention="/sys/paradise-t",
         item="4")

# demo --out
case("out-demo-under-file", "demo", "--out", "victim.txt/d", setup=_victim, mention="victim.txt", item="4")
case("out-demo-proc", "demo", "--out", "/proc/paradise-d", setup=_victim, mention="/proc/paradise-d", item="4")
case("out-demo-foreign-folder", "demo", "--out", "folder", setup=_dir("folder", "a.txt"), mention="folder",
     item="4")
