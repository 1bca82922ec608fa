"""The input pipeline: TFRecords (of `create_pretraining_data.py`, or of a task) -> batches.

As the original (REFERENCE.md §6): training shuffles the file list, reads files in parallel
(interleave), shuffles records and repeats; eval reads the files in order, once, keeping only
whole batches. Unlike the original, the interleave is deterministic and every shuffle is
seeded, so the stream is reproducible and its position can be checkpointed and resumed.

Batches are dicts of the feature names of `bert_tf.data.features`; int64 features are cast to
int32 (what TPUs take; ids fit easily).
"""

import glob
import os
import re

import tensorflow as tf

from bert_tf.data.features import FEATURE_NAMES, feature_spec


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
        features = example.features.feature
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
        order, sequentially, without any shuffling.
      seed: seeds every shuffle (all pipelines use the same seed, so their streams agree).
      input_pipeline_id, num_input_pipelines: this pipeline among all hosts' pipelines; each
        gets a disjoint part of the data.

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
    if is_training and shuffle_buffer_size > 0:
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
    d = d.batch(batch_size, drop_remainder=not pad_final_batch or is_training)
    if num_input_pipelines > 1 and not shard_files:
        # Every pipeline sees the same (seeded) stream; each keeps every n-th batch, so the
        # global batch of step k is the same as on a single device.
        d = d.shard(num_input_pipelines, input_pipeline_id)
    d = d.map(lambda s: _parse_batch(s, spec), num_parallel_calls=tf.data.AUTOTUNE,
              deterministic=True)
    if pad_final_batch and not is_training:
        d = d.map(lambda batch: _pad_batch(batch, batch_size))
    return d.prefetch(tf.data.AUTOTUNE)


def _pad_batch(batch, batch_size):
    """Pads every feature of a (possibly partial) batch with zero rows to `batch_size`."""
    padded = {}
    for name, t in batch.items():
        missing = batch_size - tf.shape(t)[0]
        paddings = tf.concat([[[0, missing]], tf.zeros([t.shape.rank - 1, 2], tf.int32)], 0)
        padded[name] = tf.ensure_shape(tf.pad(t, paddings), [batch_size] + t.shape[1:])
    return padded


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
      spec, pad_final_batch: see `make_dataset`.
      Other arguments as `make_dataset`.
    """

    def __init__(self, strategy, input_files, max_seq_length, max_predictions_per_seq,
                 global_batch_size, is_training, shuffle_buffer_size=100, seed=None,
                 worker_index=0, num_workers=1, max_batches=None, batch_flag="batch size",
                 spec=None, pad_final_batch=False):
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
            pad_final_batch=pad_final_batch,
        )
        self.uses_infeed = isinstance(strategy, tf.distribute.TPUStrategy)
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
            d = make_dataset(input_pipeline_id=worker_index, num_input_pipelines=num_workers,
                             **kwargs)
            if self.local_replicas > 1:
                d = d.batch(self.local_replicas, drop_remainder=True)
            if max_batches is not None:
                d = d.take(max_batches)
            self.dataset = d.prefetch(1)
        self.iterator = iter(self.dataset)

    @property
    def checkpointable(self):
        return not self.uses_infeed

    def get_next(self):
        """The next global batch as per-replica values (call inside a tf.function)."""
        element = next(self.iterator)
        if self.uses_infeed or self.strategy.num_replicas_in_sync == 1:
            return element
        local = self.local_replicas
        if local == 1:  # one replica on this worker: the element is its batch
            return self.strategy.experimental_distribute_values_from_function(lambda _: element)

        def value_fn(ctx):
            index = ctx.replica_id_in_sync_group % local
            return {k: v[index] for k, v in element.items()}

        return self.strategy.experimental_distribute_values_from_function(value_fn)
