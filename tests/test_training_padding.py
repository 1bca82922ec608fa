"""Tests of bert_tf/training/padding.py: cut lengths and the length order of inference."""

import numpy as np
import pytest
import tensorflow as tf

from bert_tf.bert.config import BertConfig
from bert_tf.bert.pretraining_task import PretrainingTask
from bert_tf.training import padding
from bert_tf.training.trainer import Trainer, TrainerOptions
from rounding_bounds import ZeroGradientBounds
from test_training_helpers import (
    TINY_CONFIG, key_bias_noise, largest_noise, record_batches, trainer_state, write_records,
)


@pytest.mark.parametrize("longest, expected", [(0, 16), (1, 16), (16, 16), (17, 32), (120, 128),
                                               (128, 128)])
def test_padded_length_rounds_up_and_caps(longest, expected):
    assert padding.padded_length(longest, 128, 16) == expected
    assert int(padding.padded_length(tf.constant(longest), 128, 16)) == expected


def test_padded_length_caps_at_a_max_seq_length_that_is_not_a_multiple():
    assert padding.padded_length(99, 100, 16) == 100
    assert int(padding.padded_length(tf.constant(99), 100, 16)) == 100
    with pytest.raises(ValueError, match="width"):
        padding.padded_length(3, 128, 0)


def test_cut_batch_cuts_only_sequence_features_to_the_longest_mask():
    mask = np.zeros([3, 64], np.int32)
    mask[0, :5] = 1
    mask[1, :20] = 1
    ids = np.arange(3 * 64, dtype=np.int32).reshape(3, 64)
    features = {"input_ids": tf.constant(ids), "input_mask": tf.constant(mask),
                "label_ids": tf.constant([1, 2, 3])}
    cut = padding.cut_batch(features, ("input_ids", "input_mask"), 64, width=8)
    assert cut["input_ids"].shape == (3, 24)
    np.testing.assert_array_equal(cut["input_ids"].numpy(), ids[:, :24])
    np.testing.assert_array_equal(cut["input_mask"].numpy(), mask[:, :24])
    np.testing.assert_array_equal(cut["label_ids"].numpy(), [1, 2, 3])


def test_length_order_sorts_longest_first_stably_and_inverts():
    lengths = [5, 9, 5, 12, 9]
    order, inverse = padding.length_order(lengths)
    np.testing.assert_array_equal(order, [3, 1, 4, 0, 2])
    values = np.asarray(lengths)
    np.testing.assert_array_equal(values[order][inverse], values)


def test_length_order_in_windows_sorts_each_window_apart():
    lengths = [5, 9, 5, 12, 9, 1, 30]
    order, inverse = padding.length_order(lengths, windows=[4, 3])
    np.testing.assert_array_equal(order, [3, 1, 0, 2, 6, 4, 5])
    np.testing.assert_array_equal(np.asarray(lengths)[order][inverse], lengths)
    with pytest.raises(ValueError, match="do not split"):
        padding.length_order(lengths, windows=[4, 4])


def test_windows_of_cut_at_the_budget_on_batch_multiples():
    assert padding.windows_of([1] * 10, budget=3, multiple=2) == [4, 4, 2]
    assert padding.windows_of([5, 0, 0, 0, 5], budget=4, multiple=2) == [2, 3]
    assert padding.windows_of([], budget=4) == []


def test_in_input_order_gives_back_each_output_once_in_order():
    lengths = [3, 7, 1, 7, 4]
    order, _ = padding.length_order(lengths)
    computed = [f"out{i}" for i in order]
    assert list(padding.in_input_order(computed, order)) == [(i, f"out{i}") for i in range(5)]
    with pytest.raises(ValueError, match="4 outputs for 5 examples"):
        list(padding.in_input_order(computed[:4], order))


def test_real_lengths_end_at_the_last_real_token():
    mask = tf.constant([[1, 1, 1, 0, 0], [1, 0, 1, 0, 0], [0, 0, 0, 0, 0], [1, 1, 1, 1, 1]])
    np.testing.assert_array_equal(padding.real_lengths(mask).numpy(), [3, 3, 0, 5])


def test_cut_batch_of_stacked_replicas_cuts_all_to_the_longest_and_keeps_positions():
    mask = np.zeros([2, 2, 32], np.int32)  # 2 replicas x 2 sequences
    mask[0, 0, :3] = 1
    mask[1, 1, :9] = 1
    features = {"input_ids": tf.constant(mask * 7), "input_mask": tf.constant(mask),
                "masked_lm_positions": tf.constant([[[1, 0], [0, 0]], [[2, 0], [8, 0]]])}
    cut = padding.cut_batch(features, ("input_ids", "input_mask"), 32, width=4, seq_axis=2,
                            position_keys=("masked_lm_positions",))
    assert cut["input_ids"].shape == (2, 2, 12)
    np.testing.assert_array_equal(cut["input_mask"].numpy(), mask[:, :, :12])
    # A position past every mask (a malformed record) still lies inside the cut.
    features["masked_lm_positions"] = tf.constant([[[1, 0], [0, 0]], [[2, 0], [20, 0]]])
    cut = padding.cut_batch(features, ("input_ids", "input_mask"), 32, width=4, seq_axis=2,
                            position_keys=("masked_lm_positions",))
    assert cut["input_ids"].shape == (2, 2, 24)


def test_cut_batch_of_records_of_several_sequences_cuts_their_last_axis():
    """Records of C sequences each ([B, C, S], e.g. RACE's 4 choices): the sequence axis is 2
    (3 for the stacked batches of replicas), cut to the longest of all."""
    mask = np.zeros([2, 4, 32], np.int32)
    mask[0, 1, :5] = 1
    mask[1, 3, :11] = 1
    features = {"input_ids": tf.constant(mask * 3), "input_mask": tf.constant(mask),
                "label_ids": tf.constant([1, 2])}
    cut = padding.cut_batch(features, ("input_ids", "input_mask"), 32, width=4, seq_axis=2)
    assert cut["input_ids"].shape == (2, 4, 12)
    np.testing.assert_array_equal(cut["input_mask"].numpy(), mask[:, :, :12])
    assert cut["label_ids"] is features["label_ids"]
    stacked = {"input_ids": tf.constant(mask[None]), "input_mask": tf.constant(mask[None])}
    cut = padding.cut_batch(stacked, ("input_ids", "input_mask"), 32, width=8, seq_axis=3)
    assert cut["input_ids"].shape == (1, 2, 4, 16)


def test_pad_back_restores_max_seq_length_with_the_fill():
    value = np.arange(6, dtype=np.float32).reshape(2, 3)
    padded = padding.pad_back(value, 5, float("-inf"))
    assert padded.shape == (2, 5) and padded.dtype == np.float32
    np.testing.assert_array_equal(padded[:, :3], value)
    assert np.all(np.isneginf(padded[:, 3:]))
    ids = padding.pad_back(np.ones([1, 2, 3], np.int32), 4, -1)
    assert ids.shape == (1, 4, 3) and ids[0, 3, 0] == -1
    np.testing.assert_array_equal(padding.pad_back(value, 3, 0), value)


def test_input_order_gives_rows_back_in_input_order_without_padding_rows():
    order = padding.InputOrder("index")
    out = []
    # Two windows of 4 records, each run longest first; -1 rows pad the last batch.
    for indices in ([2, 0], [3, 1], [5, 7], [4, 6], [8, -1]):
        rows = order.add({"index": np.array(indices), "value": np.array(indices) * 10})
        out.append(None if rows is None else rows["index"].tolist())
        if rows is not None:
            np.testing.assert_array_equal(rows["value"], rows["index"] * 10)
    assert out == [[0], [1, 2, 3], None, [4, 5, 6, 7], [8]]
    assert order.pending == 0


class LengthRecordingTask(PretrainingTask):
    """Pretraining that also reports the sequence length each step computed."""

    step_keys = PretrainingTask.step_keys + ("sequence_length",)
    log_names = PretrainingTask.log_names + ("length",)

    def compute_loss(self, outputs, features, normalizers):
        losses = dict(super().compute_loss(outputs, features, normalizers))
        losses["sequence_length"] = tf.cast(tf.shape(features["input_ids"])[1], tf.float32)
        return losses


@pytest.mark.slow  # a trainer, 16 steps and 16 eval batches (with XLA: compiles 3-4 shapes)
@pytest.mark.parametrize("use_xla", [False, True])
def test_training_on_varied_lengths_traces_once_and_computes_a_bounded_set_of_shapes(
        tmp_path, use_xla):
    """64 pretraining records of 6 to 32 pieces, batch 4 in file order, width 8: each step
    computes its batch's longest record rounded up to 8 (masked-LM positions included), so at
    most 4 shapes (each compiled once under XLA); the step functions are traced once."""
    path = write_records(tmp_path / "varied.tfrecord", 64, max_seq_length=32, seed=3)
    config = BertConfig.from_dict(dict(TINY_CONFIG, hidden_dropout_prob=0.0,
                                       attention_probs_dropout_prob=0.0))
    trainer = Trainer(config, LengthRecordingTask(32, 3), TrainerOptions(
        output_dir=str(tmp_path / "out"), train_batch_size=4, shuffle_buffer_size=0,
        padding_width=8, use_xla=use_xla, num_train_steps=100, num_warmup_steps=0))
    train_steps = trainer.make_train_function(
        trainer.input_stream([path], 4, is_training=True))
    lengths = np.concatenate([train_steps(tf.constant(8))["sequence_length"].numpy()
                              for _ in range(2)])
    masks = np.stack([tf.io.parse_single_example(r, {"input_mask": tf.io.FixedLenFeature(
        [32], tf.int64)})["input_mask"].numpy() for r in tf.data.TFRecordDataset(path)])
    real = masks.sum(axis=1)[:64].reshape(16, 4).max(axis=1)
    np.testing.assert_array_equal(lengths, np.minimum(-(-real // 8) * 8, 32))
    assert len(set(real.tolist())) > 4 >= len(set(lengths.tolist())) > 1
    assert train_steps.experimental_get_tracing_count() == 1
    if use_xla:
        assert trainer._gradients_fn.experimental_get_tracing_count() == 1
    eval_step = trainer.make_eval_function(trainer.input_stream([path], 4, is_training=False))
    for _ in range(16):
        eval_step()
    assert eval_step.experimental_get_tracing_count() == 1


@pytest.mark.slow  # two tiny trainers, 4 steps each
def test_pretraining_on_cut_batches_equals_the_padded_run(tmp_path):
    """Masked LM + next sentence on records of 6 to 32 pieces: 4 steps on batches cut to
    multiples of 8 give the losses and weights of batches at max_seq_length (dropout 0)."""
    path = write_records(tmp_path / "varied.tfrecord", 64, max_seq_length=32, seed=3)
    config = BertConfig.from_dict(dict(TINY_CONFIG, hidden_dropout_prob=0.0,
                                       attention_probs_dropout_prob=0.0))
    # The records in file order, padded: the key biases' rounding bounds of these cover the
    # cut batches (cutting removes rounding events: padded keys have softmax weight 0).
    batches = record_batches([path], LengthRecordingTask(32, 3), 4, 4)
    runs, starts, noises = {}, {}, []
    for dynamic_padding in (False, True):
        trainer = Trainer(config, LengthRecordingTask(32, 3), TrainerOptions(
            output_dir=str(tmp_path / str(dynamic_padding)), train_batch_size=4,
            shuffle_buffer_size=0, padding_width=8, dynamic_padding=dynamic_padding,
            learning_rate=1e-3, num_train_steps=100, num_warmup_steps=0))
        starts[dynamic_padding] = trainer_state(trainer)
        noises.append(key_bias_noise(trainer.model, trainer.task, batches))
        values = trainer.make_train_function(
            trainer.input_stream([path], 4, is_training=True))(tf.constant(4))
        noises.append(key_bias_noise(trainer.model, trainer.task, batches))
        runs[dynamic_padding] = values, trainer_state(trainer)
    (padded, padded_weights), (cut, cut_weights) = runs[False], runs[True]
    assert padded["sequence_length"].numpy().tolist() == [32] * 4
    assert min(cut["sequence_length"].numpy()) < 32
    for key in PretrainingTask.step_keys:
        np.testing.assert_allclose(cut[key].numpy(), padded[key].numpy(), rtol=1e-5,
                                   err_msg=key)
    # The key biases' gradient is 0 in real arithmetic (softmax is shift-invariant): rounding
    # noise, which Adam amplifies; they and their moments within tests/rounding_bounds.py's
    # bounds, the other weights within 1e-6.
    bounds = ZeroGradientBounds(largest_noise(*noises), padded["learning_rate"].numpy(),
                                starts[False], starts[True])
    for name, value in padded_weights.items():
        if name not in bounds.names() and "/adam_" not in name:
            np.testing.assert_allclose(cut_weights[name], value, rtol=1e-5, atol=1e-6,
                                       err_msg=name)
    bounds.check(padded_weights, cut_weights)
