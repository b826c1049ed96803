"""Restoring from a damaged or hostile checkpoint folder: a stray `rank-x` folder is ignored, a COMPLETE
marker over missing or truncated data falls back to the previous complete checkpoint with one line,
and nothing in a checkpoint runs code (metadata, non-tensor items and RNG files load as data only).
Real DCP saves of a small model, one process (no process group)."""

from __future__ import annotations

import os
import pickle

import pytest

torch = pytest.importorskip("torch")

from hints.runtime.checkpoint import CheckpointManager  # noqa: E402
from hints.runtime.checkpoint.manager import restart_store_warning  # noqa: E402
from hints.runtime.checkpoint.safe_load import CheckpointUnusable  # noqa: E402


class _RunsCode:
    """Unpickling this calls os.system: what a hostile checkpoint would hold."""

    def __init__(self, marker):
        self.marker = str(marker)

    def __reduce__(self):
        return os.system, (f"touch {self.marker}",)


def _model():
    torch.manual_seed(0)
    return torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.Linear(8, 2))


def _manager(d, model, opt):
    return CheckpointManager(d, model=model, optimizer=opt, mode="periodic", interval_steps=2, keep=5,
                             handle_sigterm=False)


@pytest.fixture
def saved(tmp_path):
    """Checkpoints after steps 2 and 4; returns (dir, {step: parameters at that step})."""
    model = _model()
    opt = torch.optim.Adam(model.parameters(), lr=0.1)
    mgr = _manager(tmp_path / "ck", model, opt)
    params = {}
    for step in range(4):
        model(torch.randn(3, 4)).sum().backward()
        opt.step()
        opt.zero_grad()
        if mgr.maybe_save(step):
            params[step + 1] = [p.detach().clone() for p in model.parameters()]
    return tmp_path / "ck", params


def _restore(d):
    model = _model()
    mgr = _manager(d, model, torch.optim.Adam(model.parameters(), lr=0.1))
    return mgr.restore(), [p.detach() for p in model.parameters()]


def _equal(a, b) -> bool:
    return all(torch.equal(x, y) for x, y in zip(a, b, strict=True))


def test_newest_checkpoint_restores(saved):
    d, params = saved
    step, got = _restore(d)
    assert step == 4 and _equal(got, params[4])


def test_stray_rank_folder_is_ignored(saved, capsys):
    d, params = saved
    (d / "jit-00000006-a0" / "rank-x").mkdir(parents=True)
    (d / "jit-00000006-a0" / "rank-x" / "COMPLETE").write_text("{}")
    (d / "jit-00000006-a0" / "rank-0").write_text("not a folder")
    step, got = _restore(d)
    assert step == 4 and _equal(got, params[4]) and capsys.readouterr().err == ""


def _data_file(d):
    return next((d / "step-00000004").glob("*.distcp"))


DAMAGE = {
    "data_missing": (lambda d, m: _data_file(d).unlink(), "is missing"),
    "data_truncated": (lambda d, m: os.truncate(_data_file(d), _data_file(d).stat().st_size // 2), "is truncated"),
    "metadata_missing": (lambda d, m: (d / "step-00000004" / ".metadata").unlink(), "no DCP metadata"),
    "metadata_runs_code": (lambda d, m: (d / "step-00000004" / ".metadata").write_bytes(pickle.dumps(_RunsCode(m))),
                           "posix.system is not allowed"),
    "rng_runs_code": (lambda d, m: torch.save({"rng": _RunsCode(m)}, d / "step-00000004" / "rng-rank0.pt"),
                      "rng-rank0.pt: unreadable (UnpicklingError)"),
    "rng_truncated": (lambda d, m: os.truncate(d / "step-00000004" / "rng-rank0.pt", 100), "rng-rank0.pt: unreadable"),
}  # fmt: skip


@pytest.mark.parametrize("case", sorted(DAMAGE))
def test_damaged_newest_checkpoint_falls_back_to_the_previous_one(saved, capsys, tmp_path, case):
    d, params = saved
    marker = tmp_path / "MARKER"
    damage, needle = DAMAGE[case]
    damage(d, marker)
    step, got = _restore(d)
    assert step == 2 and _equal(got, params[2])
    assert not marker.exists()  # nothing in the checkpoint ran
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("paradise: checkpoint skipped: ") and needle in err[0], err


def test_no_usable_checkpoint_after_a_part_load_stops(saved):
    """Every candidate loaded part-way then failed: starting from step 0 on those weights would be wrong."""
    d, _ = saved
    for step in (2, 4):
        torch.save({"rng": "no state"}, d / f"step-{step:08d}" / "rng-rank0.pt")
    with pytest.raises(CheckpointUnusable, match="partly overwritten"):
        _restore(d)


def test_restart_store_warning():
    assert restart_store_warning({"TORCHELASTIC_MAX_RESTARTS": "0"}) is None
    assert restart_store_warning({"TORCHELASTIC_MAX_RESTARTS": "3", "TORCH_DISABLE_SHARE_RDZV_TCP_STORE": "1"}) is None
    why = restart_store_warning({"TORCHELASTIC_MAX_RESTARTS": "3"})
    assert why.startswith("torchrun --max-restarts 3 without TORCH_DISABLE_SHARE_RDZV_TCP_STORE=1")


def test_manager_says_so_at_start(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("TORCHELASTIC_MAX_RESTARTS", "2")
    monkeypatch.delenv("TORCH_DISABLE_SHARE_RDZV_TCP_STORE", raising=False)
    model = _model()
    _manager(tmp_path / "ck", model, torch.optim.Adam(model.parameters()))
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("paradise: warning: torchrun --max-restarts 2 without")


def test_trace_torch_sets_the_store_variable(tmp_path, monkeypatch):
    from paradise.cli.trace_torch import trace_env

    monkeypatch.delenv("TORCH_DISABLE_SHARE_RDZV_TCP_STORE", raising=False)
    env = trace_env(tmp_path, None, False, "p")
    assert restart_store_warning({**env, "TORCHELASTIC_MAX_RESTARTS": "3"}) is None
