"""Dynamic padding: how far a batch of fixed-length records is cut, and inference by length.

Records keep the original's fixed length (`max_seq_length`) on disk; a batch is cut to its
longest real sequence (the largest `input_mask` sum), rounded up to a multiple of `width` so that
a run traces at most `ceil(max_seq_length / width)` shapes. Positions past a sequence's
`input_mask` contribute exact zeros to every loss and output of BERT (their attention weight
underflows to 0 and their labels and weights are 0), so a cut batch computes what the padded
batch computes, on fewer positions.

Inference sorts the examples by length so that a batch holds examples of similar length, and
gives the outputs back in input order (`length_order`).
"""

import numpy as np
import tensorflow as tf

# 16 positions keep the number of traced shapes small (8 at 128, 24 at 384) while wasting at
# most 15 positions per batch.
DEFAULT_WIDTH = 16


def padded_length(longest, max_seq_length, width=DEFAULT_WIDTH):
    """`longest` rounded up to a multiple of `width`, at least `width`, at most `max_seq_length`.

    Args:
      longest: int, or int32 scalar tensor: the longest real sequence of a batch.
      max_seq_length: int, the records' length.
      width: int > 0.
    Returns:
      The cut length: an int, or an int32 scalar tensor when `longest` is a tensor.
    """
    if width <= 0:
        raise ValueError(f"width must be positive, got {width}")
    if isinstance(longest, (int, np.integer)):
        return int(min(max_seq_length, max(1, -(-int(longest) // width)) * width))
    longest = tf.cast(longest, tf.int32)
    rounded = tf.maximum(1, (longest + width - 1) // width) * width
    return tf.minimum(rounded, max_seq_length)


def cut_batch(features, sequence_keys, max_seq_length, width=DEFAULT_WIDTH):
    """Cuts the sequence features of a batch to its longest `input_mask`, rounded up.

    Args:
      features: dict of tensors; `features["input_mask"]` is int [B, max_seq_length].
      sequence_keys: names of the features whose axis 1 is the sequence ([B, max_seq_length,
        ...]); the others (labels, masked-LM positions, ...) are returned unchanged.
      max_seq_length, width: see `padded_length`.
    Returns:
      dict of the same tensors, those of `sequence_keys` [B, L, ...] with L <= max_seq_length.
    """
    longest = tf.reduce_max(tf.reduce_sum(tf.cast(features["input_mask"], tf.int32), axis=1))
    length = padded_length(longest, max_seq_length, width)
    return {
        name: value[:, :length] if name in sequence_keys else value
        for name, value in features.items()
    }


def length_order(lengths):
    """The order that sorts examples by length, longest first, ties in input order, and its
    inverse.

    Args:
      lengths: int sequence [N], each example's real length.
    Returns:
      (order, inverse): int64 arrays [N]; `sorted = x[order]`, `x = sorted[inverse]`.
    """
    lengths = np.asarray(lengths)
    order = np.argsort(-lengths, kind="stable")
    inverse = np.empty_like(order)
    inverse[order] = np.arange(len(order))
    return order, inverse
