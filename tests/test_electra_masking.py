"""ELECTRA's dynamic masking and sampling (bert_tf.electra.masking): the statistics of many
draws (the count per example by the original's formula, positions among the candidates only,
drawn with replacement, 85% [MASK] / 15% kept) and the original's scatter_update rules. The
values on fixed draws are compared with the original in tests/test_electra_model.py."""

import numpy as np
import pytest
import tensorflow as tf

from bert_tf.electra import masking

CLS, SEP, MASK = 2, 3, 4
N = 19  # max_predictions_per_seq at 128: int((0.15 + 0.005) * 128)


def batch(rng, lengths, seq_length=128):
    ids = np.zeros((len(lengths), seq_length), np.int32)
    mask = np.zeros_like(ids)
    for row, length in enumerate(lengths):
        ids[row, :length] = rng.randint(5, 100, length)
        ids[row, [0, length // 2, length - 1]] = [CLS, SEP, SEP]
        mask[row, :length] = 1
    return ids, mask


def test_count_per_example_is_the_originals_formula():
    lengths = [3, 4, 7, 10, 13, 17, 50, 100, 126, 128]
    _, mask = batch(np.random.RandomState(0), lengths)
    got = masking.num_to_predict(tf.constant(mask), 0.15, N).numpy()
    # int(round(n * 0.15)) (round half to even, as tf.round) clipped to [1, N].
    want = [max(1, min(N, int(np.round(np.float32(n) * np.float32(0.15))))) for n in lengths]
    assert got.tolist() == want == [1, 1, 1, 2, 2, 3, 8, 15, 19, 19]


def test_statistics_of_many_draws():
    rng = np.random.RandomState(1)
    lengths = [128, 100, 60, 30, 9]
    ids, mask = batch(rng, lengths)
    draws = masking.RandomDraws(seed=3)
    counts = masking.num_to_predict(tf.constant(mask), 0.15, N).numpy()
    fn = tf.function(lambda: masking.mask(
        tf.constant(ids), tf.constant(mask), draws, mask_id=MASK, special_ids=(SEP, CLS, MASK),
        mask_prob=0.15, max_predictions_per_seq=N))
    masked_total = kept_total = duplicates = 0
    hits = np.zeros((len(lengths), 128))
    for _ in range(400):
        out = {k: v.numpy() for k, v in fn().items()}
        weights = out["masked_lm_weights"]
        np.testing.assert_array_equal(weights.sum(1), counts)
        np.testing.assert_array_equal(weights, np.arange(N)[None] < counts[:, None])
        for row in range(len(lengths)):
            positions = out["masked_lm_positions"][row, :counts[row]]
            assert not out["masked_lm_positions"][row, counts[row]:].any()
            assert not out["masked_lm_ids"][row, counts[row]:].any()
            # Candidates only: real tokens, never [CLS] / [SEP].
            assert np.all(mask[row, positions] == 1)
            assert np.all(ids[row, positions] >= 5)
            np.testing.assert_array_equal(out["masked_lm_ids"][row, :counts[row]],
                                          ids[row, positions])
            duplicates += len(positions) - len(set(positions.tolist()))
            hits[row, positions] += 1
            changed = out["input_ids"][row] != ids[row]
            assert set(np.flatnonzero(changed)) <= set(positions.tolist())
            assert np.all(out["input_ids"][row][changed] == MASK)
            # A position drawn once: [MASK] with probability 0.85, else kept.
            unique, times = np.unique(positions, return_counts=True)
            once = unique[times == 1]
            masked_total += int(changed[once].sum())
            kept_total += int((~changed[once]).sum())
    share = masked_total / (masked_total + kept_total)
    n = masked_total + kept_total
    assert abs(share - 0.85) < 5 * np.sqrt(0.85 * 0.15 / n), (share, n)
    # Drawn with replacement: the short rows (9 tokens, 6 candidates) repeat positions.
    assert duplicates > 0
    # Uniform over the candidates of the full row: each of its 125 candidates is drawn about
    # 400 * 19 / 125 = 60.8 times.
    candidates = np.flatnonzero((mask[0] == 1) & (ids[0] >= 5))
    assert hits[0].sum() == hits[0, candidates].sum()
    expected = 400 * counts[0] / len(candidates)
    chi2 = ((hits[0, candidates] - expected) ** 2 / expected).sum()
    assert chi2 < len(candidates) + 6 * np.sqrt(2 * len(candidates))


def test_scatter_update_rules():
    sequence = tf.constant([[10, 11, 12, 13, 14]])
    updates = tf.constant([[7, 20, 21, 30, 99]])
    positions = tf.constant([[0, 2, 2, 3, 0]])
    got, written = masking.scatter_update(sequence, updates, positions)
    # Position 0 never written; position 2 given 20 and 21 gets floor(41 / 2) = 20.
    assert got.numpy().tolist() == [[10, 11, 20, 30, 14]]
    assert written.numpy().tolist() == [[0, 0, 1, 1, 0]]


def test_example_without_candidates_predicts_nothing():
    ids = tf.constant([[CLS, SEP, 0, 0], [CLS, 7, SEP, 0]])
    mask = tf.constant([[1, 1, 0, 0], [1, 1, 1, 0]])
    out = masking.mask(ids, mask, masking.RandomDraws(seed=0), mask_id=MASK,
                       special_ids=(SEP, CLS, MASK), mask_prob=0.15, max_predictions_per_seq=2)
    assert out["masked_lm_weights"].numpy().tolist() == [[0, 0], [1, 0]]
    assert out["masked_lm_positions"].numpy().tolist() == [[0, 0], [1, 0]]


@pytest.mark.parametrize("disallow", [False, True])
def test_gumbel_max_samples_from_the_softmax(disallow):
    logits = tf.constant([[np.log(0.6), np.log(0.3), np.log(0.1)]], tf.float32)
    logits = tf.tile(logits, [20000, 1])
    block = tf.one_hot(tf.zeros([20000], tf.int32), 3) if disallow else None
    ids = masking.sample_from_softmax(logits, masking.RandomDraws(seed=5), disallow=block).numpy()
    freq = np.bincount(ids, minlength=3) / len(ids)
    want = np.array([0.0, 0.75, 0.25]) if disallow else np.array([0.6, 0.3, 0.1])
    np.testing.assert_allclose(freq, want, atol=5 * np.sqrt(0.25 / len(ids)))


REPLICA_DRIVER = """\
import json
import tensorflow as tf
cpu = tf.config.list_physical_devices("CPU")[0]
tf.config.set_logical_device_configuration(cpu, [tf.config.LogicalDeviceConfiguration()] * 2)
from bert_tf.electra import masking
strategy = tf.distribute.MirroredStrategy(["/cpu:0", "/cpu:1"])
with strategy.scope():
    draws = masking.RandomDraws(seed=1)
step = tf.function(lambda: strategy.run(lambda: draws.uniform([4])))
values = [[v.numpy().tolist() for v in strategy.experimental_local_results(step())]
          for _ in range(2)]
print("RESULT " + json.dumps(values))
"""


@pytest.mark.slow  # a process start (two logical CPUs)
def test_replicas_draw_independently():
    """Under MirroredStrategy each replica folds its id into the seed: the two replicas' draws
    differ, and the next step's differ from this step's."""
    import json
    import subprocess
    import sys

    from test_training_helpers import REPO, env

    proc = subprocess.run([sys.executable, "-c", REPLICA_DRIVER], capture_output=True,
                          text=True, env=env(), cwd=str(REPO), timeout=300)
    lines = [line for line in proc.stdout.splitlines() if line.startswith("RESULT ")]
    assert proc.returncode == 0 and lines, proc.stderr[-3000:]
    (a0, a1), (b0, b1) = json.loads(lines[-1][len("RESULT "):])
    assert a0 != a1 and b0 != b1 and a0 != b0 and a1 != b1
