"""`paradise export chrome`: the trace as Chrome Trace Event Format JSON (.json or .json.gz).

DuckDB renders every record as JSON text (export_chrome_events.sql); the result streams in
Arrow batches straight into the file, so memory stays bounded whatever the trace's size.
The records and their lanes are documented in docs/report.md.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from paradise.export._stream import output_stream, string_bytes
from paradise.store.output import atomic_output

BATCH_ROWS = 1 << 16
"""Rows per Arrow batch read from DuckDB: about 15 MB of JSON text (~230 bytes a record) at most in memory."""
KIND_LANES = {2_000_000_001: "steps / phases", 2_000_000_002: "collectives", 2_000_000_003: "checkpoints"}
"""Lanes of the non-op intervals (export_chrome_events.sql), kept apart so ops nest cleanly."""
STREAM_LANE = 1_000_000_000
"""Device rows go to tid STREAM_LANE + stream mod 10^9 (CPU thread ids below 10^9 stay as they are)."""


def _lane_name(lane: int, stream: int | None) -> str:
    if lane in KIND_LANES:
        return KIND_LANES[lane]
    if stream is not None:
        return f"stream {stream}"
    return f"thread {lane}"


def _name_records(engine: Any, source: str) -> list[dict[str, Any]]:
    """process_name / thread_name / sort-index metadata records, one per PE and lane."""
    t = engine.query("export_chrome_lanes").to_pydict()
    unit = "rank" if source in ("torch", "kineto", "nsys") else "PE"
    out: list[dict[str, Any]] = []
    for pe in sorted(set(t["pe"])):
        out.append({"ph": "M", "name": "process_name", "pid": pe, "tid": 0, "args": {"name": f"{unit} {pe}"}})
        out.append({"ph": "M", "name": "process_sort_index", "pid": pe, "tid": 0, "args": {"sort_index": pe}})
    for pe, lane, stream in sorted(set(zip(t["pe"], t["lane"], t["stream"])), key=lambda x: (x[0], x[1])):
        out.append({"ph": "M", "name": "thread_name", "pid": pe, "tid": lane,
                    "args": {"name": _lane_name(lane, stream)}})
    return out


def export(engine: Any, trace: Any, out: Path) -> Path:
    """Writes the trace's Chrome JSON to `out` (gzip when it ends in .gz) through a temporary file
    renamed into place (paradise.store.output.atomic_output); returns `out`."""
    head = [json.dumps(r, sort_keys=True) for r in _name_records(engine, trace.source)]
    other = {"program": trace.program, "source": trace.source, "fingerprint": trace.fingerprint,
             "exporter": "paradise export chrome"}
    with atomic_output(out) as (_, raw), output_stream(raw, out.name) as fh:
        fh.write(b'{"traceEvents":[\n')
        for line in head:
            fh.write(line.encode() + b",\n")
        for batch in engine.batches("export_chrome_events", batch_rows=BATCH_ROWS):
            fh.write(string_bytes(batch.column(0)))
        last = {"ph": "M", "name": "trace_source", "pid": 0, "tid": 0, "args": other}
        fh.write(json.dumps(last, sort_keys=True).encode() + b'\n],"displayTimeUnit":"ns","otherData":'
                 + json.dumps(other, sort_keys=True).encode() + b"}\n")
    return out
