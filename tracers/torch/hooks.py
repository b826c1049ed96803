"""Installs the tracer's hooks into torch: optimizer steps, DDP forward and gradient buckets,
backward, torch.distributed calls, checkpoint I/O, and clock offsets after init and before destroy.

Everything is a public hook or a wrapper of a public function; nothing in the program changes:
* steps: global optimizer step pre/post hooks (torch.optim.optimizer.register_optimizer_step_*).
* forward: DistributedDataParallel.forward wrapped, recording the modules attached by its patched
  __init__ (tracers.torch.ddp).
* DDP buckets: DDP keeps its built-in C++ all-reduce; tracers.torch.buckets records each
  bucket's launch from one gradient hook and its end from the backward's (or, when the program
  sets its own Python comm hook, that hook wrapped: launch, and end when its future completes).
* backward: torch.autograd.backward wrapped; its compute ends at the last bucket launch
  (the rest of the call is waiting for gradients to be reduced).
* torch.distributed collectives and object collectives wrapped; calls nested in another
  recorded call (a comm hook's all_reduce, DCP's internal gathers) are not recorded twice.
* torch.save / torch.load, and torch.distributed.checkpoint save/load once the program imports it.
"""

from __future__ import annotations

import contextlib
import os
import sys
from collections.abc import Iterable, Iterator
from typing import Any

import torch
import torch.distributed as dist
import torch.optim.optimizer as optim_mod
from torch.nn.parallel import DistributedDataParallel

from tracers.torch import clock
from tracers.torch.ddp import attach, install_ddp
from tracers.torch.patching import (
    attached,
    end_on_completion,
    group_label,
    guard,
    handles,
    installed,
    originals,
    patch,
    patches,
)
from tracers.torch.steprows import BUCKET_WIDTH
from tracers.torch.tracer import (
    BUCKETS_MAX,
    BYTES,
    CAT,
    DTYPE,
    GROUP,
    GSIZE,
    PHASES_MAX,
    STEP,
    T1,
    Tracer,
)

# (function name, index of the payload argument, keyword of it); None = no payload.
COLLECTIVES: tuple[tuple[str, int | None, str | None], ...] = (
    ("all_reduce", 0, "tensor"),
    ("broadcast", 0, "tensor"),
    ("reduce", 0, "tensor"),
    ("all_gather", 1, "tensor"),
    ("all_gather_into_tensor", 1, "input_tensor"),
    ("gather", 0, "tensor"),
    ("scatter", 0, "tensor"),
    ("reduce_scatter", 1, "input_list"),
    ("reduce_scatter_tensor", 1, "input"),
    ("all_to_all", 1, "input_tensor_list"),
    ("all_to_all_single", 1, "input"),
    ("send", 0, "tensor"),
    ("recv", 0, "tensor"),
    ("isend", 0, "tensor"),
    ("irecv", 0, "tensor"),
    ("barrier", None, None),
    ("monitored_barrier", None, None),
    ("all_gather_object", None, None),
    ("broadcast_object_list", None, None),
    ("gather_object", None, None),
    ("scatter_object_list", None, None),
)


def _nbytes(x: Any) -> int | None:
    if isinstance(x, torch.Tensor):
        return x.numel() * x.element_size()
    if isinstance(x, (list, tuple)) and x and isinstance(x[0], torch.Tensor):
        return sum(t.numel() * t.element_size() for t in x)
    return None


def _dtype(x: Any) -> str | None:
    if isinstance(x, (list, tuple)) and x:
        x = x[0]
    return str(x.dtype).removeprefix("torch.") if isinstance(x, torch.Tensor) else None


def _timed_call(tr: Tracer, label: str, orig: Any, args: tuple, kwargs: dict) -> tuple[int, Any]:
    """Calls a wrapped torch function with nested wrappers off; records a failure, re-raises."""
    t0 = tr.now()
    guard.depth += 1
    try:
        return t0, orig(*args, **kwargs)
    except Exception as exc:
        tr.failure(exc, label, t0)
        raise
    finally:
        guard.depth -= 1


def _wrap_collective(tr: Tracer, name: str, orig: Any, idx: int | None, key: str | None) -> Any:
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        if guard.depth or tr.closed:
            return orig(*args, **kwargs)
        t0, result = _timed_call(tr, f"c10d.{name}", orig, args, kwargs)
        row = tr.new_row("collective", name, t0, tr.now())
        row[CAT] = "c10d"
        if idx is not None:
            payload = args[idx] if len(args) > idx else kwargs.get(key)
            row[BYTES] = _nbytes(payload)
            row[DTYPE] = _dtype(payload)
        else:
            row[BYTES] = 0 if "barrier" in name else None
        row[GROUP], row[GSIZE] = group_label(kwargs.get("group"))
        if result is not None and hasattr(result, "get_future"):  # async_op=True: end = completion
            try:
                row[T1] = None
                result.get_future().then(end_on_completion(tr, row))
            except Exception:  # noqa: BLE001 - a backend without futures for this op
                row[T1] = tr.now()
        tr.buffer(row)
        return result

    wrapper.__wrapped__ = orig  # type: ignore[attr-defined]
    wrapper.__name__ = getattr(orig, "__name__", name)
    wrapper.__doc__ = getattr(orig, "__doc__", None)
    return wrapper


# --- backward and optimizer ------------------------------------------------------------------


def _install_backward(tr: Tracer) -> None:
    """torch.autograd.backward wrapped: the loss and backward phases, and the DDP buckets launched
    in it (their rows end where the backward returns: DDP returns once every bucket is reduced).
    The rows' values go straight into the tracer's flat lists: no Python frame but this one."""
    orig_backward = torch.autograd.backward
    read, base = clock.reader(tr)
    phases, buckets, launched = tr._phases, tr._buckets, tr.launched
    overflow = tr.phases_overflow
    if tr.native is not None:  # the same, compiled (tracers/torch/_hooks.c)
        patch(torch.autograd, "backward", tr.native.backward(tr._state, orig_backward))
        return

    def backward(*args: Any, **kwargs: Any) -> Any:
        t0 = read() - base
        if tr.step_start is None:
            tr.step_start = t0
        fwd_end = tr.fwd_end
        if fwd_end is not None:
            phases.extend(("loss", fwd_end, t0))
            tr.fwd_end = None
        tr.last_launch = None
        try:
            return orig_backward(*args, **kwargs)
        except Exception as exc:
            tr.failure(exc, "backward", t0)
            raise
        finally:
            t1 = read() - base
            launch = tr.last_launch  # the program's own comm hook's last launch (tracers.torch.ddp)
            if launched:  # the built-in path's buckets (tracers.torch.buckets): they end here
                last = launched[-BUCKET_WIDTH]
                if launch is None or last > launch:
                    launch = last
                launched[1::BUCKET_WIDTH] = [t1] * (len(launched) // BUCKET_WIDTH)
                buckets.extend(launched)
                launched.clear()
            phases.extend(("backward", t0, launch if launch is not None and launch >= t0 else t1))
            if len(phases) > PHASES_MAX or len(buckets) > BUCKETS_MAX:
                overflow()

    patch(torch.autograd, "backward", backward)


def _state_step(opt: Any) -> int | None:
    """The optimizer's own step count (restored with its state), when it keeps one on the CPU."""
    try:
        state = opt.state.get(opt.param_groups[0]["params"][0])
    except (IndexError, KeyError, AttributeError):
        return None
    if not state:
        return None
    s = state.get("step")
    if isinstance(s, torch.Tensor):
        return int(s.item()) if s.device.type == "cpu" else None
    return int(s) if isinstance(s, (int, float)) else None


def _install_optimizer(tr: Tracer) -> None:
    """Step numbers: the optimizer's own count read at its first step (and after each
    load_state_dict), then counted, so a resumed run keeps the script's numbering cheaply."""
    pending: dict[int, tuple[int, int]] = {}
    base: dict[int, int] = {}  # id(optimizer) -> number of its next step
    read, t_base = clock.reader(tr)
    phases, modules, end_step = tr._phases, sys.modules, tr.end_step

    def first_number(opt: Any) -> int:
        own = _state_step(opt)
        return tr._counter if own is None else own

    def pre(opt: Any, args: Any, kwargs: Any) -> None:
        key = id(opt)
        n = base.get(key)
        if n is None:
            n = first_number(opt)
        base[key] = n + 1
        pending[key] = (read() - t_base, n)

    def post(opt: Any, args: Any, kwargs: Any) -> None:
        t1 = read() - t_base
        t0, n = pending.pop(id(opt), (t1, tr._counter))
        phases.extend(("optimizer", t0, t1))
        if not tr._explicit:
            end_step(n, None, t1)
        if DCP_MODULE in modules and not tr.dcp_installed:
            install_dcp(tr)

    orig_load = torch.optim.Optimizer.load_state_dict

    def load_state_dict(self: Any, state_dict: Any) -> Any:
        result = orig_load(self, state_dict)
        base.pop(id(self), None)  # re-read the restored step count at the next step
        if tr.native is not None:
            tr._state.forget_optimizer(self)
        return result

    patch(torch.optim.Optimizer, "load_state_dict", load_state_dict)
    if tr.native is not None:  # the same two hooks, compiled (tracers/torch/_hooks.c)
        pre = tr.native.optimizer_pre(tr._state, base, first_number)
        post = tr.native.optimizer_post(tr._state, install_dcp)
    handles.append(optim_mod.register_optimizer_step_pre_hook(pre))
    handles.append(optim_mod.register_optimizer_step_post_hook(post))


# --- checkpoint I/O --------------------------------------------------------------------------


def _path_bytes(target: Any) -> int | None:
    try:
        if isinstance(target, (str, os.PathLike)):
            p = os.fspath(target)
            if os.path.isdir(p):
                return sum(e.stat().st_size for e in os.scandir(p) if e.is_file())
            return os.path.getsize(p)
    except OSError:
        return None
    return None


def _wrap_io(tr: Tracer, kind: str, label: str, orig: Any, target_of: Any) -> Any:
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        if guard.depth or tr.closed:
            return orig(*args, **kwargs)
        t0, result = _timed_call(tr, label, orig, args, kwargs)
        row = tr.new_row(kind, label, t0, tr.now())
        row[CAT] = label
        row[BYTES] = _path_bytes(target_of(args, kwargs))
        row[STEP] = tr.step
        tr.auto_io(row)
        return result

    wrapper.__wrapped__ = orig  # type: ignore[attr-defined]
    wrapper.__name__ = getattr(orig, "__name__", label)
    wrapper.__doc__ = getattr(orig, "__doc__", None)
    return wrapper


def _install_torch_io(tr: Tracer) -> None:
    save = _wrap_io(
        tr, "checkpoint", "torch.save", torch.save, lambda a, k: a[1] if len(a) > 1 else k.get("f")
    )
    patch(torch, "save", save)
    patch(
        torch,
        "load",
        _wrap_io(tr, "restore", "torch.load", torch.load, lambda a, k: a[0] if a else k.get("f")),
    )


def _dcp_target(args: Any, kwargs: Any) -> Any:
    return kwargs.get("checkpoint_id") or (args[1] if len(args) > 1 else None)


DCP_MODULE = "torch.distributed.checkpoint"


def install_dcp(tr: Tracer) -> bool:
    """Wraps torch.distributed.checkpoint save/load once the program has imported it."""
    if tr.dcp_installed or DCP_MODULE not in sys.modules:
        return tr.dcp_installed
    dcp = sys.modules[DCP_MODULE]
    for attr, kind in (("save", "checkpoint"), ("async_save", "checkpoint"), ("load", "restore")):
        orig = getattr(dcp, attr, None)
        if orig is not None and not hasattr(orig, "__wrapped__"):
            patch(dcp, attr, _wrap_io(tr, kind, f"dcp.{attr}", orig, _dcp_target))
    tr.dcp_installed = True
    return True


# --- init: clock alignment and placement -----------------------------------------------------

def _clock_group() -> Any:
    """The group the clock pings use: the default one on gloo, else a gloo group made for them."""
    return None if dist.get_backend() == "gloo" else dist.new_group(backend="gloo")


def measure_clock(tr: Tracer, when: str, group: Any, timeout_s: float | None = None) -> None:
    """This rank's clock offset to rank 0 (a ping exchange every rank joins), into the metadata."""
    result = clock.exchange(tr.now, tr.rank, dist.get_world_size(), group, originals["isend"], originals["irecv"],
                            timeout_s=timeout_s)
    if result is not None:
        tr.set_clock_offset(when, *result)


def align_and_place(tr: Tracer) -> None:
    """After init_process_group: gathers host/device per rank and measures the clock offsets."""
    backend = dist.get_backend()
    group = _clock_group()
    tr.clock_group = group
    world = dist.get_world_size()
    if torch.cuda.is_available() and backend == "nccl":
        device = f"cuda:{torch.cuda.current_device()}"
    else:
        device = "cpu"
    local = {"host": tr.host, "local_rank": tr.local_rank, "device": device, "pid": os.getpid()}
    infos: list[Any] = [None] * world
    originals["all_gather_object"](infos, local, group=group)
    hosts = [i["host"] for i in infos]
    if len(set(hosts)) == 1 and clock.ENV_FAKE_SKEW not in os.environ:
        # One host, one clock: exact as it is (a measured offset would only add its error).
        tr.writer.set_metadata(clock={"method": "shared_host_clock", "residual_ns": 0})
    else:
        measure_clock(tr, "start", group)
    tr.set_placement(
        hosts,
        {
            "backend": backend,
            "devices": [i["device"] for i in infos],
            "local_ranks": [i["local_rank"] for i in infos],
            "pids": [i["pid"] for i in infos],
        },
    )


def _install_destroy(tr: Tracer) -> None:
    """The end-of-run clock offsets, measured while the program takes down its default group."""
    orig_destroy = dist.destroy_process_group

    def destroy_process_group(group: Any = None) -> Any:
        # Not after a failure (recorded, or an exception on its way out): peers may be gone or stuck.
        healthy = tr._last_failure is None and sys.exc_info()[0] is None
        if group is None and healthy and dist.is_initialized() and not tr.closed and str(tr.rank) in tr.clock_offsets:
            guard.depth += 1
            try:
                measure_clock(tr, "end", getattr(tr, "clock_group", None), timeout_s=clock.END_TIMEOUT_S)
            finally:
                guard.depth -= 1
        return orig_destroy(group)

    destroy_process_group.__wrapped__ = orig_destroy  # type: ignore[attr-defined]
    patch(dist, "destroy_process_group", destroy_process_group)
    patch(dist.distributed_c10d, "destroy_process_group", destroy_process_group)


def _install_init(tr: Tracer) -> None:
    orig_init = dist.init_process_group

    def init_process_group(*args: Any, **kwargs: Any) -> Any:
        t0 = tr.now()
        try:
            result = orig_init(*args, **kwargs)
        except Exception as exc:
            tr.failure(exc, "init_process_group", t0)
            raise
        guard.depth += 1
        try:
            align_and_place(tr)
        finally:
            guard.depth -= 1
        row = tr.new_row("mark", "init_process_group", t0, tr.now())
        row[CAT] = "c10d"
        tr.write(row)
        install_dcp(tr)
        return result

    init_process_group.__wrapped__ = orig_init  # type: ignore[attr-defined]
    patch(dist, "init_process_group", init_process_group)
    patch(dist.distributed_c10d, "init_process_group", init_process_group)


def uninstall() -> None:
    """Removes every hook install() and attach() made and restores every patched function.

    The DDP modules keep nothing of the tracer (a program's own comm hook, which DDP cannot
    unregister, stays wrapped but records nothing); install(tr, modules=...) attaches them again.
    For benchmarks that alternate traced and untraced blocks on one model, and for tests."""
    installed.tracer = None
    for watch in attached:
        watch.detach()
    attached.clear()
    for handle in handles:
        handle.remove()
    handles.clear()
    while patches:
        obj, attr, orig = patches.pop()
        setattr(obj, attr, orig)
    originals.clear()


def install(tr: Tracer, modules: Iterable[DistributedDataParallel] = ()) -> None:
    """Installs every hook, and attaches the given already-built DDP modules; call once per
    process before the program runs (uninstall() undoes all of it)."""
    if installed.tracer is not None:
        raise RuntimeError("tracers.torch.hooks: already installed (uninstall() first)")
    installed.tracer = tr
    c10d = dist.distributed_c10d
    for name, idx, key in COLLECTIVES:
        orig = getattr(c10d, name, None)
        if orig is None:
            continue
        originals[name] = orig
        wrapped = _wrap_collective(tr, name, orig, idx, key)
        if getattr(dist, name, None) is orig:
            patch(dist, name, wrapped)
        patch(c10d, name, wrapped)
    _install_init(tr)
    _install_destroy(tr)
    install_ddp(tr)
    _install_backward(tr)
    _install_optimizer(tr)
    _install_torch_io(tr)
    for module in modules:
        attach(tr, module)


@contextlib.contextmanager
def tracing(tr: Tracer, modules: Iterable[DistributedDataParallel] = ()) -> Iterator[Tracer]:
    """``with tracing(tr, [model]):`` the hooks installed (and the modules attached) inside the block only."""
    install(tr, modules)
    try:
        yield tr
    finally:
        uninstall()
