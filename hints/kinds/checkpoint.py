"""checkpoint.json: the checkpoint policy of a training job (periodic, just-in-time, or JIT with a
periodic safety net) and the figures it was chosen from.

Generator: hints.generators.checkpoint_policy; consumer: hints.runtime.checkpoint's
CheckpointManager (the script passes policy=...: no launch reads it by itself). No replay: the
policy's effect is the expected waste the file states per mode."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from hints.format import HintError
from hints.kinds import fields as f
from hints.kinds.base import Absent, HintKind

MODES = ("periodic", "jit", "jit+periodic")
MAX_STEPS = 1 << 40
"""Most optimizer steps between checkpoints (about 35 years at 1 ms a step): more is damage."""
MAX_SECONDS = 1e12
"""Longest interval or MTBF, seconds (about 30,000 years): more is damage."""


def validate(path: Path, doc: dict[str, Any], pes: int | None) -> dict[str, Any]:
    """{mode, interval_steps}: what CheckpointManager acts on, after checking every figure."""
    mode = doc.get("mode")
    if mode not in MODES:
        raise HintError(f"{path}: field 'mode' should be one of {', '.join(MODES)}, not {f.show(mode)}")
    steps = doc.get("interval_steps")
    if steps is not None:
        f.integer(path, "field 'interval_steps'", steps, 1, MAX_STEPS)
    elif mode == "periodic":
        raise HintError(f"{path}: field 'interval_steps' is needed in periodic mode")
    for key in ("safety_net_interval_steps",):
        if doc.get(key) is not None:
            f.integer(path, f"field {key!r}", doc[key], 1, MAX_STEPS)
    for key in ("interval_s", "safety_net_interval_s"):
        f.optional_number(path, f"field {key!r}", doc.get(key), 0.0, MAX_SECONDS, above=True)
    f.number(path, "field 'mtbf_s'", doc.get("mtbf_s"), 0.0, MAX_SECONDS, above=True)
    f.finite_numbers(path, "expected_waste", doc.get("expected_waste"))
    for key in ("intervals", "inputs"):
        if doc.get(key) is not None:
            f.finite_numbers(path, key, doc[key])
    return {"mode": mode, "interval_steps": steps}


KIND = HintKind(
    name="checkpoint", file="checkpoint.json", envelope="checkpoint", validate=validate,
    generator="hints.generators.checkpoint_policy", consumer="hints.runtime.checkpoint.manager:CheckpointManager",
    runtime=None, whatif=Absent("a policy changes time lost to failures, not the traced run; the file states "
                                "the expected waste of each mode"),
    fallback="checkpoints keep the script's own policy",
)
