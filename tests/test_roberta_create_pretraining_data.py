"""`python -m bert_tf.roberta.create_pretraining_data` end to end: a glob of the fixture's two
files to two output files equals fairseq's recorded blocks; errors are one line."""

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

REPO = Path(__file__).resolve().parents[1]
DATA = REPO / "tests" / "data" / "roberta_pretraining_data"
VOCAB = REPO / "tests" / "data" / "roberta_tokenizer" / "vocab.json"
MERGES = REPO / "tests" / "data" / "roberta_tokenizer" / "merges.txt"
EXPECTED = json.loads((DATA / "expected.json").read_text(encoding="utf-8"))
PAD = 1


def _command(tmp_path, *args):
    env = dict(os.environ, PYTHONPATH=str(REPO))
    return subprocess.run([sys.executable, "-m", "bert_tf.roberta.create_pretraining_data", *args],
                          capture_output=True, text=True, cwd=tmp_path, env=env, timeout=300)


def _input_ids(path, length):
    import tensorflow as tf  # pylint: disable=import-outside-toplevel

    spec = {"input_ids": tf.io.FixedLenFeature([length], tf.int64)}
    return [tf.io.parse_single_example(r, spec)["input_ids"].numpy()
            for r in tf.data.TFRecordDataset(str(path))]


def test_command_writes_fairseqs_blocks(tmp_path):
    case = next(c for c in EXPECTED["cases"]
                if c["max_seq_length"] == 42 and c["break_mode"] == "complete")
    # a file and a glob, in the fixture's order (a comma list keeps its order)
    outputs = [tmp_path / "a.tfrecord", tmp_path / "b.tfrecord"]
    result = _command(tmp_path, f"--input_file={DATA / 'corpus_1.txt'},{DATA / 'corpus_2*.txt'}",
                      f"--output_file={outputs[0]},{outputs[1]}", f"--vocab_file={VOCAB}",
                      f"--merges_file={MERGES}", "--max_seq_length=42")
    assert result.returncode == 0, result.stderr
    kept = [b for i, b in enumerate(case["blocks"]) if i not in case["too_long"]]
    assert f"wrote {len(kept)} blocks from {len(EXPECTED['line_ids'])} lines" in result.stdout
    a, b = (_input_ids(p, 42) for p in outputs)
    interleaved = [r for pair in zip(a, b + [None]) for r in pair if r is not None]
    assert len(interleaved) == len(kept)
    for ids, block in zip(interleaved, kept):
        assert ids[ids != PAD].tolist() == block
        assert (ids[len(block):] == PAD).all()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a.tfrecord", "b.tfrecord"]


def _error_line(result):
    lines = [line for line in result.stderr.splitlines()
             if line.startswith("create_pretraining_data: error:")]
    assert result.returncode != 0
    assert len(lines) == 1, result.stderr
    assert "Traceback" not in result.stderr
    return lines[0]


@pytest.mark.parametrize("kind", ["missing_input", "not_utf8", "bad_vocab", "bad_output_dir"])
def test_command_errors_are_one_line(tmp_path, kind):
    corpus = str(DATA / "corpus_1.txt")
    out = f"--output_file={tmp_path / 'out.tfrecord'}"
    vocab = f"--vocab_file={VOCAB}"
    if kind == "missing_input":
        line = _error_line(_command(tmp_path, f"--input_file={tmp_path / 'nope*.txt'}", out, vocab))
        assert "nope*.txt" in line and "matches no file" in line
    elif kind == "not_utf8":
        bad = tmp_path / "bad.txt"
        bad.write_bytes(b"ok\n\xff\n")
        line = _error_line(_command(tmp_path, f"--input_file={bad}", out, vocab))
        assert str(bad) in line and "line 2" in line
    elif kind == "bad_vocab":
        bad = tmp_path / "vocab.json"
        bad.write_text("[1, 2]", encoding="utf-8")
        line = _error_line(_command(tmp_path, f"--input_file={corpus}", out, f"--vocab_file={bad}",
                                    f"--merges_file={MERGES}"))
        assert line.startswith("create_pretraining_data: error: --vocab_file") and str(bad) in line
    else:
        line = _error_line(_command(tmp_path, f"--input_file={corpus}",
                                    f"--output_file={tmp_path / 'no' / 'out.tfrecord'}", vocab))
        assert "--output_file" in line and "does not exist" in line
    assert not any(p.name.startswith("out") for p in tmp_path.iterdir())


def test_records_hold_input_ids_only(tmp_path):
    import tensorflow as tf  # pylint: disable=import-outside-toplevel

    out = tmp_path / "out.tfrecord"
    result = _command(tmp_path, f"--input_file={DATA / 'corpus_2.txt'}", f"--output_file={out}",
                      f"--vocab_file={VOCAB}", "--max_seq_length=64")
    assert result.returncode == 0, result.stderr
    example = tf.train.Example.FromString(next(iter(tf.data.TFRecordDataset(str(out)))).numpy())
    assert list(example.features.feature) == ["input_ids"]
    ids = np.array(example.features.feature["input_ids"].int64_list.value)
    assert ids.shape == (64,) and ids[0] == 0
