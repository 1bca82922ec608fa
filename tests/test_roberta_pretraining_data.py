"""bert_tf.roberta.pretraining_data: FULL-SENTENCES packing equal to fairseq's recorded
`complete` / `complete_doc` blocks (tests/data/roberta_pretraining_data/make_expected.py ran
fairseq v0.12.2's GPT-2 encoder and Cython block code), the records, edge cases and errors."""

import json
import logging
from pathlib import Path

import numpy as np
import pytest

from bert_tf.data import documents as documents_lib
from bert_tf.roberta import pretraining_data
from bert_tf.roberta.tokenization import SPECIAL_TOKENS

REPO = Path(__file__).resolve().parents[1]
DATA = REPO / "tests" / "data" / "roberta_pretraining_data"
VOCAB = REPO / "tests" / "data" / "roberta_tokenizer" / "vocab.json"
CORPUS = [str(DATA / "corpus_1.txt"), str(DATA / "corpus_2.txt")]
EXPECTED = json.loads((DATA / "expected.json").read_text(encoding="utf-8"))
BOS, PAD, EOS = 0, 1, 2


@pytest.fixture(scope="module")
def tokenizer():
    return pretraining_data.load_tokenizer(str(VOCAB))


@pytest.fixture(scope="module")
def sentences(tokenizer):
    return list(pretraining_data.read_sentences(
        CORPUS, documents_lib.lines_to_ids_function(tokenizer), EOS))


def _records(path, length):
    """input_ids of each record of a TFRecord file (parsed by TensorFlow)."""
    import tensorflow as tf  # pylint: disable=import-outside-toplevel

    spec = pretraining_data.feature_spec(length)
    return [tf.io.parse_single_example(r, spec)["input_ids"].numpy()
            for r in tf.data.TFRecordDataset(str(path))]


def _options(tmp_path, **kw):
    values = dict(input_file=",".join(CORPUS), output_file=str(tmp_path / "out.tfrecord"),
                  vocab_file=str(VOCAB), progress_seconds=0.0)
    values.update(kw)
    return pretraining_data.PretrainingDataOptions(**values)


def test_line_ids_equal_fairseqs_gpt2_encoder(sentences):
    assert [s[-1] for s in sentences] == [EOS] * len(sentences)
    assert [s[:-1] for s in sentences] == EXPECTED["line_ids"]


@pytest.mark.parametrize("case", EXPECTED["cases"],
                         ids=[f"{c['break_mode']}-{c['max_seq_length']}" for c in EXPECTED["cases"]])
def test_packing_equals_fairseq(sentences, case):
    blocks = list(pretraining_data.pack_blocks(sentences, case["max_seq_length"] - 1,
                                               case["break_mode"]))
    assert [[BOS] + b for b in blocks] == case["blocks"]


@pytest.mark.parametrize("max_seq_length,break_mode", [(28, "complete"), (64, "complete_doc")])
def test_records_are_fairseqs_samples_padded(tmp_path, tokenizer, max_seq_length, break_mode):
    case = next(c for c in EXPECTED["cases"]
                if c["max_seq_length"] == max_seq_length and c["break_mode"] == break_mode)
    summary = pretraining_data.create_pretraining_data(
        _options(tmp_path, max_seq_length=max_seq_length, break_mode=break_mode), tokenizer)
    kept = [b for i, b in enumerate(case["blocks"]) if i not in case["too_long"]]
    records = _records(tmp_path / "out.tfrecord", max_seq_length)
    assert len(records) == len(kept) == summary.num_blocks
    assert summary.num_skipped == len(case["too_long"])
    assert summary.num_lines == len(EXPECTED["line_ids"])
    for ids, block in zip(records, kept):
        assert ids.dtype == np.int64 and ids.shape == (max_seq_length,)
        # the length is where the pad id starts, as fairseq's src_tokens.ne(pad)
        length = int(np.sum(ids != PAD))
        assert ids[:length].tolist() == block
        assert (ids[length:] == PAD).all()
        assert ids[0] == BOS and ids[length - 1] == EOS


def test_a_document_longer_than_a_block_splits_at_sentence_ends():
    doc = [[5, 6, 7, EOS], [8, 9, EOS], [10, 11, 12, EOS]]
    assert list(pretraining_data.pack_blocks(doc, 8)) == [
        [5, 6, 7, EOS, 8, 9, EOS], [10, 11, 12, EOS]]
    # a block exactly full
    assert list(pretraining_data.pack_blocks(doc, 7)) == [
        [5, 6, 7, EOS, 8, 9, EOS], [10, 11, 12, EOS]]
    assert list(pretraining_data.pack_blocks(doc, 6)) == [[5, 6, 7, EOS], [8, 9, EOS],
                                                          [10, 11, 12, EOS]]


def test_blocks_cross_documents_with_separators_in_complete_mode_only():
    sentences = [[5, EOS], [EOS], [6, 7, EOS], [EOS], [EOS], [8, EOS]]
    assert list(pretraining_data.pack_blocks(sentences, 100)) == [
        [5, EOS, EOS, 6, 7, EOS, EOS, EOS, 8, EOS]]
    assert list(pretraining_data.pack_blocks(sentences, 100, "complete_doc")) == [
        [5, EOS], [6, 7, EOS], [8, EOS]]


def test_empty_documents_and_a_last_partial_block():
    # blank lines only: separators in "complete" mode (as fairseq), nothing in "complete_doc"
    assert list(pretraining_data.pack_blocks([[EOS]] * 3, 2)) == [[EOS, EOS], [EOS]]
    assert list(pretraining_data.pack_blocks([[EOS]] * 3, 2, "complete_doc")) == []
    assert list(pretraining_data.pack_blocks([], 5)) == []
    # the last block is written however short
    assert list(pretraining_data.pack_blocks([[5, 6, EOS], [7, EOS]], 4)) == [[5, 6, EOS], [7, EOS]]


def test_a_sentence_longer_than_the_block_is_a_block_of_its_own():
    long = list(range(10, 20)) + [EOS]
    assert list(pretraining_data.pack_blocks([[5, EOS], long, [6, EOS]], 5)) == [
        [5, EOS], long, [6, EOS]]


def test_too_long_sentences_are_skipped_and_counted(tmp_path, tokenizer, caplog):
    text = tmp_path / "in.txt"
    text.write_text("a b\n" + "word " * 30 + "\nc d\n", encoding="utf-8")
    caplog.set_level(logging.WARNING, logger="absl")
    summary = pretraining_data.create_pretraining_data(
        _options(tmp_path, input_file=str(text), max_seq_length=16), tokenizer)
    # "a b" closes its block when the long line comes; the long line's block is skipped
    assert (summary.num_blocks, summary.num_skipped) == (2, 1)
    assert any("skipped 1 sentence" in r.getMessage() for r in caplog.records)


def test_several_output_files_round_robin(tmp_path, tokenizer):
    out = [str(tmp_path / "a.tfrecord"), str(tmp_path / "b.tfrecord")]
    pretraining_data.create_pretraining_data(
        _options(tmp_path, output_file=",".join(out), max_seq_length=64), tokenizer)
    case = next(c for c in EXPECTED["cases"]
                if c["max_seq_length"] == 64 and c["break_mode"] == "complete")
    a, b = _records(out[0], 64), _records(out[1], 64)
    assert len(a) + len(b) == len(case["blocks"])
    got = [r for pair in zip(a, b + [None]) for r in pair if r is not None]
    assert [r[r != PAD].tolist() for r in got] == case["blocks"]


def test_the_encoder_writes_what_tensorflow_parses(tokenizer):
    import tensorflow as tf  # pylint: disable=import-outside-toplevel

    encoder = pretraining_data.RecordEncoder(6, len(tokenizer.vocab), BOS, PAD)
    block = [1000, 300, EOS]
    ours = encoder.encode(block)
    example = tf.train.Example()
    example.features.feature["input_ids"].int64_list.value.extend([BOS, 1000, 300, EOS, PAD, PAD])
    assert ours == example.SerializeToString(deterministic=True)


def _one_line_error(options, tokenizer=None):
    with pytest.raises(pretraining_data.DataError) as info:
        pretraining_data.create_pretraining_data(options, tokenizer)
    message = str(info.value)
    assert "\n" not in message
    return message


def test_bad_input_files_are_refused_in_one_line_naming_the_file(tmp_path, tokenizer):
    bad = tmp_path / "latin1.txt"
    bad.write_bytes(b"good line\n\xe9t\xe9\n")
    message = _one_line_error(_options(tmp_path, input_file=f"{CORPUS[0]},{bad}"), tokenizer)
    assert str(bad) in message and "line 2" in message and "UTF-8" in message
    missing = tmp_path / "missing.txt"
    assert str(missing) in _one_line_error(_options(tmp_path, input_file=str(missing)), tokenizer)
    assert str(tmp_path) in _one_line_error(_options(tmp_path, input_file=str(tmp_path)), tokenizer)
    blank = tmp_path / "blank.txt"
    blank.write_text("\n\n", encoding="utf-8")
    message = _one_line_error(_options(tmp_path, input_file=str(blank),
                                       break_mode="complete_doc"), tokenizer)
    assert "no block" in message and str(blank) in message
    # nothing under the final name, nor a temporary file, after any of these
    assert sorted(p.name for p in tmp_path.iterdir()) == ["blank.txt", "latin1.txt"]


def test_bad_flags_and_vocab_are_refused_in_one_line(tmp_path):
    assert "--max_seq_length" in _one_line_error(_options(tmp_path, max_seq_length=2))
    assert "--break_mode" in _one_line_error(_options(tmp_path, break_mode="none"))
    missing = tmp_path / "vocab.json"
    message = _one_line_error(_options(tmp_path, vocab_file=str(missing)))
    assert message.startswith("--vocab_file") and str(missing) in message
    merges = tmp_path / "merges.txt"
    merges.write_text("#version: 0.2\nnot-a-merge-line-with three parts\n", encoding="utf-8")
    message = _one_line_error(_options(tmp_path, merges_file=str(merges)))
    assert message.startswith("--merges_file") and str(merges) in message


class _PadInTextTokenizer:
    """A tokenizer whose vocabulary gives the pad id to a piece of text."""
    special_tokens = SPECIAL_TOKENS
    vocab = {"<s>": 0, "<pad>": 1, "</s>": 2, "<unk>": 3, "x": 4}

    def tokenize_to_ids(self, text):
        return [4, 1] if text else []

    def convert_ids_to_tokens(self, ids):
        inv = {v: k for k, v in self.vocab.items()}
        return [inv[i] for i in ids]


def test_a_vocabulary_mapping_text_to_the_pad_id_is_refused(tmp_path):
    message = _one_line_error(_options(tmp_path), _PadInTextTokenizer())
    assert "pad id 1" in message and str(VOCAB) in message
    assert list(tmp_path.iterdir()) == []
