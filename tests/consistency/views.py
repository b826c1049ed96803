"""Every view of one trace, as a user gets it: `analyze --json`, the terminal report, the HTML
report's figures, `compare --json`, `export chrome` and the Projections round trip. Each runs the
real `paradise` command (in-process, through its console-script entry point, so the suite pays
the interpreter's start once) and is read back here with plain parsers written for the test.
"""

from __future__ import annotations

import base64
import contextlib
import gzip
import io
import json
import os
import re
import sys
from collections import defaultdict
from pathlib import Path
from typing import Any

TERMINAL_COLUMNS = "400"
"""Wide enough that no terminal table cell is cut."""
BIG_TOP = "100000"
"""--top for every entry (the overview lists them all)."""


def cli(*args: Any) -> str:
    """Runs `paradise ARGS` in-process; returns stdout, fails with stderr on a non-zero exit."""
    from paradise.cli.main import main

    out, err = io.StringIO(), io.StringIO()
    old_argv, old_cols = sys.argv, os.environ.get("COLUMNS")
    sys.argv = ["paradise", *map(str, args)]
    os.environ["COLUMNS"] = TERMINAL_COLUMNS
    code = 0
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            try:
                main()
            except SystemExit as exc:
                code = int(exc.code or 0)
    finally:
        sys.argv = old_argv
        if old_cols is None:
            os.environ.pop("COLUMNS", None)
        else:
            os.environ["COLUMNS"] = old_cols
    if code != 0:
        raise AssertionError(f"paradise {' '.join(map(str, args))} exited {code}:\n{err.getvalue()[-3000:]}")
    return out.getvalue()


def analyze_json(trace: Path) -> dict[str, Any]:
    return json.loads(cli("analyze", trace, "--json", "--top", BIG_TOP))


def terminal(trace: Path) -> str:
    return cli("analyze", trace, "--only", "overview", "--top", BIG_TOP)


def compare_json(trace: Path) -> dict[str, Any]:
    """`compare TRACE TRACE --json`: the trace against itself (every figure on both sides)."""
    return json.loads(cli("compare", trace, trace, "--json"))["performance"]


# --- the HTML report -------------------------------------------------------------------------

def _decode(v: Any) -> Any:
    """A plotly array: a list, or a typed array {"dtype", "bdata"} (base64 of little-endian values)."""
    if isinstance(v, dict) and "bdata" in v:
        import numpy as np

        arr = np.frombuffer(base64.b64decode(v["bdata"]), dtype=np.dtype(v["dtype"]).newbyteorder("<"))
        if "shape" in v:
            arr = arr.reshape([int(x) for x in str(v["shape"]).split(",")])
        return arr.tolist()
    return v


def report_figures(html: str) -> dict[str, dict[str, Any]]:
    """Every plotly figure of a report page by its title (the JSON the page draws)."""
    dec = json.JSONDecoder()
    figs: dict[str, dict[str, Any]] = {}
    for m in re.finditer(r"<script>\(function\(\)\{var f=", html):
        fig, _ = dec.raw_decode(html, m.end())
        for tr in fig["data"]:
            for k in ("x", "y", "z", "base"):
                if k in tr:
                    tr[k] = _decode(tr[k])
                    if k == "z":
                        tr[k] = [_decode(row) for row in tr[k]]
        title = fig["layout"].get("title", {}).get("text", "")
        figs[title] = fig
    return figs


def figure(figs: dict[str, dict[str, Any]], prefix: str) -> dict[str, Any]:
    found = [f for t, f in figs.items() if t.startswith(prefix)]
    assert found, f"no figure titled {prefix!r} in {list(figs)}"
    return found[0]


def report(trace: Path, out: Path, *extra: Any) -> dict[str, dict[str, Any]]:
    cli("report", trace, "-o", out, "--force", *extra)
    return report_figures(out.read_text(encoding="utf-8"))


# --- export chrome ---------------------------------------------------------------------------

RUNNING_KINDS = ("exec", "piece", "phase")
"""The kinds of the running intervals (paradise/sql/events_running.sql)."""




def chrome_slices(trace: Path, out: Path) -> dict[int, list[tuple[float, float]]]:
    """Per pid, the running slices ("X" records of kind exec, piece, phase or collective) of
    `export chrome`, in ns."""
    cli("export", "chrome", trace, "-o", out, "--force")
    opener = gzip.open if out.suffix == ".gz" else open
    with opener(out, "rt", encoding="utf-8") as fh:
        doc = json.load(fh)
    per: dict[int, list[tuple[float, float]]] = defaultdict(list)
    for e in doc["traceEvents"]:
        if e.get("ph") == "X" and (e.get("args") or {}).get("kind") in RUNNING_KINDS:
            t0 = float(e["ts"]) * 1000
            per[int(e["pid"])].append((t0, t0 + float(e["dur"]) * 1000))
    return dict(per)


# --- Projections round trip -------------------------------------------------------------------

def projections_round_trip(trace: Path, folder: Path) -> dict[str, Any]:
    """`export projections`, `import projections`, then `analyze --json` of what came back."""
    proj = folder / "proj"
    cli("export", "projections", trace, "-o", proj, "--force")
    sts = next(proj.glob("*.sts"))
    back = folder / "back"
    cli("import", "projections", sts, "-o", back, "--force")
    return analyze_json(back)


# --- reading analyze --json ------------------------------------------------------------------

def per_pe(doc: dict[str, Any]) -> dict[int, dict[str, Any]]:
    return {r["pe"]: r for r in doc["analyses"]["overview"]["per_pe"]}


def entry_totals(doc: dict[str, Any]) -> dict[str, int]:
    """Per entry name (summed over collections and categories), from the overview's entry table."""
    tot: dict[str, int] = defaultdict(int)
    for e in doc["analyses"]["overview"]["top_entries"]:
        tot[str(e["name"])] += int(e["total_ns"])
    return dict(tot)


def object_count(doc: dict[str, Any]) -> int | None:
    """The placement analysis's object count (evidence `objects`), None when it has none."""
    for c in doc["analyses"].get("placement", {}).get("characteristics") or []:
        for e in c.get("evidence") or []:
            if e.get("metric") == "objects":
                return int(e["value"])
    return None


def running_records(trace: Path) -> dict[str, int]:
    """Per entry name, the BEGIN/END_PROCESSING pairs a Projections export writes for it: its
    executions that never suspended plus the pieces of those that did (read with DuckDB here)."""
    import duckdb

    files = [str(trace)] if trace.is_file() else [str(f) for f in sorted(trace.glob("*.parquet"))]
    con = duckdb.connect()
    rows = con.sql("SELECT name, kind, count(*) FROM read_parquet($f, union_by_name = true) "
                   "WHERE kind IN ('exec', 'piece') GROUP BY ALL", params={"f": files}).fetchall()
    out: dict[str, int] = defaultdict(int)
    for name, _, n in rows:
        out[str(name)] += n  # an exec with pieces counts once more: an upper bound is all it needs
    return dict(out)


def records_per_pe(trace: Path) -> dict[int, int]:
    """Per PE, the records a Projections export writes whose times it floors to microseconds
    (executions, their pieces and idle rows): each moves the PE's busy or idle time by under 1 µs."""
    import duckdb

    files = [str(trace)] if trace.is_file() else [str(f) for f in sorted(trace.glob("*.parquet"))]
    con = duckdb.connect()
    rows = con.sql("SELECT pe, count(*) FROM read_parquet($f, union_by_name = true) "
                   "WHERE kind IN ('exec', 'piece', 'idle') GROUP BY ALL", params={"f": files}).fetchall()
    return {int(pe): int(n) for pe, n in rows}


def run_span(doc: dict[str, Any]) -> tuple[int, int]:
    rows = doc["analyses"]["overview"]["per_pe"]
    return min(r["t_first"] for r in rows), max(r["t_last"] for r in rows)
