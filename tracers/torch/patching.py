"""The state of the installed torch hooks, shared by tracers.torch.hooks and tracers.torch.ddp:
what to undo at uninstall() (patched attributes, hook handles, attached DDP modules), the guard
against recording nested calls twice, and the process-group labels rows carry."""

from __future__ import annotations

import threading
from typing import Any

import torch
import torch.distributed as dist

from tracers.torch.buckets import BucketWatch
from tracers.torch.tracer import T1, Tracer


class _Guard(threading.local):
    depth = 0


guard = _Guard()
originals: dict[str, Any] = {}
patches: list[tuple[Any, str, Any]] = []  # (object, attribute, original value), in patch order
handles: list[Any] = []  # removable torch hook handles
attached: list[BucketWatch] = []  # the DDP modules attached since install()


class _Installed:
    tracer: Tracer | None = None  # the tracer whose hooks are installed


installed = _Installed()


def patch(obj: Any, attr: str, new: Any) -> None:
    """Sets obj.attr = new, remembering the original for uninstall()."""
    patches.append((obj, attr, getattr(obj, attr)))
    setattr(obj, attr, new)


_label_cache: dict[int, tuple[str, int]] = {}


def group_label(group: Any) -> tuple[str | None, int | None]:
    """(label, size) of a process group, cached by identity."""
    if group is None:
        try:
            group = dist.distributed_c10d._get_default_group()
        except Exception:  # noqa: BLE001 - not initialised
            return None, None
    info = _label_cache.get(id(group))
    if info is None:
        desc = getattr(group, "group_desc", None)
        label = desc if desc and desc != "undefined" else f"pg{getattr(group, 'group_name', '?')}"
        try:
            size = group.size()
        except Exception:  # noqa: BLE001
            size = None
        info = _label_cache[id(group)] = (label, size)
    return info


def end_on_completion(tr: Tracer, row: list[Any]):
    def done(fut: torch.futures.Future) -> Any:
        row[T1] = tr.now()
        return fut.value()

    return done
