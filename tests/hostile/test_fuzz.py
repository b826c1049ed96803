"""Longer mutation fuzzing on request: `pytest tests/hostile/test_fuzz.py --fuzz-seconds 600`.

CI runs the seed-0 fuzz cases as part of the corpus (test_corpus.py); this test draws fresh
seeds for the given time and reports every failing case with the seed that replays it
(HOSTILE_FUZZ=SEED:COUNT pytest tests/hostile -k fuzz-READER-SEED)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time

import pytest

from tests.hostile.case import REGISTRY
from tests.hostile.corpus import fuzzed
from tests.hostile.test_corpus import ROOT, check

BATCH = 10
"""Cases per reader per server run."""


def test_fuzz_for_a_while(request, tmp_path):
    seconds = request.config.getoption("--fuzz-seconds")
    if not seconds:
        pytest.skip("pass --fuzz-seconds N for fresh-seed fuzzing (CI runs seed 0 in test_corpus)")
    deadline = time.monotonic() + seconds
    failures: list[str] = []
    seed = int(time.time())
    while time.monotonic() < deadline:
        seed += 1
        env = {**os.environ, "HOSTILE_FUZZ": f"{seed}:{BATCH}",
               "PYTHONPATH": str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", "")}
        ids = [f"fuzz-{reader}-{seed}-{k}" for reader in fuzzed.READERS for k in range(BATCH)]
        fuzzed.register(seed, BATCH)
        proc = subprocess.run([sys.executable, "-m", "tests.hostile.server", str(tmp_path / str(seed)), *ids],
                              cwd=ROOT, env=env, capture_output=True, text=True, timeout=BATCH * 60)
        for line in proc.stdout.splitlines():
            r = json.loads(line)
            try:
                check(REGISTRY[r["id"]], r)
            except AssertionError as exc:
                failures.append(f"{r['id']} (HOSTILE_FUZZ={seed}:{BATCH}): {str(exc).splitlines()[0]}")
    assert not failures, "\n".join(failures)
