"""In-graph serving inputs equal the Python path (FullTokenizer + the pair layout)."""

import dataclasses
import itertools
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest
import tensorflow as tf

from bert_tf.bert.tokenization import BasicTokenizer, FullTokenizer
from bert_tf.data.conll import sentence_windows
from bert_tf.data.pairs import pad_to, pair_tokens
from bert_tf.serving.inputs import ServingInputs, truncated_lengths
from conftest import SHARED_DIR

VOCAB_FILE = SHARED_DIR / "data" / "uncased_vocab.txt"
MAX_SEQ_LENGTH = 16
TEXTS_A = [
    "The quick brown fox jumps over the lazy dog.",
    "Café naïve façade — Ünïcödé ΣΊΣΥΦΟΣ 力加勝北区 ᴵᴺᵀᵃ ছজটডণত",
    "a",
    "",
    "   ",
    "unbelievably long sentence " * 12,
    "short",
    "tie one two three",
    "x\u00a0y\u3000z\x1cw\u2028v",  # Unicode whitespace splits words, the control \x1c not
    "emoji 😀 and control\x07chars\u200b",
]
TEXTS_B = [
    "It was not.",
    "",
    "   ",
    "b only has text here and it is longer than a",
    "another pair second text that is rather long " * 5,
    "short",
    "tie one two three",
    "\u00ad",  # tokenizes to nothing: single layout
    "ok",
    "yes",
]


@pytest.fixture(scope="module")
def tokenizer():
    if not VOCAB_FILE.exists():
        pytest.skip(f"{VOCAB_FILE} is absent")
    return FullTokenizer(str(VOCAB_FILE), do_lower_case=True)


@pytest.fixture(scope="module")
def serving(tokenizer):
    """One module per test module: building the TokenizerModule tables takes seconds."""
    return ServingInputs(tokenizer.vocab, do_lower_case=True, max_seq_length=MAX_SEQ_LENGTH)


def _python(tokenizer, text_a, text_b, max_seq_length=MAX_SEQ_LENGTH, special_tokens=None):
    tokens_b = tokenizer.tokenize(text_b) if text_b else None
    tokens, segments = pair_tokens(tokenizer.tokenize(text_a), tokens_b, max_seq_length,
                                   special_tokens)
    ids = tokenizer.convert_tokens_to_ids(tokens)
    return {"input_ids": pad_to(ids, max_seq_length),
            "input_mask": pad_to([1] * len(ids), max_seq_length),
            "segment_ids": pad_to(segments, max_seq_length)}


def _assert_equal_to_python(got, tokenizer, texts_a, texts_b, special_tokens=None):
    for i, (a, b) in enumerate(zip(texts_a, texts_b)):
        expected = _python(tokenizer, a, b, special_tokens=special_tokens)
        for name, values in expected.items():
            assert got[name].dtype == tf.int32
            assert got[name].numpy()[i].tolist() == values, (name, a, b)


def _pop_until_fits(len_a, len_b, max_length):
    """The original's rule, one token at a time: the longer loses its last token, b on a tie."""
    while len_a + len_b > max_length:
        if len_a > len_b:
            len_a -= 1
        else:
            len_b -= 1
    return len_a, len_b


def test_truncated_lengths_equal_popping_one_token_at_a_time():
    grid = np.array(list(itertools.product(range(14), range(14), range(13))), np.int64)
    new_a, new_b = truncated_lengths(grid[:, 0], grid[:, 1], grid[:, 2])
    for (la, lb, m), got_a, got_b in zip(grid, new_a.numpy(), new_b.numpy()):
        assert (got_a, got_b) == _pop_until_fits(la, lb, m), (la, lb, m)


@pytest.mark.slow
def test_pairs_equal_python(serving, tokenizer):
    got = serving.pairs(tf.constant(TEXTS_A), tf.constant(TEXTS_B))
    _assert_equal_to_python(got, tokenizer, TEXTS_A, TEXTS_B)


@pytest.mark.slow
def test_pairs_with_two_separators_equal_python(serving, tokenizer):
    """A family whose pairs are `<s> a </s></s> b </s>`, all segment 0 (RoBERTa's layout)."""
    special = dataclasses.replace(tokenizer.special_tokens, pair_separators=2,
                                  pair_segments=False)
    inputs = ServingInputs(tokenizer.vocab, max_seq_length=MAX_SEQ_LENGTH,
                           tokenizer=serving.tokenizer, dynamic_padding=False)
    inputs.special_tokens = special  # as such a family's ServingInputs would hold
    got = inputs.pairs(tf.constant(TEXTS_A), tf.constant(TEXTS_B))
    _assert_equal_to_python(got, tokenizer, TEXTS_A, TEXTS_B, special)
    assert (got["input_ids"].numpy() == tokenizer.vocab["[SEP]"]).sum(axis=1).max() == 3


@pytest.mark.slow
def test_pair_emptied_by_truncation_has_the_single_layout(serving, tokenizer):
    # max_seq_length 4 leaves 1 piece for a and b: a keeps it, b is emptied, and the original
    # then lays the example out as [CLS] a [SEP] without a second [SEP].
    short = ServingInputs(tokenizer.vocab, max_seq_length=4, tokenizer=serving.tokenizer)
    got = short.pairs(tf.constant(["two words"]), tf.constant(["b"]))
    expected = _python(tokenizer, "two words", "b", max_seq_length=4)
    assert expected["input_mask"] == [1, 1, 1, 0]
    for name, values in expected.items():
        assert got[name].numpy()[0].tolist() == values, name


@pytest.mark.slow
def test_single_equals_python(serving, tokenizer):
    got = serving.single(tf.constant(TEXTS_A))
    _assert_equal_to_python(got, tokenizer, TEXTS_A, [None] * len(TEXTS_A))


@pytest.mark.slow
def test_words_give_run_taggings_windows(serving, tokenizer):
    # 8 pieces per window advancing by 3: long texts get overlapping windows.
    windowed = ServingInputs(tokenizer.vocab, max_seq_length=10, doc_stride=3,
                             tokenizer=serving.tokenizer)
    texts = TEXTS_A + ["pneumonoultramicroscopicsilicovolcanoconiosis", "\u0301 a \u0301"]
    got = {k: v.numpy().tolist() for k, v in windowed.words(tf.constant(texts)).items()}
    basic = BasicTokenizer()
    expected = []
    for i, text in enumerate(texts):
        words = basic._clean_text(text).split()  # whitespace words of the cleaned text
        assert got["num_words"][i] == len(words), text
        expected += sentence_windows(words, None, tokenizer, 10, 3, sentence_index=i)
    assert max(w.window_index for w in expected) >= 3
    assert got["text_index"] == [w.sentence_index for w in expected]
    for name in ("input_ids", "input_mask", "segment_ids", "word_ids"):
        assert got[name] == [getattr(w, name) for w in expected], name
    assert got["tag_position"] == [[int(x) for x in w.label_weights] for w in expected]


def test_vocab_without_cls_is_an_error():
    with pytest.raises(ValueError, match="no \\[CLS\\] entry"):
        ServingInputs({"[UNK]": 0, "[SEP]": 1}, tokenizer=object())


@pytest.mark.slow
def test_saved_model_runs_with_only_tensorflow(serving, tmp_path):
    """Loading fails with "Op type not registered" if any tensorflow-text op is in the graph."""
    path = str(tmp_path / "serving")
    tf.saved_model.save(serving, path, signatures={
        "pairs": serving.pairs.get_concrete_function(),
        # `single` is `pairs` with empty b rows; not exported here to keep the test shorter.
        "words": serving.words.get_concrete_function(),
    })
    texts_a, texts_b = TEXTS_A[:6], TEXTS_B[:6]
    expected = serving.pairs(tf.constant(texts_a), tf.constant(texts_b))
    script = textwrap.dedent(f"""
        import json, sys
        import tensorflow as tf
        loaded = tf.saved_model.load({path!r})
        out = loaded.signatures["pairs"](text_a=tf.constant({texts_a!r}),
                                         text_b=tf.constant({texts_b!r}))
        words = loaded.signatures["words"](text_a=tf.constant({texts_a!r}))
        assert not any(m.startswith(("bert_tf", "tensorflow_text")) for m in sys.modules)
        print(json.dumps({{k: v.numpy().tolist() for k, v in out.items()}}))
        print(json.dumps({{k: v.numpy().tolist() for k, v in words.items()}}))
    """)
    env = {**os.environ, "PYTHONPATH": "", "TF_CPP_MIN_LOG_LEVEL": "2"}
    result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                            env=env, cwd=str(tmp_path))
    assert result.returncode == 0, result.stderr[-2000:]
    import json

    got, got_words = map(json.loads, result.stdout.strip().splitlines()[-2:])
    for name in ("input_ids", "input_mask", "segment_ids"):
        assert got[name] == expected[name].numpy().tolist()
    expected_words = serving.words(tf.constant(texts_a))
    assert got_words == {k: v.numpy().tolist() for k, v in expected_words.items()}


@pytest.mark.slow
def test_a_batch_is_padded_to_its_longest_rounded_up(serving, tokenizer):
    """With dynamic padding (the default) a batch is S = its longest sequence rounded up to 16
    positions wide, and holds the max_seq_length layout's first S positions (the rest being
    padding); with dynamic_padding=False every batch is max_seq_length wide (static shape)."""
    from bert_tf.training.padding import padded_length

    kwargs = dict(max_seq_length=64, doc_stride=20, tokenizer=serving.tokenizer)
    dynamic = ServingInputs(tokenizer.vocab, **kwargs)
    static = ServingInputs(tokenizer.vocab, dynamic_padding=False, **kwargs)
    for texts_a, texts_b in ((["short", "a"], ["", "b"]), (TEXTS_A, TEXTS_B)):
        expected = [_python(tokenizer, a, b, 64) for a, b in zip(texts_a, texts_b)]
        longest = max(sum(e["input_mask"]) for e in expected)
        got = dynamic.pairs(tf.constant(texts_a), tf.constant(texts_b))
        padded = static.pairs(tf.constant(texts_a), tf.constant(texts_b))
        width = padded_length(longest, 64)
        assert padded["input_ids"].shape.as_list() == [len(texts_a), 64]
        for name in expected[0]:
            assert got[name].shape == (len(texts_a), width)
            assert padded[name].numpy().tolist() == [e[name] for e in expected]
            assert np.all(padded[name].numpy()[:, width:] == 0)
            assert got[name].numpy().tolist() == [e[name][:width] for e in expected]
    assert dynamic.pairs(tf.constant(["short"]), tf.constant([""]))["input_ids"].shape == (1, 16)
    assert static.pairs.get_concrete_function().structured_outputs[
        "input_ids"].shape.as_list() == [None, 64]

    texts = ["a few words", "unbelievably long sentence " * 4]
    got = {k: v.numpy() for k, v in dynamic.words(tf.constant(texts)).items()}
    padded = {k: v.numpy() for k, v in static.words(tf.constant(texts)).items()}
    width = padded_length(padded["input_mask"].sum(axis=1).max(), 64)
    assert got["input_ids"].shape[1] == width < 64
    for name, values in padded.items():
        if values.ndim == 2:
            np.testing.assert_array_equal(got[name], values[:, :width])
            np.testing.assert_array_equal(values[:, width:], -1 if name == "word_ids" else 0)
        else:
            np.testing.assert_array_equal(got[name], values)
    short = dynamic.words(tf.constant(["a few words"]))
    assert short["input_ids"].shape == (1, 16)
