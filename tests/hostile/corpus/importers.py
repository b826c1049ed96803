"""Items 7 and 8: the Kineto and Projections importers on broken and hostile files."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

from tests.hostile import make
from tests.hostile.case import case

K = "k.json"


def _k(doc):
    return lambda d: make.kineto_file(d, doc, K) and None


def _ev(**over):
    e = {"ph": "X", "cat": "cpu_op", "name": "aten::mm", "pid": 1, "tid": 1, "ts": 100.0, "dur": 10.0}
    e.update(over)
    return e


def _events(*evs, **over):
    return make.kineto_doc(0, list(evs) + [_ev(name="aten::add", ts=200.0)], **over)


def _deep_args(d: Path) -> None:
    args = '{"a":' * 20_000 + "1" + "}" * 20_000
    ev = json.dumps(_ev())[:-1] + ', "args": ' + args + "}"
    make.kineto_file(d, '{"schemaVersion": 1, "distributedInfo": {"rank": 0}, "traceEvents": [' + ev + "]}", K)


def _gz(doc):
    def build(d: Path) -> None:
        (d / "k.json.gz").write_bytes(gzip.compress(json.dumps(doc).encode())[:-20])

    return build


KINETO = {
    "deep-args": (_deep_args, "7"),
    "rank-2p31": (_k(make.kineto_doc(2**31)), "7"),
    "rank-2p70": (_k(make.kineto_doc(2**70)), "7"),
    "rank-neg": (_k(make.kineto_doc(-1)), "7"),
    "rank-text": (_k(make.kineto_doc("zero")), "7"),
    "rank-float": (_k(make.kineto_doc(1.5)), "7"),
    "input-dims-text": (_k(_events(_ev(args={"Input Dims": "abc"}))), "7"),
    "input-dims-nested": (_k(_events(_ev(args={"Input Dims": [[[[1]]]]}))), "7"),
    "input-dims-huge": (_k(_events(_ev(args={"Input Dims": [[2**70, 2**70]]}))), "7"),
    "profiler-step-20-digits": (_k(_events(_ev(cat="user_annotation", name="ProfilerStep#" + "9" * 20))), "7"),
    "profiler-step-neg": (_k(_events(_ev(cat="user_annotation", name="ProfilerStep#-5"))), "7"),
    "dur-neg": (_k(_events(_ev(dur=-10.0))), "7"),
    "dur-text": (_k(_events(_ev(dur="ten"))), "7"),
    "dur-null": (_k(_events(_ev(dur=None))), "7"),
    "dur-huge": (_k(_events(_ev(dur=1e300))), "7"),
    "ts-text": (_k(_events(_ev(ts="now"))), "7"),
    "ts-huge": (_k(_events(_ev(ts=1e300))), "7"),
    "ts-nan": (lambda d: make.kineto_file(d, json.dumps(_events(_ev())).replace("100.0", "NaN", 1), K) and None,
               "7"),
    "ts-neg": (_k(_events(_ev(ts=-1e18))), "7"),
    "events-dict": (_k(make.kineto_doc(0, events={})), "7"),
    "events-null": (_k({"schemaVersion": 1, "traceEvents": None, "distributedInfo": {"rank": 0}}), "7"),
    "events-not-dicts": (_k(make.kineto_doc(0, events=[1, "x", None, []])), "7"),
    "events-empty": (_k(make.kineto_doc(0, events=[])), "7"),
    "name-number": (_k(_events(_ev(name=7))), "7"),
    "name-list": (_k(_events(_ev(name=["a"]))), "7"),
    "pid-text": (_k(_events(_ev(pid="main", tid="t"))), "7"),
    "args-list": (_k(_events(_ev(args=[1, 2]))), "7"),
    "stream-text": (_k(_events(_ev(cat="kernel", args={"stream": "s"}))), "7"),
    "top-list": (_k("[1, 2, 3]"), "7"),
    "top-string": (_k('"traceEvents"'), "7"),
    "not-json": (_k("{not json at all"), "7"),
    "truncated": (_k(json.dumps(make.kineto_doc())[:-30]), "7"),
    "empty": (_k(""), "7"),
    "binary": (_k(b"\x00\x01\x02\xff" * 100), "7"),
    "bom": (_k(b"\xef\xbb\xbf" + json.dumps(make.kineto_doc()).encode()), "7"),
    "utf16": (_k(json.dumps(make.kineto_doc()).encode("utf-16")), "7"),
    "fifo": (lambda d: make.fifo(d / K) and None, "7"),
    "dir": (lambda d: (d / K).mkdir(), "7"),
    "dev-zero": (lambda d: (d / K).symlink_to("/dev/zero"), "7"),
    "dangling": (lambda d: (d / K).symlink_to("nowhere.json"), "7"),
    "ansi-name": (_k(_events(_ev(name="\x1b]0;pwned\x07\x1b[31mred"))), "3"),
}
VALID_OR_WARN = {"rank-neg", "dur-neg", "dur-null", "events-dict", "events-empty", "bom", "ansi-name", "ts-neg",
                 "input-dims-nested", "name-number", "pid-text", "args-list", "stream-text", "dur-huge", "ts-huge",
                 "input-dims-huge", "input-dims-text", "profiler-step-neg", "name-list", "events-not-dicts"}
for name, (build, item) in KINETO.items():
    rc = (0, 2) if name in VALID_OR_WARN else (2,)
    case(f"kineto-{name}", "import", "kineto", K, "-o", "k.parquet", setup=build, rc=rc, mention=K,
         outputs=("k.parquet",) if 0 in rc else (), warnings_ok=True, item=item)
case("kineto-gz-truncated", "import", "kineto", "k.json.gz", "-o", "k.parquet", setup=_gz(make.kineto_doc()),
     mention="k.json.gz", item="7")
case("kineto-two-files-same-rank", "import", "kineto", "a.json", "b.json", "-o", "k.parquet",
     setup=lambda d: (make.kineto_file(d, make.kineto_doc(0), "a.json"), make.kineto_file(d, make.kineto_doc(0), "b.json"))
     and None, mention="b.json", item="7")
case("kineto-same-file-twice", "import", "kineto", K, K, "-o", "k.parquet", setup=_k(make.kineto_doc(0)),
     mention=K, item="7")

P = "proj/hello.sts"


def _proj(**kw):
    return lambda d: make.projections(d, **kw) and None


def _log_rename(old: str, new: str):
    def build(d: Path) -> None:
        make.projections(d)
        (d / "proj" / old).rename(d / "proj" / new)

    return build


def _bad_log(pe: int, text: str | bytes, gz: bool = True):
    def build(d: Path) -> None:
        logs = {p: make.log_text(p) for p in range(2)}
        logs[pe] = text
        make.projections(d, logs=logs, gz=gz)

    return build


PROJ = {
    "log-20-digit-pe": (_log_rename("hello.1.log.gz", "hello.99999999999999999999.log.gz"), (2,)),
    "processors-1e20": (_proj(sts=make.sts_text(processors="1e20")), (2,)),
    "processors-huge": (_proj(sts=make.sts_text(processors=str(10**20))), (2,)),
    "processors-2p31": (_proj(sts=make.sts_text(processors=str(2**31 - 1))), (0, 2)),
    "processors-zero": (_proj(sts=make.sts_text(processors="0")), (2,)),
    "processors-neg": (_proj(sts=make.sts_text(processors="-2")), (2,)),
    "processors-text": (_proj(sts=make.sts_text(processors="two")), (2,)),
    "processors-3-logs-2": (_proj(sts=make.sts_text(processors="3")), (0, 2)),
    "missing-pe-log": (_proj(logs={0: make.log_text(0)}), (0, 2)),
    "extra-pe-log": (_proj(logs={p: make.log_text(p) for p in range(3)}), (0, 2)),
    "sts-empty": (_proj(sts=""), (2,)),
    "sts-binary": (lambda d: (make.projections(d), (d / P).write_bytes(b"\x00\xff" * 50)) and None, (2,)),
    "sts-json": (_proj(sts='{"traceEvents": []}'), (2,)),
    "sts-dir": (lambda d: ((d / "proj").mkdir(), (d / P).mkdir()) and None, (2,)),
    "sts-fifo": (lambda d: ((d / "proj").mkdir(), make.fifo(d / P)) and None, (2,)),
    "sts-unknown-chare": (_proj(sts=make.sts_text(extra='ENTRY CHARE 9 "x()" 99 0\n')), (2,)),
    "sts-entry-huge-id": (_proj(sts=make.sts_text(extra='ENTRY CHARE ' + "9" * 30 + ' "x()" 1 0\n')), (0, 2)),
    "sts-unbalanced-quote": (_proj(sts=make.sts_text(extra='CHARE 7 "open -1\n')), (2,)),
    "log-truncated-gz": (lambda d: (make.projections(d), (d / "proj/hello.1.log.gz").write_bytes(
        (d / "proj/hello.1.log.gz").read_bytes()[:-12])) and None, (2,)),
    "log-not-gz": (_bad_log(1, "PROJECTIONS-RECORD 1\n6 1000\n", gz=True) if False else
                   (lambda d: (make.projections(d), (d / "proj/hello.1.log.gz").write_text("plain text")) and None),
                   (2,)),
    "log-header-wrong": (_bad_log(1, "HELLO\n6 1000\n"), (2,)),
    "log-empty": (_bad_log(1, ""), (2,)),
    "log-text-tokens": (_bad_log(1, "PROJECTIONS-RECORD 3\n6 abc\n2 x y z\n7 1100\n"), (0, 2)),
    "log-huge-ints": (_bad_log(1, "PROJECTIONS-RECORD 3\n6 " + "9" * 30 + "\n7 " + "9" * 31 + "\n"), (0, 2)),
    "log-neg-times": (_bad_log(1, "PROJECTIONS-RECORD 3\n6 -5000\n14 -4000\n15 -100\n7 -50\n"), (0, 2)),
    "log-binary": (_bad_log(1, b"PROJECTIONS-RECORD 2\n\x00\x01\xff\xfe\n"), (2,)),
    "log-unknown-entry": (_bad_log(1, "PROJECTIONS-RECORD 3\n6 1000\n2 4 999 1010 1 0 80 0 1 0 0 0 1 0\n"
                                   "3 0 999 1050 1 0 0 1\n7 1100\n"), (0, 2)),
    "log-fifo": (lambda d: (make.projections(d, logs={0: make.log_text(0)}), make.fifo(d / "proj/hello.1.log"))
                 and None, (2,)),
    "log-dir": (lambda d: (make.projections(d, logs={0: make.log_text(0)}), (d / "proj/hello.1.log.gz").mkdir())
                and None, (2,)),
    "log-dev-zero": (lambda d: (make.projections(d, logs={0: make.log_text(0)}),
                                (d / "proj/hello.1.log").symlink_to("/dev/zero")) and None, (2,)),
    "ansi-entry-name": (_proj(sts=make.sts_text(extra='ENTRY CHARE 2 "\x1b[31mred()" 1 0\n')), (0,)),
    "no-logs": (_proj(logs={}), (2,)),
}
for name, (build, rc) in PROJ.items():
    case(f"projections-{name}", "import", "projections", P, "-o", "p.parquet", setup=build, rc=rc,
         mention="proj", outputs=("p.parquet",) if 0 in rc else (), warnings_ok=True, item="3" if "ansi" in name else "8")
