"""The input pipeline: TFRecords (of `create_pretraining_data.py`, or of a task) -> batches.

As the original (REFERENCE.md §6): training shuffles the file list, reads files in parallel
(interleave), shuffles records and repeats; eval reads the files in order, once, keeping only
whole batches. With `shuffle_buffer_size=PERMUTE_EACH_EPOCH` training instead draws a fresh
permutation of all records every epoch (run_tagging.py's default: its files are in document
order, which a buffer of 100 barely mixes). Unlike the original, the interleave is
deterministic and every shuffle is seeded, so the stream is reproducible and its position can
be checkpointed and resumed.

Batches are dicts of the feature names of `bert_tf.data.features`; int64 features are cast to
int32 (what TPUs take; ids fit easily).
"""

import re

import numpy as np
import tensorflow as tf
from absl import logging

from bert_tf.data.features import FEATURE_NAMES, feature_spec
from bert_tf.training import padding


# The shuffle_buffer_size that asks for a fresh permutation of all training records each epoch.
PERMUTE_EACH_EPOCH = -1


class InputError(ValueError):
    """Input files that are missing, unreadable or not pretraining records of the expected shape."""


def expand_input_patterns(input_file):
    """Files matching `input_file`: a comma-separated list of file names or glob patterns.

    Returns the files in the order given (each pattern's matches sorted). Raises InputError
    naming the pattern that matches nothing.
    """
    if not input_file:
        raise InputError("--input_file is empty: expected TFRecord files (glob or comma list)")
    files = []
    for pattern in input_file.split(","):
        pattern = pattern.strip()
        if not pattern:
            continue
        matches = sorted(tf.io.gfile.glob(pattern))
        matches = [m for m in matches if not tf.io.gfile.isdir(m)]
        if not matches:
            raise InputError(f"--input_file: no file matches {pattern!r}")
        files.extend(matches)
    if not files:
        raise InputError(f"--input_file: no file matches {input_file!r}")
    return files


def first_example_features(path):
    """The features ({name: tf.train.Feature}) of the first record of TFRecord file `path`.
    Raises InputError naming the file when it cannot be read, holds no record, or its first
    record is not a tf.train.Example."""
    try:
        first = next(iter(tf.data.TFRecordDataset(path).take(1)), None)
    except (tf.errors.DataLossError, tf.errors.InvalidArgumentError) as e:
        raise InputError(f"{path}: not a readable TFRecord file ({first_line(e)})") from None
    except tf.errors.OpError as e:
        raise InputError(f"{path}: cannot read ({first_line(e)})") from None
    if first is None:
        raise InputError(f"{path}: holds no records")
    example = tf.train.Example()
    try:
        example.ParseFromString(first.numpy())
    except Exception:  # protobuf's DecodeError; its module path varies by implementation
        raise InputError(f"{path}: the first record is not a tf.train.Example") from None
    return example.features.feature


def check_records(input_files, max_seq_length, max_predictions_per_seq):
    """Reads the first record of each file and checks it is a pretraining record of the flags'
    shape. Raises InputError naming the file and what is wrong (not a TFRecord file, not a
    tf.train.Example, a missing feature, or lengths that do not match the flags)."""
    expected = {
        "input_ids": max_seq_length,
        "input_mask": max_seq_length,
        "segment_ids": max_seq_length,
        "masked_lm_positions": max_predictions_per_seq,
        "masked_lm_ids": max_predictions_per_seq,
        "masked_lm_weights": max_predictions_per_seq,
        "next_sentence_labels": 1,
    }
    flag_of = {
        "input_ids": "--max_seq_length",
        "input_mask": "--max_seq_length",
        "segment_ids": "--max_seq_length",
        "masked_lm_positions": "--max_predictions_per_seq",
        "masked_lm_ids": "--max_predictions_per_seq",
        "masked_lm_weights": "--max_predictions_per_seq",
        "next_sentence_labels": "next_sentence_labels",
    }
    for path in input_files:
        features = first_example_features(path)
        missing = [name for name in FEATURE_NAMES if name not in features]
        if missing:
            raise InputError(
                f"{path}: not a pretraining TFRecord of create_pretraining_data.py: missing "
                f"feature(s) {', '.join(missing)}"
            )
        for name, length in expected.items():
            feature = features[name]
            kind = feature.WhichOneof("kind")
            values = getattr(feature, kind).value if kind else []
            want_kind = "float_list" if name == "masked_lm_weights" else "int64_list"
            if kind != want_kind:
                raise InputError(f"{path}: feature {name} is a {kind}, expected a {want_kind}")
            if len(values) != length:
                raise InputError(
                    f"{path}: feature {name} has length {len(values)}, but {flag_of[name]} "
                    f"implies {length}; the flags must match those of create_pretraining_data.py"
                )


# What TensorFlow puts around the reason of an op's error: the "Graph execution error:" header
# of a tf.function, its "Detected at node ... defined at" block of indented source lines, the
# "{{function_node ...}}" prefix of an eager op and the "[Op:...]" / "[[{{node ...}}]]" suffixes.
_GRAPH_PREAMBLE = re.compile(r"^(Graph execution error:|Detected at node .*|\s.*)$")
_FUNCTION_PREFIX = re.compile(r"^\{\{function_node [^}]*\}\}\s*")
_OP_SUFFIX = re.compile(r"\s*(\[Op:[^\]]*\]|\[\[\{\{node [^}]*\}\}\]\])\s*$")


def first_line(error):
    """The reason of an OpError's (or any exception's) message on one line, for one-line
    errors: its first line, or under a tf.function the first line after the preamble that
    says where the op was defined."""
    text = (getattr(error, "message", None) or str(error)).strip()
    lines = [line for line in text.splitlines() if line.strip()]
    reasons = [line for line in lines if not _GRAPH_PREAMBLE.match(line)]
    line = (reasons or lines or [""])[0]
    line = _OP_SUFFIX.sub("", _FUNCTION_PREFIX.sub("", line.strip()))
    return line or type(error).__name__


def _parse_batch(serialized, spec):
    parsed = tf.io.parse_example(serialized, spec)
    return {
        name: tf.cast(t, tf.int32) if t.dtype == tf.int64 else t for name, t in parsed.items()
    }


def _permuted_epochs(input_files, seed, with_epochs=False):
    """The serialized records of `input_files`, held in memory, in a fresh seeded permutation
    each epoch, repeated: every record exactly once per epoch. The shuffle is of record
    indexes, so a checkpointed iterator holds the rest of the epoch's indexes (8 bytes a
    record), not records.

    With `with_epochs`, elements are (epoch, index, serialized) as `_records_with_epochs`
    names them: the epoch is the pass over the records, the index the record's
    `record_index`."""
    records, indexes = [], []
    try:
        for file_number, path in enumerate(input_files):
            for number, record in enumerate(tf.data.TFRecordDataset(path).as_numpy_iterator()):
                records.append(record)
                indexes.append(record_index(file_number, number))
    except tf.errors.OpError as e:
        raise InputError(f"cannot read the training records ({', '.join(input_files[:3])}"
                         f"{', ...' if len(input_files) > 3 else ''}): {first_line(e)}") from None
    if not records:
        raise InputError(f"no training records in {', '.join(input_files[:3])}")
    num_records = len(records)
    logging.info("Holding the %d training records (%.1f MB) in memory: a fresh permutation of "
                 "them each epoch", num_records, sum(map(len, records)) / 2**20)
    records = tf.constant(records)
    d = tf.data.Dataset.range(num_records)
    d = d.shuffle(num_records, seed=seed, reshuffle_each_iteration=True).repeat()
    if not with_epochs:
        return d.map(lambda i: tf.gather(records, i))
    indexes = tf.constant(indexes, tf.int64)
    return d.enumerate().map(
        lambda position, i: (position // num_records, tf.gather(indexes, i),
                             tf.gather(records, i)))


# A record's `record_index`: its file's number in the input file list times this, plus its
# number in the file (files of up to 2**32 records).
RECORDS_PER_FILE = 2 ** 32


def record_index(file_number, number_in_file):
    """The index a `record_parser` gets for record `number_in_file` (from 0) of file
    `file_number` (from 0) of the input file list: the same in every reading mode."""
    return file_number * RECORDS_PER_FILE + number_in_file


def _records_with_epochs(input_files, is_training, shuffle_buffer_size, seed, cycle_length,
                         file_shard=None):
    """(epoch, index, serialized) for each record read, for a `record_parser`: the files as
    `make_dataset` reads them, each record with its `record_index` and the number of the pass
    over the file list in which its file was opened (0 for eval, which reads once). The pass
    is counted before the file shuffle (whose buffer holds one pass, so a file may be read
    just before another of the previous pass): each (epoch, index) is read once.

    `file_shard`: (num_shards, shard) of the files this pipeline reads (training)."""
    num_files = len(input_files)
    names = tf.constant(input_files)
    d = tf.data.Dataset.range(num_files)
    files_per_pass = num_files
    if file_shard is not None:
        num_shards, shard = file_shard
        d = d.shard(num_shards, shard)
        files_per_pass = len(range(shard, num_files, num_shards))
    if is_training:
        d = d.repeat()
    d = d.enumerate().map(lambda k, f: (k // files_per_pass, f))
    if is_training and shuffle_buffer_size > 0:
        d = d.shuffle(buffer_size=max(num_files, 1), seed=seed)

    def file_records(epoch, file_number):
        records = tf.data.TFRecordDataset(tf.gather(names, file_number)).enumerate()
        return records.map(lambda number, serialized: (
            epoch, file_number * RECORDS_PER_FILE + number, serialized))

    if is_training and shuffle_buffer_size > 0:
        d = d.interleave(file_records, cycle_length=cycle_length,
                         num_parallel_calls=cycle_length, deterministic=True)
        return d.shuffle(buffer_size=shuffle_buffer_size, seed=seed)
    return d.flat_map(file_records)


def make_dataset(
    input_files,
    max_seq_length,
    max_predictions_per_seq,
    batch_size,
    is_training,
    shuffle_buffer_size=100,
    seed=None,
    num_cpu_threads=4,
    input_pipeline_id=0,
    num_input_pipelines=1,
    spec=None,
    pad_final_batch=False,
    group_by_length=False,
    group_batches=1,
    sort_by_length=False,
    record_parser=None,
):
    """Builds the dataset of one input pipeline.

    Args:
      input_files: list of TFRecord files.
      max_seq_length, max_predictions_per_seq: the shape of pretraining records.
      batch_size: the batch of one replica (this pipeline's share of the global batch).
      spec: the records' {name: tf.io.FixedLenFeature} for other tasks' records (then the two
        lengths above are not used).
      pad_final_batch: eval/predict of a task that must see every record: the last, partial
        batch is kept and padded with all-zero records to `batch_size` (their
        `is_real_example`, or unique id, is 0) instead of being dropped.
      is_training: training stream (shuffled, repeated) or eval stream (in order, once).
      shuffle_buffer_size: records held by the record shuffle; 0 reads the files in the given
        order, sequentially, without any shuffling; PERMUTE_EACH_EPOCH (-1) reads every record
        into memory and takes them in a fresh permutation each epoch.
      seed: seeds every shuffle (all pipelines use the same seed, so their streams agree).
      input_pipeline_id, num_input_pipelines: this pipeline among all hosts' pipelines; each
        gets a disjoint part of the data.
      group_by_length: training: batches of similar lengths (`_length_grouped_batches`).
      group_batches: the consecutive batches of this pipeline that make one step (its local
        replicas); group_by_length keeps them in one group of lengths.
      sort_by_length: eval/predict: the records in length order within windows, each with
        its position in the files as `RECORD_INDEX` (`_length_sorted_batches`).
      record_parser: f(serialized, epoch, index) -> {name: tensor} of ONE record, used instead
        of parsing by `spec` (which then only describes the records' shape): each record is
        given its epoch (the pass over the input it is read in) and its index
        (`record_index`: which record it is), e.g. to draw its masks from (seed, epoch,
        index) (RoBERTa's dynamic masking). Deterministic, so a saved iterator resumes with
        what the record would have been given. Not with group_by_length or sort_by_length.

    Returns:
      tf.data.Dataset of dicts {feature name: [batch_size, ...] tensor}, int64 cast to int32.
    """
    if spec is None:
        spec = feature_spec(max_seq_length, max_predictions_per_seq)
    num_files = len(input_files)
    shard_files = (
        is_training and shuffle_buffer_size > 0 and num_input_pipelines > 1
        and num_files >= num_input_pipelines
    )
    if record_parser is not None:
        if group_by_length or sort_by_length:
            raise InputError("records parsed with their epoch and index cannot be grouped or "
                             "sorted by length (--group_by_length)")
        if is_training and shuffle_buffer_size == PERMUTE_EACH_EPOCH:
            d = _permuted_epochs(input_files, seed, with_epochs=True)
        else:
            d = _records_with_epochs(
                input_files, is_training, shuffle_buffer_size, seed,
                cycle_length=max(1, min(num_cpu_threads, num_files)),
                file_shard=(num_input_pipelines, input_pipeline_id) if shard_files else None)
        d = d.map(record_parser, num_parallel_calls=tf.data.AUTOTUNE, deterministic=True)
        d = d.batch(batch_size, drop_remainder=not pad_final_batch or is_training)
        if num_input_pipelines > 1 and not shard_files:
            d = d.shard(num_input_pipelines, input_pipeline_id)
        if pad_final_batch and not is_training:
            d = d.map(lambda batch: _pad_batch(batch, batch_size))
        return d.prefetch(tf.data.AUTOTUNE)
    if is_training and shuffle_buffer_size == PERMUTE_EACH_EPOCH:
        d = _permuted_epochs(input_files, seed)
    elif is_training and shuffle_buffer_size > 0:
        d = tf.data.Dataset.from_tensor_slices(tf.constant(input_files))
        if shard_files:
            d = d.shard(num_input_pipelines, input_pipeline_id)
        d = d.repeat()
        d = d.shuffle(buffer_size=max(num_files, 1), seed=seed)
        cycle_length = max(1, min(num_cpu_threads, num_files))
        d = d.interleave(
            tf.data.TFRecordDataset,
            cycle_length=cycle_length,
            num_parallel_calls=cycle_length,
            deterministic=True,
        )
        d = d.shuffle(buffer_size=shuffle_buffer_size, seed=seed)
    else:
        d = tf.data.TFRecordDataset(input_files)
        if is_training:
            d = d.repeat()
    parsed = group_by_length and is_training or sort_by_length and not is_training
    if group_by_length and is_training:
        per_step = group_batches * (1 if shard_files else num_input_pipelines)
        d = _length_grouped_batches(d, spec, batch_size, per_step, seed)
    elif sort_by_length and not is_training:
        d = _length_sorted_batches(d, spec, batch_size, group_batches * num_input_pipelines)
    else:
        d = d.batch(batch_size, drop_remainder=not pad_final_batch or is_training)
    if num_input_pipelines > 1 and not shard_files:
        # Every pipeline sees the same (seeded) stream; each keeps every n-th batch, so the
        # global batch of step k is the same as on a single device.
        d = d.shard(num_input_pipelines, input_pipeline_id)
    if not parsed:
        d = d.map(lambda s: _parse_batch(s, spec), num_parallel_calls=tf.data.AUTOTUNE,
                  deterministic=True)
    if pad_final_batch and not is_training:
        d = d.map(lambda batch: _pad_batch(batch, batch_size))
    return d.prefetch(tf.data.AUTOTUNE)


def _pad_batch(batch, batch_size):
    """Pads every feature of a (possibly partial) batch with zero rows to `batch_size`
    (`RECORD_INDEX` with -1: no record)."""
    padded = {}
    for name, t in batch.items():
        missing = batch_size - tf.shape(t)[0]
        paddings = tf.concat([[[0, missing]], tf.zeros([t.shape.rank - 1, 2], tf.int32)], 0)
        fill = -1 if name == RECORD_INDEX else 0
        padded[name] = tf.ensure_shape(tf.pad(t, paddings, constant_values=fill),
                                       [batch_size] + t.shape[1:])
    return padded


# The position of a record in the input files (0, 1, ...), added to the batches of
# `sort_by_length`, so that outputs computed in length order are put back in input order.
RECORD_INDEX = "record_index"
# group_by_length sorts windows of this many steps' records.
GROUP_WINDOW_STEPS = 50
# Inference sorts windows of this many batches' records (memory: one window of records).
SORT_WINDOW_BATCHES = 64


def _sorted_by_length(batch):
    """The records of a parsed window, longest first, ties in stream order (a record of
    several sequences, input_mask [C, S], by its longest)."""
    lengths = padding.real_lengths(batch["input_mask"])
    if lengths.shape.rank > 1:
        lengths = tf.reduce_max(lengths, axis=list(range(1, lengths.shape.rank)))
    order = tf.argsort(-lengths, stable=True)
    return {name: tf.gather(t, order) for name, t in batch.items()}


def _length_grouped_batches(records, spec, batch_size, per_step, seed):
    """group_by_length: parsed batches of similar lengths from the (shuffled, repeated)
    stream of serialized `records`.

    The stream is read in windows of GROUP_WINDOW_STEPS steps; a window is sorted by length
    and cut into groups of `per_step` consecutive batches (the batches of one step, so the
    replicas of a step share a length), and the groups are put in a random order, drawn from
    `seed` and the window's number (stateless, so the iterator's position can be saved). Each
    record of the stream is in exactly one batch: a window is a permutation of its records.
    """
    groups = GROUP_WINDOW_STEPS
    group_size = batch_size * per_step
    seed = np.int64(np.random.randint(2 ** 31) if seed is None else seed)
    d = records.batch(groups * group_size, drop_remainder=True)
    d = d.map(lambda s: _parse_batch(s, spec), num_parallel_calls=tf.data.AUTOTUNE,
              deterministic=True)

    def window_batches(number, window):
        window = _sorted_by_length(window)
        draw = tf.random.stateless_uniform([groups], seed=tf.stack([seed, number]))
        group_order = tf.argsort(draw)
        batches = {}
        for name, t in window.items():
            t = tf.gather(tf.reshape(t, [groups, group_size] + t.shape[1:]), group_order)
            batches[name] = tf.reshape(t, [groups * per_step, batch_size] + t.shape[2:])
        return tf.data.Dataset.from_tensor_slices(batches)

    return d.enumerate().flat_map(window_batches)


def _length_sorted_batches(records, spec, batch_size, per_step):
    """sort_by_length: parsed batches of the serialized `records` (read once, in order), in
    length order within windows of SORT_WINDOW_BATCHES x `per_step` batches, each record
    carrying its position in the stream (`RECORD_INDEX`, int64 [B]). The last batch may be
    partial."""
    window = SORT_WINDOW_BATCHES * per_step * batch_size
    d = records.batch(window).enumerate()

    def window_batches(number, serialized):
        batch = _parse_batch(serialized, spec)
        batch[RECORD_INDEX] = number * window + tf.range(tf.size(serialized, tf.int64))
        return tf.data.Dataset.from_tensor_slices(_sorted_by_length(batch)).batch(batch_size)

    return d.flat_map(window_batches)


def _local_replicas(strategy):
    if strategy.num_replicas_in_sync == 1:
        return 1
    return max(1, len(strategy.extended.worker_devices))


class InputStream:
    """One worker's input, split into per-replica batches for `strategy.run`.

    Under the default, one-device, mirrored and multi-worker strategies the worker reads a
    plain tf.data iterator whose elements stack its local replicas' batches
    ([num_local_replicas, per_replica_batch, ...]); `get_next()` (inside a tf.function) hands
    replica r its slice through `experimental_distribute_values_from_function`. That iterator
    is an ordinary tf.data iterator, so its exact position can be saved with
    `tf.train.Checkpoint(iterator=stream.iterator)` (tf.distribute's own distributed
    iterators cannot be checkpointed). Under TPUStrategy the input goes through
    `distribute_datasets_from_function` (TPU infeed) and the position is not saved.

    Replica r of the global step gets per-replica batch r of the stream, so the global batch
    of step k is the same records whatever the number of replicas.

    Args:
      strategy: the tf.distribute strategy.
      global_batch_size: records per step over all replicas.
      worker_index, num_workers: this worker among all (each reads a disjoint part).
      max_batches: stop after this many global batches (eval).
      batch_flag: how to name the batch size in errors (e.g. "--train_batch_size").
      spec, pad_final_batch, group_by_length, sort_by_length, record_parser: see
        `make_dataset`.
      sequence_keys: dynamic padding: `get_next` cuts these features of every global batch to
        its longest `input_mask`, rounded up to a multiple of `padding_width`
        (`padding.cut_batch`; the local replicas' batches to one length); () keeps
        max_seq_length. Not under TPUStrategy (static shapes).
      position_keys, padding_width: see `padding.cut_batch`.
      Other arguments as `make_dataset`.
    """

    def __init__(self, strategy, input_files, max_seq_length, max_predictions_per_seq,
                 global_batch_size, is_training, shuffle_buffer_size=100, seed=None,
                 worker_index=0, num_workers=1, max_batches=None, batch_flag="batch size",
                 spec=None, pad_final_batch=False, sequence_keys=(), position_keys=(),
                 padding_width=padding.DEFAULT_WIDTH, group_by_length=False,
                 sort_by_length=False, record_parser=None):
        replicas = strategy.num_replicas_in_sync
        if global_batch_size % replicas:
            raise InputError(
                f"{batch_flag}={global_batch_size} is not divisible by the {replicas} replicas "
                "of the strategy: choose a multiple"
            )
        self.strategy = strategy
        self.per_replica_batch_size = global_batch_size // replicas
        kwargs = dict(
            input_files=input_files, max_seq_length=max_seq_length,
            max_predictions_per_seq=max_predictions_per_seq,
            batch_size=self.per_replica_batch_size, is_training=is_training,
            shuffle_buffer_size=shuffle_buffer_size, seed=seed, spec=spec,
            pad_final_batch=pad_final_batch, group_by_length=group_by_length,
            sort_by_length=sort_by_length, record_parser=record_parser,
        )
        self.uses_infeed = isinstance(strategy, tf.distribute.TPUStrategy)
        self.sequence_keys = () if self.uses_infeed else tuple(sequence_keys)
        if self.uses_infeed:
            def dataset_fn(input_context):
                d = make_dataset(input_pipeline_id=input_context.input_pipeline_id,
                                 num_input_pipelines=input_context.num_input_pipelines, **kwargs)
                return d.take(max_batches) if max_batches is not None else d
            self.dataset = strategy.distribute_datasets_from_function(dataset_fn)
            self.local_replicas = None
        else:
            self.local_replicas = _local_replicas(strategy)
            if self.local_replicas * num_workers != replicas:
                raise InputError(
                    f"cannot split {replicas} replicas over {num_workers} worker(s) with "
                    f"{self.local_replicas} local device(s) each"
                )
            kwargs["group_batches"] = self.local_replicas
            d = make_dataset(input_pipeline_id=worker_index, num_input_pipelines=num_workers,
                             **kwargs)
            if self.local_replicas > 1:
                keep_all = pad_final_batch and not is_training
                d = d.batch(self.local_replicas, drop_remainder=not keep_all)
                if keep_all:  # the last batches of the records, padded to every replica
                    d = d.map(lambda stack: _pad_batch(stack, self.local_replicas))
            if max_batches is not None:
                d = d.take(max_batches)
            self.dataset = d.prefetch(1)
        self.iterator = iter(self.dataset)
        self._cut = None
        if self.sequence_keys:
            # In the step, not in the dataset: the iterator (and its saved position) is the
            # same with and without dynamic padding.
            if spec is None:
                spec = feature_spec(max_seq_length, max_predictions_per_seq)
            # The sequence is a record's last axis ([S], or [C, S] for C sequences a record).
            record_shape = spec["input_ids"].shape
            length = record_shape[-1]
            seq_axis = len(record_shape) + (1 if self.local_replicas > 1 else 0)
            self._cut = lambda batch: padding.cut_batch(
                batch, self.sequence_keys, length, padding_width, seq_axis, position_keys)

    @property
    def checkpointable(self):
        return not self.uses_infeed

    def get_next(self):
        """The next global batch as per-replica values (call inside a tf.function)."""
        element = next(self.iterator)
        if self._cut is not None:
            element = self._cut(element)
        if self.uses_infeed or self.strategy.num_replicas_in_sync == 1:
            return element
        local = self.local_replicas
        if local == 1:  # one replica on this worker: the element is its batch
            return self.strategy.experimental_distribute_values_from_function(lambda _: element)

        def value_fn(ctx):
            index = ctx.replica_id_in_sync_group % local
            return {k: v[index] for k, v in element.items()}

        return self.strategy.experimental_distribute_values_from_function(value_fn)
