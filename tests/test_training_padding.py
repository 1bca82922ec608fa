"""Tests of bert_tf/training/padding.py: cut lengths and the length order of inference."""

import numpy as np
import pytest
import tensorflow as tf

from bert_tf.training import padding


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
