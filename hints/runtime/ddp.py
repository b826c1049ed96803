"""Runtime consumer of comm.json's `ddp` section: the gradient bucket size of DistributedDataParallel.

Three ways in, one reading of the file (`bucket_cap_mb`):
* `paradise trace torch --hints DIR` (the torch bootstrap calls `install`): every
  DistributedDataParallel the unmodified script builds gets `bucket_cap_mb` from DIR/comm.json;
* `hints.apply_ddp(model)` in a script run without the tracer: wraps (or re-wraps) a model in DDP
  with the hinted bucket size, DIR from the argument or from PARADISE_HINTS;
* PARADISE_HINTS=DIR with `python -m paradise.boot.torch SCRIPT` (what the tracer's launcher runs).
A comm.json made for another program or world size, or without a `ddp` section, is refused in one
line on stderr (rank 0) and DDP keeps the script's own value.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any

from hints.format import HintError
from hints.kinds import KINDS

ENV_HINTS = "PARADISE_HINTS"


def _say(text: str) -> None:
    if os.environ.get("RANK", "0") == "0":
        print(f"paradise: {text}", file=sys.stderr, flush=True)


def bucket_cap_mb(hints_dir: str | os.PathLike | None, program: str | None, world_size: int | None) -> float | None:
    """ddp.bucket_cap_mb of DIR/comm.json checked against this program and world size, or None."""
    if not hints_dir:
        return None
    path = Path(hints_dir) / "comm.json"
    if not path.exists():
        return None
    kind = KINDS["ddp"]
    try:
        return kind.load(path, program=program, pes=world_size)
    except HintError as exc:
        _say(kind.refusal(exc).removeprefix("paradise: "))
        return None


def install(hints_dir: str | os.PathLike, program: str) -> None:
    """Makes every DistributedDataParallel built from now on use the hinted bucket size.

    The file is read when the first DDP is built (the world size is known then)."""
    import torch.nn.parallel as par

    DDP = par.DistributedDataParallel
    orig_init = DDP.__init__
    state: dict[str, Any] = {}

    def __init__(self, module, *args, **kwargs):  # noqa: ANN001
        if "cap" not in state:
            import torch.distributed as dist

            world = dist.get_world_size() if dist.is_available() and dist.is_initialized() else None
            state["cap"] = cap = bucket_cap_mb(hints_dir, program, world)
            if cap is not None:
                _say(f"DDP bucket_cap_mb={cap:g} from {Path(hints_dir) / 'comm.json'}")
        if state["cap"] is not None:
            kwargs["bucket_cap_mb"] = state["cap"]
        orig_init(self, module, *args, **kwargs)

    DDP.__init__ = __init__


def apply_ddp(model: Any, hints_dir: str | os.PathLike | None = None, **ddp_kwargs: Any) -> Any:
    """`model` wrapped in DistributedDataParallel with the hinted bucket size (a DDP model is
    re-wrapped around its module); without a usable hint, DDP's own default."""
    import torch.distributed as dist
    from torch.nn.parallel import DistributedDataParallel as DDP

    module = model.module if isinstance(model, DDP) else model
    program = Path(sys.argv[0]).stem if sys.argv and sys.argv[0] else None
    cap = bucket_cap_mb(hints_dir or os.environ.get(ENV_HINTS), program, dist.get_world_size())
    if cap is not None:
        ddp_kwargs["bucket_cap_mb"] = cap
    return DDP(module, **ddp_kwargs)
