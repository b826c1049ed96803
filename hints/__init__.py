"""paradise hints: the file contract (format.py, schemas/), pure generators, and runtime consumers."""

from __future__ import annotations

from typing import Any


def apply_ddp(model: Any, hints_dir: Any = None, **ddp_kwargs: Any) -> Any:
    """DistributedDataParallel(model) with comm.json's bucket size (see hints.runtime.ddp)."""
    from hints.runtime.ddp import apply_ddp as _apply

    return _apply(model, hints_dir, **ddp_kwargs)
