"""Batches from NumPy arrays: train_step, predict and evaluate, and their checks."""
import numpy as np
import pytest

import hetrec
from conftest import DEMO, demo_arrays, small_demo


@pytest.fixture
def session(tmp_path):
    return hetrec.Session(DEMO, small_demo(tmp_path))


def test_train_steps_on_arrays_lower_the_loss(session, rng):
    dense, sparse, labels = demo_arrays(256, rng)
    losses = [session.train_step(dense, sparse, labels) for _ in range(20)]
    assert session.step == 20
    assert losses[-1] < 0.8 * losses[0]


def test_predict_and_evaluate_agree(session, rng):
    dense, sparse, labels = demo_arrays(300, rng)
    for _ in range(5):
        session.train_step(dense, sparse, labels)
    logits = session.predict(dense, sparse)
    assert logits.dtype == np.float32 and logits.shape == (300,)
    assert np.array_equal(logits, session.predict(dense, sparse))
    # The exact AUC of the logits (pairs ranked, ties counted one half), and the log-loss.
    pos, neg = logits[labels > 0.5], logits[labels <= 0.5]
    pairs = (pos[:, None] > neg[None, :]).sum() + 0.5 * (pos[:, None] == neg[None, :]).sum()
    result = session.evaluate(dense, sparse, labels)
    assert result["samples"] == 300
    assert result["auc"] == pytest.approx(pairs / (len(pos) * len(neg)), abs=1e-12)
    p = 1.0 / (1.0 + np.exp(-logits.astype(np.float64)))
    expected_loss = -np.mean(labels * np.log(p) + (1 - labels) * np.log(1 - p))
    assert result["log_loss"] == pytest.approx(expected_loss, rel=1e-5)


def test_predict_slices_large_batches_like_one(tmp_path, rng):
    session = hetrec.Session(DEMO, small_demo(tmp_path) + ["train.eval_batch_size=64"])
    dense, sparse, _ = demo_arrays(200, rng)
    whole = session.predict(dense, sparse)
    parts = np.concatenate([session.predict(dense[i:i + 50], [s[i:i + 50] for s in sparse]) for i in range(0, 200, 50)])
    assert np.allclose(whole, parts, rtol=1e-5, atol=1e-6)


def test_one_array_for_every_table_equals_a_list(tmp_path, rng):
    session = hetrec.Session(DEMO, small_demo(tmp_path) + ["model.table_hotness=[2,2,2,2,2,2,2,2]"])
    dense, sparse, _ = demo_arrays(64, rng, hotness=(2,) * 8)
    stacked = np.stack(sparse, axis=1).astype(np.int32)  # [B, T, H]
    assert np.array_equal(session.predict(dense, sparse), session.predict(dense, stacked))


def test_bad_arrays_are_refused_with_what_was_expected(session, rng):
    dense, sparse, labels = demo_arrays(16, rng)
    with pytest.raises(hetrec.DataError, match=r"dense: expected dtype float32, got float64"):
        session.predict(dense.astype(np.float64), sparse)
    with pytest.raises(hetrec.DataError, match=r"dense: expected shape \[B, 13\] \(model.num_dense\), got \[16, 12\]"):
        session.predict(dense[:, :12], sparse)
    with pytest.raises(hetrec.DataError, match=r"sparse: expected a list of 8 \(the model's tables\) arrays, got 7"):
        session.predict(dense, sparse[:7])
    with pytest.raises(hetrec.DataError, match=r"sparse\[1\]: expected dtype int32 or int64, got float32"):
        session.predict(dense, [sparse[0], sparse[1].astype(np.float32)] + sparse[2:])
    with pytest.raises(hetrec.DataError, match=r"sparse\[2\]: expected shape \[16\] or \[16, H\]"):
        session.predict(dense, sparse[:2] + [sparse[2][:8]] + sparse[3:])
    bad = [s.copy() for s in sparse]
    bad[6][3, 0] = 50  # table 6 has 50 rows
    with pytest.raises(hetrec.DataError, match=r"table 6.*sample 3.*50"):
        session.predict(dense, bad)
    with pytest.raises(hetrec.DataError, match=r"labels: expected shape \[16\] \(B of dense\), got \[15\]"):
        session.train_step(dense, sparse, labels[:15])
    with pytest.raises(hetrec.DataError, match=r"dense: expected a NumPy array, got <class 'list'>"):
        session.predict(dense.tolist(), sparse)
    assert issubclass(hetrec.DataError, ValueError)
