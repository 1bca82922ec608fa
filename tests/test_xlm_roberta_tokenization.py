"""XLM-RoBERTa's tokenizer (bert_tf/xlm_roberta/tokenization.py, fast_tokenization.py) against
the ids Transformers' XLMRobertaTokenizer gave on a committed SentencePiece model
(tests/data/xlm_roberta/expected.json, recorded by make_expected.py there; no Transformers
needed here), and the in-graph tokenizer against the host on a fuzz set."""

import json
import os
import random

import numpy as np
import pytest

from bert_tf import families
from bert_tf.data.classifier import truncate_lengths
from bert_tf.text import VocabError
from bert_tf.xlm_roberta import fast_tokenization
from bert_tf.xlm_roberta.tokenization import (SPECIAL_TOKENS, XLMRobertaTokenizer,
                                              special_chunks)

HERE = os.path.dirname(os.path.abspath(__file__))
DATA = os.path.join(HERE, "data", "xlm_roberta")
MODEL = os.path.join(DATA, "sentencepiece.bpe.model")
ALBERT_MODEL = os.path.join(HERE, "data", "albert_spm", "albert.model")
with open(os.path.join(DATA, "expected.json"), encoding="utf-8") as _f:
    EXPECTED = json.load(_f)


@pytest.fixture(scope="module")
def tokenizer():
    return XLMRobertaTokenizer(MODEL)


@pytest.fixture(scope="module")
def graph(tokenizer):
    return families.get("xlm-roberta").graph_tokenizer(tokenizer.vocab, do_lower_case=False)


def test_the_family_is_registered(tokenizer):
    family = families.get("xlm-roberta")
    assert family.tokenizer is XLMRobertaTokenizer
    assert family.tokenizer.special_tokens is SPECIAL_TOKENS
    # <s> A </s></s> B </s>, all segment 0.
    assert SPECIAL_TOKENS.lay_out(["a"], ["b"], "<s>", "</s>") == (
        ["<s>", "a", "</s>", "</s>", "b", "</s>"], 6)
    assert SPECIAL_TOKENS.pair_budget(12) == 8


def test_words_alone_need_no_option(tokenizer):
    """The family gives no `word_tokenizer_kwargs`: SentencePiece puts "▁" before each chunk, so
    every golden text's whitespace words tokenized one by one (SQuAD's and tagging's words,
    Transformers' is_split_into_words) have the ids of the words as running text."""
    family = families.get("xlm-roberta")
    assert family.word_tokenizer_kwargs == {} and family.cased
    assert SPECIAL_TOKENS.pad_id(tokenizer.vocab) == 1  # <pad>, as Transformers pads
    for case in EXPECTED["texts"]:
        words = case["text"].split()
        assert [i for w in words for i in tokenizer.tokenize_to_ids(w)] == (
            tokenizer.tokenize_to_ids(" ".join(words))), case["name"]


def test_fairseq_ids(tokenizer):
    """<s> 0, <pad> 1, </s> 2, <unk> 3, piece i -> i + 1, <mask> = pieces + 1."""
    sp = tokenizer.sp_model
    vocab = tokenizer.vocab
    assert [vocab[t] for t in ("<s>", "<pad>", "</s>", "<unk>")] == [0, 1, 2, 3]
    assert vocab["<mask>"] == sp.GetPieceSize() + 1 == vocab.size - 1 == 601
    assert len(vocab) == vocab.size
    for i in range(3, sp.GetPieceSize()):
        assert vocab[sp.IdToPiece(i)] == i + 1
    assert tokenizer.convert_ids_to_tokens([0, 3, 4, 601]) == ["<s>", "<unk>", sp.IdToPiece(3),
                                                              "<mask>"]


@pytest.mark.parametrize("case", EXPECTED["texts"], ids=lambda c: c["name"])
def test_ids_equal_transformers(tokenizer, case):
    text = case["text"]
    assert tokenizer.tokenize_to_ids(text) == case["fast"]
    assert tokenizer.convert_tokens_to_ids(tokenizer.tokenize(text)) == case["fast"]
    assert tokenizer.convert_ids_to_tokens(case["fast"]) == case["fast_tokens"]
    # Transformers 4's sentencepiece tokenizer (from its source; 5 has none) agrees too.
    assert case["v4_slow"] == case["fast"]


@pytest.mark.parametrize("case", EXPECTED["pairs"], ids=lambda c: c["a"])
def test_pairs_equal_transformers(tokenizer, case):
    a, b = tokenizer.tokenize_to_ids(case["a"]), tokenizer.tokenize_to_ids(case["b"])
    if case["max_length"] is not None:
        len_a, len_b = truncate_lengths(len(a), len(b),
                                        SPECIAL_TOKENS.pair_budget(case["max_length"]))
        a, b = a[:len_a], b[:len_b]
    ids, num_first = SPECIAL_TOKENS.lay_out(a, b, 0, 2)
    assert ids == case["fast"]["input_ids"] and num_first == len(ids)


def test_offsets(tokenizer):
    text = "Hello <s>wörld  中文</s><mask> Café"
    pieces, spans = tokenizer.tokenize_with_offsets(text)
    assert pieces == tokenizer.tokenize(text)
    for piece, (start, end) in zip(pieces, spans):
        surface = piece.replace("\u2581", "")
        assert text[start:end] == surface, (piece, start, end)
    assert special_chunks("a<mask>b") == [("a", 0, False), ("<mask>", 1, True), ("b", 7, False)]


def test_refusals(tmp_path):
    with pytest.raises(ValueError, match="do_lower_case=True: XLM-RoBERTa's SentencePiece "
                                         "vocabulary is cased"):
        XLMRobertaTokenizer(MODEL, do_lower_case=True)
    with pytest.raises(VocabError, match="does not exist"):
        XLMRobertaTokenizer(str(tmp_path / "missing.model"))
    (tmp_path / "bad.model").write_bytes(b"not a model")
    with pytest.raises(VocabError, match="is not a SentencePiece model"):
        XLMRobertaTokenizer(str(tmp_path / "bad.model"))
    # ALBERT's model has <pad> 0, <unk> 1: not the layout fairseq's offset assumes.
    with pytest.raises(VocabError, match=r"pieces 0\.\.2 are \['<pad>', '<unk>', '\[CLS\]'\], "
                                         r"expected \['<unk>', '<s>', '</s>'\]"):
        XLMRobertaTokenizer(ALBERT_MODEL)
    with pytest.raises(fast_tokenization.XLMRobertaGraphTokenizerError, match="no core-op mode"):
        fast_tokenization.TokenizerModule(MODEL, core_ops=True)


def fuzz_texts(count=400, seed=7):
    """Random texts over what SentencePiece's normalization and the special tokens meet: NUL
    and control characters, Unicode spaces, whitespace-only strings, emoji, accents, CJK,
    full-width and compatibility characters, special tokens and near-misses."""
    rng = random.Random(seed)
    alphabet = ("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789 .,;:!?'\"()-"
                "\x00\x01\x7f\t\n\r \u00a0\u2000\u2003\u200b\u3000\ufeff\u2028"
                "éèàüöäßçñÅ\u0301\u0308中文字日本語한국어😀👍🏽\u200d❤️ﬁ①ｆ™½▁")
    pieces = ["<s>", "</s>", "<pad>", "<unk>", "<mask>", "<mask", "< s>", "<S>", "   ", "\n\n"]
    texts = ["", " ", "\x00", "\u3000\t ", "<s>", "<mask><mask>", " <mask> "]
    while len(texts) < count:
        parts = []
        for _ in range(rng.randint(1, 10)):
            if rng.random() < 0.15:
                parts.append(rng.choice(pieces))
            else:
                parts.append("".join(rng.choice(alphabet) for _ in range(rng.randint(1, 8))))
        texts.append("".join(parts))
    return texts


def test_graph_equals_host(tokenizer, graph):
    texts = [case["text"] for case in EXPECTED["texts"]] + fuzz_texts()
    got = graph(np.array(texts, dtype=object)).to_list()
    wrong = [(t, g, tokenizer.tokenize_to_ids(t)) for t, g in zip(texts, got)
             if g != tokenizer.tokenize_to_ids(t)]
    assert not wrong, wrong[:3]
    # Bytes that are not UTF-8 are dropped by both.
    raw = [b"a\xffb <mask>", b"\xc3", "Caf\u00e9".encode("utf-8") + b"\x80"]
    assert graph(np.array(raw, dtype=object)).to_list() == [tokenizer.tokenize_to_ids(r)
                                                           for r in raw]
    assert graph.core_ops is False and graph.vocab_size == 602


def test_serving_inputs_lay_out_pairs_as_the_host(tokenizer, graph):
    """The export's text inputs (bert_tf.serving.inputs.ServingInputs with the family's graph
    tokenizer): `<s> A </s></s> B </s>`, segment 0, truncated as the data code does."""
    from bert_tf.serving.inputs import ServingInputs

    inputs = ServingInputs(tokenizer.vocab, do_lower_case=False, max_seq_length=16,
                           tokenizer=graph, family="xlm-roberta")
    pairs = [("Hello world", "How are you?"), ("Café <mask> 中文", ""),
             ("a b c d e f g h i j k l m", "n o p q r s t u")]
    features = inputs.pairs(np.array([a for a, _ in pairs], dtype=object),
                            np.array([b for _, b in pairs], dtype=object))
    for row, (a, b) in enumerate(pairs):
        ids_a, ids_b = tokenizer.tokenize_to_ids(a), tokenizer.tokenize_to_ids(b)
        if ids_b:
            len_a, len_b = truncate_lengths(len(ids_a), len(ids_b), SPECIAL_TOKENS.pair_budget(16))
        else:
            len_a, len_b = min(len(ids_a), 14), 0
        ids, _ = SPECIAL_TOKENS.lay_out(ids_a[:len_a], ids_b[:len_b], 0, 2)
        mask = features["input_mask"][row].numpy()
        assert features["input_ids"][row].numpy()[mask == 1].tolist() == ids
        assert not features["segment_ids"][row].numpy().any()
