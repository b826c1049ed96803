"""hints.apply_ddp: the bucket size of comm.json applied to a model without the tracer; refusals."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")
dist = pytest.importorskip("torch.distributed")

import hints  # noqa: E402
from hints.format import make_hint, provenance, write_hint  # noqa: E402


@pytest.fixture(scope="module")
def world_of_one(tmp_path_factory):
    store = dist.FileStore(str(tmp_path_factory.mktemp("pg") / "store"), 1)
    dist.init_process_group("gloo", store=store, rank=0, world_size=1)
    yield
    dist.destroy_process_group()


def _hint(d, cap, program="pytest", pes=1):
    doc = make_hint("comm", {"combine": [], "threshold": {}, "ddp": {"bucket_cap_mb": cap}},
                    provenance=provenance(trace_fingerprint="t", program=program, pes=pes, source="torch"),
                    justified_by=[])
    write_hint(d, doc, force=True)
    return d


def test_apply_ddp_uses_the_hinted_bucket_size(tmp_path, world_of_one, monkeypatch):
    monkeypatch.setattr("sys.argv", ["pytest"])
    model = hints.apply_ddp(torch.nn.Linear(4, 4), _hint(tmp_path / "h", 1.5))
    assert model.bucket_bytes_cap == int(1.5 * 1024 * 1024)
    again = hints.apply_ddp(model, tmp_path / "h")  # a DDP model is re-wrapped around its module
    assert again.module is model.module and again.bucket_bytes_cap == model.bucket_bytes_cap


@pytest.mark.parametrize(("kw", "why"), [({"program": "other"}, "made for program 'other'"),
                                         ({"pes": 4}, "made for 4 PEs"),
                                         ({"cap": -1}, "above 0 and at most 1048576, not -1"),
                                         ({"cap": float("inf")}, "not Infinity"), ({"cap": float("nan")}, "not NaN"),
                                         ({"cap": 1e308}, "not 1e+308"), ({"cap": 1e13}, "not 10000000000000.0"),
                                         ({"cap": 0}, "not 0"), ({"cap": 1e-9}, "under one byte"),
                                         ({"cap": "8"}, "not '8'"), ({"cap": True}, "not True"),
                                         ({"cap": [1]}, "not [1]"), ({"cap": 2**70}, "at most 1048576")])
def test_foreign_or_bad_hint_refused_in_one_line(tmp_path, world_of_one, monkeypatch, capsys, kw, why):
    monkeypatch.setattr("sys.argv", ["pytest"])
    monkeypatch.setenv("PARADISE_HINTS", str(_hint(tmp_path / "h", kw.pop("cap", 1.0), **kw)))
    model = hints.apply_ddp(torch.nn.Linear(4, 4))
    assert model.bucket_bytes_cap == int(25 * 1024 * 1024)  # DDP's default
    lines = capsys.readouterr().err.strip().splitlines()
    assert len(lines) == 1 and "comm.json refused" in lines[0] and why in lines[0]


def test_the_largest_accepted_bucket_size_builds_a_ddp(tmp_path, world_of_one, monkeypatch):
    """hints.kinds.ddp.MAX_BUCKET_CAP_MB is a cap DDP itself accepts (the bound refuses only damage)."""
    from hints.kinds.ddp import MAX_BUCKET_CAP_MB

    monkeypatch.setattr("sys.argv", ["pytest"])
    model = hints.apply_ddp(torch.nn.Linear(4, 4), _hint(tmp_path / "h", MAX_BUCKET_CAP_MB))
    assert model.bucket_bytes_cap == int(MAX_BUCKET_CAP_MB * 1024 * 1024)
    model(torch.ones(2, 4)).sum().backward()
