"""DDP gradient buckets recorded while DDP keeps its built-in C++ all-reduce (no comm hook).

Once DDP has rebuilt its buckets (after the first step), its own logging data names each bucket's
parameters in the order their gradients became ready and the bucket's size in bytes. One
post-accumulate-grad hook on the last of them appends the bucket's row, its end left open, to the
tracer's `launched` list; at the end of the backward, which DDP returns from only when every bucket
is reduced, the backward's hook (tracers.torch.hooks) ends those rows there (one slice assignment)
and hands them to the step's rows. So a bucket row runs from its launch
to the moment all buckets of its backward were reduced (exact for the last bucket); the first step
(before the rebuild) has no bucket rows.
"""

from __future__ import annotations

from typing import Any

from tracers.torch import clock
from tracers.torch.tracer import Tracer

MAX_TRIES = 4
"""Forwards after which a module whose buckets were never rebuilt stops being asked (no rows)."""


def _parse_lists(text: str) -> list[list[int]]:
    """'5 4 3, 2 1 0' -> [[5, 4, 3], [2, 1, 0]] (DDP logging data's per-bucket parameter indices)."""
    return [[int(x) for x in part.split()] for part in text.split(",") if part.strip()]


def _reducer_params(module: Any) -> list[Any]:
    """The parameters in the reducer's order (DistributedDataParallel._build_params_for_reducer)."""
    ignore = getattr(module, "parameters_to_ignore", set())
    seen: set[int] = set()
    out = []
    for mod_name, mod in module.module.named_modules():
        for name, p in mod.named_parameters(recurse=False):
            if p.requires_grad and f"{mod_name}.{name}" not in ignore and id(p) not in seen:
                seen.add(id(p))
                out.append(p)
    return out


class BucketWatch:
    """One DDP module's buckets: launch times from gradient hooks, rows at the end of backward."""

    def __init__(self, tr: Tracer, module: Any, group_info: tuple[Any, Any]) -> None:
        self.tr = tr
        self.module = module
        self.group_info = group_info
        self.active = True  # False when the program's own Python comm hook records the buckets
        self.ready = False
        self.tries = 0
        self.info: list[tuple[Any, ...]] = []  # (bytes, dtype, group, group size) of each bucket
        self.handles: list[Any] = []  # the buckets' gradient hooks

    def try_install(self) -> bool:
        """After a forward: hooks the buckets once DDP has rebuilt them; True when installed."""
        if self.ready or not self.active or self.tries >= MAX_TRIES:
            return self.ready
        self.tries += 1
        data = self.module._get_ddp_logging_data()
        indices = _parse_lists(str(data.get("rebuilt_per_bucket_param_indices") or ""))
        if not data.get("has_rebuilt_buckets") or not indices:
            return False
        params = _reducer_params(self.module)
        if any(not b or max(b) >= len(params) for b in indices):
            self.tries = MAX_TRIES  # not the layout this code knows: no bucket rows
            return False
        sizes = [int(x) for x in str(data.get("rebuilt_bucket_sizes") or "").replace(",", " ").split()]
        if len(sizes) != len(indices):
            sizes = [sum(params[i].numel() * params[i].element_size() for i in b) for b in indices]
        group, size = self.group_info
        self.info = [(sizes[k], str(params[b[0]].dtype).removeprefix("torch."), group, size)
                     for k, b in enumerate(indices)]
        for k, b in enumerate(indices):
            self.handles.append(params[b[-1]].register_post_accumulate_grad_hook(self._hook(k)))
        self.ready = True
        self.tr.ddp_watches.append(self)
        return True

    def _hook(self, k: int) -> Any:
        module, launched = self.module, self.tr.launched
        read, base = clock.reader(self.tr)
        rest = (None, k, *self.info[k])  # the row after its launch time (steprows.BUCKET_WIDTH values)
        if self.tr.native is not None:  # the same, compiled (tracers/torch/_hooks.c)
            return self.tr.native.bucket(self.tr._state, module, self.tr._state.add_bucket(rest))

        def ready(_param: Any) -> None:
            if module.require_backward_grad_sync:  # under no_sync() DDP reduces nothing
                launched.append(read() - base)
                launched.extend(rest)

        return ready

    def remove(self) -> None:
        """Removes the buckets' gradient hooks (the forward hooks stay)."""
        for h in self.handles:
            h.remove()
        self.handles.clear()

    def detach(self) -> None:
        """Removes every hook this watch put on its module and its parameters; records nothing more."""
        self.active = False
        self.remove()
        if self in self.tr.ddp_watches:
            self.tr.ddp_watches.remove(self)
        if getattr(self.module, "_paradise_buckets", None) is self:
            del self.module._paradise_buckets
