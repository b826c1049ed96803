"""A small, deterministic DDP training job: an MLP on synthetic data, run under torchrun.

    torchrun --nproc_per_node 2 examples/ddp_train.py --steps 20
    paradise trace torch --nproc 2 -o trace/ examples/ddp_train.py --steps 20

Gloo on CPU, NCCL when CUDA is available. Data is a pure function of (seed, rank, step), so a
run resumed from a checkpoint at step k sees the same batches as an uninterrupted run. Rank 0
prints ``param_sha256=<hex>`` of the final parameters as its last line (equal hashes = equal
models). ``--straggler-rank R --straggler-ms T`` makes rank R sleep T ms inside every forward
pass (a slow rank as a tracer sees it: longer compute, peers waiting in all-reduce).

The loop is ``train()``: ``train_step()`` is one optimizer step, and ``manager`` (an object with
``maybe_save(step)``) is where a checkpoint manager plugs in.
"""

from __future__ import annotations

import argparse
import contextlib
import datetime
import hashlib
import os
import signal
import sys
import time
from typing import Any

import torch
import torch.distributed as dist
from torch import nn
from torch.nn.parallel import DistributedDataParallel as DDP


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--steps", type=int, default=20, help="optimizer steps to run")
    p.add_argument("--batch-size", type=int, default=32, help="samples per rank per step")
    p.add_argument("--seed", type=int, default=0, help="seed of the model init and the data")
    p.add_argument("--features", type=int, default=256, help="input features")
    p.add_argument("--hidden", type=int, default=512, help="hidden width")
    p.add_argument("--layers", type=int, default=4, help="hidden layers")
    p.add_argument("--classes", type=int, default=10)
    p.add_argument("--lr", type=float, default=1e-3)
    p.add_argument("--bucket-cap-mb", type=float, default=None,
                   help="DDP gradient bucket size, MB (default: comm.json's ddp.bucket_cap_mb in --hints DIR, else 25)")
    p.add_argument("--backend", choices=("auto", "gloo", "nccl"), default="auto")
    p.add_argument("--threads", type=int, default=1, help="intra-op threads per rank (CPU)")
    p.add_argument("--pg-timeout-s", type=float, default=60.0, help="process-group timeout")
    p.add_argument("--straggler-rank", type=int, default=None, help="rank that is slow every step")
    p.add_argument("--straggler-ms", type=float, default=0.0, help="extra ms per forward on that rank")
    p.add_argument("--log-every", type=int, default=0, help="print the loss every N steps on rank 0")
    p.add_argument("--timing", action="store_true", help="rank 0 prints the training loop's wall and CPU ns (benchmarks)")
    add_checkpoint_args(p)
    return p.parse_args(argv)


def add_checkpoint_args(p: argparse.ArgumentParser) -> None:
    """Checkpointing (hints/runtime/checkpoint/) and fault injection (first attempt only)."""
    p.add_argument("--checkpoint-dir", default=None, help="save/restore checkpoints here (enables the manager)")
    p.add_argument("--hints", default=None, help="checkpoint.json (or a folder holding it) with the policy")
    p.add_argument("--checkpoint-every", type=int, default=None, help="periodic interval in steps (overrides --hints)")
    p.add_argument("--checkpoint-mode", choices=("periodic", "jit", "jit+periodic"), default=None)
    p.add_argument("--async-checkpoint", action="store_true", help="periodic saves with dcp.async_save")
    p.add_argument("--fail-at-step", type=int, default=None, help="inject a failure in this step")
    p.add_argument("--fail-rank", type=int, default=1, help="rank that fails")
    p.add_argument("--fail-mode", choices=("exit", "kill", "raise", "hang"), default="exit")


def inject_fault(args: argparse.Namespace, rank: int, step: int) -> None:
    """The injected failure, before the step's compute, on the first attempt only."""
    if args.fail_at_step != step or rank != args.fail_rank:
        return
    if os.environ.get("TORCHELASTIC_RESTART_COUNT", "0") != "0":
        return
    if args.fail_mode == "exit":
        os._exit(3)
    if args.fail_mode == "kill":
        os.kill(os.getpid(), signal.SIGKILL)
    if args.fail_mode == "raise":
        raise RuntimeError(f"injected failure at step {step} on rank {rank}")
    while True:  # hang: this rank stops calling collectives; peers time out (--pg-timeout-s)
        time.sleep(3600)


def make_manager(args: argparse.Namespace, model: DDP, optimizer: torch.optim.Optimizer) -> Any:
    """The checkpoint manager when --checkpoint-dir is given, else None."""
    if not args.checkpoint_dir:
        return None
    import tracers.torch as tt
    from hints.format import HintError
    from hints.runtime.checkpoint import CheckpointManager, load_policy

    policy = args.hints
    if policy and os.path.isdir(policy):
        policy = os.path.join(policy, "checkpoint.json")
    if policy:
        try:
            policy = load_policy(policy)
        except HintError as exc:  # a refused hint: say so in one line, run with the default (jit)
            print(f"ddp_train: warning: {exc}; using just-in-time checkpoints", file=sys.stderr)
            policy = None
    return CheckpointManager(args.checkpoint_dir, policy, model=model, optimizer=optimizer,
                             interval_steps=args.checkpoint_every, mode=args.checkpoint_mode,
                             async_save=args.async_checkpoint, on_event=tt.record_event, on_exit=tt.flush)


class MLP(nn.Module):
    """A plain MLP; `delay_s` > 0 sleeps in every forward (the injected straggler)."""

    def __init__(self, features: int, hidden: int, layers: int, classes: int, delay_s: float = 0.0) -> None:
        super().__init__()
        dims = [features] + [hidden] * layers
        blocks: list[nn.Module] = []
        for a, b in zip(dims[:-1], dims[1:]):
            blocks += [nn.Linear(a, b), nn.ReLU()]
        blocks.append(nn.Linear(dims[-1], classes))
        self.net = nn.Sequential(*blocks)
        self.delay_s = delay_s

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if self.delay_s:
            time.sleep(self.delay_s)
        return self.net(x)


def setup(args: argparse.Namespace) -> tuple[int, int, torch.device]:
    """Joins the process group (torchrun's env://) and picks backend and device."""
    use_cuda = args.backend == "nccl" or (args.backend == "auto" and torch.cuda.is_available())
    if use_cuda:
        local_rank = int(os.environ.get("LOCAL_RANK", "0"))
        torch.cuda.set_device(local_rank)
        device = torch.device("cuda", local_rank)
        backend = "nccl"
    else:
        torch.set_num_threads(args.threads)
        device = torch.device("cpu")
        backend = "gloo"
    dist.init_process_group(backend=backend, timeout=datetime.timedelta(seconds=args.pg_timeout_s))
    return dist.get_rank(), dist.get_world_size(), device


def bucket_cap_mb(args: argparse.Namespace, world_size: int) -> float:
    """--bucket-cap-mb, else the ddp.bucket_cap_mb of comm.json in the --hints folder (or
    PARADISE_HINTS) made by `paradise analyze --hints-out` for this program and world size, else 25."""
    if args.bucket_cap_mb is not None:
        return args.bucket_cap_mb
    folder = args.hints if args.hints and os.path.isdir(args.hints) else os.environ.get("PARADISE_HINTS")
    path = os.path.join(folder, "comm.json") if folder else None
    if path and os.path.exists(path):
        from hints.format import HintError, load_hint

        try:
            cap = (load_hint(path, "comm", program="ddp_train", pes=world_size).get("ddp") or {}).get("bucket_cap_mb")
            if cap:
                return float(cap)
        except HintError as exc:  # refused: say so in one line, keep DDP's default
            print(f"ddp_train: warning: {exc}; using bucket_cap_mb=25", file=sys.stderr)
    return 25.0


def build(args: argparse.Namespace, rank: int, device: torch.device) -> tuple[DDP, torch.optim.Optimizer]:
    """Model (same init on every rank from --seed), DDP wrapper and optimizer."""
    torch.manual_seed(args.seed)
    delay = args.straggler_ms / 1e3 if args.straggler_rank == rank else 0.0
    model = MLP(args.features, args.hidden, args.layers, args.classes, delay_s=delay).to(device)
    ids = [device.index] if device.type == "cuda" else None
    ddp = DDP(model, device_ids=ids, bucket_cap_mb=bucket_cap_mb(args, dist.get_world_size()))
    optimizer = torch.optim.Adam(ddp.parameters(), lr=args.lr)
    return ddp, optimizer


def batch_for(args: argparse.Namespace, rank: int, step: int, device: torch.device) -> tuple[torch.Tensor, torch.Tensor]:
    """The batch of (rank, step): a pure function of the seed, so resumed runs see the same data."""
    g = torch.Generator().manual_seed(args.seed * 1_000_003 + rank * 7919 + step)
    x = torch.randn(args.batch_size, args.features, generator=g)
    y = torch.randint(0, args.classes, (args.batch_size,), generator=g)
    return x.to(device), y.to(device)


def train_step(model: DDP, optimizer: torch.optim.Optimizer, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    """One optimizer step: forward, backward (DDP all-reduces gradients), update."""
    optimizer.zero_grad(set_to_none=True)
    loss = nn.functional.cross_entropy(model(x), y)
    loss.backward()
    optimizer.step()
    return loss.detach()


def param_sha256(model: nn.Module) -> str:
    """Hash of the parameters and buffers in state_dict order (equal hashes = equal models)."""
    h = hashlib.sha256()
    for key, value in model.state_dict().items():
        h.update(key.encode())
        h.update(value.detach().cpu().contiguous().numpy().tobytes())
    return h.hexdigest()


def train(
    args: argparse.Namespace,
    model: DDP,
    optimizer: torch.optim.Optimizer,
    rank: int,
    device: torch.device,
    start_step: int = 0,
    manager: Any = None,
) -> None:
    """The training loop; `manager.maybe_save(step)` runs after each completed step."""
    for step in range(start_step, args.steps):
        x, y = batch_for(args, rank, step, device)
        with manager.guard(step) if manager is not None else contextlib.nullcontext():
            inject_fault(args, rank, step)
            loss = train_step(model, optimizer, x, y)
        if args.log_every and rank == 0 and (step + 1) % args.log_every == 0:
            print(f"step {step + 1} loss {loss.item():.4f}", flush=True)
        if manager is not None:
            manager.maybe_save(step)


def _default_store():
    """The rendezvous store, kept past destroy_process_group for the exit handshake."""
    try:
        return dist.distributed_c10d._get_default_store()
    except Exception:
        return None


def _leave_store_host_last(store, rank: int, world: int, timeout_s: float = 30.0) -> None:
    """Rank 0 hosts the TCP store: if it exits while a peer is still tearing down its process
    group, that peer can abort (SIGABRT) on the lost store. Peers check out; rank 0 waits for them."""
    if store is None or world <= 1:
        return
    try:
        if rank != 0:
            store.add("paradise/exit", 1)
            return
        deadline = time.monotonic() + timeout_s
        while store.add("paradise/exit", 0) < world - 1 and time.monotonic() < deadline:
            time.sleep(0.01)
    except Exception:
        pass  # a peer already gone: nothing left to protect


def main(argv: list[str] | None = None) -> None:
    args = parse_args(argv)
    rank, world, device = setup(args)
    finished = False
    try:
        model, optimizer = build(args, rank, device)
        manager = make_manager(args, model, optimizer)
        start = manager.restore() if manager is not None else 0
        t_loop, cpu_loop = time.perf_counter_ns(), time.process_time_ns()
        train(args, model, optimizer, rank, device, start_step=start, manager=manager)
        t_loop, cpu_loop = time.perf_counter_ns() - t_loop, time.process_time_ns() - cpu_loop
        if manager is not None:
            manager.close()
        digest = param_sha256(model.module)
        dist.barrier()
        finished = True
    finally:
        store = _default_store() if finished else None  # after a failure, peers may be gone
        dist.destroy_process_group()
        _leave_store_host_last(store, rank, world)
    if rank == 0:
        if args.timing:
            print(f"train_loop_ns={t_loop} train_loop_cpu_ns={cpu_loop} steps={args.steps - start}", flush=True)
        print(f"param_sha256={digest}", flush=True)


if __name__ == "__main__":
    main()
