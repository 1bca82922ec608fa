"""The pretraining input pipeline: file patterns, record checks, stream order and position."""

import numpy as np
import pytest
import tensorflow as tf

from bert_tf.training import input_pipeline
from bert_tf.training.input_pipeline import (
    PERMUTE_EACH_EPOCH, InputError, InputStream, check_records, expand_input_patterns,
    make_dataset,
)
from test_training_helpers import write_records


@pytest.fixture()
def records(tmp_path):
    return write_records(tmp_path / "a.tfrecord", 20, seed=1)


def first_ids(batch):
    return batch["input_ids"].numpy()[:, :3].tolist()


def test_patterns_globs_and_comma_lists(tmp_path, records):
    other = write_records(tmp_path / "b.tfrecord", 5, seed=2)
    assert expand_input_patterns(str(tmp_path / "*.tfrecord")) == [records, other]
    assert expand_input_patterns(f"{other},{records}") == [other, records]
    with pytest.raises(InputError, match=r"no file matches '.*nothing\*'"):
        expand_input_patterns(f"{records},{tmp_path}/nothing*")
    with pytest.raises(InputError, match="input_file"):
        expand_input_patterns("")


def test_check_records_accepts_matching_flags(records):
    check_records([records], 16, 3)


def test_check_records_names_the_mismatching_flag(records):
    with pytest.raises(InputError, match=r"a\.tfrecord: feature input_ids has length 16, but "
                                         r"--max_seq_length implies 128"):
        check_records([records], 128, 3)
    with pytest.raises(InputError, match="--max_predictions_per_seq implies 20"):
        check_records([records], 16, 20)


def test_check_records_rejects_corrupted_and_foreign_files(tmp_path):
    garbage = tmp_path / "garbage.tfrecord"
    garbage.write_bytes(b"this is not a tfrecord file at all" * 10)
    with pytest.raises(InputError, match="garbage.tfrecord: not a readable TFRecord"):
        check_records([str(garbage)], 16, 3)
    foreign = tmp_path / "classifier.tfrecord"
    with tf.io.TFRecordWriter(str(foreign)) as w:
        ex = tf.train.Example(features=tf.train.Features(feature={
            "input_ids": tf.train.Feature(int64_list=tf.train.Int64List(value=[1] * 16)),
            "label_ids": tf.train.Feature(int64_list=tf.train.Int64List(value=[1])),
        }))
        w.write(ex.SerializeToString())
    with pytest.raises(InputError, match="classifier.tfrecord: not a pretraining TFRecord.*"
                                         "masked_lm_positions"):
        check_records([str(foreign)], 16, 3)
    not_example = tmp_path / "text.tfrecord"
    with tf.io.TFRecordWriter(str(not_example)) as w:
        w.write(b"\xff\xff\xff plain bytes")
    with pytest.raises(InputError, match="text.tfrecord: the first record is not a tf.train.Example"):
        check_records([str(not_example)], 16, 3)
    empty = tmp_path / "empty.tfrecord"
    empty.write_bytes(b"")
    with pytest.raises(InputError, match="empty.tfrecord: holds no records"):
        check_records([str(empty)], 16, 3)


def test_in_order_stream_reads_records_in_file_order_and_repeats(records):
    d = make_dataset([records], 16, 3, batch_size=8, is_training=True, shuffle_buffer_size=0)
    plain = [r for r in tf.data.TFRecordDataset(records).as_numpy_iterator()]
    parsed = [tf.io.parse_single_example(r, {"input_ids": tf.io.FixedLenFeature([16], tf.int64)})
              ["input_ids"].numpy() for r in plain]
    batches = list(d.take(5))
    flat = np.concatenate([b["input_ids"].numpy() for b in batches])
    expected = np.concatenate([parsed, parsed, parsed])[:40]
    np.testing.assert_array_equal(flat, expected)
    assert batches[0]["input_ids"].dtype == tf.int32
    assert batches[0]["masked_lm_weights"].dtype == tf.float32
    assert batches[0]["next_sentence_labels"].shape == (8, 1)


def test_shuffled_stream_is_seeded(records):
    def take(seed):
        d = make_dataset([records], 16, 3, batch_size=4, is_training=True, seed=seed)
        return [first_ids(b) for b in d.take(6)]

    assert take(3) == take(3)
    assert take(3) != take(4)


def record_numbers(batches, file_ids):
    """The index in `file_ids` (the records' input_ids in file order) of every record of
    `batches`, in stream order."""
    index = {tuple(ids): i for i, ids in enumerate(file_ids)}
    return [index[tuple(ids)] for b in batches for ids in b["input_ids"].numpy().tolist()]


def file_input_ids(path):
    spec = {"input_ids": tf.io.FixedLenFeature([16], tf.int64)}
    return [tf.io.parse_single_example(r, spec)["input_ids"].numpy().tolist()
            for r in tf.data.TFRecordDataset(path)]


def test_permutation_per_epoch_takes_every_record_once_per_epoch(tmp_path, records):
    more = write_records(tmp_path / "b.tfrecord", 8, seed=2)
    file_ids = file_input_ids(records) + file_input_ids(more)
    assert len({tuple(ids) for ids in file_ids}) == 28  # records are told apart by their ids

    def stream(seed):
        # Batches of 8 over epochs of 28 records: batches straddle the epoch boundaries.
        d = make_dataset([records, more], 16, 3, batch_size=8, is_training=True, seed=seed,
                         shuffle_buffer_size=PERMUTE_EACH_EPOCH)
        return record_numbers(d.take(14), file_ids)  # 112 records = 4 epochs

    order = stream(3)
    epochs = [order[e * 28:(e + 1) * 28] for e in range(4)]
    for epoch in epochs:
        assert sorted(epoch) == list(range(28))  # every record of both files, once
    assert len({tuple(e) for e in epochs}) == 4  # a fresh order every epoch
    assert epochs[0] != list(range(28))
    assert stream(3) == order  # seeded
    assert stream(4) != order


def test_permutation_position_round_trips_through_a_checkpoint_across_epochs(tmp_path,
                                                                            records):
    strategy = tf.distribute.get_strategy()

    def stream():
        return InputStream(strategy, [records], 16, 3, 3, is_training=True, seed=5,
                           shuffle_buffer_size=PERMUTE_EACH_EPOCH)

    a = stream()
    for _ in range(4):  # 12 of the first epoch's 20 records
        a.get_next()
    tf.train.Checkpoint(iterator=a.iterator).write(str(tmp_path / "pos"))
    expected = [first_ids(a.get_next()) for _ in range(12)]  # into the third epoch
    b = stream()
    tf.train.Checkpoint(iterator=b.iterator).read(str(tmp_path / "pos"))
    assert [first_ids(b.get_next()) for _ in range(12)] == expected


def test_permutation_of_no_records_is_an_input_error(tmp_path):
    empty = tmp_path / "empty.tfrecord"
    empty.write_bytes(b"")
    with pytest.raises(InputError, match="no training records in .*empty.tfrecord"):
        make_dataset([str(empty)], 16, 3, batch_size=2, is_training=True,
                     shuffle_buffer_size=PERMUTE_EACH_EPOCH)


def test_eval_stream_is_in_order_once_and_drops_the_remainder(records):
    d = make_dataset([records], 16, 3, batch_size=8, is_training=False)
    assert len(list(d)) == 2  # 20 records -> 2 whole batches


def assert_position_round_trips(tmp_path, records, skip, take, **stream_args):
    """A stream's position saved after `skip` batches, restored into a new stream: the next
    `take` batches are those the first stream gives."""
    def stream():
        return InputStream(tf.distribute.get_strategy(), [records], 16, 3, 4,
                           is_training=True, seed=5, **stream_args)

    a = stream()
    for _ in range(skip):
        a.get_next()
    tf.train.Checkpoint(iterator=a.iterator).write(str(tmp_path / "pos"))
    expected = [first_ids(a.get_next()) for _ in range(take)]
    b = stream()
    tf.train.Checkpoint(iterator=b.iterator).read(str(tmp_path / "pos"))
    assert [first_ids(b.get_next()) for _ in range(take)] == expected


def test_stream_position_round_trips_through_a_checkpoint(tmp_path, records):
    assert_position_round_trips(tmp_path, records, 3, 4)


def test_batch_must_split_over_replicas(records):
    class FakeStrategy:
        num_replicas_in_sync = 3

    with pytest.raises(InputError, match="--eval_batch_size=8 is not divisible by the 3 replicas"):
        InputStream(FakeStrategy(), [records], 16, 3, 8, is_training=False,
                    batch_flag="--eval_batch_size")


def lengths_of(batch):
    return batch["input_mask"].numpy().sum(axis=-1).tolist()


def keys_of(batch):
    return [tuple(row) for row in batch["input_ids"].numpy().tolist()]


def test_group_by_length_sees_every_record_once_per_epoch(monkeypatch, records):
    """Windows of 5 steps x 4 records = the 20 records (read in order, repeated): each epoch
    is one window, sorted by length into batches of neighbouring lengths, in a random order
    drawn from the seed and the window."""
    monkeypatch.setattr(input_pipeline, "GROUP_WINDOW_STEPS", 5)
    plain = list(make_dataset([records], 16, 3, batch_size=20, is_training=False))[0]
    all_keys = sorted(keys_of(plain))

    def epochs(seed):
        d = make_dataset([records], 16, 3, batch_size=4, is_training=True,
                         shuffle_buffer_size=0, seed=seed, group_by_length=True)
        batches = list(d.take(15))
        return [batches[i:i + 5] for i in range(0, 15, 5)]

    grouped = epochs(3)
    sorted_lengths = sorted(lengths_of(plain), reverse=True)
    for epoch in grouped:
        assert sorted(k for b in epoch for k in keys_of(b)) == all_keys
        blocks = sorted((lengths_of(b) for b in epoch), reverse=True)
        assert [x for block in blocks for x in block] == sorted_lengths
    orders = [[lengths_of(b) for b in epoch] for epoch in grouped]
    assert orders[0] != orders[1] or orders[1] != orders[2]  # random batch order
    assert [[keys_of(b) for b in e] for e in epochs(3)] == \
        [[keys_of(b) for b in e] for e in grouped]


def test_group_by_length_permutes_each_window_of_the_shuffled_stream(monkeypatch, records):
    monkeypatch.setattr(input_pipeline, "GROUP_WINDOW_STEPS", 3)

    def stream(group):
        d = make_dataset([records], 16, 3, batch_size=4, is_training=True, seed=9,
                         shuffle_buffer_size=10, group_by_length=group)
        return [keys_of(b) for b in d.take(12)]

    plain, grouped = stream(False), stream(True)
    for window in range(4):
        part = slice(3 * window, 3 * window + 3)
        assert sorted(k for b in grouped[part] for k in b) == \
            sorted(k for b in plain[part] for k in b)
    assert grouped != plain


def test_group_by_length_position_round_trips_through_a_checkpoint(tmp_path, monkeypatch,
                                                                   records):
    monkeypatch.setattr(input_pipeline, "GROUP_WINDOW_STEPS", 4)
    # 6 batches: into the second window.
    assert_position_round_trips(tmp_path, records, 6, 6, group_by_length=True,
                                sequence_keys=("input_ids", "input_mask"), padding_width=4)


def test_stream_cuts_batches_to_their_longest_rounded_up(records):
    strategy = tf.distribute.get_strategy()
    cut = InputStream(strategy, [records], 16, 3, 4, is_training=False,
                      sequence_keys=("input_ids", "input_mask", "segment_ids"), padding_width=4,
                      position_keys=("masked_lm_positions",))
    full = InputStream(strategy, [records], 16, 3, 4, is_training=False)
    for _ in range(5):
        a, b = cut.get_next(), full.get_next()
        length = -(-max(lengths_of(b)) // 4) * 4
        assert a["input_ids"].shape == (4, length)
        np.testing.assert_array_equal(a["input_ids"], b["input_ids"][:, :length])
        np.testing.assert_array_equal(a["masked_lm_positions"], b["masked_lm_positions"])


def test_length_sorted_stream_gives_every_record_once_with_its_index(records):
    strategy = tf.distribute.get_strategy()
    stream = InputStream(strategy, [records], 16, 3, 8, is_training=False,
                         pad_final_batch=True, sort_by_length=True,
                         sequence_keys=("input_ids", "input_mask"), padding_width=1)
    batches = [stream.get_next() for _ in range(3)]
    with pytest.raises(StopIteration):
        stream.get_next()
    plain = list(make_dataset([records], 16, 3, batch_size=20, is_training=False))[0]
    index = np.concatenate([b[input_pipeline.RECORD_INDEX].numpy() for b in batches])
    assert sorted(index.tolist()) == [-1] * 4 + list(range(20))  # 20 records, 3 batches of 8
    lengths = np.concatenate([b["input_mask"].numpy().sum(-1) for b in batches])[:20]
    assert lengths.tolist() == sorted(lengths.tolist(), reverse=True)
    np.testing.assert_array_equal(lengths, plain["input_mask"].numpy().sum(-1)[index[:20]])
    assert [b["input_ids"].shape[1] for b in batches] == [
        max(lengths_of(b)) for b in batches]


def test_records_of_several_sequences_are_cut_and_sorted_by_their_longest(tmp_path):
    """A spec whose input_ids are [C, S] (records of C sequences, RACE's choices): batches are
    cut on the last axis, and sorted by each record's longest sequence."""
    rng = np.random.default_rng(4)
    lengths = rng.integers(1, 17, size=(10, 3))
    path = str(tmp_path / "choices.tfrecord")
    with tf.io.TFRecordWriter(path) as writer:
        for row in lengths:
            mask = (np.arange(16)[None, :] < row[:, None]).astype(np.int64)
            feature = {name: tf.train.Feature(int64_list=tf.train.Int64List(
                value=(mask * k).reshape(-1).tolist())) for name, k in (("input_ids", 5),
                                                                       ("input_mask", 1))}
            writer.write(tf.train.Example(features=tf.train.Features(
                feature=feature)).SerializeToString())
    spec = {name: tf.io.FixedLenFeature([3, 16], tf.int64) for name in ("input_ids",
                                                                         "input_mask")}
    stream = InputStream(tf.distribute.get_strategy(), [path], None, None, 4,
                         is_training=False, spec=spec, pad_final_batch=True,
                         sort_by_length=True, sequence_keys=("input_ids", "input_mask"),
                         padding_width=1)
    batches = [stream.get_next() for _ in range(3)]
    index = np.concatenate([b[input_pipeline.RECORD_INDEX].numpy() for b in batches])[:10]
    longest = lengths.max(axis=1)
    assert longest[index].tolist() == sorted(longest.tolist(), reverse=True)
    for batch in batches:
        rows = batch[input_pipeline.RECORD_INDEX].numpy()
        assert batch["input_ids"].shape[:2] == (4, 3)
        assert batch["input_ids"].shape[2] == max(longest[r] for r in rows if r >= 0)


def test_dynamic_padding_keeps_the_saved_input_position_interchangeable(tmp_path, records):
    """The cut happens after the iterator: a position saved by a padded run restores into a
    cut one (and back), e.g. when a run resumes with --dynamic_padding toggled."""
    strategy = tf.distribute.get_strategy()

    def stream(cut):
        return InputStream(strategy, [records], 16, 3, 2, is_training=True, seed=5,
                           sequence_keys=("input_ids", "input_mask") if cut else (),
                           padding_width=4)

    a = stream(False)
    for _ in range(3):
        a.get_next()
    tf.train.Checkpoint(iterator=a.iterator).write(str(tmp_path / "pos"))
    expected = [a.get_next()["input_ids"].numpy() for _ in range(8)]
    b = stream(True)
    tf.train.Checkpoint(iterator=b.iterator).read(str(tmp_path / "pos")).assert_consumed()
    lengths = []
    for want in expected:
        got = b.get_next()["input_ids"].numpy()
        lengths.append(got.shape[1])
        np.testing.assert_array_equal(got, want[:, :got.shape[1]])
        assert not want[:, got.shape[1]:].any()
    assert min(lengths) < 16
