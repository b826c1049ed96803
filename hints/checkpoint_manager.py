"""Runtime side of checkpoint.json: periodic DCP checkpoints, just-in-time saves on failure, restore.

Used by a training loop (examples/ddp_train.py):

    mgr = CheckpointManager(dir, policy="hints/checkpoint.json", model=ddp, optimizer=opt)
    start = mgr.restore()                 # newest COMPLETE checkpoint, else 0
    for step in range(start, steps):
        with mgr.guard(step):             # a failure in here triggers the JIT save, then exit
            train_step(...)
        mgr.maybe_save(step)              # periodic save when the policy's interval is due
    mgr.close()

Layout: <dir>/step-00000010/ (periodic: DCP files, rng-rank<r>.pt, COMPLETE) and
<dir>/jit-00000010-a0/rank-<r>/ (one full no_dist DCP copy per surviving rank, rng.pt, COMPLETE).
COMPLETE is written last, atomically; a directory without it is never loaded. <dir>/events.jsonl
holds the manager's own records (also sent to tracers.torch.record_event when tracing).
Device-agnostic: works with gloo on CPU and NCCL on GPUs. JIT assumes data parallelism (DDP):
every survivor holds the full state. Sharded training (FSDP) would need more (docs/checkpointing.md).
"""

from __future__ import annotations

import array
import contextlib
import ctypes
import json
import os
import random
import re
import shutil
import signal
import sys
import threading
import time
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import torch
import torch.distributed as dist
import torch.distributed.checkpoint as dcp
from torch.distributed.checkpoint.state_dict import get_state_dict, set_state_dict

MARKER = "COMPLETE"
EVENTS = "events.jsonl"
JIT_EXIT_CODE = 17
"""Exit status after a JIT save: non-zero so torchrun --max-restarts relaunches the job."""
GRACE_S = 20.0
"""Longest a rank keeps running after SIGTERM: below torchrun's ~30 s SIGTERM->SIGKILL gap."""
SETTLE_S = 2.0
"""After SIGTERM, how long a rank not yet saving waits for its step to fail or finish."""
_PERIODIC_RE = re.compile(r"^step-(\d{8})$")
_JIT_RE = re.compile(r"^jit-(\d{8})-a(\d+)$")


class TerminationRequested(Exception):
    """SIGTERM arrived (torchrun tearing the group down, or preemption)."""


def _tracer_module() -> Any:
    try:
        import tracers.torch as tt
    except ImportError:  # tracer not installed: the manager's own log still has the event
        return None
    return tt


def _record(kind: str, name: str, t0: int, t1: int | None = None, **cols: Any) -> None:
    tt = _tracer_module()
    if tt is not None:
        tt.record_event(kind, name, t0, t1, **cols)


def _close_tracer() -> None:
    """Writes the tracer's buffered rows before os._exit (which skips its normal close)."""
    tr = getattr(_tracer_module(), "_tracer", None)
    if tr is not None:
        try:
            tr.close(complete=False)
        except Exception:  # noqa: BLE001 - never let the trace stop the restart
            pass


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
        from hints.format import load_hint

        policy = load_hint(policy, "checkpoint")
    get = policy.get if isinstance(policy, dict) else (lambda k, d=None: getattr(policy, k, d))
    mode = str(get("mode", "jit"))
    if mode not in ("periodic", "jit", "jit+periodic"):
        raise ValueError(f"unknown checkpoint mode {mode!r}")
    steps = get("interval_steps", None)
    return mode, (int(steps) if steps else None)


def _rng_state() -> dict[str, Any]:
    st: dict[str, Any] = {"torch": torch.get_rng_state(), "numpy": np.random.get_state(), "python": random.getstate()}
    if torch.cuda.is_available():
        st["cuda"] = torch.cuda.get_rng_state_all()
    return st


_MT_BYTES = 624 * 4 + 4
"""sizeof(mt19937_state) in numpy and of (int index; uint32_t state[624]) in CPython's _random."""


def _python_random_view() -> Any:
    """A ctypes view of `random`'s Mersenne Twister state inside CPython's Random object (just past
    the 16-byte object header), or None when it does not read exactly what getstate() reports."""
    inst = random._inst  # type: ignore[attr-defined]
    try:
        view = (ctypes.c_char * _MT_BYTES).from_address(id(inst) + 16)
        words = array.array("I", view.raw[4:])
        _, internal, _ = inst.getstate()
        ok = words.itemsize == 4 and (*words, int.from_bytes(view.raw[:4], sys.byteorder, signed=True)) == internal
    except Exception:  # noqa: BLE001 - another interpreter: take getstate() at every step
        return None
    return view if ok else None


def _numpy_random_view() -> Any:
    """A ctypes view of the raw MT19937 state of numpy's global RandomState (the one np.random.*
    functions are bound to), through the documented BitGenerator.ctypes, or None when it does not
    read exactly what get_state() reports."""
    try:
        view = (ctypes.c_char * _MT_BYTES).from_address(np.random.mtrand._rand._bit_generator.ctypes.state_address)
        _, key, pos = np.random.get_state()[:3]
        raw = view.raw
        ok = raw[:-4] == key.tobytes() and int.from_bytes(raw[-4:], sys.byteorder, signed=True) == pos
    except Exception:  # noqa: BLE001 - another numpy: take get_state() at every step
        return None
    return view if ok else None


def _python_state(raw: bytes, gauss_next: float | None) -> tuple:
    """random.getstate()'s value from the raw view's bytes."""
    words = array.array("I", raw[4:])
    return random.Random.VERSION, (*words, int.from_bytes(raw[:4], sys.byteorder, signed=True)), gauss_next


class _RngSnapshot:
    """The RNG states at a step's start, taken at every step (a failure before the optimizer step
    restores them), so it must touch little: right after a step's compute the caches are cold and
    every Python-level operation costs several times what it does in a tight loop (the plain
    torch.get_rng_state() + np.random.get_state() + random.getstate() cost 35 us in a tight loop and
    about 150 us a step in the example's training loop). So the torch CPU state is one 5 KB copy;
    Python's is the raw bytes of its Mersenne Twister (+ `gauss_next`), turned into a getstate()
    tuple only on failure; numpy's legacy get_state() (25 us warm: a Python loop over 624 words) is
    re-read only when its raw state, readable through the documented BitGenerator.ctypes, changed
    or a cached gaussian was pending. Views whose layout does not check out at start-up fall back
    to the full calls. take() returns a compact tuple; full() turns it into _rng_state()'s dict."""

    def __init__(self) -> None:
        self.cuda = torch.cuda.is_available()
        self._torch = torch.default_generator.get_state
        self._py_inst = random._inst  # type: ignore[attr-defined]
        self._py_view = _python_random_view()
        self._np_view = _numpy_random_view()  # None: no fast path
        self._np_raw: bytes | None = None  # raw state when _np_state was read
        self._np_state: tuple | None = None

    def take(self) -> tuple:
        py = self._py_view
        return (self._torch(), self._numpy(),
                (py.raw, self._py_inst.gauss_next) if py is not None else random.getstate(),
                torch.cuda.get_rng_state_all() if self.cuda else None)

    @staticmethod
    def full(snap: tuple) -> dict[str, Any]:
        t, n, p, c = snap
        st = {"torch": t, "numpy": n, "python": _python_state(*p) if isinstance(p[0], bytes) else p}
        if c is not None:
            st["cuda"] = c
        return st

    def _numpy(self) -> tuple:
        view = self._np_view
        if view is None:
            return np.random.get_state()
        raw = view.raw
        # unchanged raw state and no cached gaussian (consuming one leaves the raw state as it is)
        if raw == self._np_raw and self._np_state[3] == 0:  # type: ignore[index]
            return self._np_state  # type: ignore[return-value]
        state = np.random.get_state()
        self._np_state, self._np_raw = state, (raw if view.raw == raw else None)  # None: drawn meanwhile
        return state


def _set_rng_state(st: dict[str, Any]) -> None:
    torch.set_rng_state(st["torch"])
    np.random.set_state(st["numpy"])
    random.setstate(st["python"])
    if "cuda" in st and torch.cuda.is_available():
        torch.cuda.set_rng_state_all(st["cuda"])


def _write_atomic(path: Path, data: bytes) -> None:
    tmp = path.with_name(f".{path.name}.tmp{os.getpid()}")
    with open(tmp, "wb") as fh:
        fh.write(data)
        fh.flush()
        os.fsync(fh.fileno())
    os.replace(tmp, path)


def _dir_bytes(path: Path) -> int:
    return sum(f.stat().st_size for f in path.rglob("*") if f.is_file())


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
    ) -> None:
        self.dir = Path(checkpoint_dir)
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
        self._rng = _RngSnapshot()
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
        if self.attempt > 0:
            # the tracer writes its own restart row at the attempt's start
            self._log("restart", "restart", time.time_ns(), trace=getattr(_tracer_module(), "_tracer", None) is None)

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
        if not trace:
            return
        cols = {k: v for k, v in (("step", step), ("bytes", nbytes)) if v is not None}
        _record(kind, name, t0, t1, **cols, attempt=self.attempt, **args)

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
            done, rng = step + 1, _rng_state()
        elif self._opt_state == "idle":
            done, rng = step, (_RngSnapshot.full(self._rng_at_step) if self._rng_at_step else None)
        else:  # failed inside optimizer.step(): parameters may be half-updated
            self._log("mark", "jit_skipped_torn_state", time.time_ns(), step=step)
            _close_tracer()
            os._exit(JIT_EXIT_CODE)
        try:
            self._save_jit(done, rng or _rng_state())
        except BaseException as err:  # noqa: BLE001 - report, then exit all the same
            self._log("mark", "jit_save_failed", time.time_ns(), step=done, error=str(err)[:300])
        finally:
            _close_tracer()
            os._exit(JIT_EXIT_CODE)  # no collective may run now; torchrun restarts the group

    # ------------------------------------------------------------ saving

    def _state(self) -> dict[str, Any]:
        msd, osd = get_state_dict(self.model, self.optimizer)
        return {"model": msd, "optim": osd}

    def _save_jit(self, done: int, rng: dict[str, Any]) -> None:
        """One full copy per surviving rank, without collectives (the process group is broken)."""
        t0 = time.time_ns()
        d = self.dir / f"jit-{done:08d}-a{self.attempt}" / f"rank-{self.rank}"
        d.mkdir(parents=True, exist_ok=True)
        with _quiet():
            dcp.save(self._state(), checkpoint_id=str(d), no_dist=True)
        torch.save({"rng": rng, "step": done}, d / "rng.pt")
        meta = {"step": done, "kind": "jit", "rank": self.rank, "world_size": self.world, "attempt": self.attempt}
        _write_atomic(d / MARKER, json.dumps(meta).encode())
        self._log("checkpoint", "jit", t0, time.time_ns(), step=done, nbytes=_dir_bytes(d))

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
        d = self.dir / f"step-{self.completed:08d}"
        d.mkdir(parents=True, exist_ok=True)
        torch.save({"rng": _rng_state(), "step": self.completed}, d / f"rng-rank{self.rank}.pt")
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
                  nbytes=_dir_bytes(d) if self.rank == 0 else None)
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
        self._log("mark", "checkpoint_persisted", time.time_ns(), step=int(d.name[5:]))

    def _complete(self, d: Path) -> None:
        """Rank 0 marks a periodic checkpoint complete once DCP wrote its metadata (all ranks done)."""
        if self.rank != 0:
            return
        if not (d / ".metadata").exists():
            raise RuntimeError(f"{d}: DCP metadata missing after save")
        meta = {"step": int(d.name[5:]), "kind": "periodic", "world_size": self.world, "attempt": self.attempt}
        _write_atomic(d / MARKER, json.dumps(meta).encode())
        self._prune()

    def _prune(self) -> None:
        """Keeps the newest `keep` complete checkpoints; drops older ones and older partial ones."""
        found = sorted(self._checkpoints(complete_only=False), key=lambda c: (c[0], c[1] == "periodic"))
        complete = [c for c in found if c[3]]
        if len(complete) <= self.keep:
            return
        oldest_kept = complete[-self.keep][0]
        for step, _kind, path, _ok in found:
            if step < oldest_kept:
                shutil.rmtree(path if _kind == "periodic" else path.parent, ignore_errors=True)

    # ------------------------------------------------------------ restoring

    def _checkpoints(self, complete_only: bool = True) -> list[tuple[int, str, Path, bool]]:
        """(step, kind, loadable dir, complete) for every checkpoint directory found."""
        out = []
        for p in self.dir.iterdir() if self.dir.exists() else ():
            if m := _PERIODIC_RE.match(p.name):
                out.append((int(m.group(1)), "periodic", p, (p / MARKER).exists()))
            elif m := _JIT_RE.match(p.name):
                ranks = sorted(p.glob("rank-*"), key=lambda q: int(q.name[5:]))
                ok = [q for q in ranks if (q / MARKER).exists()]
                out.append((int(m.group(1)), "jit", (ok or ranks or [p])[0], bool(ok)))
        return [c for c in out if c[3] or not complete_only]

    def latest(self) -> tuple[int, str, Path] | None:
        """The newest complete checkpoint (periodic preferred on a tie), or None."""
        found = self._checkpoints()
        if not found:
            return None
        step, kind, path, _ = max(found, key=lambda c: (c[0], c[1] == "periodic"))
        return step, kind, path

    def restore(self) -> int:
        """Loads the newest complete checkpoint on every rank; returns the next step to run."""
        choice = self.latest()
        if self.dist:
            box = [choice]
            dist.broadcast_object_list(box, src=0)
            choice = box[0]
        if choice is None:
            return 0
        step, kind, path = choice
        t0 = time.time_ns()
        with _untraced():
            state = self._state()
        with _quiet():
            dcp.load(state, checkpoint_id=str(path), no_dist=not self.dist)
        set_state_dict(self.model, self.optimizer, model_state_dict=state["model"], optim_state_dict=state["optim"])
        rng_file, src = self._rng_file(kind, path)
        _set_rng_state(torch.load(rng_file, weights_only=False)["rng"])  # our own file: numpy/python states
        self._rng = _RngSnapshot()  # forget numpy's cached state: set_state() replaced it
        self.completed = step
        failed = [e["step"] for e in self.events() if e["kind"] == "failure" and e["attempt"] == self.attempt - 1
                  and e["step"] is not None]
        replayed = (max(failed) - step + 1) if failed else None
        self._log("restore", kind, t0, time.time_ns(), step=step, checkpoint=path.name if kind == "periodic"
                  else f"{path.parent.name}/{path.name}", replayed_steps=replayed, rng_from_rank=src)
        return step

    def _rng_file(self, kind: str, path: Path) -> tuple[Path, int]:
        """This rank's RNG file; a rank that died before a JIT save takes the saver's."""
        if kind == "periodic":
            own = path / f"rng-rank{self.rank}.pt"
            return (own, self.rank) if own.exists() else (path / "rng-rank0.pt", 0)
        own = path.parent / f"rank-{self.rank}"
        if (own / MARKER).exists():
            return own / "rng.pt", self.rank
        return path / "rng.pt", int(path.name[5:])

    def close(self) -> None:
        """Waits for an async save in flight and marks it complete."""
        self._finish_async(wait=True)


def load_policy(path: str | os.PathLike) -> dict[str, Any]:
    """Reads and validates a checkpoint.json hint (hints.format.HintError on a bad file)."""
    from hints.format import load_hint

    return load_hint(path, "checkpoint")


__all__ = ["CheckpointManager", "TerminationRequested", "load_policy", "MARKER", "JIT_EXIT_CODE"]
