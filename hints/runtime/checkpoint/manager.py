"""Runtime side of checkpoint.json: periodic DCP checkpoints, just-in-time saves on failure, restore.

Used by a training loop (examples/ddp_train.py):

    mgr = CheckpointManager(dir, policy="hints/checkpoint.json", model=ddp, optimizer=opt,
                            on_event=tracers.torch.record_event, on_exit=tracers.torch.flush)
    start = mgr.restore()                 # newest COMPLETE checkpoint, else 0
    for step in range(start, steps):
        with mgr.guard(step):             # a failure in here triggers the JIT save, then exit
            train_step(...)
        mgr.maybe_save(step)              # periodic save when the policy's interval is due
    mgr.close()

Directory layout: layout.py; RNG capture: rng.py. <dir>/events.jsonl holds the manager's own
records, each also passed to `on_event` (a tracer's record function) when one is given.
Device-agnostic: works with gloo on CPU and NCCL on GPUs. JIT assumes data parallelism (DDP):
every survivor holds the full state. Sharded training (FSDP) would need more (docs/checkpointing.md).
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import sys
import threading
import time
import warnings
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import Any

import torch
import torch.distributed as dist
import torch.distributed.checkpoint as dcp
from torch.distributed.checkpoint.state_dict import get_state_dict, set_state_dict

from hints.kinds import KINDS
from hints.runtime.checkpoint import layout
from hints.runtime.checkpoint.layout import EVENTS, MARKER
from hints.runtime.checkpoint.rng import RngSnapshot, rng_state, set_rng_state
from hints.runtime.checkpoint.safe_load import (
    CheckpointUnusable,
    SafePlanner,
    SafeReader,
    load_rng_file,
    plain_rng,
    problem,
)

JIT_EXIT_CODE = 17
"""Exit status after a JIT save: non-zero so torchrun --max-restarts relaunches the job."""
GRACE_S = 20.0
"""Longest a rank keeps running after SIGTERM: below torchrun's ~30 s SIGTERM->SIGKILL gap."""
SETTLE_S = 2.0
"""After SIGTERM, how long a rank not yet saving waits for its step to fail or finish."""

EventSink = Callable[..., None]
"""on_event(kind, name, t0_ns, t1_ns, **columns): the signature of tracers.torch.record_event."""


class TerminationRequested(Exception):
    """SIGTERM arrived (torchrun tearing the group down, or preemption)."""


@contextlib.contextmanager
def _untraced() -> Iterator[None]:
    """Hides the restore's internal optimizer.step() (lr=0, it creates the optimizer state that DCP
    loads into) from global optimizer hooks such as the tracer's, which would count it as a step."""
    import torch.optim.optimizer as oo

    hooks = [getattr(oo, n, None) for n in ("_global_optimizer_pre_hooks", "_global_optimizer_post_hooks")]
    saved = [dict(h) if h is not None else None for h in hooks]
    for h in hooks:
        if h is not None:
            h.clear()
    try:
        yield
    finally:
        for h, old in zip(hooks, saved, strict=True):
            if h is not None and old is not None:
                h.update(old)


@contextlib.contextmanager
def _quiet() -> Iterator[None]:
    """DCP warns that it assumes a single process even when no_dist=True says so."""
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message="torch.distributed is disabled")
        yield


def _policy_fields(policy: Any) -> tuple[str, int | None]:
    """(mode, interval_steps) from None, a checkpoint.json path, a dict or a Policy object."""
    if policy is None:
        return "jit", None
    if isinstance(policy, (str, os.PathLike)):
        policy = KINDS["checkpoint"].load(policy)
    get = policy.get if isinstance(policy, dict) else (lambda k, d=None: getattr(policy, k, d))
    mode = str(get("mode", "jit"))
    if mode not in ("periodic", "jit", "jit+periodic"):
        raise ValueError(f"unknown checkpoint mode {mode!r}")
    steps = get("interval_steps", None)
    return mode, (int(steps) if steps else None)


class _Guard:
    """The context manager guard() returns: one per manager, so a step allocates no generator."""

    __slots__ = ("mgr", "step")

    def __init__(self, mgr: CheckpointManager) -> None:
        self.mgr, self.step = mgr, 0

    def __enter__(self) -> None:
        return None

    def __exit__(self, exc_type: Any, exc: BaseException | None, tb: Any) -> bool:
        mgr = self.mgr
        mgr._step = None
        if exc is None:
            if mgr._terminating:
                mgr._fail(self.step, TerminationRequested("SIGTERM"), after_step=True)
        elif mgr._terminating or not isinstance(exc, (KeyboardInterrupt, SystemExit)):
            mgr._fail(self.step, exc)  # jit modes exit the process; periodic re-raises
        return False


def restart_store_warning(env: Mapping[str, str]) -> str | None:
    """Why restarts of this torchrun job may fail, or None: with --max-restarts, torchrun's shared
    rendezvous store keeps a stale address and about a third of restarts fail to reconnect in gloo
    (pytorch/pytorch#135712); TORCH_DISABLE_SHARE_RDZV_TCP_STORE=1 avoids it."""
    restarts = env.get("TORCHELASTIC_MAX_RESTARTS", "0")
    if not restarts.isdigit() or int(restarts) == 0 or env.get("TORCH_DISABLE_SHARE_RDZV_TCP_STORE") == "1":
        return None
    return (f"torchrun --max-restarts {restarts} without TORCH_DISABLE_SHARE_RDZV_TCP_STORE=1: about a third "
            "of restarts fail to reconnect (pytorch#135712); set it in torchrun's environment")


class CheckpointManager:
    """Saves and restores model + optimizer + RNG per the checkpoint policy (see module doc)."""

    def __init__(
        self,
        checkpoint_dir: str | os.PathLike,
        policy: Any = None,
        *,
        model: torch.nn.Module,
        optimizer: torch.optim.Optimizer,
        interval_steps: int | None = None,
        mode: str | None = None,
        keep: int = 2,
        async_save: bool = False,
        grace_s: float = GRACE_S,
        settle_s: float = SETTLE_S,
        handle_sigterm: bool = True,
        on_event: EventSink | None = None,
        on_exit: Callable[[], None] | None = None,
    ) -> None:
        self.dir = Path(checkpoint_dir)
        self.on_event, self.on_exit = on_event, on_exit
        self.dir.mkdir(parents=True, exist_ok=True)
        pmode, psteps = _policy_fields(policy)
        self.mode = mode or pmode
        self.interval_steps = interval_steps or psteps
        if self.mode == "periodic" and not self.interval_steps:
            raise ValueError("periodic checkpointing needs interval_steps (from the policy or the argument)")
        self.model, self.optimizer, self.keep = model, optimizer, keep
        self.grace_s, self.settle_s = grace_s, settle_s
        self.dist = dist.is_available() and dist.is_initialized()
        self.rank = dist.get_rank() if self.dist else 0
        self.world = dist.get_world_size() if self.dist else 1
        self.attempt = int(os.environ.get("TORCHELASTIC_RESTART_COUNT", "0"))
        self.completed = 0  # optimizer steps completed (the next step to run)
        self._step: int | None = None
        self._rng_at_step: tuple | None = None
        self._rng = RngSnapshot()
        self._jit = "jit" in self.mode
        self._guard = _Guard(self)
        self._opt_state = "idle"  # idle | running | done (within the current guarded step)
        self._saving = False
        self._terminating = False  # SIGTERM seen (set by the handler or the watcher thread)
        self._pending: tuple[Any, Path] | None = None  # async save in flight: (future, dir)
        self._group = dist.new_group(backend="gloo") if (async_save and self.dist) else None
        self.async_save = async_save
        optimizer.register_step_pre_hook(self._opt_started)
        optimizer.register_step_post_hook(self._opt_done)
        if handle_sigterm and threading.current_thread() is threading.main_thread():
            self._install_sigterm()
        if self.rank == 0 and self.attempt == 0 and (why := restart_store_warning(os.environ)):
            print(f"paradise: warning: {why}", file=sys.stderr, flush=True)
        if self.attempt > 0:
            # a tracer writes its own restart row at the attempt's start
            self._log("restart", "restart", time.time_ns(), trace=False)

    # ------------------------------------------------------------ records

    def _log(self, kind: str, name: str, t0: int, t1: int | None = None, *, step: int | None = None,
             nbytes: int | None = None, trace: bool = True, **args: Any) -> None:
        rec = {"kind": kind, "name": name, "t0_ns": t0, "t1_ns": t1, "rank": self.rank,
               "attempt": self.attempt, "step": step, "bytes": nbytes, **args}
        line = (json.dumps(rec, sort_keys=True, default=str) + "\n").encode()
        fd = os.open(self.dir / EVENTS, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        try:
            os.write(fd, line)
        finally:
            os.close(fd)
        if not trace or self.on_event is None:
            return
        cols = {k: v for k, v in (("step", step), ("bytes", nbytes)) if v is not None}
        self.on_event(kind, name, t0, t1, **cols, attempt=self.attempt, **args)

    def _before_exit(self) -> None:
        """Lets the tracer write its buffered rows before os._exit (which skips its normal close)."""
        if self.on_exit is not None:
            with contextlib.suppress(Exception):  # never let the trace stop the restart
                self.on_exit()

    def events(self) -> list[dict[str, Any]]:
        """The manager's records from every rank and attempt (events.jsonl)."""
        p = self.dir / EVENTS
        return [json.loads(x) for x in p.read_text().splitlines() if x.strip()] if p.exists() else []

    # ------------------------------------------------------------ SIGTERM defence

    def _install_sigterm(self) -> None:
        """Python handlers cannot run while the main thread is blocked in a collective, so a watcher
        thread woken through set_wakeup_fd enforces the deadline; the handler itself only sets a flag."""
        r, w = os.pipe()
        os.set_blocking(w, False)
        signal.signal(signal.SIGTERM, lambda *a: setattr(self, "_terminating", True))
        signal.set_wakeup_fd(w, warn_on_full_buffer=False)
        threading.Thread(target=self._watch, args=(r,), daemon=True, name="ckpt-sigterm").start()

    def _watch(self, fd: int) -> None:
        while True:
            data = os.read(fd, 64)
            if signal.SIGTERM in data:
                break
        self._terminating = True
        deadline = time.monotonic() + self.grace_s
        time.sleep(self.settle_s)
        while self._saving and time.monotonic() < deadline:
            time.sleep(0.05)
        os._exit(143)

    def _opt_started(self, *_: Any) -> None:
        if self._step is not None:
            self._opt_state = "running"

    def _opt_done(self, *_: Any) -> None:
        if self._step is not None:
            self._opt_state = "done"

    # ------------------------------------------------------------ the step guard

    def guard(self, step: int) -> _Guard:
        """Wraps one training step: on failure (or SIGTERM) save just in time and exit non-zero."""
        self._step, self._opt_state = step, "idle"
        if self._jit:
            self._rng_at_step = self._rng.take()
        self._guard.step = step
        return self._guard

    def _fail(self, step: int, exc: BaseException, after_step: bool = False) -> None:
        """Records the failure; in jit modes saves this rank's consistent state, then exits."""
        self._saving = True
        t_fail = time.time_ns()
        name = "SIGTERM" if self._terminating else type(exc).__name__
        self._log("failure", name, t_fail, step=step, error=str(exc)[:300])
        with contextlib.suppress(Exception):  # an async save that finished still counts
            self._finish_async()
        if "jit" not in self.mode:
            self._saving = False
            return
        if after_step or self._opt_state == "done":
            done, rng = step + 1, rng_state()
        elif self._opt_state == "idle":
            done, rng = step, (RngSnapshot.full(self._rng_at_step) if self._rng_at_step else None)
        else:  # failed inside optimizer.step(): parameters may be half-updated
            self._log("mark", "jit_skipped_torn_state", time.time_ns(), step=step)
            self._before_exit()
            os._exit(JIT_EXIT_CODE)
        try:
            self._save_jit(done, rng or rng_state())
        except BaseException as err:  # noqa: BLE001 - report, then exit all the same
            self._log("mark", "jit_save_failed", time.time_ns(), step=done, error=str(err)[:300])
        finally:
            self._before_exit()
            os._exit(JIT_EXIT_CODE)  # no collective may run now; torchrun restarts the group

    # ------------------------------------------------------------ saving

    def _state(self) -> dict[str, Any]:
        msd, osd = get_state_dict(self.model, self.optimizer)
        return {"model": msd, "optim": osd}

    def _save_jit(self, done: int, rng: dict[str, Any]) -> None:
        """One full copy per surviving rank, without collectives (the process group is broken)."""
        t0 = time.time_ns()
        d = layout.jit_dir(self.dir, done, self.attempt, self.rank)
        d.mkdir(parents=True, exist_ok=True)
        with _quiet():
            dcp.save(self._state(), checkpoint_id=str(d), no_dist=True)
        torch.save({"rng": plain_rng(rng), "step": done}, d / "rng.pt")
        meta = {"step": done, "kind": "jit", "rank": self.rank, "world_size": self.world, "attempt": self.attempt}
        layout.write_atomic(d / MARKER, json.dumps(meta).encode())
        self._log("checkpoint", "jit", t0, time.time_ns(), step=done, nbytes=layout.dir_bytes(d))

    def maybe_save(self, step: int) -> bool:
        """Call after step `step` completed; saves when the periodic interval is due."""
        self.completed = done = step + 1
        if self._pending is not None:
            self._finish_async()
        every = self.interval_steps
        due = bool(every) and self.mode != "jit" and done % every == 0  # type: ignore[operator]
        if due:
            self.save()
        if self._terminating:
            self._fail(step, TerminationRequested("SIGTERM"), after_step=True)
        return due

    def save(self) -> Path:
        """A periodic checkpoint of the state after `self.completed` steps (collective)."""
        t0 = time.time_ns()
        d = layout.periodic_dir(self.dir, self.completed)
        d.mkdir(parents=True, exist_ok=True)
        torch.save({"rng": plain_rng(rng_state()), "step": self.completed}, d / f"rng-rank{self.rank}.pt")
        if self._group is not None:
            self._finish_async(wait=True)
            fut = dcp.async_save(self._state(), checkpoint_id=str(d), process_group=self._group)
            self._pending = (fut, d)
            self._log("checkpoint", "periodic_async", t0, time.time_ns(), step=self.completed)
            return d
        with _quiet():
            dcp.save(self._state(), checkpoint_id=str(d), no_dist=not self.dist)
        self._complete(d)
        self._log("checkpoint", "periodic", t0, time.time_ns(), step=self.completed,
                  nbytes=layout.dir_bytes(d) if self.rank == 0 else None)
        return d

    def _finish_async(self, wait: bool = False) -> None:
        if self._pending is None:
            return
        fut, d = self._pending
        if not (wait or fut.done()):
            return
        fut.result()
        self._pending = None
        self._complete(d)
        self._log("mark", "checkpoint_persisted", time.time_ns(), step=layout.periodic_step(d))

    def _complete(self, d: Path) -> None:
        """Rank 0 marks a periodic checkpoint complete once DCP wrote its metadata (all ranks done)."""
        if self.rank != 0:
            return
        if not (d / ".metadata").exists():
            raise RuntimeError(f"{d}: DCP metadata missing after save")
        meta = {"step": layout.periodic_step(d), "kind": "periodic", "world_size": self.world, "attempt": self.attempt}
        layout.write_atomic(d / MARKER, json.dumps(meta).encode())
        self._prune()

    def _prune(self) -> None:
        layout.prune(self.dir, self.keep)

    # ------------------------------------------------------------ restoring

    def latest(self) -> tuple[int, str, Path] | None:
        """The newest complete checkpoint (periodic preferred on a tie), or None."""
        return layout.latest(self.dir)

    def restore(self) -> int:
        """Loads the newest usable complete checkpoint on every rank; returns the next step to run.

        A checkpoint whose files do not match its metadata, or that fails to load on any rank, is
        skipped with one line on stderr, and the previous complete one is tried."""
        found = self._usable_candidates() if self.rank == 0 else None
        if self.dist:
            box = [found]
            dist.broadcast_object_list(box, src=0)
            found = box[0]
        touched = False  # a load that failed part-way may have overwritten some of the model
        for step, kind, path in found or ():
            t0 = time.time_ns()
            touched = True
            try:
                src = self._load(kind, path)
                why = None
            except CheckpointUnusable as exc:
                why = str(exc)
            except Exception as exc:  # noqa: BLE001 - DCP raises its own types; any failure to load counts
                first = (str(exc).strip().splitlines() or [""])[0][:200]
                why = f"{path}: does not load ({type(exc).__name__}: {first})"
            whys = [why]
            if self.dist:
                whys = [None] * self.world
                dist.all_gather_object(whys, why)
            bad = next((w for w in whys if w), None)
            if bad is not None:
                self._skip(bad)
                continue
            self._rng = RngSnapshot()  # forget numpy's cached state: set_state() replaced it
            self.completed = step
            failed = [e["step"] for e in self.events() if e["kind"] == "failure"
                      and e["attempt"] == self.attempt - 1 and e["step"] is not None]
            replayed = (max(failed) - step + 1) if failed else None
            self._log("restore", kind, t0, time.time_ns(), step=step, checkpoint=path.name if kind == "periodic"
                      else f"{path.parent.name}/{path.name}", replayed_steps=replayed, rng_from_rank=src)
            return step
        if touched:
            raise CheckpointUnusable(f"{self.dir}: no complete checkpoint loads, and a failed load left the model "
                                     "partly overwritten; remove the damaged checkpoints to start afresh")
        return 0

    def _usable_candidates(self) -> list[tuple[int, str, Path]]:
        """The complete checkpoints, newest first, less those whose data do not match their metadata."""
        out = []
        for step, kind, path in layout.newest_first(self.dir):
            why = problem(path)
            if why is None:
                out.append((step, kind, path))
            else:
                self._skip(why)
        return out

    def _skip(self, why: str) -> None:
        if self.rank == 0:
            print(f"paradise: checkpoint skipped: {why}; trying the previous complete one", file=sys.stderr,
                  flush=True)
        self._log("mark", "checkpoint_skipped", time.time_ns(), error=why[:300])

    def _load(self, kind: str, path: Path) -> int:
        """Loads model, optimizer and RNG from one checkpoint (as data only); returns the RNG's rank."""
        with _untraced():
            state = self._state()
        with _quiet():  # collective: a failure here is raised on every rank alike
            dcp.load(state, storage_reader=SafeReader(str(path)), planner=SafePlanner(), no_dist=not self.dist)
        rng_path, src = layout.rng_file(kind, path, self.rank)
        rng = load_rng_file(rng_path)["rng"]
        set_state_dict(self.model, self.optimizer, model_state_dict=state["model"], optim_state_dict=state["optim"])
        set_rng_state(rng)
        return src

    def close(self) -> None:
        """Waits for an async save in flight and marks it complete."""
        self._finish_async(wait=True)


def load_policy(path: str | os.PathLike) -> dict[str, Any]:
    """Reads checkpoint.json, judged by the checkpoint kind's one validation (HintError on a bad file)."""
    return KINDS["checkpoint"].load(path)


__all__ = ["CheckpointManager", "TerminationRequested", "load_policy", "MARKER", "JIT_EXIT_CODE"]
