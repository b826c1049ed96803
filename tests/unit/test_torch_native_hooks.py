"""The torch tracer's compiled hooks (tracers/torch/_hooks.c) and its Python ones record the same rows:
the same training run (plain steps, a no_sync accumulation step, a backward that fails, a restored
optimizer state, a program's own phase row, steps the program marks itself) traced once with each, row
for row but the times; and the rows' times keep their order either way."""

from __future__ import annotations

import collections
import copy
import itertools

import pytest

torch = pytest.importorskip("torch")
dist = pytest.importorskip("torch.distributed")
pytest.importorskip("tracers.torch._hooks", reason="compiled hooks not built")

from torch.nn.parallel import DistributedDataParallel as DDP  # noqa: E402

from paradise.engines.duckdb_engine import DuckDBEngine  # noqa: E402
from paradise.store import open_trace  # noqa: E402

WIDTH = 32
START: dict = {}  # the optimizer's state both traced runs start from
COLUMNS = "kind, name, cat, coll, obj, bytes, dtype, \"group\", group_size, step, t1 IS NULL AS open"


def _run(model: DDP, opt: torch.optim.Optimizer, tr) -> None:  # noqa: ANN001
    """Three steps, one accumulation step under no_sync, a backward that fails (caught), one more step;
    the optimizer's state of the start restored (its step count goes back), a step with a phase row of
    the program's own; then two steps the program marks itself (tracers.torch.step)."""
    import tracers.torch as api

    opt.load_state_dict(copy.deepcopy(START))  # both runs number their steps from the same count

    def step(sync: bool = True) -> None:
        opt.zero_grad(set_to_none=True)
        if not sync:
            with model.no_sync():
                model(torch.randn(4, WIDTH)).square().mean().backward()
        model(torch.randn(4, WIDTH)).square().mean().backward()
        opt.step()

    for _ in range(3):
        step()
    step(sync=False)
    loss = model(torch.randn(4, WIDTH)).square().mean()
    loss.backward()
    with pytest.raises(RuntimeError):
        loss.backward()  # the graph is freed: a failure row
    step()
    opt.load_state_dict(copy.deepcopy(START))  # the next step is numbered from the restored count
    step()
    api._tracer = tr
    try:
        with api.phase("data"):
            pass
        step()
        for n in (500, 501):
            with api.step(n):
                step()
    finally:
        api._tracer = None


def _trace(tmp_path, monkeypatch, native: str, model: DDP, opt: torch.optim.Optimizer) -> list[dict]:
    from tracers.torch import hooks
    from tracers.torch.tracer import Tracer

    monkeypatch.setenv("PARADISE_NATIVE_RECORDER", native)
    out = tmp_path / f"trace-{native}"
    tr = Tracer(out, rank=0, world_size=1)
    with hooks.tracing(tr, [model]):
        assert tr.recorder_kind.startswith("native" if native == "1" else "python")
        _run(model, opt, tr)
    tr.close(complete=True)
    with DuckDBEngine(open_trace(out)) as eng:
        return eng.sql(f"SELECT {COLUMNS}, t0, t1 FROM events WHERE kind NOT IN ('mark') "
                       "ORDER BY t0, kind, name, obj").to_pylist()


def test_compiled_and_python_hooks_record_the_same_rows(tmp_path, world_of_one, monkeypatch):
    torch.manual_seed(0)
    model = DDP(torch.nn.Sequential(*[torch.nn.Linear(WIDTH, WIDTH) for _ in range(3)]), bucket_cap_mb=0.005)
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)  # keeps a step count: restored numbering
    for _ in range(3):  # DDP rebuilds its buckets: the bucket hooks go in at the first traced forward
        opt.zero_grad()
        model(torch.randn(4, WIDTH)).sum().backward()
        opt.step()
    START.update(copy.deepcopy(opt.state_dict()))
    native = _trace(tmp_path, monkeypatch, "1", model, opt)
    python = _trace(tmp_path, monkeypatch, "0", model, opt)

    def shape(rows: list[dict]) -> list[tuple]:
        return [tuple(v for k, v in r.items() if k not in ("t0", "t1")) for r in rows]

    assert shape(native) == shape(python)
    # Adam counted 3 steps before: 3 plain steps, the no_sync one, one after the failure; the start's
    # count restored: 3, 4 (with the program's phase); then the steps the program marks (the first
    # of them also ended by the optimizer hook, before the program's first mark turns that off)
    assert sorted(r["step"] for r in native if r["kind"] == "step") == [3, 3, 4, 4, 5, 5, 6, 7, 500, 501]
    # the program's phase row is kept (before the step's first forward: outside the step, untagged)
    assert [r["step"] for r in native if r["kind"] == "phase" and r["name"] == "data"] == [None]
    kinds = {(r["kind"], r["name"] if r["kind"] in ("phase", "failure") else r["cat"]) for r in native}
    assert {("phase", p) for p in ("forward", "loss", "backward", "optimizer")} <= kinds
    assert ("collective", "ddp_bucket") in kinds and ("failure", "RuntimeError") in kinds
    buckets_per_step: dict[int, int] = {}
    for r in native:
        if r["cat"] == "ddp_bucket" and r["step"] is not None and r["step"] < 500:  # noqa: PLR2004 - marked: ended twice
            buckets_per_step[r["step"]] = buckets_per_step.get(r["step"], 0) + 1
    step_rows = collections.Counter(r["step"] for r in native if r["kind"] == "step")
    per_backward = {n: k / step_rows[n] for n, k in buckets_per_step.items()}  # step numbers repeat after the restore
    assert len(set(per_backward.values())) == 1 and min(per_backward.values()) >= 2  # none under no_sync
    for rows in (native, python):
        assert all(r["t1"] is None or r["t0"] <= r["t1"] for r in rows)
        steps = [r for r in rows if r["kind"] == "step"]
        once = [s for s in steps if step_rows[s["step"]] == 1 and s["step"] < 500]  # noqa: PLR2004
        assert len(once) >= 2
        for s in once:  # every phase of a step lies inside its step row
            inside = [r for r in rows if r["kind"] == "phase" and r["step"] == s["step"]]
            assert inside and all(s["t0"] <= r["t0"] and r["t1"] <= s["t1"] for r in inside)


def test_the_tracer_says_which_recorder_runs(tmp_path, monkeypatch):
    """Tracer() is the compiled recorder's NativeTracer unless it is switched off or not built."""
    import sys

    from tracers.torch.nativetracer import NativeTracer
    from tracers.torch.tracer import Tracer

    def made(env: str | None) -> Tracer:
        if env is not None:
            monkeypatch.setenv("PARADISE_NATIVE_RECORDER", env)
        tr = Tracer(tmp_path / f"t-{env}-{len(list(tmp_path.iterdir()))}", rank=0, world_size=1)
        tr.close(complete=True)
        return tr

    tr = made(None)
    assert type(tr) is NativeTracer and tr.recorder_kind == "native" and tr.native is not None
    tr = made("0")
    assert type(tr) is Tracer and tr.recorder_kind == "python (PARADISE_NATIVE_RECORDER=0)" and tr.native is None
    monkeypatch.setitem(sys.modules, "tracers.torch._hooks", None)  # as if pip could not build it
    tr = made("1")
    assert type(tr) is Tracer and tr.recorder_kind == "python (native hooks not built)"


def _buffered_rec():
    """A Rec holding 18 buffered records of three plain steps (loss, two bucket launches, backward,
    optimizer, step end each), driven through the compiled hooks without torch; its lists."""
    import types

    from tracers.torch import _hooks

    class Owner:  # the tracer's methods a Rec may call
        def flush(self) -> None: ...
        def phases_overflow(self) -> None: ...

    times = itertools.count(10**12, 1_000)  # past the small-int cache: every value is a new object
    rec, lists = _hooks.Rec(), ([], [], [])
    rec.bind(Owner(), times.__next__, 0, *lists, [], 10**9, 10**9, 10**9)
    rec.dcp_installed = True
    bucket = _hooks.bucket(rec, types.SimpleNamespace(require_backward_grad_sync=True),
                           rec.add_bucket((None, 3, 4096, "float32", "default", 1)))
    backward = _hooks.backward(rec, lambda: (bucket(), bucket()))
    post = _hooks.optimizer_post(rec, lambda tr: None)
    for _ in range(3):
        rec.fwd_end = next(times)
        backward()
        post(Owner)
    return rec, lists


def test_a_memory_error_while_draining_loses_no_record():
    """Every allocation of a drain made to fail in turn (CPython's _testcapi.set_nomemory): the
    drain raises MemoryError and the next one hands over every record, none lost or doubled."""
    testcapi = pytest.importorskip("_testcapi")
    rec, expected = _buffered_rec()
    rec.drain()
    assert [len(x) for x in expected] == [3 * 3 * 3, 3 * 2 * 7, 3 * 5]  # 3 steps: 3 phases, 2 buckets, a step end
    failures = 0
    for k in itertools.count():
        rec, lists = _buffered_rec()
        testcapi.set_nomemory(k, k + 1)
        try:
            rec.drain()
            failed = False
        except MemoryError:
            failed = True
        finally:
            testcapi.remove_mem_hooks()
        if not failed:
            break
        failures += 1
        rec.drain()
        assert lists == expected, f"allocation {k} failed"
    assert failures >= 18  # at least one failure for each record
