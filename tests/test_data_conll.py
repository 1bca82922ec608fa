"""CoNLL reading, windows of word pieces, records, and the way back to one tag per word."""

import random

import numpy as np
import pytest

from bert_tf.bert.tokenization import FullTokenizer
from bert_tf.data import conll

CONLL_TEXT = (
    "-DOCSTART- -X- -X- O\n"
    "\n"
    "EU NNP B-NP B-ORG\r\n"
    "rejects VBZ B-VP O\n"
    "German JJ B-NP B-MISC\n"
    "\n"
    "\n"
    "Peter NNP B-NP B-PER\n"
    "Blackburn NNP I-NP I-PER\n"
    "\n"
)
VOCAB = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "eu", "rejects", "german", "peter", "black",
         "##burn", "x", "##x", "the", "cat"]


@pytest.fixture(scope="module")
def tokenizer(tmp_path_factory):
    path = tmp_path_factory.mktemp("vocab") / "vocab.txt"
    path.write_text("\n".join(VOCAB) + "\n")
    return FullTokenizer(str(path), do_lower_case=True)


def _write(tmp_path, text, name="train.txt"):
    path = tmp_path / name
    path.write_text(text, encoding="utf-8", newline="")
    return path


def test_read_conll(tmp_path):
    sentences = conll.read_conll(_write(tmp_path, CONLL_TEXT))
    assert [s.words for s in sentences] == [["EU", "rejects", "German"], ["Peter", "Blackburn"]]
    assert [s.tags for s in sentences] == [["B-ORG", "O", "B-MISC"], ["B-PER", "I-PER"]]
    assert [s.line_number for s in sentences] == [3, 8]
    assert sentences[0].lines[0] == "EU NNP B-NP B-ORG"  # the CR of CRLF is not kept
    assert sentences[0].docstart == "-DOCSTART- -X- -X- O" and sentences[1].docstart is None


def test_label_list_puts_o_first_then_sorted(tmp_path):
    sentences = conll.read_conll(_write(tmp_path, CONLL_TEXT))
    assert conll.label_list(sentences) == ["O", "B-MISC", "B-ORG", "B-PER", "I-PER"]


@pytest.mark.parametrize("text, message", [
    ("EU B-ORG\nrejects\n", r"train.txt:2: expected a word and a tag .* one column: 'rejects'"),
    ("EU X-ORG\n", r"train.txt:1: tag 'X-ORG' is not O, B-TYPE or I-TYPE"),
    ("", r"train.txt: no sentences"),
    ("-DOCSTART- O\n\n\n", r"train.txt: no sentences"),
])
def test_read_errors(tmp_path, text, message):
    with pytest.raises(conll.ConllError, match=message):
        conll.read_conll(_write(tmp_path, text))


def test_missing_file_and_bad_utf8(tmp_path):
    with pytest.raises(conll.ConllError, match="nope.txt: cannot read CoNLL file"):
        conll.read_conll(tmp_path / "nope.txt")
    path = tmp_path / "bad.txt"
    path.write_bytes(b"EU B-ORG\n\nbad\xff O\n")
    with pytest.raises(conll.ConllError, match="bad.txt:3: not valid UTF-8"):
        conll.read_conll(path)


def test_words_only_file_for_tagging(tmp_path):
    sentences = conll.read_conll(_write(tmp_path, "EU\nrejects\n\nPeter\n"), has_tags=False)
    assert [s.words for s in sentences] == [["EU", "rejects"], ["Peter"]]
    assert sentences[0].tags is None


def test_unknown_tag_in_eval_file(tmp_path):
    train = conll.read_conll(_write(tmp_path, "EU B-ORG\n"))
    dev = conll.read_conll(_write(tmp_path, "x O\ny B-LOC\n", "dev.txt"))
    with pytest.raises(conll.ConllError, match=r"dev.txt:2: tag 'B-LOC' is not in the label"):
        conll.convert_sentences(dev, conll.label_list(train), None, 8, 2, "dev.txt")


def test_first_piece_carries_the_label(tokenizer):
    windows = conll.sentence_windows(["Peter", "Blackburn"], [3, 4], tokenizer, 8, 2)
    assert len(windows) == 1
    w = windows[0]
    assert w.tokens == ["[CLS]", "peter", "black", "##burn", "[SEP]"]
    assert w.label_ids == [0, 3, 4, 0, 0, 0, 0, 0]
    assert w.label_weights == [0, 1, 1, 0, 0, 0, 0, 0]
    assert w.word_ids == [-1, 0, 1, 1, -1, -1, -1, -1]
    assert w.input_mask == [1] * 5 + [0] * 3 and w.segment_ids == [0] * 8


def test_max_context_decides_the_window(tokenizer):
    # 10 pieces, 4 per window, stride 2: windows cover 0-3, 2-5, 4-7, 6-9. Piece 2 has context
    # min(2, 1) = 1 in window 0 and min(0, 3) = 0 in window 1: window 0 predicts it; piece 3
    # has min(3, 0) = 0 in window 0 and min(1, 2) = 1 in window 1: window 1 does.
    words = ["the"] * 10
    windows = conll.sentence_windows(words, list(range(10)), tokenizer, 6, 2)
    assert [w.word_ids[1] for w in windows] == [0, 2, 4, 6]
    predicted = {}
    for w in windows:
        for position, weight in enumerate(w.label_weights):
            if weight:
                predicted[w.word_ids[position]] = w.window_index
    assert predicted == {0: 0, 1: 0, 2: 0, 3: 1, 4: 1, 5: 2, 6: 2, 7: 3, 8: 3, 9: 3}


def _round_trip(sentences, tokenizer, max_seq_length, doc_stride, seed=0):
    labels = conll.label_list(sentences)
    windows = conll.convert_sentences(sentences, labels, tokenizer, max_seq_length, doc_stride)
    rng = random.Random(seed)
    # A model that is right where it is asked and random everywhere else.
    predictions = [[lab if wt else rng.randrange(len(labels))
                    for lab, wt in zip(w.label_ids, w.label_weights)] for w in windows]
    return windows, conll.word_predictions(sentences, windows, predictions, labels)


def test_round_trip_with_a_word_longer_than_the_window(tokenizer):
    long_word = "x" * 9  # x ##x ... : 9 pieces, more than the 3 a window holds
    sentence = conll.Sentence(["the", long_word, "cat", "Blackburn", "the"],
                              ["B-PER", "I-PER", "O", "B-LOC", "O"], [], 1)
    for doc_stride in (1, 2, 3, 5):
        windows, tags = _round_trip([sentence], tokenizer, 5, doc_stride)
        assert tags == [sentence.tags]
        assert sum(sum(w.label_weights) for w in windows) == 5  # each word exactly once
        assert all(len(w.tokens) <= 5 for w in windows)


def test_round_trip_on_many_random_sentences(tokenizer):
    rng = random.Random(1)
    words = ["the", "cat", "Blackburn", "x" * 4, "EU", "zzz"]
    tags = ["O", "B-A", "I-A", "B-B", "I-B"]
    sentences = [conll.Sentence([rng.choice(words) for _ in range(rng.randint(1, 12))], None,
                                [], 1) for _ in range(40)]
    for s in sentences:
        s.tags = [rng.choice(tags) for _ in s.words]
    for max_seq_length, doc_stride in ((4, 1), (6, 2), (8, 3), (16, 8)):
        _, predicted = _round_trip(sentences, tokenizer, max_seq_length, doc_stride)
        assert predicted == [s.tags for s in sentences]


def test_word_without_pieces_is_tagged_o(tokenizer):
    sentence = conll.Sentence(["the", "\u00ad", "cat"], ["B-A", "B-A", "B-A"], [], 1)
    windows, tags = _round_trip([sentence], tokenizer, 8, 2)
    assert windows[0].tokens == ["[CLS]", "the", "cat", "[SEP]"]
    assert tags == [["B-A", "O", "B-A"]]


def test_bad_window_options(tokenizer):
    with pytest.raises(conll.ConllError, match="--doc_stride=0"):
        conll.sentence_windows(["the"], [0], tokenizer, 8, 0)
    with pytest.raises(conll.ConllError, match="--max_seq_length=2"):
        conll.sentence_windows(["the"], [0], tokenizer, 2, 1)


def test_records_parse_back(tmp_path, tokenizer):
    import tensorflow as tf

    sentences = conll.read_conll(_write(tmp_path, CONLL_TEXT))
    labels = conll.label_list(sentences)
    windows = conll.convert_sentences(sentences, labels, tokenizer, 6, 2)
    path = tmp_path / "train.tf_record"
    assert conll.write_windows(path, windows) == len(windows)
    assert sorted(p.name for p in tmp_path.iterdir() if "tf_record" in p.name) == [path.name]
    records = list(tf.data.TFRecordDataset(str(path)).batch(100).map(
        lambda x: tf.io.parse_example(x, conll.feature_spec(6))))[0]
    for name in conll.INT64_FEATURES + conll.FLOAT_FEATURES:
        np.testing.assert_array_equal(records[name].numpy(), [getattr(w, name) for w in windows])
    for name in conll.SCALAR_FEATURES:
        np.testing.assert_array_equal(records[name].numpy()[:, 0],
                                      [getattr(w, name) for w in windows])


def test_write_predictions(tmp_path):
    sentences = conll.read_conll(_write(tmp_path, CONLL_TEXT))
    out = tmp_path / "predictions.txt"
    conll.write_conll_predictions(out, sentences, [["B-ORG", "O", "O"], ["B-PER", "I-PER"]])
    assert out.read_text() == (
        "-DOCSTART- -X- -X- O O\n\n"
        "EU NNP B-NP B-ORG B-ORG\nrejects VBZ B-VP O O\nGerman JJ B-NP B-MISC O\n\n"
        "Peter NNP B-NP B-PER B-PER\nBlackburn NNP I-NP I-PER I-PER\n\n")
    # The written file is a valid CoNLL file whose last column is the prediction.
    assert [s.tags for s in conll.read_conll(out)] == [["B-ORG", "O", "O"], ["B-PER", "I-PER"]]


def test_word_predicted_twice_is_an_error(tokenizer):
    sentence = conll.Sentence(["the"], ["O"], [], 1)
    windows = conll.sentence_windows(["the"], [0], tokenizer, 4, 1)
    with pytest.raises(conll.ConllError, match="sentence 0 word 0 is predicted by two"):
        conll.word_predictions([sentence], windows * 2, [[0] * 4] * 2, ["O"])
