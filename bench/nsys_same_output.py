"""Whether two trees' Nsight Systems importers write the same trace: every column and the schema
metadata of `import_trace`'s output, on the two real exports, both together and the bench's 10x and
200x copies (bench/import_vs_pipit_nsys.py makes them under $TMPDIR/paradise-bench-nsys).

Each tree runs in its own subprocess with PYTHONPATH naming it (a `git archive` snapshot of
`paradise/`, or a worktree). Speed work on the importer must leave this printing `same` on every row.

Run: .venv/bin/python bench/nsys_same_output.py BASE_TREE NEW_TREE
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
from pathlib import Path

import pyarrow.parquet as pq

sys.path.insert(0, str(Path(__file__).resolve().parent))
from import_vs_pipit_nsys import FILES, REAL, WORK  # noqa: E402

CODE = "import sys; from paradise.importers.nsys import import_trace; import_trace(sys.argv[2:], sys.argv[1], force=True)"


def inputs() -> dict[str, list[str]]:
    real = [str(REAL / f) for f in FILES]
    cases = {"cloverleaf": real[:1], "saxpy": real[1:], "both": real}
    for n in (10, 200):
        p = WORK / f"cloverleaf-x{n}.sqlite"
        if p.exists():
            cases[f"x{n}"] = [str(p)]
    return cases


def run(tree: str, out: Path, srcs: list[str]) -> None:
    env = dict(os.environ, PYTHONPATH=tree)
    subprocess.run([sys.executable, "-W", "ignore", "-c", CODE, str(out), *srcs], check=True, env=env,
                   cwd=tempfile.gettempdir())


def same(a: Path, b: Path) -> str:
    ta, tb = pq.read_table(a), pq.read_table(b)
    if ta.schema.metadata != tb.schema.metadata:
        return "metadata differs"
    if not ta.schema.equals(tb.schema):
        return "schema differs"
    if ta.num_rows != tb.num_rows:
        return f"rows {ta.num_rows} vs {tb.num_rows}"
    bad = [n for n in ta.column_names if not ta.column(n).equals(tb.column(n))]
    return f"columns differ: {', '.join(bad)}" if bad else "same"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("base")
    ap.add_argument("new")
    a = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="paradise-same-") as d:
        for name, srcs in inputs().items():
            pa_, pb = Path(d) / "base" / f"{name}.parquet", Path(d) / "new" / f"{name}.parquet"  # same name: program
            pa_.parent.mkdir(exist_ok=True)
            pb.parent.mkdir(exist_ok=True)
            run(a.base, pa_, srcs)
            run(a.new, pb, srcs)
            print(f"{name:<12} {pq.read_metadata(pb).num_rows:>9} rows  {same(pa_, pb)}", flush=True)


if __name__ == "__main__":
    main()
