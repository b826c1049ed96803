"""Per-rank bootstrap: ``python -P -m tracers.torch.run SCRIPT [ARGS...]`` (torchrun runs this).

Installs the hooks, then runs the unmodified script as ``__main__`` with runpy. An exception
escaping the script is recorded as a ``failure`` row (then re-raised, so torchrun sees the
failure); the rank's file is closed either way (complete=false when the script failed).
Without ``PARADISE_TRACE`` in the environment the script simply runs untraced.
"""

from __future__ import annotations

import os
import runpy
import sys
from pathlib import Path
from typing import Any

import tracers.torch as api
from tracers import job, program
from tracers.torch.native import say_recorder
from tracers.torch.tracer import COL, ENV_DIR, ENV_FLUSH_S, ENV_ORIGIN, ENV_PROGRAM, Tracer

ENV_PROFILER = "PARADISE_TRACE_PROFILER"
ENV_PROFILER_DIR = "PARADISE_TRACE_PROFILER_DIR"
"""Where profiler-only runs (no PARADISE_TRACE) write rank-N.json."""


def tracer_from_env(script: str) -> Tracer:
    """The tracer of this rank, from torchrun's and the launcher's environment."""
    env = os.environ
    origin = env.get(ENV_ORIGIN)
    return Tracer(
        env[ENV_DIR],
        rank=int(env.get("RANK", "0")),
        world_size=int(env.get("WORLD_SIZE", "1")),
        local_rank=int(env.get("LOCAL_RANK", "0")),
        restart=int(env.get("TORCHELASTIC_RESTART_COUNT", "0")),
        origin_ns=int(origin) if origin else None,
        program=env.get(ENV_PROGRAM) or Path(script).stem,
        flush_interval_s=float(env.get(ENV_FLUSH_S, "2.0")),
    )


def _always_record(step: int) -> object:
    """A schedule that records throughout; having one makes the profiler mark ProfilerStep#N."""
    from torch.profiler import ProfilerAction

    return ProfilerAction.RECORD


def _start_profiler(tr: Tracer) -> Any:
    """torch.profiler over the whole run; ProfilerStep#N follows the tracer's steps."""
    import torch

    activities = [torch.profiler.ProfilerActivity.CPU]
    if torch.cuda.is_available():
        activities.append(torch.profiler.ProfilerActivity.CUDA)
    prof = torch.profiler.profile(activities=activities, schedule=_always_record)
    prof.start()
    prof._paradise_steps = 0  # profiler.step() calls: the windows after the last one are no step

    def step() -> None:
        prof._paradise_steps += 1
        prof.step()

    tr.step_callbacks.append(step)
    return prof


def _stop_profiler(tr: Tracer, prof: Any, directory: str) -> None:
    prof.stop()
    out = Path(directory) / "kineto"
    out.mkdir(parents=True, exist_ok=True)
    suffix = "" if tr.restart == 0 else f".restart-{tr.restart:02d}"
    path = out / f"rank-{tr.rank}{suffix}.json"
    prof.export_chrome_trace(str(path))
    _add_distributed_info(path, tr.rank, tr.world_size, tail_step=getattr(prof, "_paradise_steps", None))


def _add_distributed_info(path: Path, rank: int, world_size: int, tail_step: int | None = None) -> None:
    """Adds distributedInfo (rank, world size) when the profile ended after destroy_process_group;
    drops the ProfilerStep#<tail_step> window, which runs from the last step's end to the
    profiler's stop (teardown, no step: a 10-step run has 10 steps, not 11)."""
    import json

    doc = json.loads(path.read_text())
    changed = False
    if isinstance(doc, dict) and tail_step and isinstance(doc.get("traceEvents"), list):
        tail = f"ProfilerStep#{tail_step}"
        kept = [e for e in doc["traceEvents"] if not (isinstance(e, dict) and e.get("name") == tail)]
        changed = len(kept) != len(doc["traceEvents"])
        doc["traceEvents"] = kept
    if isinstance(doc, dict) and not isinstance(doc.get("distributedInfo"), dict):
        doc["distributedInfo"] = {"rank": rank, "world_size": world_size}
        changed = True
    if changed:
        tmp = path.with_suffix(".tmp")
        tmp.write_text(json.dumps(doc))
        os.replace(tmp, path)


def _run_profiled_only(script: str) -> None:
    import torch
    import torch.optim.optimizer as optim_mod

    activities = [torch.profiler.ProfilerActivity.CPU]
    if torch.cuda.is_available():
        activities.append(torch.profiler.ProfilerActivity.CUDA)
    prof = torch.profiler.profile(activities=activities, schedule=_always_record)
    optim_mod.register_optimizer_step_post_hook(lambda *_: prof.step())
    prof.start()
    try:
        runpy.run_path(script, run_name="__main__")
    finally:
        prof.stop()
        out = Path(os.environ.get(ENV_PROFILER_DIR, "."))
        out.mkdir(parents=True, exist_ok=True)
        path = out / f"rank-{os.environ.get('RANK', '0')}.json"
        prof.export_chrome_trace(str(path))
        _add_distributed_info(path, int(os.environ.get("RANK", "0")), int(os.environ.get("WORLD_SIZE", "1")))


def run(script: str, args: list[str]) -> None:
    """Runs the script traced (or untraced when PARADISE_TRACE is unset)."""
    program.prepare(script, args)
    directory = os.environ.get(ENV_DIR)
    if not directory:
        if os.environ.get(ENV_PROFILER) == "1":  # profiler alone (a baseline for bench/torch_overhead.py)
            _run_profiled_only(script)
        else:
            runpy.run_path(script, run_name="__main__")
        return
    from tracers.torch import hooks

    tr = tracer_from_env(script)
    if tr.restart:
        row = tr.new_row("restart", "restart", tr.now(), None)
        row[COL["obj"]] = tr.restart
        tr.write(row)
    hooks.install(tr)
    tr.writer.set_metadata(extra={**(tr.writer.metadata.get("extra") or {}), "recorder": tr.recorder_kind})
    if tr.rank == 0:
        say_recorder(tr.recorder_kind)
    api._tracer = tr
    prof = _start_profiler(tr) if os.environ.get(ENV_PROFILER) == "1" else None
    ok = False
    try:
        runpy.run_path(script, run_name="__main__")
        ok = True
    except SystemExit as exc:
        ok = exc.code in (None, 0)
        if not ok:
            tr.failure(exc, "exit")
        raise
    except BaseException as exc:
        tr.failure(exc, "script")
        raise
    finally:
        api._tracer = None
        if prof is not None:
            try:
                _stop_profiler(tr, prof, directory)
            except Exception:  # noqa: BLE001 - the profile is an extra; never lose the trace for it
                pass
        tr.close(complete=ok)
        release_modules()


def release_modules() -> None:
    """Unhooks the DDP modules and frees what the script left in reference cycles while the
    interpreter is whole: a DDP module freed during its finalization lets a gloo worker thread
    release its last work there, and that thread, unable to take the GIL, aborts the process
    (SIGABRT, "terminate called without an active exception"; the tracer's hooks tie each DDP
    module into a cycle, so it would otherwise live until then)."""
    import gc

    from tracers.torch import hooks

    hooks.uninstall()
    gc.collect()


def main() -> None:
    job.die_with_parent()
    if len(sys.argv) < 2:
        sys.exit("usage: python -m tracers.torch.run SCRIPT [ARGS...]")
    run(sys.argv[1], sys.argv[2:])


if __name__ == "__main__":
    main()
