"""Gradient accumulation: K micro-batches give the gradient, loss and update of one batch of
the same examples, with the masked-LM normaliser of the WHOLE batch even when micro-batches
hold different numbers of masked positions."""

import numpy as np
import pytest
import tensorflow as tf

from rounding_bounds import ZeroGradientBounds
from test_training_helpers import TINY_CONFIG, key_bias_noise, largest_noise, trainer_state

NO_DROPOUT = dict(TINY_CONFIG, hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0)


def make_batch(batch=16, seq=16, predictions=3, vocab=97, micro=4, seed=0):
    """A batch whose micro-batch i (of `batch // micro` examples) has a different number of
    masked positions per example: 1, 3, 2, 1..."""
    rng = np.random.RandomState(seed)
    ids = rng.randint(5, vocab, size=(batch, seq))
    mask = np.ones((batch, seq), np.int64)
    mask[::3, seq // 2:] = 0
    ids = ids * mask
    segments = np.zeros((batch, seq), np.int64)
    segments[:, seq // 2:] = 1
    size = batch // micro
    counts = np.array([[1, 3, 2, 1][i // size % 4] for i in range(batch)])
    positions = np.zeros((batch, predictions), np.int64)
    labels = np.zeros((batch, predictions), np.int64)
    weights = np.zeros((batch, predictions), np.float32)
    for i, k in enumerate(counts):
        positions[i, :k] = np.sort(rng.choice(np.arange(1, seq // 2), size=k, replace=False))
        labels[i, :k] = rng.randint(5, vocab, size=k)
        weights[i, :k] = 1.0
    return {
        "input_ids": tf.constant(ids, tf.int32), "input_mask": tf.constant(mask, tf.int32),
        "segment_ids": tf.constant(segments, tf.int32),
        "masked_lm_positions": tf.constant(positions, tf.int32),
        "masked_lm_ids": tf.constant(labels, tf.int32),
        "masked_lm_weights": tf.constant(weights),
        "next_sentence_labels": tf.constant(rng.randint(0, 2, size=(batch, 1)), tf.int32),
    }


class FixedStream:
    def __init__(self, features):
        self.features = features

    def get_next(self):
        return self.features


def trainer(tmp_path, **overrides):
    from bert_tf.bert.config import BertConfig
    from bert_tf.bert.pretraining_task import Pretrainer, PretrainingOptions

    args = dict(input_files=["unused"], output_dir=str(tmp_path / "unused"),
                max_seq_length=16, max_predictions_per_seq=3, train_batch_size=16,
                learning_rate=1e-3, num_train_steps=10, num_warmup_steps=0, seed=3)
    args.update(overrides)
    return Pretrainer(BertConfig.from_dict(NO_DROPOUT), PretrainingOptions(**args))


def weights(t):
    return {n: v.numpy() for n, v in zip(t.variable_names, t.train_variables)}


@pytest.mark.slow
def test_four_micro_batches_equal_one_batch(tmp_path, optimizer="adamw"):
    # (LAMB with accumulation: tests/test_training_composition.py.)
    batch = make_batch()
    weight_counts = [float(tf.reduce_sum(batch["masked_lm_weights"][i * 4:(i + 1) * 4]))
                     for i in range(4)]
    assert len(set(weight_counts)) > 1, weight_counts  # micro-batches differ
    one = trainer(tmp_path, optimizer=optimizer)
    four = trainer(tmp_path, optimizer=optimizer, gradient_accumulation_steps=4)
    for name, value in weights(one).items():
        np.testing.assert_array_equal(weights(four)[name], value)

    # The summed gradient and loss shares.
    weight_sum = tf.reduce_sum(batch["masked_lm_weights"])
    shares_1, grads_1 = one._compute_gradients(batch, weight_sum, 16.0)
    shares_4, grads_4 = four._compute_gradients(batch, weight_sum, 16.0)
    np.testing.assert_allclose(shares_4.numpy(), shares_1.numpy(), rtol=1e-5)
    scale = max(float(tf.reduce_max(tf.abs(g))) for g in grads_1)
    for name, a, b in zip(one.variable_names, grads_1, grads_4):
        np.testing.assert_allclose(b.numpy(), a.numpy(), rtol=0, atol=1e-5 * scale, err_msg=name)
    # Normalising each micro-batch by its own weight sum would differ (the test can fail).
    own = [four._micro_batch_gradients({k: v[:4] for k, v in batch.items()},
                                       tf.constant(weight_counts[0]), 16.0)[0][1]]
    assert abs(float(own[0]) - float(shares_4[1]) / 4) > 1e-3

    # Two optimizer steps through the training function.
    starts = [trainer_state(t) for t in (one, four)]
    noise = [key_bias_noise(one.model, one.task, [batch] * 2, extra_additions=3)]
    values_1 = one.make_train_function(FixedStream(batch))(tf.constant(2))
    values_4 = four.make_train_function(FixedStream(batch))(tf.constant(2))
    for key in ("total_loss", "masked_lm_loss", "next_sentence_loss", "grad_norm"):
        np.testing.assert_allclose(values_4[key].numpy(), values_1[key].numpy(), rtol=1e-5,
                                   err_msg=key)
    # The key biases' gradients are exactly 0 in real arithmetic (softmax ignores a constant
    # added to all scores of a query): rounding noise, which Adam amplifies; bounded by
    # tests/rounding_bounds.py (4 micro-batches: 3 more additions of whole gradients).
    noise += [key_bias_noise(t.model, t.task, [batch] * 2, extra_additions=3)
              for t in (one, four)]
    bounds = ZeroGradientBounds(largest_noise(*noise), values_1["learning_rate"].numpy(),
                                *starts)
    w1, w4 = weights(one), weights(four)
    for name in w1:
        if name not in bounds.names():
            np.testing.assert_allclose(w4[name], w1[name], rtol=0, atol=1e-5, err_msg=name)
    bounds.check(trainer_state(one), trainer_state(four))
    assert int(four.global_step.numpy()) == 2


def test_batch_not_divisible_by_accumulation_steps_names_the_flags(tmp_path):
    from bert_tf.bert.pretraining_task import PretrainingError

    with pytest.raises(PretrainingError,
                       match="--train_batch_size=6.*--gradient_accumulation_steps=4"):
        trainer(tmp_path, train_batch_size=6, gradient_accumulation_steps=4)
