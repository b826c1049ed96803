"""Cases that launch a real program (charmrun, torchrun): bootstraps that must ignore the
working folder (item 1), ending paradise ends the job (item 5), damaged hints in a traced run
(item 9), a full disk during a traced run (item 4), a failed rank's summary (item 10) and
checkpoint folders (item 11). Slow (seconds each): kept few."""

from __future__ import annotations

import json
import shutil
import signal
from pathlib import Path

from tests.hostile import make
from tests.hostile.case import case

ROOT = Path(__file__).resolve().parents[3]
RING = ROOT / "tests" / "charm_programs" / "ring.py"
HANG = ROOT / "tests" / "charm_programs" / "hang.py"
LAUNCH_TIMEOUT_S = 60.0

TORCH_FAIL = '''
import torch.distributed as dist


def _bucket_done(x):
    raise ValueError("boom in rank " + str(x))


def main():
    dist.init_process_group("gloo")
    if dist.get_rank() == 1:
        _bucket_done(dist.get_rank())
    dist.barrier()
    dist.destroy_process_group()


main()
'''
TORCH_OK = '''
import torch.distributed as dist
dist.init_process_group("gloo")
dist.barrier()
dist.destroy_process_group()
print("RESULT ok")
'''
TORCH_SLOW = '''
import time
import torch.distributed as dist
dist.init_process_group("gloo")
for _ in range(600):
    time.sleep(0.1)
'''


def _copy(src: Path, name: str):
    return lambda d: shutil.copy(src, d / name) and None


def _plant(d: Path, rel: str, text: str) -> None:
    p = d / rel
    p.parent.mkdir(parents=True, exist_ok=True)
    p.write_text(text)


PWN = "open('pwned', 'w').write('x')\nraise SystemExit(3)\n"


def _planted_hints(d: Path) -> None:
    shutil.copy(RING, d / "ring.py")
    mapping = make.mapping_doc(program="ring", collections={})
    (d / "hints").mkdir()
    (d / "hints" / "mapping.json").write_text(json.dumps(mapping))


def _planted_tracer(d: Path) -> None:
    shutil.copy(RING, d / "ring.py")
    _plant(d, "tracers/__init__.py", PWN)
    _plant(d, "tracers/charm/__init__.py", PWN)
    _plant(d, "tracers/charm/run.py", PWN)
    _plant(d, "paradise/__init__.py", PWN)
    _plant(d, "paradise/boot/__init__.py", PWN)
    _plant(d, "paradise/boot/charm.py", PWN)


def _planted_torch(d: Path) -> None:
    (d / "train.py").write_text(TORCH_OK)
    _plant(d, "tracers/__init__.py", PWN)
    _plant(d, "tracers/torch/__init__.py", PWN)
    _plant(d, "tracers/torch/run.py", PWN)
    _plant(d, "hints/__init__.py", PWN)


L = dict(launch=True, timeout_s=LAUNCH_TIMEOUT_S, warnings_ok=True)
case("launch-charm-planted-hints-folder", "trace", "charm", "-o", "t", "--hints", "hints", "ring.py",
     setup=_planted_hints, rc=(0,), outputs=("t",), item="1", **L)
case("launch-charm-planted-tracer-module", "trace", "charm", "-o", "t", "ring.py", setup=_planted_tracer, rc=(0,),
     outputs=("t",), item="1", **L)
case("launch-torch-planted-tracer-module", "trace", "torch", "-o", "t", "train.py", setup=_planted_torch, rc=(0,),
     outputs=("t",), item="1", **L)

# item 5: ending paradise ends the job (the runner checks that no process of the case is left)
for sig, label in ((signal.SIGTERM, "sigterm"), (signal.SIGKILL, "sigkill")):
    case(f"launch-charm-{label}-ends-job", "trace", "charm", "-o", "t", "hang.py", setup=_copy(HANG, "hang.py"),
         rc=(-sig, 128 + sig, 1, 2, 124, 143), outputs=("t",), signal_after=(int(sig), 6.0), item="5", **L)
case("launch-torch-sigkill-ends-job", "trace", "torch", "-o", "t", "slow.py",
     setup=lambda d: (d / "slow.py").write_text(TORCH_SLOW) and None,
     rc=(-9, 137), outputs=("t",), signal_after=(int(signal.SIGKILL), 12.0), item="5", **L)

# item 9: damaged hint files in a traced run fall back to the default map with one line
for name, text in (("index-1e400", '{"format": "paradise-hints/1", "kind": "mapping", "strategy": "greedy", '
                                   '"provenance": {"program": "ring", "pes": 2}, '
                                   '"collections": {"Cell#0": {"[1e400,1]": 1}}}'),
                   ("deep-json", "[" * 100_000 + "]" * 100_000)):
    def _setup(d: Path, text=text) -> None:
        shutil.copy(RING, d / "ring.py")
        (d / "h").mkdir()
        (d / "h" / "mapping.json").write_text(text)

    case(f"launch-charm-hints-{name}", "trace", "charm", "-o", "t", "--hints", "h", "ring.py", setup=_setup,
         rc=(0,), outputs=("t",), item="9", **L)


def _fifo_hints(d: Path) -> None:
    shutil.copy(RING, d / "ring.py")
    (d / "h").mkdir()
    make.fifo(d / "h" / "mapping.json")


case("launch-charm-hints-fifo", "trace", "charm", "-o", "t", "--hints", "h", "ring.py", setup=_fifo_hints,
     rc=(0,), outputs=("t",), item="9", **L)

# item 4: a full disk during a traced run is a failed run naming the PEs whose data are incomplete
case("launch-charm-full-disk", "trace", "charm", "-o", "t", "ring.py", setup=_copy(RING, "ring.py"),
     fsize_bytes=4096, rc=(1, 2), mention="PE", outputs=("t",), item="4", **L)

# item 10: a failed rank's one-line summary ends in the error, not a stack frame
case("launch-torch-failed-rank-summary", "trace", "torch", "-o", "t", "fail.py",
     setup=lambda d: (d / "fail.py").write_text(TORCH_FAIL) and None, rc=(2,), mention="boom in rank 1",
     outputs=("t",), item="10-torch", **L)

# item 11: checkpoint folders are data: damaged ones fall back, none runs code
DDP = ROOT / "examples" / "ddp_train.py"
DDP_ARGS = ("--steps", "3", "--features", "8", "--hidden", "8", "--layers", "1", "--batch-size", "4",
            "--checkpoint-dir", "ck", "--checkpoint-every", "2")


class _Pwn:
    def __reduce__(self):
        return (exec, ("open('pwned', 'w').write('x')",))


def _ckpt(kind: str):
    def build(d: Path) -> None:
        import pickle

        ck = d / "ck"
        if kind == "stray-rank":
            (ck / "jit-00000001-a0" / "rank-x").mkdir(parents=True)
        elif kind == "complete-over-nothing":
            (ck / "step-00000002").mkdir(parents=True)
            (ck / "step-00000002" / "COMPLETE").write_text("")
        elif kind == "pickled-metadata":
            (ck / "step-00000002").mkdir(parents=True)
            (ck / "step-00000002" / ".metadata").write_bytes(pickle.dumps(_Pwn()))
            (ck / "step-00000002" / "rng-rank0.pt").write_bytes(pickle.dumps(_Pwn()))
            (ck / "step-00000002" / "COMPLETE").write_text("")

    return build


for kind in ("stray-rank", "complete-over-nothing", "pickled-metadata"):
    case(f"launch-torch-checkpoint-{kind}", "trace", "torch", "-o", "t", str(DDP), *DDP_ARGS, setup=_ckpt(kind),
         rc=(0, 2), outputs=("t", "ck"), item="11", **{**L, "timeout_s": 150.0})
