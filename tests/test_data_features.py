"""TFRecord features and writing (bert_tf/data/features.py, bert_tf/data/writer.py)."""

import os
import random

import numpy as np
import pytest

from bert_tf.data import features
from bert_tf.data import writer


def _random_instance(r, max_seq_length, max_predictions, vocab_size):
    n = r.randint(5, max_seq_length)
    ids = [r.randrange(vocab_size) for _ in range(n)]
    num_a = r.randint(3, n - 2)
    k = r.randint(0, min(max_predictions, n - 3))
    positions = sorted(r.sample(range(1, n - 1), k))
    labels = [r.randrange(vocab_size) for _ in range(k)]
    return ids, num_a, positions, labels, r.random() < 0.5


def _example_proto(instance, max_seq_length, max_predictions):
    import tensorflow as tf

    ids, num_a, positions, labels, random_next = instance
    n, k = len(ids), len(positions)
    pad, pad_k = max_seq_length - n, max_predictions - k

    def ints(values):
        return tf.train.Feature(int64_list=tf.train.Int64List(value=values))

    feature = {
        "input_ids": ints(ids + [0] * pad),
        "input_mask": ints([1] * n + [0] * pad),
        "segment_ids": ints([0] * num_a + [1] * (n - num_a) + [0] * pad),
        "masked_lm_positions": ints(positions + [0] * pad_k),
        "masked_lm_ids": ints(labels + [0] * pad_k),
        "masked_lm_weights": tf.train.Feature(
            float_list=tf.train.FloatList(value=[1.0] * k + [0.0] * pad_k)),
        "next_sentence_labels": ints([1 if random_next else 0]),
    }
    return tf.train.Example(features=tf.train.Features(feature=feature))


@pytest.mark.parametrize("max_seq_length,max_predictions,vocab_size", [
    (128, 20, 30522), (16, 3, 100), (300, 80, 119547), (5, 1, 10)])
def test_encoder_bytes_equal_protobuf_deterministic(max_seq_length, max_predictions,
                                                    vocab_size):
    r = random.Random(max_seq_length)
    encoder = features.ExampleEncoder(max_seq_length, max_predictions, vocab_size)
    for _ in range(50):
        instance = _random_instance(r, max_seq_length, max_predictions, vocab_size)
        expected = _example_proto(instance, max_seq_length, max_predictions)
        assert encoder.encode(*instance) == expected.SerializeToString(deterministic=True)


def test_feature_spec_parses_encoded_records():
    import tensorflow as tf

    spec = features.feature_spec(24, 4)
    assert list(spec) == list(features.FEATURE_NAMES)
    assert spec["masked_lm_weights"].dtype == tf.float32
    assert spec["next_sentence_labels"].shape == [1]
    assert all(spec[n].dtype == tf.int64 for n in features.FEATURE_NAMES
               if n != "masked_lm_weights")
    encoder = features.ExampleEncoder(24, 4, 500)
    instance = ([101, 7, 8, 102, 9, 102], 4, [1, 4], [17, 18], True)
    parsed = tf.io.parse_single_example(encoder.encode(*instance), spec)
    np.testing.assert_array_equal(parsed["input_ids"][:7], [101, 7, 8, 102, 9, 102, 0])
    np.testing.assert_array_equal(parsed["input_mask"][:7], [1, 1, 1, 1, 1, 1, 0])
    np.testing.assert_array_equal(parsed["segment_ids"][:7], [0, 0, 0, 0, 1, 1, 0])
    np.testing.assert_array_equal(parsed["masked_lm_positions"], [1, 4, 0, 0])
    np.testing.assert_array_equal(parsed["masked_lm_ids"], [17, 18, 0, 0])
    np.testing.assert_array_equal(parsed["masked_lm_weights"], [1.0, 1.0, 0.0, 0.0])
    np.testing.assert_array_equal(parsed["next_sentence_labels"], [1])


def test_crc32c():
    assert writer.crc32c(b"123456789") == 0xE3069283  # the standard check value
    assert writer.crc32c(b"") == 0
    r = random.Random(0)
    records = [bytes(r.getrandbits(8) for _ in range(r.randint(0, 300))) for _ in range(200)]
    assert writer.crc32c_batch(records).tolist() == [writer.crc32c(x) for x in records]


def test_tfrecord_file_equals_tensorflow_writer(tmp_path):
    import tensorflow as tf

    r = random.Random(1)
    records = [bytes(r.getrandbits(8) for _ in range(r.randint(0, 700))) for _ in range(500)]
    ours = writer.TFRecordFile(str(tmp_path / "ours.tfrecord"), batch_size=64)
    for x in records:
        ours.write(x)
    ours.close()
    with tf.io.TFRecordWriter(str(tmp_path / "tf.tfrecord")) as theirs:
        for x in records:
            theirs.write(x)
    assert (tmp_path / "ours.tfrecord").read_bytes() == (tmp_path / "tf.tfrecord").read_bytes()
    read = [x.numpy() for x in tf.data.TFRecordDataset(str(tmp_path / "ours.tfrecord"))]
    assert read == records


def test_round_robin_and_rename(tmp_path):
    import tensorflow as tf

    paths = [str(tmp_path / f"out{i}.tfrecord") for i in range(3)]
    with writer.RoundRobinRecordWriter(paths) as w:
        for i in range(10):
            w.write(b"record%d" % i)
        assert not any(os.path.exists(p) for p in paths), "final names only after closing"
    for j, path in enumerate(paths):
        got = [x.numpy() for x in tf.data.TFRecordDataset(path)]
        assert got == [b"record%d" % i for i in range(j, 10, 3)]
    assert sorted(os.listdir(tmp_path)) == sorted(os.path.basename(p) for p in paths)


def test_interrupted_writer_leaves_nothing(tmp_path):
    paths = [str(tmp_path / "a.tfrecord"), str(tmp_path / "b.tfrecord")]
    with pytest.raises(KeyboardInterrupt):
        with writer.RoundRobinRecordWriter(paths) as w:
            for i in range(5000):
                w.write(b"x" * 100)
            raise KeyboardInterrupt
    assert os.listdir(tmp_path) == []


def test_check_writable(tmp_path):
    writer.check_writable([str(tmp_path / "ok.tfrecord")])
    assert os.listdir(tmp_path) == []
    with pytest.raises(writer.DataError, match="does not exist"):
        writer.check_writable([str(tmp_path / "missing_dir" / "x.tfrecord")])
    with pytest.raises(writer.DataError, match="is a directory"):
        writer.check_writable([str(tmp_path)])
    with pytest.raises(writer.DataError, match="twice"):
        writer.check_writable([str(tmp_path / "x"), str(tmp_path / "x")])
    if os.path.isdir("/proc"):  # exists, but not even root can create files there
        with pytest.raises(writer.DataError, match="cannot write"):
            writer.check_writable(["/proc/bert_tf_test.tfrecord"])
    if os.geteuid() != 0:  # root ignores permissions
        locked = tmp_path / "locked"
        locked.mkdir()
        locked.chmod(0o500)
        with pytest.raises(writer.DataError, match="cannot write"):
            writer.check_writable([str(locked / "x.tfrecord")])


def test_batch_encoder_equals_single_encoder_and_store_gather():
    from bert_tf.bert import instances
    from bert_tf.data.documents import id_typecode

    r = random.Random(7)
    for max_seq_length, max_predictions, vocab_size in [(128, 20, 30522), (40, 6, 200000)]:
        store = instances.InstanceStore(id_typecode(vocab_size))
        made = []
        for _ in range(300):
            instance = _random_instance(r, max_seq_length, max_predictions, vocab_size)
            if r.random() < 0.1:  # whole-word masking can leave an instance without predictions
                instance = instance[:2] + ([], []) + instance[4:]
            ids, num_a, positions, labels, random_next = instance
            store.append(ids, num_a, positions, labels, random_next)
            made.append(instance)
        single = features.ExampleEncoder(max_seq_length, max_predictions, vocab_size)
        batch = features.BatchExampleEncoder(max_seq_length, max_predictions, vocab_size)
        order = list(range(len(made)))
        r.shuffle(order)
        got = batch.encode_batch(*store.gather(order, max_seq_length, max_predictions))
        assert got == [single.encode(*made[i]) for i in order]
        for i in order[:20]:
            ids, num_a, positions, labels, random_next = store.get(i)
            assert (list(ids), num_a, list(positions), list(labels), random_next) == made[i]
