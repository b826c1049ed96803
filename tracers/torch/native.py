"""Which recorder records the torch tracer's training steps: the compiled one (tracers/torch/_hooks.c, built
by setup.py when a C compiler is there; tracers.torch.nativetracer.NativeTracer) unless it is not built or
PARADISE_NATIVE_RECORDER=0 (the charm tracer's switch, tracers/charm/rowbuf.py), else the Python hooks
(tracers/torch/hooks.py, ddp.py, buckets.py) on a plain Tracer.

Both put the same values into the same lists of the Tracer, so they give the same rows. Does not import torch.
"""

from __future__ import annotations

import importlib
import os
import sys
import time
from collections.abc import Callable
from types import ModuleType
from typing import Any

ENV_SWITCH = "PARADISE_NATIVE_RECORDER"


def compiled() -> tuple[ModuleType | None, str]:
    """(the compiled hooks' module or None, which recorder runs, in words)."""
    if os.environ.get(ENV_SWITCH, "1").strip().lower() in ("0", "false", "no", "off"):
        return None, f"python ({ENV_SWITCH}=0)"
    try:
        return importlib.import_module("tracers.torch._hooks"), "native"
    except ImportError:
        return None, "python (native hooks not built)"


def tracer_class(python_class: type) -> tuple[type, str]:
    """(the Tracer class to build, which recorder it runs): NativeTracer where the compiled hooks run."""
    module, kind = compiled()
    if module is None:
        return python_class, kind
    from tracers.torch.nativetracer import NativeTracer

    return NativeTracer, kind


def clock_arg(read: Callable[[], int]) -> Any:
    """The compiled recorder's clock: None for time.time_ns (read in C: CLOCK_REALTIME, the clock
    time.time_ns reads), else the callable itself (an injected skew, a subclass's clock)."""
    return None if read is time.time_ns else read


def say_recorder(kind: str) -> None:
    """The one line that says which recorder records this run (rank 0 says it)."""
    print(f"paradise: torch tracer: {kind} recorder", file=sys.stderr, flush=True)
