"""The Nsight Systems importer on broken and hostile exports (issue 24): one line, exit 2, nothing
written; built by tests/nsys_db.py, never from shared data."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from tests.hostile import make
from tests.hostile.case import case
from tests.nsys_db import write_export

N = "n.sqlite"


def _export(**kw):
    return lambda d: write_export(d / N, **kw) and None


def _truncated(keep: float):
    def build(d: Path) -> None:
        data = write_export(d / "full.tmp", steps=40).read_bytes()
        (d / "full.tmp").unlink()
        (d / N).write_bytes(data[: int(len(data) * keep)])

    return build


def _corrupt(d: Path) -> None:
    data = bytearray(write_export(d / "full.tmp", steps=40).read_bytes())
    (d / "full.tmp").unlink()
    mid = len(data) // 2
    data[mid:mid + 3000] = b"\xab" * 3000
    (d / N).write_bytes(bytes(data))


def _sql(statement: str):
    def build(d: Path) -> None:
        con = sqlite3.connect(write_export(d / N))
        con.execute(statement)
        con.commit()
        con.close()

    return build


def _foreign(d: Path) -> None:
    con = sqlite3.connect(d / N)
    con.execute("CREATE TABLE customers (id INTEGER, name TEXT)")
    con.commit()
    con.close()


NSYS = {
    "truncated-half": (_truncated(0.5), (2,)),
    "truncated-header": (_truncated(0.001), (2,)),
    "corrupt-pages": (_corrupt, (2,)),
    "foreign-db": (_foreign, (2,)),
    "no-tables": (lambda d: sqlite3.connect(d / N).execute("PRAGMA user_version = 1") and None, (2,)),
    "no-string-table": (_export(drop=("StringIds",)), (2,)),
    "no-meta-table": (_export(drop=("META_DATA_EXPORT",)), (2,)),
    "other-product": (_export(product="Nsight Compute"), (2,)),
    "version-unknown": (_export(version="9.0.0"), (2,)),
    "version-text": (_export(version="three.x"), (2,)),
    "missing-column": (_sql("ALTER TABLE CUPTI_ACTIVITY_KIND_KERNEL DROP COLUMN start"), (2,)),
    "text-times": (_sql("UPDATE CUPTI_ACTIVITY_KIND_KERNEL SET start = 'soon'"), (2,)),
    "null-times": (_sql("UPDATE CUPTI_ACTIVITY_KIND_RUNTIME SET start = NULL"), (2,)),
    "huge-ids": (_sql("UPDATE CUPTI_ACTIVITY_KIND_KERNEL SET correlationId = 9223372036854775807, "
                      "streamId = -5, globalPid = -1"), (0, 2)),
    "dangling-string-ids": (_sql("UPDATE CUPTI_ACTIVITY_KIND_KERNEL SET demangledName = 999999"), (0,)),
    "ansi-kernel-name": (_sql("UPDATE StringIds SET value = char(27) || ']0;pwned' || char(7) WHERE id = 3"), (0,)),
    "empty": (lambda d: (d / N).write_bytes(b""), (2,)),
    "not-sqlite": (lambda d: (d / N).write_text('{"traceEvents": []}'), (2,)),
    "dir": (lambda d: (d / N).mkdir(), (2,)),
    "fifo": (lambda d: make.fifo(d / N) and None, (2,)),
    "dev-zero": (lambda d: (d / N).symlink_to("/dev/zero"), (2,)),
}
for name, (build, rc) in NSYS.items():
    case(f"nsys-{name}", "import", "nsys", N, "-o", "n.parquet", setup=build, rc=rc, mention=N,
         outputs=("n.parquet",) if 0 in rc else (), warnings_ok=True, item="extra")
case("nsys-report-without-nsys", "import", "nsys", "run.nsys-rep", "-o", "n.parquet",
     setup=lambda d: (d / "run.nsys-rep").write_bytes(b"\x00" * 64) and None, mention="run.nsys-rep", item="extra")
case("nsys-same-file-twice", "import", "nsys", N, N, "-o", "n.parquet", setup=_export(), mention=N, item="extra")
case("nsys-onto-input", "import", "nsys", N, "-o", N, "--force", setup=_export(), mention=N, item="extra")
