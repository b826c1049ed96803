"""comm.json's `ddp` section: the gradient bucket size (bucket_cap_mb) of PyTorch
DistributedDataParallel in the next run.

Generator: hints.generators.ddp; consumer: hints.runtime.ddp (every DDP the script builds). No
replay: the exec-graph what-if has no model of DDP buckets (the analysis states its predicted
per-step saving in the file's predicted_gain)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from hints.format import HintError
from hints.kinds import fields as f
from hints.kinds.base import Absent, HintKind

MAX_BUCKET_CAP_MB = float(1 << 20)
"""1 TiB. A bucket larger than the whole model is one bucket (the same as any larger cap), and no
model's gradients on one device approach 1 TiB. Far above, DDP's byte count overflows: 1e13 MB is
~1e19 bytes > 2^63, and rank 0 fails before its first step."""
VERDICTS = ("ok", "too_small", "too_large")


def validate(path: Path, doc: dict[str, Any], pes: int | None) -> float | None:
    """The hinted bucket_cap_mb, or None when the file has no DDP advice (no section, or a null cap)."""
    sec = doc.get("ddp")
    if sec is None:
        return None
    f.obj(path, "field 'ddp'", sec)
    if sec.get("verdict") is not None and sec["verdict"] not in VERDICTS:
        raise HintError(f"{path}: ddp.verdict should be one of {', '.join(VERDICTS)}, not {f.show(sec['verdict'])}")
    cap = sec.get("bucket_cap_mb")
    if cap is None:
        return None
    cap = f.number(path, "ddp.bucket_cap_mb", cap, 0.0, MAX_BUCKET_CAP_MB, above=True)
    if cap * 2**20 < 1:  # DDP's cap is int(bucket_cap_mb * 2^20) bytes: 0 bytes is no cap at all
        raise HintError(f"{path}: ddp.bucket_cap_mb {cap:g} is under one byte")
    return cap


KIND = HintKind(
    name="ddp", file="comm.json", envelope="comm", validate=validate,
    generator="hints.generators.ddp", consumer="hints.runtime.ddp:install", runtime="torch",
    whatif=Absent("the exec-graph replay has no model of DDP buckets; the file's predicted_gain states "
                  "the analysis's per-step saving"),
    fallback="DDP keeps its bucket size",
)
