"""Fine-tuning classification data: task files -> InputExamples -> features -> TFRecords.

The data side of run_classifier.py (REFERENCE.md §11, FINETUNING.md §1.2-1.3, §1.5):

  processors     one per task, in `bert_tf.data.classifier_tasks` (`get_processor`): which
                 file of data_dir a split is, which columns hold the texts, the label and the
                 guid, the label list; they read the files into `InputExample`s.
  features       `convert_single_example`: `[CLS] a [SEP] (b [SEP])`, the original's
                 truncation, zero padding, the label's index (or the float, for regression).
  records        `write_classifier_records`: the original's tf.train.Example records,
                 serialized without protobuf objects, written under a temporary name and renamed,
                 with a `<file>.meta.json` sidecar describing what they were made from
                 (`bert_tf.data.records`: `records_are_current` compares it to the current
                 flags).

Differences from the original, where it crashes or is silent: every bad input raises
`ClassifierDataError` naming the file and line (a missing file, a row with too few columns, a
label outside the label list, bytes that are not UTF-8); blank lines are skipped (the original
fails on them with IndexError); the 0-based row indices in guids still count them.

Importing this module does not import TensorFlow; only `record_feature_spec` and remote
(`gs://`) paths do.
"""

import dataclasses
import struct
from typing import List, Optional, Union

from absl import logging

from bert_tf import families, files
from bert_tf.data import writer as writer_lib
from bert_tf.data.features import (TAG_FLOAT_LIST, TAG_INT64_LIST, Int64EntryHeads,
                                   LengthPrefixed, map_entry, varint)
from bert_tf.data.records import META_SUFFIX, write_records_meta
from bert_tf.text import printable_text

NUM_LOGGED_EXAMPLES = 5
LOG_EVERY = 10000


class ClassifierDataError(ValueError):
    """Bad classification input: a task name, a data file or row, a label, a flag value."""


@dataclasses.dataclass
class InputExample:
    """One example of a sequence (pair) classification task.

    Attributes:
      guid: unique id, e.g. "train-12".
      text_a: the untokenized first sequence.
      text_b: the untokenized second sequence, or None for single-sequence tasks.
      label: the label (str), the score (float) for regression tasks, None when unknown.
    """
    guid: str
    text_a: str
    text_b: Optional[str] = None
    label: Optional[Union[str, float]] = None


class PaddingInputExample:
    """Marker for a filler example (all-zero features, is_real_example 0) that pads an eval or
    predict set to a multiple of the batch size when batches must be full (TPU)."""


@dataclasses.dataclass
class InputFeatures:
    """The features of one example (each list has max_seq_length ints)."""
    input_ids: List[int]
    input_mask: List[int]
    segment_ids: List[int]
    label_id: Union[int, float]
    is_real_example: bool = True


# ---------------------------------------------------------------------------------------------
# Features.


def truncate_lengths(len_a, len_b, max_length):
    """Lengths of a and b after the original's pair truncation to `max_length` tokens in all.

    The original pops the last token of the longer sequence (of b on a tie) until the pair
    fits: the longer one first comes down to the other's length, then b and a lose a token
    in turn, b first.
    """
    excess = len_a + len_b - max_length
    if excess <= 0:
        return len_a, len_b
    gap = min(abs(len_a - len_b), excess)
    if len_a > len_b:
        len_a -= gap
    else:
        len_b -= gap
    excess -= gap
    return len_a - excess // 2, len_b - (excess + 1) // 2


def _token_ids(tokenizer, text):
    if hasattr(tokenizer, "tokenize_to_ids"):
        return tokenizer.tokenize_to_ids(text)
    return tokenizer.convert_tokens_to_ids(tokenizer.tokenize(text))


class _Converter:
    """The per-example work shared by `convert_single_example` and the record writer."""

    def __init__(self, label_list, max_seq_length, tokenizer):
        if max_seq_length < 2:
            raise ClassifierDataError(
                f"max_seq_length={max_seq_length}: must be at least 2 ([CLS] and [SEP])")
        self.max_seq_length = max_seq_length
        self.tokenizer = tokenizer
        self.label_list = None if label_list is None else list(label_list)
        self.label_map = (None if label_list is None
                          else {label: i for i, label in enumerate(label_list)})
        vocab = tokenizer.vocab
        special = families.special_tokens_of(tokenizer)
        missing = [t for t in (special.cls, special.sep) if t not in vocab]
        if missing:
            raise ClassifierDataError(f"the vocab has no {' or '.join(missing)} token")
        self.cls_id, self.sep_id = vocab[special.cls], vocab[special.sep]
        self.pad_id = special.pad_id(vocab)
        self.special = special

    def ids(self, example):
        """(unpadded input_ids, number of segment-0 tokens) of a real example."""
        ids_a = _token_ids(self.tokenizer, example.text_a)
        ids_b = _token_ids(self.tokenizer, example.text_b) if example.text_b else []
        special = self.special
        if ids_b:
            budget = special.pair_budget(self.max_seq_length)
            if budget < 0:
                raise ClassifierDataError(
                    f"example {example.guid}: a pair needs max_seq_length >= "
                    f"{self.max_seq_length - budget}, got {self.max_seq_length}")
            len_a, len_b = truncate_lengths(len(ids_a), len(ids_b), budget)
            # Truncation can empty b (max_seq_length 3 or 4 for BERT): the single layout.
            return special.lay_out(ids_a[:len_a], ids_b[:len_b], self.cls_id, self.sep_id)
        return special.lay_out(ids_a[:self.max_seq_length - 2], [], self.cls_id, self.sep_id)

    def convert(self, ex_index, example):
        """(unpadded input_ids, number of segment-0 tokens, label_id, is_real_example) of an
        InputExample or PaddingInputExample; logs the first NUM_LOGGED_EXAMPLES."""
        if isinstance(example, PaddingInputExample):
            return [], 0, 0.0 if self.label_map is None else 0, False
        input_ids, num_a = self.ids(example)
        label_id = self.label_id(example)
        if ex_index < NUM_LOGGED_EXAMPLES:
            self.log(example, input_ids, num_a, label_id)
        return input_ids, num_a, label_id, True

    def label_id(self, example):
        if self.label_map is None:
            try:
                return float(example.label)
            except (TypeError, ValueError):
                raise ClassifierDataError(
                    f"example {example.guid}: score {example.label!r} is not a number") from None
        label_id = self.label_map.get(example.label)
        if label_id is None:
            raise ClassifierDataError(
                f"example {example.guid}: label {example.label!r} is not one of "
                f"{self.label_list}")
        return label_id

    def log(self, example, input_ids, num_a, label_id):
        length = self.max_seq_length
        n = len(input_ids)
        inv_vocab = getattr(self.tokenizer, "inv_vocab", None)
        tokens = ([inv_vocab[i] for i in input_ids] if inv_vocab is not None
                  else self.tokenizer.convert_ids_to_tokens(input_ids))
        padding = [0] * (length - n)
        segments = [0] * num_a + [1] * (n - num_a) + padding
        logging.info("*** Example ***")
        logging.info("guid: %s", example.guid)
        logging.info("tokens: %s", " ".join(printable_text(t) for t in tokens))
        logging.info("input_ids: %s", " ".join(
            str(x) for x in input_ids + [self.pad_id] * (length - n)))
        logging.info("input_mask: %s", " ".join(str(x) for x in [1] * n + padding))
        logging.info("segment_ids: %s", " ".join(str(x) for x in segments))
        if self.label_map is None:
            logging.info("label: %s (value = %s)", example.label, label_id)
        else:
            logging.info("label: %s (id = %d)", example.label, label_id)


def convert_single_example(ex_index, example, label_list, max_seq_length, tokenizer):
    """Features of one example, as the original computes them.

    Args:
      ex_index: the example's position (the first NUM_LOGGED_EXAMPLES are logged).
      example: InputExample or PaddingInputExample.
      label_list: list of str (label id = index), or None for regression (label_id = the
        float score).
      max_seq_length: int, the length of every feature list.
      tokenizer: a FullTokenizer (ours, or anything with tokenize/convert_tokens_to_ids/vocab).

    Returns:
      InputFeatures.
    """
    converter = _Converter(label_list, max_seq_length, tokenizer)
    input_ids, num_a, label_id, is_real = converter.convert(ex_index, example)
    n = len(input_ids)
    padding = [0] * (max_seq_length - n)
    return InputFeatures(input_ids + [converter.pad_id] * (max_seq_length - n),
                         [1] * n + padding,
                         [0] * num_a + [1] * (n - num_a) + padding, label_id, is_real)


# ---------------------------------------------------------------------------------------------
# Records.

def record_feature_spec(max_seq_length, is_regression=False):
    """The `tf.io.parse_example` spec of a classifier record, as the original parses it.

    Returns:
      dict name -> tf.io.FixedLenFeature: int64 [max_seq_length] for input_ids, input_mask,
      segment_ids; int64 [] for is_real_example; int64 [] for label_ids (float32 [] when
      is_regression).
    """
    import tensorflow as tf  # pylint: disable=g-import-not-at-top

    spec = {name: tf.io.FixedLenFeature([max_seq_length], tf.int64)
            for name in ("input_ids", "input_mask", "segment_ids")}
    spec["label_ids"] = tf.io.FixedLenFeature([], tf.float32 if is_regression else tf.int64)
    spec["is_real_example"] = tf.io.FixedLenFeature([], tf.int64)
    return spec


class ClassifierExampleEncoder:
    """Serializes classifier features straight to `tf.train.Example` bytes.

    The bytes equal `SerializeToString(deterministic=True)` of the Example the original builds
    (its default serialization may order the map entries differently; the parsed features are
    the same). label_ids is an int64 feature, or a float feature (float32) for regression.

    Features are written in sorted name order (input_ids, input_mask, is_real_example,
    label_ids, segment_ids), as deterministic serialization orders map entries.

    Args:
      max_seq_length: the length of input_ids / input_mask / segment_ids.
      vocab_size: ids are < vocab_size.
      is_regression: whether label_ids is a float.
      pad_id: what padded positions of input_ids hold (`SpecialTokens.pad_id`: 0, RoBERTa's 1).
    """

    def __init__(self, max_seq_length, vocab_size, is_regression=False, pad_id=0):
        length = self.max_seq_length = max_seq_length
        self.is_regression = is_regression
        self._varints = [varint(n) for n in range(max(vocab_size, 2))]
        self._zeros = b"\x00" * length
        self._pad_id = varint(pad_id)  # padding of input_ids (SpecialTokens.pad_id)
        self._pad_ids = self._pad_id * length
        self._ones = b"\x01" * length
        self._input_ids_head = Int64EntryHeads("input_ids")
        self._input_mask = [
            map_entry("input_mask", TAG_INT64_LIST, b"\x01" * n + b"\x00" * (length - n))
            for n in range(length + 1)]
        self._is_real = [map_entry("is_real_example", TAG_INT64_LIST, varint(v))
                         for v in (0, 1)]
        self._labels = {}
        segment_entry = map_entry("segment_ids", TAG_INT64_LIST, self._zeros)
        self._segment_prefix = segment_entry[:-length]
        self._example_head = LengthPrefixed(b"\x0a")

    def _label_entry(self, label_id):
        if self.is_regression:  # not memoized: 0.0 and -0.0 are equal keys, not equal bytes
            return map_entry("label_ids", TAG_FLOAT_LIST, struct.pack("<f", label_id))
        entry = self._labels.get(label_id)
        if entry is None:
            entry = self._labels[label_id] = map_entry("label_ids", TAG_INT64_LIST,
                                                        varint(label_id))
        return entry

    def encode(self, input_ids, num_a_tokens, label_id, is_real_example=True):
        """The serialized Example of one example.

        Args:
          input_ids: unpadded ids (at most max_seq_length ints).
          num_a_tokens: how many of them are segment 0 (`[CLS] a [SEP]`).
          label_id: int (float for regression).
          is_real_example: False for padding examples.
        """
        n = len(input_ids)
        pad = self.max_seq_length - n
        packed = (b"".join(map(self._varints.__getitem__, input_ids))
                  + self._pad_ids[:pad * len(self._pad_id)])
        features = b"".join((
            self._input_ids_head[len(packed)], packed,
            self._input_mask[n],
            self._is_real[1 if is_real_example else 0],
            self._label_entry(label_id),
            self._segment_prefix, self._zeros[:num_a_tokens], self._ones[:n - num_a_tokens],
            self._zeros[:pad],
        ))
        return self._example_head[len(features)] + features


def write_classifier_records(examples, label_list, max_seq_length, tokenizer, output_file,
                             meta=None):
    """Writes the original's `file_based_convert_examples_to_features` records, faster.

    Records are written to a temporary file renamed when all are written (an error or a full
    disk removes it: `files.atomic_path`); then, if `meta` is given, the sidecar
    `<output_file>.meta.json` records it (`bert_tf.data.records`). Any old sidecar is
    removed first, so an interrupted run never leaves a sidecar that vouches for other records.

    Args:
      examples: list of InputExample / PaddingInputExample.
      label_list: list of str, or None for regression (label_ids then a float feature).
      max_seq_length: int.
      tokenizer: FullTokenizer (ours is much faster than the original's; both work).
      output_file: path of the TFRecord file.
      meta: dict from `bert_tf.data.records.records_meta`, or None for no sidecar.

    Returns:
      the number of records written (= len(examples)).
    """
    converter = _Converter(label_list, max_seq_length, tokenizer)
    encoder = ClassifierExampleEncoder(max_seq_length, max(tokenizer.vocab.values()) + 1,
                                       is_regression=label_list is None,
                                       pad_id=converter.pad_id)
    return write_example_records(
        examples, output_file, lambda ex_index, example: encoder.encode(
            *converter.convert(ex_index, example)), meta)


def write_example_records(examples, output_file, encode, meta=None):
    """Writes `encode(ex_index, example)` (a serialized tf.train.Example) of each of `examples`
    to the TFRecord file `output_file`, logging every LOG_EVERY-th: to a temporary file renamed
    when all are written (an error or a full disk removes it), then, if `meta` is given, the
    sidecar `<output_file>.meta.json` (`bert_tf.data.records`); any old sidecar is removed
    first. Returns the number of records written (= len(examples))."""
    files.remove(output_file + META_SUFFIX)
    total = len(examples)
    with files.atomic_path(output_file) as temp:
        records = writer_lib.TFRecordFile(temp, name=output_file)
        try:
            for ex_index, example in enumerate(examples):
                if ex_index % LOG_EVERY == 0:
                    logging.info("Writing example %d of %d", ex_index, total)
                records.write(encode(ex_index, example))
        finally:
            records.close()
    if meta is not None:
        write_records_meta(output_file, meta, total)
    return total
