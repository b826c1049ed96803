"""comm.json's `combine` list: message streams (source PE, destination PE, entry method) to send in
batches (TRAM-style combining).

Generator: hints.generators.comm; consumer: hints.runtime.charm_combine; what-if: each batch pays
the per-message cost once. The file's `ddp` section is its own kind (hints.kinds.ddp)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from hints.kinds import fields as f
from hints.kinds.base import HintKind

MAX_BATCH = 1 << 16
"""Most messages combined into one: a batch is buffered on the sending PE until full (or until the
PE returns to the scheduler), so a larger one holds memory and delays delivery for no further saving
(the per-message cost saved is already 99.998 % of it); the generator proposes 8..1024 (32 KiB of
payload, hints.generators.comm.batch_for)."""
MAX_BYTES = float(f.INT64_MAX)
"""Byte counts are int64 in the trace."""


def validate(path: Path, doc: dict[str, Any], pes: int | None) -> list[dict[str, Any]]:
    """The streams [{src_pe, dst_pe, entry, batch}], PEs within the run, batch in 2..MAX_BATCH."""
    hi = f.pe_range(pes)
    f.finite_numbers(path, "threshold", doc.get("threshold"))
    for key, v in doc["threshold"].items():
        if key != "batch":
            f.number(path, f"threshold.{key}", v, 0.0, MAX_BYTES)
    if "batch" in doc["threshold"]:
        f.integer(path, "threshold.batch", doc["threshold"]["batch"], 2, MAX_BATCH)
    out = []
    for n, s in enumerate(f.array(path, "field 'combine'", doc.get("combine"))):
        at = f"combine[{n}]"
        f.obj(path, at, s)
        src = f.integer(path, f"{at}.src_pe", s.get("src_pe"), 0, hi)
        dst = f.integer(path, f"{at}.dst_pe", s.get("dst_pe"), 0, hi)
        entry = f.text(path, f"{at}.entry", s.get("entry"), empty=False)
        batch = f.integer(path, f"{at}.batch", s.get("batch"), 2, MAX_BATCH)
        for key in ("msgs", "max_bytes"):
            if s.get(key) is not None:
                f.integer(path, f"{at}.{key}", s[key], 0, f.INT64_MAX)
        if s.get("mean_bytes") is not None:
            f.number(path, f"{at}.mean_bytes", s["mean_bytes"], 0.0, MAX_BYTES)
        out.append({"src_pe": src, "dst_pe": dst, "entry": entry, "batch": batch})
    return out


def replay_effect(streams: list[dict[str, Any]]) -> dict[str, Any]:
    return {"combine": streams}


KIND = HintKind(
    name="comm", file="comm.json", envelope="comm", validate=validate,
    generator="hints.generators.comm", consumer="hints.runtime.charm_combine:CombineConsumer", runtime="charm",
    whatif=replay_effect, fallback="messages are not combined",
)
