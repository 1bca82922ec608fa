"""bert_tf.files and every writer on top of it: a disk that fills part way (OSError ENOSPC, or
TensorFlow's ResourceExhaustedError) leaves the file that was there before, no temporary file,
and one OutputError line naming the directory; other errors pass through unchanged."""

import contextlib
import errno
import io
import json
import os
import types

import numpy as np
import pytest

from bert_tf import files

OLD = b"the complete file of an earlier run\n"


def _no_space():
    return OSError(errno.ENOSPC, "No space left on device")


def _tf_no_space():
    import tensorflow as tf

    return tf.errors.ResourceExhaustedError(None, None, "/x.tmp-1; No space left on device")


class FillingDisk:
    """Patches `files.open_for_write` (every local write of bert_tf) so that the disk is full
    after `limit` more bytes: the write that crosses it writes what fits, then raises."""

    def __init__(self, monkeypatch, limit=64, error=_no_space):
        self.left, self.error, self.opened = limit, error, []
        real = files.open_for_write
        disk = self

        class File(io.IOBase):
            def __init__(self, path, mode):
                super().__init__()
                self.real = real(path, mode)
                disk.opened.append(path)

            def write(self, data):
                size = len(data.encode("utf-8") if isinstance(data, str) else data)
                if size > disk.left:
                    self.real.write(data[:disk.left])
                    disk.left = 0
                    raise disk.error()
                disk.left -= size
                return self.real.write(data)

            def close(self):
                self.real.close()
                super().close()

        monkeypatch.setattr(files, "open_for_write", File)


def _assert_failed_cleanly(error, path, old=OLD):
    """One line naming the directory; the old file untouched; no temporary left beside it."""
    message = str(error.value)
    assert "\n" not in message
    assert f"no space left on the device of {os.path.dirname(path)}" in message
    assert "free" in message
    with open(path, "rb") as f:
        assert f.read() == old
    leftovers = [n for n in os.listdir(os.path.dirname(path))
                 if ".tmp" in n or n.endswith(".incomplete")]
    assert not leftovers


# -- the helper ------------------------------------------------------------------------------

@pytest.mark.parametrize("error", [_no_space, _tf_no_space], ids=["ENOSPC", "tf"])
def test_atomic_open_on_a_full_disk(tmp_path, monkeypatch, error):
    path = tmp_path / "out.txt"
    path.write_bytes(OLD)
    disk = FillingDisk(monkeypatch, limit=10, error=error)
    with pytest.raises(files.OutputError) as err:
        with files.atomic_open(path) as f:
            f.write("x" * 100)
    assert disk.opened and disk.opened[0] != str(path)  # written under another name
    _assert_failed_cleanly(err, str(path))
    assert f"cannot write {path}:" in str(err.value)
    assert "more than the 10 bytes written before the disk filled" in str(err.value)


def test_write_atomic_states_the_space_needed(tmp_path, monkeypatch):
    path = tmp_path / "out.txt"
    path.write_bytes(OLD)
    FillingDisk(monkeypatch, limit=10)
    with pytest.raises(files.OutputError, match=r"it needs about 2\.5 kB") as err:
        files.write_atomic(path, "y" * 2500)
    _assert_failed_cleanly(err, str(path))


def test_other_errors_and_interrupts_pass_through_and_clean_up(tmp_path):
    path = tmp_path / "out.txt"
    path.write_bytes(OLD)
    for error in (KeyError("a bug"), KeyboardInterrupt(), OSError(errno.EIO, "I/O error")):
        with pytest.raises(type(error)):
            with files.atomic_open(path) as f:
                f.write("half")
                raise error
        assert path.read_bytes() == OLD
        assert os.listdir(tmp_path) == ["out.txt"]


def test_a_directory_replaces_the_previous_one_whole(tmp_path):
    out = tmp_path / "export"
    out.mkdir()
    (out / "old").write_text("old")
    with files.atomic_path(out) as temp:
        os.mkdir(temp)
        (tmp_path / os.path.basename(temp) / "new").write_text("new")
        assert not (out / "new").exists()
    assert os.listdir(out) == ["new"]
    assert os.listdir(tmp_path) == ["export"]


def test_is_out_of_space():
    assert files.is_out_of_space(_no_space())
    assert files.is_out_of_space(OSError(errno.EDQUOT, "Disk quota exceeded"))
    assert files.is_out_of_space(_tf_no_space())
    assert not files.is_out_of_space(OSError(errno.EACCES, "Permission denied"))
    import tensorflow as tf

    # An out-of-memory error of a TF op is not a full disk.
    assert not files.is_out_of_space(tf.errors.ResourceExhaustedError(
        None, None, "OOM when allocating tensor with shape[8,128,768]"))


# -- every writer ----------------------------------------------------------------------------

def _tokenizer(tmp_path):
    from bert_tf.bert import tokenization

    vocab = tmp_path / "vocab" / "vocab.txt"
    vocab.parent.mkdir(parents=True)
    vocab.write_text("\n".join(["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "the", "cat",
                                "sat", "on", "mat"]) + "\n")
    return tokenization.FullTokenizer(str(vocab), do_lower_case=True)


def _write_config(path, tmp_path):
    from bert_tf.bert.config import BertConfig
    from test_training_helpers import TINY_CONFIG

    BertConfig.from_dict(TINY_CONFIG).to_json_file(path)


def _write_eval_results(path, tmp_path):
    from bert_tf.training import metrics

    metrics.write_eval_results(os.path.dirname(path), {f"metric_{i}": 0.5 for i in range(9)},
                               filename=os.path.basename(path))


def _write_test_results(path, tmp_path):
    from bert_tf.tasks import classification

    classification.write_test_results(path, np.full((20, 3), 1 / 3, np.float32))


def _write_classifier_records(path, tmp_path):
    from bert_tf.data import classifier, records

    examples = [classifier.InputExample(str(i), "the cat sat on the mat", None, "1")
                for i in range(10)]
    meta = records.records_meta("cola", [], 8, "vocab.txt", True, ["0", "1"])
    classifier.write_classifier_records(examples, ["0", "1"], 8, _tokenizer(tmp_path), path,
                                        meta=meta)


def _write_pretraining_records(path, tmp_path):
    from bert_tf.data import writer

    with writer.RoundRobinRecordWriter([path]) as w:
        for _ in range(10):
            w.write(b"a serialized tf.train.Example" * 3)
        w.close()


def _write_tagging_records(path, tmp_path):
    from bert_tf.data import conll

    tokens = ["[CLS]", "the", "cat", "[SEP]"]
    window = conll.Window(0, 0, tokens, [2, 5, 6, 3], [1] * 4, [0] * 4, [0] * 4,
                          [0.0, 1.0, 1.0, 0.0], [0, 0, 1, 0])
    conll.write_windows(path, [window] * 10)


def _write_tagging_predictions(path, tmp_path):
    from bert_tf.data import conll

    sentence = conll.Sentence(["EU", "rejects"], ["O", "O"], ["EU NNP B-NP", "rejects VBZ B-VP"],
                              1, None)
    conll.write_conll_predictions(path, [sentence] * 10, [["B-ORG", "O"]] * 10)


def _write_squad_predictions(path, tmp_path):
    from bert_tf.evaluation import squad_predictions

    answers = {f"question {i}": "an answer" for i in range(10)}
    original = squad_predictions.compute_predictions
    squad_predictions.compute_predictions = lambda *args: (
        answers, {k: [{"text": v}] for k, v in answers.items()}, dict.fromkeys(answers, 0.5))
    try:
        squad_predictions.write_predictions(
            [], [], [], 20, 30, True, path, path + ".nbest", path + ".null_odds",
            version_2_with_negative=True)
    finally:
        squad_predictions.compute_predictions = original


def _write_squad_eval(path, tmp_path):
    from bert_tf.evaluation import squad_eval

    data = tmp_path / "data.json"
    data.write_text(json.dumps({"version": "1.1", "data": [{"paragraphs": [{
        "context": "a b", "qas": [{"id": "q", "question": "?", "answers": [{"text": "a"}]}]}]}]}))
    predictions = tmp_path / "p.json"
    predictions.write_text(json.dumps({"q": "a"}))
    stderr = io.StringIO()
    with contextlib.redirect_stderr(stderr):
        assert squad_eval.main([str(data), str(predictions), "--out_file", path]) == 2
    assert stderr.getvalue().startswith("error: cannot write ")
    raise files.OutputError(stderr.getvalue().strip())


def _write_extracted_features(path, tmp_path):
    from bert_tf import feature_extraction

    feature = types.SimpleNamespace(unique_id=0, tokens=["[CLS]", "the", "[SEP]"])
    values = np.zeros((1, 3, 4), np.float32)
    feature_extraction.write_json_lines(path, [(feature, values)] * 5, [-1], 5)


def _write_vocab(path, tmp_path):
    from bert_tf.bert import vocab

    vocab.write_vocab([f"token{i}" for i in range(30)], path)


def _write_predict_output(path, tmp_path):
    from bert_tf import predict
    from bert_tf.serving import predict as serving_predict

    original = serving_predict.predict_lines
    serving_predict.predict_lines = lambda *args: iter([{"label": "1", "p": 0.5}] * 20)
    try:
        with pytest.raises(SystemExit) as exit_:
            predict.main(["--export_dir", str(tmp_path), "--input_file", os.devnull,
                          "--output_file", path])
    finally:
        serving_predict.predict_lines = original
    raise files.OutputError(str(exit_.value.code).removeprefix("bert_tf.predict: "))


WRITERS = {
    "bert_config.json": _write_config,
    "eval_results.txt": _write_eval_results,
    "test_results.tsv": _write_test_results,
    "train.tf_record": _write_classifier_records,
    "tf_examples.tfrecord": _write_pretraining_records,
    "eval.tf_record": _write_tagging_records,
    "test_predictions.txt": _write_tagging_predictions,
    "predictions.json": _write_squad_predictions,
    "eval_results.json": _write_squad_eval,
    "output.jsonl": _write_extracted_features,
    "vocab.txt": _write_vocab,
    "predict_output.jsonl": _write_predict_output,
}


class _FillingTFRecordWriter:
    """tf.io.TFRecordWriter on a disk that fills after 3 records."""

    real_class = None  # tf.io.TFRecordWriter, set before it is patched

    def __init__(self, path):
        self.real, self.count, self.path = self.real_class(path), 0, path

    def write(self, record):
        self.count += 1
        if self.count > 3:
            self.real.flush()
            raise _tf_no_space()
        self.real.write(record)

    def __enter__(self):
        return self

    def __exit__(self, *args):
        self.real.close()


@pytest.mark.parametrize("name", sorted(WRITERS))
def test_every_writer_on_a_full_disk_keeps_the_old_file(tmp_path, monkeypatch, name):
    import tensorflow as tf

    out_dir = tmp_path / "out"
    out_dir.mkdir()
    path = str(out_dir / name)
    for p in (path, path + ".nbest", path + ".null_odds"):
        with open(p, "wb") as f:
            f.write(OLD)
    monkeypatch.setattr(_FillingTFRecordWriter, "real_class", tf.io.TFRecordWriter)
    monkeypatch.setattr(tf.io, "TFRecordWriter", _FillingTFRecordWriter)
    FillingDisk(monkeypatch, limit=16)
    with pytest.raises(files.OutputError) as err:
        WRITERS[name](path, tmp_path)
    for p in (path, path + ".nbest", path + ".null_odds"):
        _assert_failed_cleanly(err, p)


def test_the_sidecar_of_records_that_failed_vouches_for_nothing(tmp_path, monkeypatch):
    from bert_tf.data import records

    path = str(tmp_path / "train.tf_record")
    _write_classifier_records(path, tmp_path / "a")
    meta = records.records_meta("cola", [], 8, "vocab.txt", True, ["0", "1"])
    assert records.records_are_current(path, meta)
    FillingDisk(monkeypatch, limit=40)
    with pytest.raises(files.OutputError):
        _write_classifier_records(path, tmp_path / "b")
    assert not records.records_are_current(path, meta)


def test_export_on_a_full_disk_keeps_the_old_export(tmp_path, monkeypatch):
    import keras
    import tensorflow as tf

    from bert_tf.serving import export

    out = tmp_path / "export"
    out.mkdir()
    (out / "saved_model.pb").write_bytes(OLD)

    def save_part_way(module, directory, signatures=None):
        os.makedirs(os.path.join(directory, "variables"))
        with open(os.path.join(directory, "saved_model.pb"), "wb") as f:
            f.write(b"half")
        raise _tf_no_space()

    monkeypatch.setattr(tf.saved_model, "save", save_part_way)
    weight = keras.Variable(np.zeros((1000,), np.float32))
    module = types.SimpleNamespace(
        name="export", signatures=lambda: {},
        model=types.SimpleNamespace(weights=[weight], checkpoint_variables=lambda: {"w": weight}),
        inputs=types.SimpleNamespace(tokenizer=tf.Module()))
    with pytest.raises(files.OutputError, match=r"needs about 4\.0 kB") as err:
        export.save_export(module, {"task": "features"}, str(out))
    assert f"cannot write {out}: no space left on the device of {tmp_path} (" in str(err.value)
    assert (out / "saved_model.pb").read_bytes() == OLD
    assert os.listdir(tmp_path) == ["export"]


def test_temporary_names_are_recognised():
    assert files.is_temporary_name(files.temporary_name("/out/test_results.tsv"))
    assert not files.is_temporary_name("/out/test_results.tsv")
    assert not files.is_temporary_name("/out/notes.tmp-draft")  # a user's file stays
