"""Model-output comparison: known answers, invariants (hypothesis), and bad input."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from paradise.compare.outputs import compare_outputs
from paradise.errors import NotAParadiseTrace, TraceNotFound
from tracers.outputs import OutputsWriter


def write(d: Path, items, labels, logprobs=None, preds=None) -> Path:
    with OutputsWriter(d, force=True) as w:
        w.add(items, labels, logprobs=logprobs, preds=preds)
    return d


def test_known_flips_accuracy_and_kl(tmp_path):
    # 4 items, 2 options, label 0 everywhere.
    # base preds: 0 0 1 1 -> correct, correct, wrong, wrong (accuracy 0.5)
    # cand preds: 0 1 0 1 -> correct, wrong, correct, wrong (accuracy 0.5)
    # flips: item b correct->incorrect, item c incorrect->correct: 2 of 4 = 0.5, Δaccuracy 0
    pb = np.array([[0.9, 0.1], [0.6, 0.4], [0.3, 0.7], [0.2, 0.8]])
    pc = np.array([[0.9, 0.1], [0.4, 0.6], [0.7, 0.3], [0.2, 0.8]])
    items = ["a", "b", "c", "d"]
    b = write(tmp_path / "b", items, [0, 0, 0, 0], logprobs=np.log(pb))
    c = write(tmp_path / "c", items, [0, 0, 0, 0], logprobs=np.log(pc))
    r = compare_outputs(b, c)
    assert r.items_common == 4 and r.items_only_base == 0 and r.items_only_candidate == 0
    assert r.accuracy_base == 0.5 and r.accuracy_candidate == 0.5
    assert r.flips == 0.5
    assert r.flips_correct_to_incorrect == 1 and r.flips_incorrect_to_correct == 1
    kl = (pb * (np.log(pb) - np.log(pc))).sum(axis=1)  # hand formula, per item
    assert math.isclose(r.kl_mean, kl.mean(), rel_tol=1e-5)
    assert {f["item"] for f in r.flipped_items} == {"b", "c"}
    # flips are listed smallest baseline margin first: b has margin 0.2, c has 0.4
    assert [f["item"] for f in r.flipped_items] == ["b", "c"]
    assert r.flipped_items[0]["direction"] == "correct->incorrect"


def test_unnormalised_logits_are_normalised(tmp_path):
    logits = np.array([[2.0, 1.0, 0.0], [0.0, 0.0, 5.0]])
    shifted = logits + 7.0  # same softmax
    b = write(tmp_path / "b", ["x", "y"], [0, 2], logprobs=logits)
    c = write(tmp_path / "c", ["x", "y"], [0, 2], logprobs=shifted)
    r = compare_outputs(b, c)
    assert r.kl_mean == pytest.approx(0.0, abs=1e-6)
    assert r.flips == 0 and r.accuracy_base == 1.0


def test_missing_items_reported_not_dropped(tmp_path):
    b = write(tmp_path / "b", ["a", "b", "c"], [0, 1, 0], preds=[0, 1, 1])
    c = write(tmp_path / "c", ["b", "c", "d", "e"], [1, 0, 1, 1], preds=[1, 0, 0, 1])
    r = compare_outputs(b, c)
    assert (r.items_common, r.items_only_base, r.items_only_candidate) == (2, 1, 2)
    assert r.only_base_examples == ["a"] and r.only_candidate_examples == ["d", "e"]
    # common b: 1/1 correct both; c: base wrong (pred 1, label 0), cand right -> one incorrect->correct flip
    assert r.flips_incorrect_to_correct == 1 and r.flips_correct_to_incorrect == 0
    assert r.kl_mean is None  # no probabilities


def test_variable_number_of_options(tmp_path):
    path_b, path_c = tmp_path / "b.parquet", tmp_path / "c.parquet"
    t = lambda lps: pa.table(  # noqa: E731
        {"item": ["p", "q"], "label": pa.array([0, 1], pa.int32()), "logprobs": pa.array(lps, pa.list_(pa.float32()))}
    )
    pq.write_table(t([np.log([0.5, 0.5]).tolist(), np.log([0.2, 0.3, 0.5]).tolist()]), path_b)
    pq.write_table(t([np.log([0.5, 0.5]).tolist(), np.log([0.2, 0.3, 0.5]).tolist()]), path_c)
    r = compare_outputs(path_b, path_c)
    assert r.kl_mean == pytest.approx(0.0, abs=1e-6) and r.items_common == 2


def test_label_mismatch_and_duplicates_refused(tmp_path):
    b = write(tmp_path / "b", ["a", "b"], [0, 1], preds=[0, 1])
    c = write(tmp_path / "c", ["a", "b"], [0, 0], preds=[0, 1])
    with pytest.raises(NotAParadiseTrace, match="different label"):
        compare_outputs(b, c)
    d = tmp_path / "d.parquet"
    pq.write_table(pa.table({"item": ["a", "a"], "label": pa.array([0, 0], pa.int32()), "pred": pa.array([0, 0], pa.int32())}), d)
    with pytest.raises(NotAParadiseTrace, match="more than once"):
        compare_outputs(b, d)


@pytest.mark.parametrize(
    "table, message",
    [
        (pa.table({"x": [1]}), "missing column"),
        (pa.table({"item": [1], "label": [0], "pred": [0]}), "'item' must be a string"),
        (pa.table({"item": ["a"], "label": [0]}), "neither 'logprobs' nor 'pred'"),
        (pa.table({"item": ["a"], "label": [0], "logprobs": ["zz"]}), "list of floats"),
        (pa.table({"item": ["a", "b"], "label": pa.array([0, None], pa.int32()), "pred": [0, 0]}),
         "column 'label' has null rows"),
    ],
)
def test_wrong_schemas(tmp_path, table, message):
    bad = tmp_path / "bad.parquet"
    pq.write_table(table, bad)
    good = write(tmp_path / "g", ["a"], [0], preds=[0])
    with pytest.raises(NotAParadiseTrace, match=message) as err:
        compare_outputs(good, bad)
    assert str(bad) in str(err.value)


def test_many_answer_options(tmp_path):
    # 300 options: the argmax index no longer fits the int8 kept for the usual few options.
    k = 300
    base = np.full((3, k), -10.0)
    cand = base.copy()
    base[[0, 1, 2], [5, 200, 299]] = 0.0
    cand[[0, 1, 2], [5, 150, 299]] = 0.0
    b = write(tmp_path / "b", ["x", "y", "z"], [5, 200, 298], logprobs=base)
    c = write(tmp_path / "c", ["x", "y", "z"], [5, 200, 298], logprobs=cand)
    r = compare_outputs(b, c)
    assert r.accuracy_base == pytest.approx(2 / 3) and r.accuracy_candidate == pytest.approx(1 / 3)
    assert r.flips_correct_to_incorrect == 1 and r.prediction_changes == 1
    assert r.flipped_items[0]["pred_base"] == 200 and r.flipped_items[0]["pred_candidate"] == 150


def test_not_parquet_and_missing(tmp_path):
    junk = tmp_path / "junk.parquet"
    junk.write_text("not parquet")
    good = write(tmp_path / "g", ["a"], [0], preds=[0])
    with pytest.raises(NotAParadiseTrace, match="not a Parquet file"):
        compare_outputs(good, junk)
    with pytest.raises(TraceNotFound):
        compare_outputs(good, tmp_path / "nowhere")


def _outputs(draw, n, k, items):
    lp = draw(st.lists(st.lists(st.floats(-20, 0, allow_nan=False), min_size=k, max_size=k), min_size=n, max_size=n))
    return np.array(lp, dtype=np.float64)


@st.composite
def pair(draw):
    n = draw(st.integers(1, 30))
    k = draw(st.integers(2, 5))
    labels = draw(st.lists(st.integers(0, k - 1), min_size=n, max_size=n))
    return labels, _outputs(draw, n, k, None), _outputs(draw, n, k, None)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(pair())
def test_properties(tmp_path, data):
    labels, lb, lc = data
    items = [f"i{i}" for i in range(len(labels))]
    b = write(tmp_path / "b", items, labels, logprobs=lb)
    c = write(tmp_path / "c", items, labels, logprobs=lc)
    r = compare_outputs(b, c)
    assert r.flips + 1e-12 >= abs(r.accuracy_candidate - r.accuracy_base)
    assert r.kl_mean >= 0 and r.kl_quantiles["p50"] >= 0
    same = compare_outputs(b, b)
    assert same.flips == 0 and same.prediction_changes == 0
    assert same.kl_mean == pytest.approx(0.0, abs=1e-9)


def test_duplicate_items_missing_on_other_side_refused(tmp_path):
    d = tmp_path / "d.parquet"
    pq.write_table(pa.table({"item": ["z", "z", "a"], "label": pa.array([0, 0, 0], pa.int32()),
                             "pred": pa.array([0, 0, 0], pa.int32())}), d)
    other = write(tmp_path / "o", ["a"], [0], preds=[0])
    with pytest.raises(NotAParadiseTrace, match="'z' appears more than once"):
        compare_outputs(d, other)
