"""Mutation fuzzing of the readers: Kineto JSON, Projections .sts and logs, trace Parquet, hint
files and model outputs. Each case mutates a valid input with a seeded random generator, so a
failure names its seed and replays exactly. CI runs FUZZ_CASES per reader with seed 0;
`pytest --fuzz-seconds N` (tests/conftest.py) adds cases from fresh seeds for N seconds
(HOSTILE_FUZZ=SEED:COUNT in the environment registers them here)."""

from __future__ import annotations

import gzip
import json
import os
import random
from collections.abc import Callable
from pathlib import Path

from tests.hostile import make
from tests.hostile.case import case

FUZZ_CASES = 12
"""Per reader in CI: 5 readers x 12 = 60 cases, a few seconds on 2 cores."""
TOKENS = (b"1e400", b"-1", b"NaN", b"Infinity", b"[", b"{", b'"', b"\\", b"99999999999999999999", b"\x1b[31m",
          b"[/b]", b"\x00", b"-9223372036854775808", b"null", b"0", b"\xff\xfe")


def mutate(data: bytes, rng: random.Random, keep: int = 0) -> bytes:
    """1-4 random edits after the first `keep` bytes: flips, deletions, duplications, tokens, cuts."""
    buf = bytearray(data)
    for _ in range(rng.randint(1, 4)):
        if len(buf) <= keep + 1:
            break
        i = rng.randrange(keep, len(buf))
        op = rng.randrange(5)
        if op == 0:
            buf[i] ^= 1 << rng.randrange(8)
        elif op == 1:
            del buf[i : i + rng.randint(1, 64)]
        elif op == 2:
            j = min(len(buf), i + rng.randint(1, 256))
            buf[i:i] = buf[i:j] * rng.randint(1, 8)
        elif op == 3:
            buf[i:i] = rng.choice(TOKENS)
        else:
            del buf[rng.randrange(max(keep, len(buf) // 2), len(buf)) :]
    return bytes(buf)


def _kineto(rng: random.Random) -> Callable[[Path], None]:
    def build(d: Path) -> None:
        evs = [{"ph": "X", "cat": rng.choice(["cpu_op", "kernel", "user_annotation", "gpu_user_annotation"]),
                "name": rng.choice(["aten::mm", "ProfilerStep#3", "nccl:all_reduce", "gemm"]), "pid": 1, "tid": 1,
                "ts": 100.0 + 10 * k, "dur": 5.0, "args": {"Input Dims": [[2, 2]], "stream": 7}}
               for k in range(20)]
        text = json.dumps(make.kineto_doc(0, evs)).encode()
        (d / "k.json").write_bytes(mutate(text, rng))

    return build


def _projections(rng: random.Random) -> Callable[[Path], None]:
    def build(d: Path) -> None:
        sts = make.projections(d, gz=False)
        target = rng.choice([sts, sts.parent / "hello.0.log", sts.parent / "hello.1.log"])
        target.write_bytes(mutate(target.read_bytes(), rng))

    return build


def _parquet(rng: random.Random) -> Callable[[Path], None]:
    def build(d: Path) -> None:
        make.charm_trace(d)
        f = d / "t" / "pe-00001.parquet"
        f.write_bytes(mutate(f.read_bytes(), rng, keep=4))

    return build


def _hints(rng: random.Random) -> Callable[[Path], None]:
    def build(d: Path) -> None:
        make.charm_trace(d)
        h = make.hints_dir(d)
        p = h / "mapping.json"
        p.write_bytes(mutate(p.read_bytes(), rng))

    return build


def _outputs(rng: random.Random) -> Callable[[Path], None]:
    def build(d: Path) -> None:
        make.outputs(d, "o1")
        f = make.outputs(d, "o2") / "outputs.parquet"
        f.write_bytes(mutate(f.read_bytes(), rng, keep=4))

    return build


READERS = {
    "kineto": (_kineto, ("import", "kineto", "k.json", "-o", "k.parquet"), ("k.parquet",)),
    "projections": (_projections, ("import", "projections", "proj/hello.sts", "-o", "p.parquet"), ("p.parquet",)),
    "parquet": (_parquet, ("info", "t"), ()),
    "hints": (_hints, ("whatif", "t", "--hints", "h"), ()),
    "outputs": (_outputs, ("compare", "o1", "o2", "--json"), ()),
}


def register(seed: int, count: int) -> list[str]:
    ids = []
    for reader, (make_build, argv, outs) in READERS.items():
        for k in range(count):
            rng = random.Random(f"{seed}:{reader}:{k}")
            cid = f"fuzz-{reader}-{seed}-{k}"
            item = {"kineto": "7", "projections": "8", "hints": "9"}.get(reader, "6")
            case(cid, *argv, setup=make_build(rng), rc=(0, 2), outputs=outs, warnings_ok=True, item=item)
            ids.append(cid)
    return ids


CI_IDS = register(0, FUZZ_CASES)
EXTRA_IDS: list[str] = []
if os.environ.get("HOSTILE_FUZZ"):
    _seed, _count = (int(x) for x in os.environ["HOSTILE_FUZZ"].split(":"))
    EXTRA_IDS = register(_seed, _count)
_ = gzip
