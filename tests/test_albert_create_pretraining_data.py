"""ALBERT's create_pretraining_data end to end: the original's recorded records and logs, the
command line, and its errors (one line naming the flag or file)."""

import gzip
import json
import logging
import os
import subprocess
import sys
from pathlib import Path

import pytest

from bert_tf.albert import pretraining_data
from conftest import load_recorder

REPO = Path(__file__).resolve().parents[1]
DATA = REPO / "tests" / "data" / "albert_data"
recorder = load_recorder("albert_data")

with gzip.open(DATA / "expected.json.gz", "rt", encoding="utf-8") as _f:
    CASES = json.load(_f)


def _records(path):
    data = Path(path).read_bytes()
    out, i = [], 0
    while i < len(data):
        n = int.from_bytes(data[i:i + 8], "little")
        out.append(data[i + 12:i + 12 + n].hex())
        i += n + 16
    return out


def _options(case, out_paths):
    flags = dict(case["flags"])
    spm = flags.pop("spm", False)
    flags.pop("outputs")
    return pretraining_data.AlbertPretrainingDataOptions(
        input_file=",".join(str(DATA / "corpus" / f) for f in case["files"]),
        output_file=",".join(out_paths), vocab_file=str(DATA / "vocab.txt"),
        spm_model_file=str(recorder.SPM_MODEL) if spm else None, progress_seconds=0.0, **flags)


@pytest.mark.parametrize("case", CASES, ids=[c["name"] for c in CASES])
def test_records_and_log_equal_the_originals(tmp_path, caplog, case):
    out_paths = [str(tmp_path / f"out{i}.tfrecord") for i in range(case["flags"]["outputs"])]
    caplog.set_level(logging.INFO, logger="absl")
    summary = pretraining_data.create_pretraining_data(_options(case, out_paths))
    for path, expected in zip(out_paths, case["records"]):
        ours = _records(path)
        assert len(ours) == len(expected)
        for i, (a, b) in enumerate(zip(ours, expected)):
            assert a == b, f"{path} record {i} differs"
    assert summary.num_instances == sum(len(r) for r in case["records"])
    log = recorder.example_log([r.getMessage() for r in caplog.records])
    if case["flags"].get("spm"):
        # Pieces the model does not know print as <unk> in our log, as themselves in the
        # original's (the records hold <unk>'s id in both).
        log = [_unk_tokens(a, b) for a, b in zip(log, case["log"])]
    assert log == case["log"]
    assert sorted(os.listdir(tmp_path)) == sorted(os.path.basename(p) for p in out_paths)


def _unk_tokens(ours, original):
    if not ours.startswith("tokens: ") or ours == original:
        return ours
    a, b = ours.split(" "), original.split(" ")
    assert len(a) == len(b)
    return " ".join(y if x == "<unk>" else x for x, y in zip(a, b))


def test_cases_cover_the_flags():
    names = {k for c in CASES for k in c["flags"]}
    assert {"spm", "do_whole_word_mask", "random_next_sentence", "short_seq_prob",
            "do_lower_case", "do_permutation", "favor_shorter_ngram", "ngram",
            "masked_lm_prob"} <= names
    assert any(c["flags"]["outputs"] > 1 for c in CASES)
    assert any(c["flags"]["dupe_factor"] > 1 for c in CASES)
    # Sentence-order swaps, random documents and in-order pairs all occur.
    assert any(c["flags"].get("spm") for c in CASES) and any(not c["flags"].get("spm")
                                                            for c in CASES)


def test_numpy_seed_defaults_to_random_seed_and_changes_the_records(tmp_path):
    case = CASES[0]
    runs = {}
    for name, seed in (("default", None), ("same", case["flags"]["random_seed"]), ("other", 99)):
        out = str(tmp_path / f"{name}.tfrecord")
        options = _options(case, [out])
        options = pretraining_data.dataclasses.replace(options, numpy_seed=seed)
        pretraining_data.create_pretraining_data(options)
        runs[name] = _records(out)
    assert runs["default"] == runs["same"]
    assert runs["other"] != runs["default"] and len(runs["other"]) == len(runs["default"])


def _command(tmp_path, *args):
    env = dict(os.environ, PYTHONPATH=str(REPO))
    return subprocess.run([sys.executable, "-m", "bert_tf.albert.create_pretraining_data", *args],
                          capture_output=True, text=True, cwd=tmp_path, env=env, timeout=300)


@pytest.mark.slow
def test_command_line_equals_the_original(tmp_path):
    case = CASES[1]
    outputs = [str(tmp_path / f"o{i}.tfrecord") for i in range(case["flags"]["outputs"])]
    argv = recorder.case_argv(case["files"], case["flags"], outputs)
    result = _command(tmp_path, *argv)
    assert result.returncode == 0, result.stderr
    for path, expected in zip(outputs, case["records"]):
        assert _records(path) == expected


def _error_line(result):
    lines = [line for line in result.stderr.splitlines() if line.startswith("create_pretraining")]
    assert result.returncode != 0
    assert len(lines) == 1, result.stderr
    assert "Traceback" not in result.stderr
    return lines[0]


@pytest.mark.parametrize("kind", ["missing_input", "bad_spm", "unknown_flag", "bad_vocab"])
def test_command_errors_are_one_line(tmp_path, kind):
    vocab = str(DATA / "vocab.txt")
    corpus = str(DATA / "corpus" / "a_sample.txt")
    out = f"--output_file={tmp_path / 'out.tfrecord'}"
    if kind == "missing_input":
        result = _command(tmp_path, f"--input_file={tmp_path / 'nope.txt'}", out,
                          f"--vocab_file={vocab}")
        assert "nope.txt" in _error_line(result) and "matches no file" in _error_line(result)
    elif kind == "bad_spm":
        result = _command(tmp_path, f"--input_file={corpus}", out, f"--vocab_file={vocab}",
                          f"--spm_model_file={vocab}")
        assert _error_line(result) == (f"create_pretraining_data.py: error: --spm_model_file "
                                       f"{vocab!r} is not a SentencePiece model")
    elif kind == "bad_vocab":
        bad = tmp_path / "bad.bin"
        bad.write_bytes(b"\xff\xfe\x00")
        result = _command(tmp_path, f"--input_file={corpus}", out, f"--vocab_file={bad}")
        assert str(bad) in _error_line(result)
    else:
        result = _command(tmp_path, f"--input_file={corpus}", out, f"--vocab_file={vocab}",
                          "--max_seq_lenght=64")
        assert result.returncode != 0
        assert "max_seq_lenght" in result.stderr and "Traceback" not in result.stderr
    assert not any(tmp_path.glob("out.tfrecord*"))


@pytest.mark.parametrize("overrides,match", [
    (dict(max_seq_length=4), "--max_seq_length=4"),
    (dict(ngram=0), "--ngram=0"),
    (dict(masked_lm_prob=1.5), "--masked_lm_prob=1.5"),
    (dict(masked_lm_prob=-0.1), r"--masked_lm_prob=-0.1: expected a value in \[0, 1\]"),
    (dict(dupe_factor=0), "--dupe_factor=0"),
    (dict(input_file_mode="w"), "--input_file_mode='w'"),
    (dict(numpy_seed=-1), "--numpy_seed=-1"),
    (dict(vocab_file=""), "--vocab_file is required"),
])
def test_flag_out_of_range(tmp_path, overrides, match):
    options = _options(CASES[0], [str(tmp_path / "o.tfrecord")])
    options = pretraining_data.dataclasses.replace(options, **overrides)
    with pytest.raises(pretraining_data.DataError, match=match):
        pretraining_data.create_pretraining_data(options)
    assert not os.listdir(tmp_path)


def test_input_without_any_document(tmp_path):
    empty = tmp_path / "empty.txt"
    empty.write_text("\n \n\u0301\n", encoding="utf-8")
    options = pretraining_data.dataclasses.replace(
        _options(CASES[0], [str(tmp_path / "o.tfrecord")]), input_file=str(empty))
    with pytest.raises(pretraining_data.DataError, match="no non-empty document"):
        pretraining_data.create_pretraining_data(options)
    assert os.listdir(tmp_path) == ["empty.txt"]
