"""The tracer's hooks on DDP modules: the forward of each attached module (a wrapper of DDP.forward), its gradient
buckets through BucketWatch (DDP's built-in C++ all-reduce stays), or the program's own Python
comm hook, wrapped, when it sets one; attach() hooks a module built before install()."""

from __future__ import annotations

from typing import Any

import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel

from tracers.torch import clock
from tracers.torch.buckets import MAX_TRIES, BucketWatch
from tracers.torch.patching import attached, end_on_completion, group_label, guard, installed, patch
from tracers.torch.tracer import BYTES, CAT, COLL, DTYPE, GROUP, GSIZE, OBJ, PHASES_MAX, Tracer


def _bucket_row(tr: Tracer, hook_name: str, group_info: tuple[Any, Any], bucket: Any, buf: Any) -> list[Any]:
    """The row of a bucket launched through the program's own Python comm hook."""
    t0 = tr.now()
    tr.last_launch = t0
    row = tr.new_row("collective", hook_name, t0, None)
    row[CAT] = "ddp_bucket"
    row[COLL] = "ddp"
    row[OBJ] = bucket.index()
    row[BYTES] = buf.numel() * buf.element_size()
    row[DTYPE] = str(buf.dtype).removeprefix("torch.")
    row[GROUP], row[GSIZE] = group_info
    tr.buffer(row)
    return row


def _wrap_user_hook(tr: Tracer, hook: Any) -> Any:
    name = getattr(hook, "__name__", "comm_hook")

    def wrapped(state, bucket):  # noqa: ANN001
        if installed.tracer is not tr:  # detached (DDP cannot unregister a comm hook): the program's hook alone
            return hook(state, bucket)
        group = state if isinstance(state, dist.ProcessGroup) else getattr(state, "process_group", None)
        row = _bucket_row(tr, name, group_label(group), bucket, bucket.buffer())
        guard.depth += 1
        try:
            fut = hook(state, bucket)
        finally:
            guard.depth -= 1
        return fut.then(end_on_completion(tr, row))

    return wrapped


def _traced_forward(tr: Tracer, orig_forward: Any) -> Any:
    """DistributedDataParallel.forward that records the forward phase of attached modules.

    A class-level wrapper, not module forward hooks: a module with hooks takes nn.Module's slow
    call path; the wrapper adds one Python frame (its clock reads are bound once, its phase goes
    straight into the tracer's flat list: no other frame)."""
    read, base = clock.reader(tr)
    phases, overflow = tr._phases, tr.phases_overflow
    if tr.native is not None:  # the same, compiled (tracers/torch/_hooks.c)
        return tr.native.forward(tr._state, orig_forward, MAX_TRIES)

    def forward(self: Any, *args: Any, **kwargs: Any) -> Any:
        watch = self.__dict__.get("_paradise_buckets")
        if watch is None:  # a module not attached (or detached): as untraced
            return orig_forward(self, *args, **kwargs)
        t0 = read() - base
        tr.forward_seen = True
        if tr.step_start is None:
            tr.step_start = t0
        out = orig_forward(self, *args, **kwargs)
        t1 = read() - base
        phases.extend(("forward", t0, t1))
        tr.fwd_end = t1
        if len(phases) > PHASES_MAX:  # forwards without steps (an evaluation loop)
            overflow()
        if not watch.ready and watch.active and watch.tries < MAX_TRIES:
            watch.try_install()
        return out

    forward.__wrapped__ = orig_forward  # type: ignore[attr-defined]
    forward.__doc__ = orig_forward.__doc__
    return forward


def attach(tr: Tracer, module: DistributedDataParallel) -> BucketWatch:
    """Hooks one DDP module (its forward, through install_ddp's DistributedDataParallel.forward,
    and its gradient buckets) until uninstall().

    Modules built while the hooks are installed are attached by DDP's patched __init__; a module
    built before (or detached by uninstall()) is attached by install(tr, modules=...)."""
    watch = getattr(module, "_paradise_buckets", None)
    if watch is not None:
        return watch
    watch = module._paradise_buckets = BucketWatch(tr, module, group_label(module.process_group))
    if getattr(module, "_comm_hooks", None):  # the program's own comm hook (wrapped) records the buckets
        watch.active = False
    attached.append(watch)
    if watch.active and getattr(module, "_has_rebuilt_buckets", False):
        watch.try_install()  # a module that already trained: its buckets are final
    return watch


def install_ddp(tr: Tracer) -> None:
    """Forward hooks on every DDP module; its buckets through BucketWatch (DDP's built-in C++
    all-reduce stays), or through the program's own Python comm hook, wrapped, when it sets one."""
    orig_init = DistributedDataParallel.__init__
    orig_register = DistributedDataParallel.register_comm_hook

    def init(self: Any, *args: Any, **kwargs: Any) -> None:
        orig_init(self, *args, **kwargs)
        attach(tr, self)

    def register_comm_hook(self: Any, state: Any, hook: Any) -> None:
        watch = getattr(self, "_paradise_buckets", None)
        if watch is not None:
            watch.active = False
            watch.remove()
        return orig_register(self, state, _wrap_user_hook(tr, hook))

    patch(DistributedDataParallel, "__init__", init)
    patch(DistributedDataParallel, "forward", _traced_forward(tr, DistributedDataParallel.forward))
    patch(DistributedDataParallel, "register_comm_hook", register_comm_hook)
