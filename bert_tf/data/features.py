"""The pretraining TFRecord format: feature names, parsing spec and a fast encoder.

One record is a serialized `tf.train.Example` with seven fixed-length features (REFERENCE.md §6):

  input_ids, input_mask, segment_ids          int64   [max_seq_length], zero-padded
  masked_lm_positions, masked_lm_ids          int64   [max_predictions_per_seq], zero-padded
  masked_lm_weights                           float32 [max_predictions_per_seq], 1.0 real / 0.0 pad
  next_sentence_labels                        int64   [1], 1 when segment B is a random span

`feature_spec` is what the training input pipeline parses with; `ExampleEncoder` writes the
same bytes protobuf's deterministic serialization would (map keys sorted), without building
protobuf objects, which is most of the cost of writing millions of records.

The other record writers (classifier, SQuAD, ELECTRA) build their Examples from the same
pieces: `varint`, `map_entry` (one feature around packed values), `Int64EntryHeads` (an int64
feature's bytes before its values, by their length), `LengthPrefixed` and the wire tags
`TAG_INT64_LIST` / `TAG_FLOAT_LIST`.

Importing this module does not import TensorFlow; only `feature_spec` does.
"""

import struct

import numpy as np

FEATURE_NAMES = (
    "input_ids",
    "input_mask",
    "segment_ids",
    "masked_lm_positions",
    "masked_lm_ids",
    "masked_lm_weights",
    "next_sentence_labels",
)

INT64_FEATURES = frozenset(FEATURE_NAMES) - {"masked_lm_weights"}


def feature_shapes(max_seq_length, max_predictions_per_seq):
    """Returns {name: (shape, dtype name)} of one parsed record."""
    shapes = {}
    for name in FEATURE_NAMES:
        if name in ("input_ids", "input_mask", "segment_ids"):
            shape = [max_seq_length]
        elif name == "next_sentence_labels":
            shape = [1]
        else:
            shape = [max_predictions_per_seq]
        shapes[name] = (shape, "int64" if name in INT64_FEATURES else "float32")
    return shapes


def feature_spec(max_seq_length, max_predictions_per_seq):
    """The `tf.io.parse_single_example` / `parse_example` spec of a pretraining record.

    Returns:
      dict name -> tf.io.FixedLenFeature: int64 [max_seq_length] for input_ids, input_mask,
      segment_ids; int64 [max_predictions_per_seq] for masked_lm_positions, masked_lm_ids;
      float32 [max_predictions_per_seq] for masked_lm_weights; int64 [1] for
      next_sentence_labels.
    """
    import tensorflow as tf  # pylint: disable=g-import-not-at-top

    return {
        name: tf.io.FixedLenFeature(shape, tf.int64 if dtype == "int64" else tf.float32)
        for name, (shape, dtype) in feature_shapes(max_seq_length,
                                                   max_predictions_per_seq).items()
    }


def _encode_varint(value):
    out = bytearray()
    while True:
        byte = value & 0x7F
        value >>= 7
        if value:
            out.append(byte | 0x80)
        else:
            out.append(byte)
            return bytes(out)


_SMALL_VARINTS = tuple(_encode_varint(n) for n in range(1 << 14))


def varint(value):
    """Protobuf base-128 varint of a non-negative int."""
    if value < 16384:
        return _SMALL_VARINTS[value]
    return _encode_varint(value)


# Wire tags: Example.features = 1, Features.feature (map entry) = 1, entry key = 1,
# entry value = 2, Feature.float_list = 2, Feature.int64_list = 3, *List.value = 1 (packed).
_TAG_1 = b"\x0a"
_TAG_ENTRY_VALUE = b"\x12"
TAG_FLOAT_LIST = b"\x12"
TAG_INT64_LIST = b"\x1a"


def _length_delimited(tag, payload):
    return tag + varint(len(payload)) + payload


def map_entry(name, list_tag, packed):
    """One `Features.feature` map entry around an already packed value list."""
    value_list = _length_delimited(_TAG_1, packed) if packed else b""
    feature = _length_delimited(list_tag, value_list)
    entry = _length_delimited(_TAG_1, name.encode()) + _length_delimited(
        _TAG_ENTRY_VALUE, feature)
    return _length_delimited(_TAG_1, entry)


class ExampleEncoder:
    """Serializes pretraining instances straight to `tf.train.Example` bytes.

    The bytes equal `example.SerializeToString(deterministic=True)` of the protobuf the original
    builds (protobuf's default, non-deterministic serialization orders map entries differently
    from process to process, so the original does not reproduce its own bytes; the parsed
    features are what is compared).

    Args:
      max_seq_length: length of input_ids / input_mask / segment_ids.
      max_predictions_per_seq: length of the masked_lm_* features.
      vocab_size: ids are < vocab_size (sizes the varint lookup table).
    """

    def __init__(self, max_seq_length, max_predictions_per_seq, vocab_size):
        self.max_seq_length = max_seq_length
        self.max_predictions_per_seq = max_predictions_per_seq
        size = max(vocab_size, max_seq_length)
        self._varints = [varint(n) for n in range(size)]
        length, preds = max_seq_length, max_predictions_per_seq
        self._zeros_seq = b"\x00" * length
        self._zeros_pred = b"\x00" * preds
        # Constant-shaped entries, precomputed per number of real values.
        self._input_mask = [
            map_entry("input_mask", TAG_INT64_LIST, b"\x01" * n + b"\x00" * (length - n))
            for n in range(length + 1)
        ]
        one, zero = struct.pack("<f", 1.0), struct.pack("<f", 0.0)
        self._weights = [
            map_entry("masked_lm_weights", TAG_FLOAT_LIST, one * k + zero * (preds - k))
            for k in range(preds + 1)
        ]
        self._next_sentence = [
            map_entry("next_sentence_labels", TAG_INT64_LIST, varint(label)) for label in (0, 1)
        ]
        # segment_ids is always `length` one-byte varints: only the bytes change.
        segment_entry = map_entry("segment_ids", TAG_INT64_LIST, self._zeros_seq)
        self._segment_prefix = segment_entry[:-length]
        self._key_input_ids = _length_delimited(_TAG_1, b"input_ids")
        self._key_masked_lm_ids = _length_delimited(_TAG_1, b"masked_lm_ids")
        self._key_masked_lm_positions = _length_delimited(_TAG_1, b"masked_lm_positions")

    def _int64_entry(self, key, packed):
        value_list = _TAG_1 + varint(len(packed)) + packed
        feature = TAG_INT64_LIST + varint(len(value_list)) + value_list
        entry = key + _TAG_ENTRY_VALUE + varint(len(feature)) + feature
        return _TAG_1 + varint(len(entry)) + entry

    def encode(self, input_ids, num_a_tokens, masked_lm_positions, masked_lm_ids,
               is_random_next):
        """Returns the serialized Example of one instance.

        Args:
          input_ids: ids of `[CLS] A [SEP] B [SEP]` (unpadded, at most max_seq_length ints).
          num_a_tokens: number of segment-0 tokens, `len(A) + 2`.
          masked_lm_positions, masked_lm_ids: the predictions, sorted by position (at most
            max_predictions_per_seq ints each).
          is_random_next: whether B is a random span (next_sentence_labels = 1).
        """
        table = self._varints
        n = len(input_ids)
        pad = self.max_seq_length - n
        k = len(masked_lm_positions)
        pad_k = self.max_predictions_per_seq - k
        zeros_seq, zeros_pred = self._zeros_seq, self._zeros_pred
        ids = b"".join(map(table.__getitem__, input_ids)) + zeros_seq[:pad]
        label_ids = b"".join(map(table.__getitem__, masked_lm_ids)) + zeros_pred[:pad_k]
        positions = b"".join(map(table.__getitem__, masked_lm_positions)) + zeros_pred[:pad_k]
        segments = (zeros_seq[:num_a_tokens] + b"\x01" * (n - num_a_tokens) + zeros_seq[:pad])
        features = b"".join((
            self._int64_entry(self._key_input_ids, ids),
            self._input_mask[n],
            self._int64_entry(self._key_masked_lm_ids, label_ids),
            self._int64_entry(self._key_masked_lm_positions, positions),
            self._weights[k],
            self._next_sentence[1 if is_random_next else 0],
            self._segment_prefix,
            segments,
        ))
        return _TAG_1 + varint(len(features)) + features


class VarintTable:
    """Vectorized varints of ints below `size`, through a lookup table."""

    def __init__(self, size):
        width = len(varint(max(size - 1, 0)))
        encoded = [varint(n) for n in range(size)]
        self.bytes = np.zeros((size, width), np.uint8)
        self.valid = np.zeros((size, width), bool)
        for n, e in enumerate(encoded):
            self.bytes[n, :len(e)] = np.frombuffer(e, np.uint8)
            self.valid[n, :len(e)] = True
        self.lengths = self.valid.sum(axis=1).astype(np.int64)

    def encode(self, values):
        """int array (any shape) -> (varint bytes in row-major order, byte count per value)."""
        return self.bytes[values][self.valid[values]], self.lengths[values]


class LengthPrefixed(dict):
    """bytes prefix, keyed by payload length: `head + varint(length)`; built on first use."""

    def __init__(self, head):
        super().__init__()
        self.head = head

    def __missing__(self, length):
        value = self[length] = self.head + varint(length)
        return value


class Int64EntryHeads(dict):
    """Everything of an int64 map entry before its packed values, keyed by their byte count."""

    def __init__(self, name):
        super().__init__()
        self.key = _length_delimited(_TAG_1, name.encode())

    def __missing__(self, packed_length):
        value_list_len = 1 + len(varint(packed_length)) + packed_length
        feature_len = 1 + len(varint(value_list_len)) + value_list_len
        entry_len = len(self.key) + 1 + len(varint(feature_len)) + feature_len
        head = (_TAG_1 + varint(entry_len) + self.key + _TAG_ENTRY_VALUE + varint(feature_len) +
                TAG_INT64_LIST + varint(value_list_len) + _TAG_1 + varint(packed_length))
        self[packed_length] = head
        return head


class BatchExampleEncoder(ExampleEncoder):
    """`ExampleEncoder` for many instances at once: varints are computed with numpy.

    `encode_batch` gives exactly the bytes `encode` gives for each instance.
    """

    def __init__(self, max_seq_length, max_predictions_per_seq, vocab_size):
        super().__init__(max_seq_length, max_predictions_per_seq, vocab_size)
        self._heads = {name: Int64EntryHeads(name)
                       for name in ("input_ids", "masked_lm_ids", "masked_lm_positions")}
        self._example_head = LengthPrefixed(_TAG_1)
        self._table = VarintTable(max(vocab_size, max_seq_length))

    def encode_batch(self, input_ids, lengths, num_a_tokens, masked_lm_positions, masked_lm_ids,
                     num_predictions, is_random_next):
        """Serialized Examples of B instances.

        Args:
          input_ids: int array [B, max_seq_length], zero-padded.
          lengths: int array [B], real tokens per row.
          num_a_tokens: int array [B], segment-0 tokens per row.
          masked_lm_positions, masked_lm_ids: int arrays [B, max_predictions_per_seq],
            zero-padded.
          num_predictions: int array [B], real predictions per row.
          is_random_next: bool/int array [B].

        Returns:
          list of B bytes.
        """
        length = self.max_seq_length
        packed = []
        for matrix in (input_ids, masked_lm_ids, masked_lm_positions):
            data, nbytes = self._table.encode(matrix)
            row_bytes = nbytes.sum(axis=1)
            ends = np.cumsum(row_bytes)
            packed.append((data.tobytes(), (ends - row_bytes).tolist(), ends.tolist(),
                           row_bytes.tolist()))
        column = np.arange(length)
        lengths = np.asarray(lengths)
        num_a_tokens = np.asarray(num_a_tokens)
        segments = ((column >= num_a_tokens[:, None]) &
                    (column < lengths[:, None])).astype(np.uint8).tobytes()
        ids_head, mid_head, pos_head = (self._heads["input_ids"], self._heads["masked_lm_ids"],
                                        self._heads["masked_lm_positions"])
        (ids_data, ids_start, ids_end, ids_len), (mid_data, mid_start, mid_end, mid_len), (
            pos_data, pos_start, pos_end, pos_len) = packed
        input_mask, weights, next_sentence = self._input_mask, self._weights, self._next_sentence
        segment_prefix, example_head = self._segment_prefix, self._example_head
        out = []
        for r, (n, k, label) in enumerate(zip(lengths.tolist(), np.asarray(num_predictions).tolist(),
                                              np.asarray(is_random_next).tolist())):
            features = b"".join((
                ids_head[ids_len[r]], ids_data[ids_start[r]:ids_end[r]],
                input_mask[n],
                mid_head[mid_len[r]], mid_data[mid_start[r]:mid_end[r]],
                pos_head[pos_len[r]], pos_data[pos_start[r]:pos_end[r]],
                weights[k],
                next_sentence[1 if label else 0],
                segment_prefix, segments[r * length:(r + 1) * length],
            ))
            out.append(example_head[len(features)] + features)
        return out
