"""Every hostile case of tests/hostile/corpus keeps paradise's promise for bad input: no
traceback, the expected exit code, a refusal in one line naming the file or option, no input
changed, nothing written outside the chosen output, no hang, no memory blow-up.

All cases run in one server process (tests/hostile/server.py), two at a time; each test checks
the outcome of its case.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.hostile.case import REGISTRY, Case
from tests.hostile.corpus import fuzzed  # noqa: F401 - registers every case

ROOT = Path(__file__).resolve().parents[2]

class Outcomes:
    """The server's outcomes, read as they come: each test waits only for its own case."""

    def __init__(self, proc: subprocess.Popen) -> None:
        self.proc = proc
        self.seen: dict[str, dict] = {}

    def get(self, cid: str) -> dict | None:
        while cid not in self.seen:
            line = self.proc.stdout.readline()
            if not line:
                return None
            if line.startswith("{"):
                r = json.loads(line)
                self.seen[r["id"]] = r
        return self.seen[cid]


@pytest.fixture(scope="session")
def outcomes(tmp_path_factory, request):
    """One server running every selected case, in the order the tests ask for them. Under
    pytest-xdist every worker holds all items: only --dist loadgroup (tests/conftest.py puts the
    corpus in one group) sends them all to the one worker that starts the server."""
    if os.environ.get("PYTEST_XDIST_WORKER") and not getattr(request.config.option, "loadgroup", False):
        pytest.fail("tests/hostile/test_corpus.py under pytest-xdist needs --dist loadgroup "
                    "(otherwise every worker runs the whole corpus)")
    ids = [item.callspec.params["cid"] for item in request.session.items
           if item.originalname == "test_case" and hasattr(item, "callspec")]
    base = tmp_path_factory.mktemp("hostile")
    env = dict(os.environ)
    env["PYTHONPATH"] = str(ROOT) + os.pathsep + env.get("PYTHONPATH", "")
    proc = subprocess.Popen([sys.executable, "-m", "tests.hostile.server", str(base), *ids], cwd=ROOT, env=env,
                            stdout=subprocess.PIPE, text=True)
    try:
        yield Outcomes(proc)
    finally:
        proc.kill()
        proc.wait()


def _under(path: str, outputs: tuple[str, ...]) -> bool:
    norm = os.path.normpath(path)
    return any(norm == os.path.normpath(o) or norm.startswith(os.path.normpath(o) + os.sep) for o in outputs)


def check(case: Case, r: dict) -> None:
    """Asserts the promises on one outcome (also used by the fuzz test)."""
    assert "setup_error" not in r, f"case setup failed:\n{r.get('setup_error')}"
    out, err = r["stdout"], r["stderr"]
    what = f"\n--- stderr ---\n{err[-3000:]}\n--- stdout ---\n{out[-1500:]}"
    assert not r["timed_out"], f"hang: still running after {case.timeout_s} s{what}"
    assert "Traceback (most recent call last)" not in err + out, f"traceback{what}"
    assert "\x1b" not in out + err and "\x9b" not in out + err, f"raw escape sequence in the output{what}"
    assert r["rc"] in case.rc, f"exit code {r['rc']}, expected {case.rc}{what}"
    lines = [ln for ln in err.splitlines() if ln.strip()]
    if case.warnings_ok:
        lines = [ln for ln in lines if not ln.startswith("paradise: warning:")]
    if r["rc"] == 2:
        assert len(lines) == 1, f"refusal is {len(lines)} lines, expected one{what}"
        assert case.mention is None or case.mention in lines[0], f"refusal does not name {case.mention!r}{what}"
    for p in case.gone:
        assert p in r["changed"], f"{p} should have been removed{what}"
    for text in case.stdout_has:
        assert text in out, f"stdout lacks {text!r}{what}"
    for text in case.stdout_lacks:
        assert text not in out, f"stdout holds {text!r}{what}"
    bad_changes = [p for p in r["changed"] if not _under(p, case.outputs)]
    assert not bad_changes, f"changed input or protected file(s): {bad_changes}{what}"
    strays = [p for p in r["created"] if not _under(p, case.outputs)]
    assert not strays, f"wrote outside the chosen output: {strays}{what}"
    assert not r["tmp_left"], f"left temp files in TMPDIR: {r['tmp_left']}{what}"
    assert not r.get("leftover_pids"), f"processes left running: {r['leftover_pids']}{what}"


def _params():
    out = []
    for cid in sorted(REGISTRY):
        if cid.startswith("fuzz-") and cid not in fuzzed.CI_IDS and cid not in fuzzed.EXTRA_IDS:
            continue
        out.append(pytest.param(cid, id=cid))
    return out


@pytest.mark.parametrize("cid", _params())
def test_case(cid: str, outcomes: Outcomes) -> None:
    r = outcomes.get(cid)
    assert r is not None, "the server gave no outcome for this case (it crashed)"
    check(REGISTRY[cid], r)


def test_corpus_size_and_coverage() -> None:
    """At least 300 hand-made cases, over every command and every item of issue 15."""
    hand = [c for c in REGISTRY.values() if not c.id.startswith("fuzz-")]
    assert len(hand) >= 300
    commands = {c.argv[0] if c.argv[0] not in ("import", "trace") else " ".join(c.argv[:2]) for c in hand if c.argv}
    assert commands >= {"info", "analyze", "merge", "whatif", "compare", "policy", "demo", "import kineto",
                        "import projections", "trace charm", "trace torch"}
    items = {c.item for c in hand}
    assert items >= {"1", "2", "3", "4", "5", "6", "7", "8", "9", "10", "10-torch"}
