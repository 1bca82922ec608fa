"""create_pretraining_data.py end to end: the original's golden records, errors, modes."""

import os
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import SHARED_DIR, golden_path
from bert_tf.bert import pretraining_data
from bert_tf.data import writer

REPO = Path(__file__).resolve().parents[1]

# The flags of ../shared/golden/README.md (data/).
GOLDEN_FLAGS = {
    "sample_default.tfrecord": dict(),
    "sample_wwm.tfrecord": dict(do_whole_word_mask=True, max_seq_length=64,
                                max_predictions_per_seq=10, random_seed=7, dupe_factor=3,
                                masked_lm_prob=0.2, short_seq_prob=0.3),
}


def _shared_data(name):
    path = SHARED_DIR / "data" / name
    if not path.exists():
        pytest.skip(f"{path} is absent (../shared comes with CI, not with a clone)")
    return str(path)


def _records(path):
    data = Path(path).read_bytes()
    out, i = [], 0
    while i < len(data):
        n = int.from_bytes(data[i:i + 8], "little")
        out.append(data[i + 12:i + 12 + n])
        i += n + 16
    return out


def _assert_same_records(ours, golden):
    """Record for record: equal parsed features, and our bytes equal the golden record
    re-serialized deterministically (the original's own map order varies per process)."""
    from tensorflow.core.example import example_pb2

    ours, golden = _records(ours), _records(golden)
    assert len(ours) == len(golden)
    for i, (a, b) in enumerate(zip(ours, golden)):
        ea, eb = example_pb2.Example.FromString(a), example_pb2.Example.FromString(b)
        assert ea == eb, f"record {i} differs"
        assert a == eb.SerializeToString(deterministic=True), f"record {i} bytes differ"


def _options(tmp_path, **kw):
    args = dict(input_file=_shared_data("sample_text.txt"),
                output_file=str(tmp_path / "out.tfrecord"),
                vocab_file=_shared_data("uncased_vocab.txt"), progress_seconds=0.0)
    args.update(kw)
    return pretraining_data.PretrainingDataOptions(**args)


@pytest.mark.parametrize("name", sorted(GOLDEN_FLAGS))
def test_golden_records(tmp_path, name):
    golden = golden_path("data", name)
    summary = pretraining_data.create_pretraining_data(_options(tmp_path, **GOLDEN_FLAGS[name]))
    _assert_same_records(tmp_path / "out.tfrecord", golden)
    assert summary.num_instances == len(_records(golden))
    assert os.listdir(tmp_path) == ["out.tfrecord"]


@pytest.mark.slow
def test_golden_records_with_fast_tokenizer(tmp_path):
    golden = golden_path("data", "sample_wwm.tfrecord")
    pretraining_data.create_pretraining_data(
        _options(tmp_path, tokenizer="fast", **GOLDEN_FLAGS["sample_wwm.tfrecord"]))
    _assert_same_records(tmp_path / "out.tfrecord", golden)


def test_command_line_golden_and_logs(tmp_path):
    golden = golden_path("data", "sample_default.tfrecord")
    out = tmp_path / "cli.tfrecord"
    result = subprocess.run(
        [sys.executable, str(REPO / "create_pretraining_data.py"),
         f"--input_file={_shared_data('sample_text.txt')}", f"--output_file={out}",
         f"--vocab_file={_shared_data('uncased_vocab.txt')}"],
        capture_output=True, text=True, cwd=REPO, timeout=300)
    assert result.returncode == 0, result.stderr
    _assert_same_records(out, golden)
    log = result.stderr
    assert log.count("*** Example ***") == 20
    assert "tokens: [CLS] " in log and "masked_lm_weights: 1.0" in log
    assert "Wrote 118 total instances" in log


def test_does_not_import_tensorflow(tmp_path):
    code = (
        "import sys\n"
        "from bert_tf.bert import pretraining_data\n"
        f"pretraining_data.create_pretraining_data(pretraining_data.PretrainingDataOptions("
        f"input_file={_shared_data('sample_text.txt')!r}, output_file={str(tmp_path / 'o')!r}, "
        f"vocab_file={_shared_data('uncased_vocab.txt')!r}, dupe_factor=1))\n"
        "assert 'tensorflow' not in sys.modules, 'TensorFlow was imported'\n")
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                            cwd=REPO, timeout=300)
    assert result.returncode == 0, result.stderr


def test_comma_lists_globs_and_round_robin(tmp_path):
    import tensorflow as tf

    # Split the sample in the middle of a document: the original's document list carries the
    # last document of one file on into the next, so the output must not change.
    lines = Path(_shared_data("sample_text.txt")).read_text(encoding="utf-8").split("\n")
    (tmp_path / "part1.txt").write_text("\n".join(lines[:5]) + "\n", encoding="utf-8")
    (tmp_path / "part2.txt").write_text("\n".join(lines[5:]), encoding="utf-8")
    one = _options(tmp_path, output_file=str(tmp_path / "single.tfrecord"), dupe_factor=2)
    pretraining_data.create_pretraining_data(one)
    outs = [str(tmp_path / f"rr{i}.tfrecord") for i in range(3)]
    split = _options(tmp_path, input_file=f"{tmp_path}/part1.txt,{tmp_path}/part2*.txt",
                     output_file=",".join(outs), dupe_factor=2)
    pretraining_data.create_pretraining_data(split)
    single = [x.numpy() for x in tf.data.TFRecordDataset(str(tmp_path / "single.tfrecord"))]
    parts = [[x.numpy() for x in tf.data.TFRecordDataset(p)] for p in outs]
    assert [r for i in range(len(single)) for r in [parts[i % 3][i // 3]]] == single


@pytest.mark.slow
def test_sharded_mode_is_deterministic_and_different(tmp_path):
    import tensorflow as tf

    identical = _options(tmp_path, output_file=str(tmp_path / "one.tfrecord"), dupe_factor=4)
    pretraining_data.create_pretraining_data(identical)
    runs = []
    for run in range(2):
        out = str(tmp_path / f"run{run}.tfrecord")
        summary = pretraining_data.create_pretraining_data(
            _options(tmp_path, output_file=out, dupe_factor=4, num_workers=2))
        names = [f"{out}-00000-of-00002", f"{out}-00001-of-00002"]
        assert summary.output_files == names
        runs.append([Path(p).read_bytes() for p in names])
        records = [r for p in names for r in tf.data.TFRecordDataset(p)]
        assert len(records) == summary.num_instances > 0
        assert summary.num_documents == 3
    assert runs[0] == runs[1], "same N and seed must give the same output"
    # The command line (no TensorFlow loaded: workers are forked; here they were spawned).
    out = tmp_path / "cli.tfrecord"
    result = subprocess.run(
        [sys.executable, str(REPO / "create_pretraining_data.py"),
         f"--input_file={_shared_data('sample_text.txt')}", f"--output_file={out}",
         f"--vocab_file={_shared_data('uncased_vocab.txt')}", "--dupe_factor=4",
         "--num_workers=2"], capture_output=True, text=True, cwd=REPO, timeout=300)
    assert result.returncode == 0, result.stderr
    assert [Path(f"{out}-0000{i}-of-00002").read_bytes() for i in range(2)] == runs[0]
    assert b"".join(runs[0]) != (tmp_path / "one.tfrecord").read_bytes()
    assert not [n for n in os.listdir(tmp_path) if n.endswith(writer.INCOMPLETE_SUFFIX)]


# -- errors: each a DataError naming the flag or file, raised before any output exists ----------


def _tiny_vocab(tmp_path, tokens=("[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "a", "b")):
    path = tmp_path / "vocab.txt"
    path.write_text("\n".join(tokens) + "\n", encoding="utf-8")
    return str(path)


def _text(tmp_path, text, name="in.txt"):
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return str(path)


@pytest.mark.parametrize("overrides,match", [
    (dict(max_seq_length=4), "--max_seq_length=4"),
    (dict(max_seq_length=70000), "--max_seq_length=70000"),
    (dict(max_predictions_per_seq=0), "--max_predictions_per_seq=0"),
    (dict(max_predictions_per_seq=129), "--max_predictions_per_seq=129"),
    (dict(masked_lm_prob=0.0), r"--masked_lm_prob=0.0: expected a value in \(0, 1\]"),
    (dict(masked_lm_prob=1.5), "--masked_lm_prob=1.5"),
    (dict(short_seq_prob=-0.1), "--short_seq_prob"),
    (dict(dupe_factor=0), "--dupe_factor=0"),
    (dict(num_workers=0), "--num_workers=0"),
])
def test_flag_out_of_range(tmp_path, overrides, match):
    options = pretraining_data.PretrainingDataOptions(
        input_file=_text(tmp_path, "a b\nb a\n"), output_file=str(tmp_path / "out.tfrecord"),
        vocab_file=_tiny_vocab(tmp_path), **overrides)
    with pytest.raises(pretraining_data.DataError, match=match):
        pretraining_data.create_pretraining_data(options)
    assert not (tmp_path / "out.tfrecord").exists()


def _error(tmp_path, match, **kw):
    args = dict(kw)
    if "input_file" not in args:
        args["input_file"] = _text(tmp_path, "a b\nb a\n\nb b a\n", name="default_in.txt")
    args.setdefault("output_file", str(tmp_path / "out.tfrecord"))
    if "vocab_file" not in args:
        args["vocab_file"] = _tiny_vocab(tmp_path)
    with pytest.raises(pretraining_data.DataError, match=match):
        pretraining_data.create_pretraining_data(pretraining_data.PretrainingDataOptions(**args))
    assert not [n for n in os.listdir(tmp_path) if "tfrecord" in n], "no output may exist"


def test_missing_input_file(tmp_path):
    _error(tmp_path, "--input_file: .*nope.txt' matches no file",
           input_file=str(tmp_path / "nope.txt"))


def test_glob_matching_nothing(tmp_path):
    _error(tmp_path, r"--input_file: .*\*.missing' matches no file",
           input_file=f"{_text(tmp_path, 'a b')},{tmp_path}/*.missing")


def test_input_without_any_document(tmp_path):
    # Blank lines and a line that tokenizes to nothing (control characters only).
    _error(tmp_path, "no non-empty document", input_file=_text(tmp_path, "\n  \n\x01\x02\n\n"))


def test_input_not_utf8(tmp_path):
    path = tmp_path / "latin1.txt"
    path.write_bytes(b"a b\ncaf\xe9\n")
    _error(tmp_path, "latin1.txt' line 2: not valid UTF-8", input_file=str(path))


@pytest.mark.parametrize("missing", ["[CLS]", "[SEP]", "[MASK]"])
def test_vocab_without_special_token(tmp_path, missing):
    tokens = [t for t in ("[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "a", "b") if t != missing]
    _error(tmp_path, rf"--vocab_file .* has no \{missing[:-1]}\] entry",
           vocab_file=_tiny_vocab(tmp_path, tokens))


def test_missing_vocab(tmp_path):
    _error(tmp_path, "--vocab_file", vocab_file=str(tmp_path / "no_vocab.txt"))


def test_unwritable_output(tmp_path):
    _error(tmp_path, "--output_file: cannot write .*no_such_dir",
           output_file=str(tmp_path / "no_such_dir" / "out.tfrecord"))
    _error(tmp_path, "--output_file: .* is a directory", output_file=str(tmp_path))


def test_interrupted_run_leaves_no_complete_looking_file(tmp_path, monkeypatch):
    from bert_tf.data import features

    calls = []
    encode_batch = features.BatchExampleEncoder.encode_batch

    def interrupted(self, *args):
        calls.append(1)
        if len(calls) > 3:
            raise KeyboardInterrupt
        return encode_batch(self, *args)

    monkeypatch.setattr(features.BatchExampleEncoder, "encode_batch", interrupted)
    monkeypatch.setattr(pretraining_data, "WRITE_BATCH", 16)
    monkeypatch.setattr(writer.TFRecordFile.__init__, "__defaults__", (8,))  # flush often
    outs = [str(tmp_path / "a.tfrecord"), str(tmp_path / "b.tfrecord")]
    with pytest.raises(KeyboardInterrupt):
        pretraining_data.create_pretraining_data(_options(tmp_path, output_file=",".join(outs)))
    assert len(calls) == 4
    assert os.listdir(tmp_path) == []


def test_command_line_error_message(tmp_path):
    result = subprocess.run(
        [sys.executable, str(REPO / "create_pretraining_data.py"),
         f"--input_file={tmp_path}/missing.txt", f"--output_file={tmp_path}/o.tfrecord",
         f"--vocab_file={_tiny_vocab(tmp_path)}", "--masked_lm_prob=0.15"],
        capture_output=True, text=True, cwd=REPO, timeout=300)
    assert result.returncode == 1
    assert "error: --input_file:" in result.stderr and "matches no file" in result.stderr
    assert "Traceback" not in result.stderr
