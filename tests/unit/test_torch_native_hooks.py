"""The torch tracer's compiled hooks (tracers/torch/_hooks.c) and its Python ones record the same rows:
the same training run (plain steps, a no_sync accumulation step, a backward that fails) traced once with
each, row for row but the times; and the rows' times keep their order either way."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")
dist = pytest.importorskip("torch.distributed")
pytest.importorskip("tracers.torch._hooks", reason="compiled hooks not built")

from torch.nn.parallel import DistributedDataParallel as DDP  # noqa: E402

from paradise.engines.duckdb_engine import DuckDBEngine  # noqa: E402
from paradise.store import open_trace  # noqa: E402

WIDTH = 32
COLUMNS = "kind, name, cat, coll, obj, bytes, dtype, \"group\", group_size, step IS NULL AS untagged, t1 IS NULL AS open"


@pytest.fixture()
def world_of_one(tmp_path):
    store = dist.FileStore(str(tmp_path / "store"), 1)
    dist.init_process_group("gloo", store=store, rank=0, world_size=1)
    yield
    dist.destroy_process_group()


def _run(model: DDP, opt: torch.optim.Optimizer) -> None:
    """Three steps, one accumulation step under no_sync, a backward that fails (caught), one more step."""
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


def _trace(tmp_path, monkeypatch, native: str, model: DDP, opt: torch.optim.Optimizer) -> list[dict]:
    from tracers.torch import hooks
    from tracers.torch.tracer import Tracer

    monkeypatch.setenv("PARADISE_NATIVE_RECORDER", native)
    out = tmp_path / f"trace-{native}"
    tr = Tracer(out, rank=0, world_size=1)
    with hooks.tracing(tr, [model]):
        assert tr.recorder_kind.startswith("native" if native == "1" else "python")
        _run(model, opt)
    tr.close(complete=True)
    with DuckDBEngine(open_trace(out)) as eng:
        first = eng.sql("SELECT min(step) AS s FROM events WHERE kind = 'step'").to_pylist()[0]["s"]
        rows = eng.sql(f"SELECT {COLUMNS}, step - {first} AS rel_step, t0, t1 FROM events "
                       "WHERE kind NOT IN ('mark') ORDER BY t0, kind, name, obj").to_pylist()
    return rows


def test_compiled_and_python_hooks_record_the_same_rows(tmp_path, world_of_one, monkeypatch):
    torch.manual_seed(0)
    model = DDP(torch.nn.Sequential(*[torch.nn.Linear(WIDTH, WIDTH) for _ in range(3)]), bucket_cap_mb=0.005)
    opt = torch.optim.SGD(model.parameters(), lr=1e-3)
    for _ in range(3):  # DDP rebuilds its buckets: the bucket hooks go in at the first traced forward
        opt.zero_grad()
        model(torch.randn(4, WIDTH)).sum().backward()
        opt.step()
    native = _trace(tmp_path, monkeypatch, "1", model, opt)
    python = _trace(tmp_path, monkeypatch, "0", model, opt)

    def shape(rows: list[dict]) -> list[tuple]:
        return [tuple(v for k, v in r.items() if k not in ("t0", "t1")) for r in rows]

    assert shape(native) == shape(python)
    kinds = {(r["kind"], r["name"] if r["kind"] in ("phase", "failure") else r["cat"]) for r in native}
    assert {("phase", p) for p in ("forward", "loss", "backward", "optimizer")} <= kinds
    assert ("collective", "ddp_bucket") in kinds and ("failure", "RuntimeError") in kinds
    buckets_per_step = {}
    for r in native:
        if r["cat"] == "ddp_bucket":
            buckets_per_step[r["rel_step"]] = buckets_per_step.get(r["rel_step"], 0) + 1
    assert len(set(buckets_per_step.values())) == 1 and min(buckets_per_step.values()) >= 2  # none under no_sync
    for rows in (native, python):
        assert all(r["t1"] is None or r["t0"] <= r["t1"] for r in rows)
        steps = [r for r in rows if r["kind"] == "step"]
        for s in steps:  # every phase of a step lies inside its step row
            inside = [r for r in rows if r["kind"] == "phase" and r["rel_step"] == s["rel_step"]]
            assert inside and all(s["t0"] <= r["t0"] and r["t1"] <= s["t1"] for r in inside)
