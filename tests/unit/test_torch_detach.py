"""tracers.torch.hooks: uninstall() leaves no hook on a DDP model, and attaching the same model again
records the same rows per step (bench/torch_overhead.py times one model with the hooks on and off)."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")
dist = pytest.importorskip("torch.distributed")

from torch.nn.parallel import DistributedDataParallel as DDP  # noqa: E402

from paradise.engines.duckdb_engine import DuckDBEngine  # noqa: E402
from paradise.store import open_trace  # noqa: E402

WIDTH = 64
BUCKET_CAP_MB = 0.02  # ~20 KB buckets: several buckets for the 4 x 64 x 64 MLP (16 KB of weights a layer)


def _model() -> tuple[DDP, torch.optim.Optimizer]:
    torch.manual_seed(0)
    layers = [torch.nn.Sequential(torch.nn.Linear(WIDTH, WIDTH), torch.nn.ReLU()) for _ in range(4)]
    model = DDP(torch.nn.Sequential(*layers), bucket_cap_mb=BUCKET_CAP_MB)
    return model, torch.optim.Adam(model.parameters(), lr=1e-3)


def _steps(model: DDP, opt: torch.optim.Optimizer, n: int) -> None:
    for _ in range(n):
        opt.zero_grad(set_to_none=True)
        model(torch.randn(8, WIDTH)).square().mean().backward()
        opt.step()


def _hooks_of(model: DDP) -> dict:
    """Every place the tracer hooks into, as counts and identities."""
    import torch.optim.optimizer as optim_mod

    return {
        "forward": (len(model._forward_pre_hooks), len(model._forward_hooks), len(model._backward_hooks)),
        "module_attr": hasattr(model, "_paradise_buckets"),
        "grad": [len(p._post_accumulate_grad_hooks or {}) for p in model.parameters()],
        "comm_hook": model._get_ddp_logging_data().get("comm_hook"),
        "optimizer": (len(optim_mod._global_optimizer_pre_hooks), len(optim_mod._global_optimizer_post_hooks)),
        "functions": (torch.autograd.backward, DDP.__init__, DDP.forward, DDP.register_comm_hook, dist.all_reduce,
                      torch.save),
    }


@pytest.mark.parametrize("native", ["1", "0"])
def test_detach_leaves_no_hook_and_reattaching_records_the_same_rows(tmp_path, world_of_one, monkeypatch, native):
    monkeypatch.setenv("PARADISE_NATIVE_RECORDER", native)
    from tracers.torch import hooks
    from tracers.torch.tracer import Tracer

    model, opt = _model()
    _steps(model, opt, 3)  # DDP rebuilds its buckets in step 1; its logging data names them from step 2
    plain = _hooks_of(model)
    tr = Tracer(tmp_path / "trace", rank=0, world_size=1)
    traced_steps = []
    for first in (3, 8):  # traced steps 3-5, untraced 6-7, traced 8-10
        with hooks.tracing(tr, [model]):
            on = _hooks_of(model)
            # the buckets' gradient hooks are in place before the first traced step
            # forward: DDP.forward wrapped (no module hook: nn.Module's fast call path stays)
            assert on["forward"] == plain["forward"] and on["functions"][2] is not plain["functions"][2]
            assert sum(on["grad"]) >= 2 and on["optimizer"] == (1, 1)
            assert on["comm_hook"] in (None, "")  # DDP's built-in C++ all-reduce stays in use
            _steps(model, opt, 3)
        traced_steps += range(first, first + 3)
        assert _hooks_of(model) == plain
        _steps(model, opt, 2)
    tr.close(complete=True)
    assert _hooks_of(model) == plain

    sizes = [int(x) for x in model._get_ddp_logging_data()["rebuilt_bucket_sizes"].replace(",", " ").split()]
    param_bytes = sum(p.numel() * p.element_size() for p in model.parameters())
    assert len(sizes) >= 2 and sum(sizes) == param_bytes
    with DuckDBEngine(open_trace(tmp_path / "trace")) as eng:
        steps = [r["step"] for r in eng.sql("SELECT step FROM events WHERE kind = 'step' ORDER BY step").to_pylist()]
        per_step = eng.sql(
            "SELECT step, kind, CASE kind WHEN 'phase' THEN name ELSE cat END AS what, count(*) AS n, "
            "sum(bytes)::BIGINT AS bytes, count(t1) AS ended "
            "FROM events WHERE step IS NOT NULL AND kind <> 'step' GROUP BY ALL ORDER BY ALL"
        ).to_pylist()
    assert steps == traced_steps
    rows: dict[int, set] = {}
    for r in per_step:
        rows.setdefault(r["step"], set()).add((r["kind"], r["what"], r["n"], r["bytes"], r["ended"]))
    expected = {("phase", name, 1, None, 1) for name in ("forward", "loss", "backward", "optimizer")}
    expected.add(("collective", "ddp_bucket", len(sizes), param_bytes, len(sizes)))
    assert rows == {s: expected for s in traced_steps}


def test_a_programs_own_comm_hook_records_nothing_once_detached(tmp_path, world_of_one):
    """DDP cannot unregister a comm hook: the wrapped hook of the program stays, passing straight through."""
    from torch.distributed.algorithms.ddp_comm_hooks.default_hooks import allreduce_hook

    from tracers.torch import hooks
    from tracers.torch.tracer import Tracer

    tr = Tracer(tmp_path / "trace", rank=0, world_size=1)
    with hooks.tracing(tr):
        model, opt = _model()
        model.register_comm_hook(None, allreduce_hook)
        _steps(model, opt, 3)  # steps 0-2 traced
    _steps(model, opt, 2)  # steps 3-4 through the wrapped hook, detached
    tr.close(complete=True)
    assert model._get_ddp_logging_data().get("comm_hook")  # the program's hook is still DDP's
    with DuckDBEngine(open_trace(tmp_path / "trace")) as eng:
        buckets = eng.sql("SELECT DISTINCT step FROM events WHERE cat = 'ddp_bucket' ORDER BY step").to_pylist()
        steps = eng.sql("SELECT step FROM events WHERE kind = 'step' ORDER BY step").to_pylist()
    assert [r["step"] for r in steps] == [0, 1, 2]
    assert [r["step"] for r in buckets] == [0, 1, 2]  # one launch per step through the comm hook, none after


@pytest.mark.parametrize("native", ["1", "0"])
def test_hooks_read_the_clock_without_a_python_frame(tmp_path, world_of_one, monkeypatch, native):
    """A traced step reads the clock by C calls (time.time_ns), never through Tracer.now's frame,
    enters Python only for its hooks (forward, backward, a launch per bucket, optimizer pre and
    post) and the step's end (Tracer.end_step, which hands the rows over without a call), and records
    one phase row per hook and a row per bucket. The compiled hooks (tracers/torch/_hooks.c) enter no
    Python frame of the tracer at all and read the clock in C."""
    import sys

    monkeypatch.setenv("PARADISE_NATIVE_RECORDER", native)
    if native == "1":
        pytest.importorskip("tracers.torch._hooks", reason="compiled hooks not built")

    from tracers.torch import hooks
    from tracers.torch.tracer import Tracer

    model, opt = _model()
    _steps(model, opt, 3)
    tr = Tracer(tmp_path / "trace", rank=0, world_size=1)
    calls: dict[str, int] = {}

    def count(frame, event, arg):  # noqa: ANN001, ANN202
        if event == "call":
            key = frame.f_code.co_qualname
            if "/tracers/" in frame.f_code.co_filename:
                calls["tracer frames"] = calls.get("tracer frames", 0) + 1
        elif event == "c_call" and "/tracers/torch/" in frame.f_code.co_filename:
            key = f"c:{getattr(arg, '__name__', '')}"
        else:
            return
        calls[key] = calls.get(key, 0) + 1

    n = 4
    with hooks.tracing(tr, [model]):
        _steps(model, opt, 1)
        sys.setprofile(count)
        try:
            _steps(model, opt, n)
        finally:
            sys.setprofile(None)
    tr.close(complete=True)
    buckets = len(model._get_ddp_logging_data()["rebuilt_bucket_sizes"].replace(",", " ").split())
    assert calls.get("Tracer.now", 0) == 0
    if native == "1":
        assert tr.recorder_kind == "native"
        assert calls.get("tracer frames", 0) == 0 and calls.get("c:time_ns", 0) == 0
    else:
        assert tr.recorder_kind.startswith("python")
        # forward 2 reads, backward 2, optimizer pre and post 1 each, a launch per bucket
        assert calls.get("c:time_ns", 0) == n * (6 + buckets)
        assert calls["tracer frames"] == n * (4 + buckets + 1)
        assert calls.get("Tracer.end_step", 0) == n
    with DuckDBEngine(open_trace(tmp_path / "trace")) as eng:
        last = "step > (SELECT min(step) FROM events WHERE kind = 'step')"  # the n profiled steps
        phases = eng.sql(f"SELECT name, count(*) AS n FROM events WHERE kind = 'phase' AND {last} "
                         "GROUP BY name ORDER BY name").to_pylist()
        rows = eng.sql(f"SELECT count(*) AS n FROM events WHERE cat = 'ddp_bucket' AND {last}").to_pylist()
    assert phases == [{"name": name, "n": n} for name in ("backward", "forward", "loss", "optimizer")]
    assert rows == [{"n": n * buckets}]
