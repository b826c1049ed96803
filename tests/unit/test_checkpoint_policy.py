"""Checkpoint policy math (hints/generators/checkpoint_policy.py) and `paradise policy`."""

from __future__ import annotations

import json
import math

import pytest

from hints.generators.checkpoint_policy import (
    HOURS,
    PolicyInputs,
    daly_first_order,
    daly_higher_order,
    default_mtbf_s,
    nodes_for,
    plan,
    simulate,
    waste_jit,
    waste_periodic,
    young_interval,
)

MIN = 60.0


def test_young_hand_case():
    # sqrt(2 * 50 s * 10000 s) = sqrt(1e6) = 1000 s
    assert young_interval(50, 10_000) == pytest.approx(1000.0)


def test_daly_first_order_hand_case():
    # sqrt(2 * 50 * (9950 + 50)) = sqrt(1e6) = 1000 s
    assert daly_first_order(50, 9950, 50) == pytest.approx(1000.0)


@pytest.mark.parametrize(
    ("mtbf_s", "expected_min"),
    [
        # Daly (2006), FGCS 22(3), Figs. 3-5: delta = 5 min, R = 10 min, Ts = 500 h.
        # M = 24 h: sqrt(2*5*1440) = 120; 120 * (1 + sqrt(5/2880)/3 + (5/2880)/9) - 5 = 116.7 -> "117 min"
        (24 * HOURS, 117),
        # M = 6 h: sqrt(2*5*360) = 60; 60 * (1 + sqrt(5/720)/3 + (5/720)/9) - 5 = 56.7 -> "57 min"
        (6 * HOURS, 57),
        # M = 15 min: sqrt(150) = 12.25; 12.25 * (1 + sqrt(1/6)/3 + (1/6)/9) - 5 = 9.14 -> "9.1 min"
        (15 * MIN, 9.1),
    ],
)
def test_daly_higher_order_reproduces_dalys_examples(mtbf_s, expected_min):
    got = daly_higher_order(5 * MIN, mtbf_s) / MIN
    assert round(got, 0 if expected_min >= 10 else 1) == expected_min


def test_daly_higher_order_large_checkpoint_is_mtbf():
    # C >= 2M: the formula's series does not converge; Daly's rule is tau = M.
    assert daly_higher_order(100, 50) == 50


def test_default_mtbf_scales_with_nodes():
    # 5 failures per 1000 node-days: one node fails every 200 days = 4800 h.
    assert default_mtbf_s(8) / HOURS == pytest.approx(4800.0)
    assert default_mtbf_s(1) == default_mtbf_s(8)  # one node either way
    # 16384 GPUs / 8 per node = 2048 nodes: 4800 h / 2048 = 2.34 h (Llama 3 saw about 3 h).
    assert nodes_for(16384) == 2048
    assert default_mtbf_s(16384) / HOURS == pytest.approx(2.34375)


def test_first_order_waste_hand_case():
    # C/T + (T/2 + R)/M = 50/1000 + (500 + 50)/10000 = 0.05 + 0.055
    assert waste_periodic(1000, 50, 50, 10_000, exact=False) == pytest.approx(0.105)
    # jit: (t_it/2 + C_jit + R)/M = (5 + 45 + 50)/10000 = 0.01
    assert waste_jit(10, 45, 50, 10_000, exact=False) == pytest.approx(0.01)


def test_exact_waste_close_to_first_order_when_failures_rare():
    exact = waste_periodic(1000, 10, 10, 1e7)
    approx = waste_periodic(1000, 10, 10, 1e7, exact=False)
    assert exact == pytest.approx(approx, rel=0.01)


def _within(sim: dict, analytic: float, rel: float = 0.05) -> None:
    assert abs(sim["waste"] - analytic) <= rel * analytic, (sim, analytic)


@pytest.mark.parametrize("mtbf_h", [24.0, 6.0])
def test_simulator_agrees_with_periodic_waste(mtbf_h):
    m = mtbf_h * HOURS
    tau = daly_higher_order(5 * MIN, m)
    sim = simulate(work_s=500 * HOURS, mtbf_s=m, restart_s=10 * MIN, interval_s=tau, checkpoint_s=5 * MIN,
                   trials=500, seed=1)
    _within(sim, waste_periodic(tau, 5 * MIN, 10 * MIN, m))


def test_simulator_agrees_with_jit_waste():
    m = 3 * HOURS
    sim = simulate(work_s=200 * HOURS, mtbf_s=m, restart_s=300, jit=True, iteration_s=10, jit_save_s=30,
                   trials=500, seed=2)
    _within(sim, waste_jit(10, 30, 300, m))


def test_simulator_agrees_with_jit_plus_periodic_waste():
    inp = PolicyInputs(iteration_s=10, checkpoint_s=60, restart_s=300, mtbf_s=3 * HOURS, unrecoverable_fraction=0.1)
    p = plan(inp)
    sim = simulate(work_s=300 * HOURS, mtbf_s=inp.mtbf_s, restart_s=300, interval_s=p.safety_net_interval_s,
                   checkpoint_s=60, jit=True, iteration_s=10, jit_save_s=60, unrecoverable_fraction=0.1,
                   trials=300, seed=3)
    _within(sim, p.expected_waste["jit+periodic"])


def test_plan_modes():
    big = plan(PolicyInputs(iteration_s=10, checkpoint_s=60, restart_s=300, mtbf_s=default_mtbf_s(16384), gpus=16384))
    assert big.mode == "jit+periodic"
    assert big.interval_steps == round(big.interval_s / 10)
    assert big.expected_waste["jit+periodic"] < big.expected_waste["periodic"]
    small = plan(PolicyInputs(iteration_s=10, checkpoint_s=60, restart_s=300, mtbf_s=default_mtbf_s(8), gpus=8))
    assert small.mode == "jit" and small.interval_steps is None
    # JIT recovers nothing: jit+periodic degenerates to periodic, and the tie goes to periodic.
    none = plan(PolicyInputs(iteration_s=10, checkpoint_s=60, restart_s=300, mtbf_s=3 * HOURS,
                             unrecoverable_fraction=1.0))
    assert none.mode == "periodic"
    assert none.interval_steps == max(1, round(daly_higher_order(60, 3 * HOURS) / 10))


def test_plan_refuses_bad_inputs():
    with pytest.raises(ValueError, match="iteration_s"):
        plan(PolicyInputs(iteration_s=0, checkpoint_s=1, restart_s=1, mtbf_s=1))


def test_policy_cli_json(cli):
    rc, out, err = cli("policy", "--iteration-s", "10", "--checkpoint-s", "60", "--restart-s", "300",
                       "--gpus", "16384", "--json")
    assert rc == 0, err
    doc = json.loads(out)
    assert doc["mode"] == "jit+periodic"
    assert set(doc["expected_waste"]) == {"periodic", "jit", "jit+periodic"}
    assert doc["mtbf_s"] == pytest.approx(default_mtbf_s(16384))
    assert doc["interval_steps"] == round(doc["interval_s"] / 10)
    assert all(0 < w < 1 for w in doc["expected_waste"].values())
    assert doc["inputs"]["sources"]["mtbf_s"] == "default"
    rc, out, _ = cli("policy", "--iteration-s", "10", "--checkpoint-s", "60", "--restart-s", "300",
                     "--gpus", "8", "--mtbf-hours", "6", "--jit-save-s", "5", "--json")
    doc = json.loads(out)
    assert doc["mtbf_s"] == 6 * HOURS and doc["inputs"]["sources"]["mtbf_s"] == "option"
    assert math.isclose(doc["inputs"]["jit_save_s"], 5.0)


def test_policy_cli_table(cli):
    rc, out, _ = cli("policy", "--iteration-s", "1", "--checkpoint-s", "20", "--restart-s", "60", "--gpus", "1024")
    assert rc == 0
    assert "expected waste" in out and "chosen" in out


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--iteration-s", "-1", "--checkpoint-s", "1", "--restart-s", "1", "--gpus", "8"],
         "--iteration-s: -1 is out of range (must be > 0)"),
        (["--iteration-s", "x", "--checkpoint-s", "1", "--restart-s", "1", "--gpus", "8"],
         "--iteration-s: 'x' is not a number"),
        (["--iteration-s", "1", "--checkpoint-s", "1", "--restart-s", "1"], "--gpus: missing (required)"),
        (["--iteration-s", "1", "--checkpoint-s", "1", "--restart-s", "1", "--gpus", "2.5"],
         "--gpus: '2.5' is not an integer"),
    ],
)
def test_policy_cli_bad_args(cli, args, message):
    rc, out, err = cli("policy", *args)
    assert rc == 2
    assert err == f"paradise: error: {message}\n"


def test_hints_doc_lists_every_checkpoint_field():
    """docs/hints.md `## checkpoint.json` documents every payload field of hints/schemas/checkpoint-1.json."""
    import re
    from pathlib import Path

    from hints.format import schema

    doc = (Path(__file__).resolve().parents[2] / "docs" / "hints.md").read_text()
    m = re.search(r"^## checkpoint\.json\s*$(.*?)(?=^## |\Z)", doc, re.M | re.S)
    assert m, "docs/hints.md has no '## checkpoint.json' section"
    documented = set(re.findall(r"^\|\s*`([a-z_]+)`\s*\|", m.group(1), re.M))
    envelope = {"format", "kind", "provenance", "justified_by", "predicted_gain"}
    assert documented == set(schema("checkpoint")["properties"]) - envelope
    p = plan(PolicyInputs(iteration_s=1, checkpoint_s=1, restart_s=1, mtbf_s=100))
    from hints.generators.checkpoint_policy import hint_payload

    assert set(hint_payload(p)) == documented
