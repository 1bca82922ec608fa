"""Dynamic padding: how far a batch of fixed-length records is cut, and inference by length.

Records keep the original's fixed length (`max_seq_length`) on disk; a batch is cut to its
longest real sequence (the largest `input_mask` sum), rounded up to a multiple of `width` so that
a run traces at most `ceil(max_seq_length / width)` shapes. Positions past a sequence's
`input_mask` contribute exact zeros to every loss and output of BERT (their attention weight
underflows to 0 and their labels and weights are 0), so a cut batch computes what the padded
batch computes, on fewer positions.

Inference sorts the examples by length so that a batch holds examples of similar length, and
gives the outputs back in input order (`length_order`; `InputOrder` for batches that the input
pipeline sorted, whose rows carry their record's index). Outputs with a sequence axis are
padded back to max_seq_length (`pad_back`).
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


def real_lengths(input_mask):
    """int32 [...]: each sequence's real length, the position after its last `input_mask` 1
    (the sum of a mask of ones then zeros; robust to a mask with holes).

    Args:
      input_mask: int tensor [..., S].
    """
    mask = tf.cast(tf.not_equal(input_mask, 0), tf.int32)
    positions = tf.range(1, tf.shape(mask)[-1] + 1, dtype=tf.int32)
    return tf.reduce_max(mask * positions, axis=-1)


def cut_batch(features, sequence_keys, max_seq_length, width=DEFAULT_WIDTH, seq_axis=1,
              position_keys=()):
    """Cuts the sequence features of a batch to its longest `input_mask`, rounded up.

    Args:
      features: dict of tensors; `features["input_mask"]` is int [B, max_seq_length] (or
        [R, B, max_seq_length] with `seq_axis=2`: the stacked batches of R replicas, cut to
        one length, the longest of all; or [B, C, max_seq_length], records of C sequences
        each, with `seq_axis=2`).
      sequence_keys: names of the features whose axis `seq_axis` is the sequence ([B,
        max_seq_length, ...]); the others (labels, masked-LM positions, ...) are returned
        unchanged.
      max_seq_length, width: see `padded_length`.
      seq_axis: the sequence axis: 1, or 2 for stacked replica batches (or records of
        several sequences), 3 for both.
      position_keys: features holding positions into the sequence (e.g. masked_lm_positions
        [B, P]): the cut keeps every position they name, so a gather at them stays in range
        even where a record names a position past its mask.
    Returns:
      dict of the same tensors, those of `sequence_keys` [B, L, ...] with L <= max_seq_length.
    """
    longest = tf.reduce_max(real_lengths(features["input_mask"]))
    for name in position_keys:
        if name in features:
            longest = tf.maximum(longest, tf.reduce_max(tf.cast(features[name], tf.int32)) + 1)
    length = padded_length(longest, max_seq_length, width)
    cut = {}
    for name, value in features.items():
        if name in sequence_keys:
            value = value[(slice(None),) * seq_axis + (slice(None, length),)]
        cut[name] = value
    return cut


def pad_back(value, max_seq_length, fill):
    """numpy [B, L, ...] -> [B, max_seq_length, ...]: positions L.. filled with `fill` (the
    inverse of the cut, for outputs that have a sequence axis)."""
    value = np.asarray(value)
    missing = max_seq_length - value.shape[1]
    if missing <= 0:
        return value
    widths = [(0, 0), (0, missing)] + [(0, 0)] * (value.ndim - 2)
    return np.pad(value, widths, constant_values=np.asarray(fill, value.dtype))


class InputOrder:
    """Puts the per-example outputs of batches run in length order back in input order.

    `add(batch)` takes a dict of numpy arrays [B, ...] with `index_key` (each row's position
    in the input; -1: a row of padding, dropped) and returns the rows that now continue the
    input order without a gap, as one dict of arrays (or None). Rows wait until every earlier
    row has come; `pending` counts them.
    """

    def __init__(self, index_key):
        self.index_key = index_key
        self.next = 0
        self._chunks = []

    @property
    def pending(self):
        return sum(len(c[self.index_key]) for c in self._chunks)

    def add(self, batch):
        real = np.asarray(batch[self.index_key]) >= 0
        if real.any():
            self._chunks.append({k: np.asarray(v)[real] for k, v in batch.items()})
        if not self._chunks:
            return None
        indices = np.concatenate([c[self.index_key] for c in self._chunks])
        order = np.argsort(indices, kind="stable")
        expected = self.next + np.arange(len(order))
        ready = int(np.argmin(indices[order] == expected)) if len(order) else 0
        if indices[order[-1]] == expected[-1]:
            ready = len(order)
        if not ready:
            return None
        rows = {k: np.concatenate([c[k] for c in self._chunks]) for k in self._chunks[0]}
        self.next += ready
        rest = order[ready:]
        self._chunks = [{k: v[rest] for k, v in rows.items()}] if len(rest) else []
        return {k: v[order[:ready]] for k, v in rows.items()}


def length_order(lengths, windows=None):
    """The order that sorts examples by length, longest first, ties in input order, and its
    inverse.

    Args:
      lengths: int sequence [N], each example's real length.
      windows: None (sort all N), or the sizes of consecutive windows (summing to N) each
        sorted on its own: a caller that writes its outputs back in input order holds at most
        one window of them.
    Returns:
      (order, inverse): int64 arrays [N]; `sorted = x[order]`, `x = sorted[inverse]`.
    """
    lengths = np.asarray(lengths, np.int64).reshape(-1)
    sizes = [len(lengths)] if windows is None else [int(w) for w in windows]
    if sum(sizes) != len(lengths) or any(w < 0 for w in sizes):
        raise ValueError(f"windows {sizes} do not split {len(lengths)} examples")
    order, begin = [], 0
    for size in sizes:
        window = lengths[begin:begin + size]
        order.append(begin + np.argsort(-window, kind="stable"))
        begin += size
    order = np.concatenate(order).astype(np.int64) if order else np.zeros([0], np.int64)
    inverse = np.empty_like(order)
    inverse[order] = np.arange(len(order))
    return order, inverse


def windows_of(costs, budget, multiple=1):
    """Sizes of consecutive windows of examples, each holding examples until their `costs`
    (e.g. bytes of output) exceed `budget`, cut at a multiple of `multiple` examples (a batch
    size, so that no batch straddles two windows) and at least `multiple` long.

    Args:
      costs: sequence [N] of numbers >= 0; budget: number > 0; multiple: int >= 1.
    Returns:
      list of int summing to N (the last window may be shorter).
    """
    sizes, size, total = [], 0, 0.0
    for cost in costs:
        size += 1
        total += cost
        if size % multiple == 0 and total >= budget:
            sizes.append(size)
            size, total = 0, 0.0
    if size:
        sizes.append(size)
    return sizes


def in_input_order(outputs, order):
    """Gives back, in input order, the outputs of examples computed in `order`.

    Args:
      outputs: iterable of the outputs of examples order[0], order[1], ... (in that order).
      order: int sequence [N] from `length_order`.
    Yields:
      (index, output) for index = 0, 1, ..., N - 1, each as soon as all before it are done;
      only outputs that wait for an earlier example are held (within a window of
      `length_order`, at most that window).
    """
    waiting, next_index = {}, 0
    for k, output in enumerate(outputs):
        waiting[int(order[k])] = output
        while next_index in waiting:
            yield next_index, waiting.pop(next_index)
            next_index += 1
    if waiting or next_index != len(order):
        raise ValueError(f"{next_index + len(waiting)} outputs for {len(order)} examples")
