"""RoBERTa's in-graph tokenizer (bert_tf.roberta.fast_tokenization) against the host one
(bert_tf.roberta.tokenization, itself checked against Transformers' goldens): ids and byte
offsets on the goldens' texts and on fuzzed text; a SavedModel of it in a fresh process."""

import gzip
import json
import os
import random
import subprocess
import sys

import pytest
import tensorflow as tf

from bert_tf.roberta.fast_tokenization import RobertaGraphTokenizerError, TokenizerModule
from bert_tf.roberta.tokenization import RobertaTokenizer

DATA = os.path.join(os.path.dirname(os.path.abspath(__file__)), "data", "roberta_tokenizer")
VOCAB = os.path.join(DATA, "vocab.json")

# Pieces of fuzzed text: GPT-2's regex cases (contractions, a space before a word, whitespace
# runs of every kind, \x1c-\x1f which str.isspace calls whitespace and \s does not), special
# tokens written in text (the mask after whitespace), multi-byte characters, emoji with
# modifiers and joiners, characters of Unicode 16 only, NUL.
ALPHABET = [
    "a", "b", "Z", "é", "ß", "中", "Σ", "1", "٣", "½", " ", " ", "  ", "   ", "\t", "\n", "\r",
    "\x0b", "\x0c", "\x00", "\x1c", "\x1f", "\x85", "\u00a0", "\u2028", "\u3000", "\u1680",
    "'", "'s", "'t", "'re", "'ve", "'m", "'ll", "'d", "'S", "!", ".", ",", "-", "😀", "👍🏽",
    "👨\u200d👩\u200d👧", "\u200d", "\u0301", "<s>", "</s>", "<mask>", " <mask>", "\t<mask>",
    "<pad>", "<unk>", "<", ">", "/", "s", "mask", "\ufffd", "\U000105c0", "\U0002ebf0",
    "\ue000", "x" * 30, "the", " the", "ing", "🦜",
]


def fuzz_texts(count, seed, max_pieces=15):
    rng = random.Random(seed)
    return ["".join(rng.choice(ALPHABET) for _ in range(rng.randint(0, max_pieces)))
            for _ in range(count)]


def golden_texts():
    with gzip.open(os.path.join(DATA, "expected.jsonl.gz"), "rt", encoding="utf-8") as f:
        records = [json.loads(line) for line in f]
    return sorted({r["text"] for r in records if r["kind"] in ("text", "fuzz")})


@pytest.fixture(scope="module")
def hosts():
    return {prefix: RobertaTokenizer(VOCAB, add_prefix_space=prefix) for prefix in (False, True)}


@pytest.fixture(scope="module")
def modules(hosts):
    return {prefix: TokenizerModule(hosts[prefix].vocab, add_prefix_space=prefix)
            for prefix in (False, True)}


def byte_spans(text, spans):
    return [(len(text[:a].encode("utf-8")), len(text[:b].encode("utf-8"))) for a, b in spans]


def assert_graph_equals_host(host, module, texts, offsets=True):
    ids = module(tf.constant(texts, tf.string)).to_list()
    for text, row in zip(texts, ids):
        assert row == host.tokenize_to_ids(text), text
    if not offsets:
        return
    ids, starts, ends = module.tokenize_with_offsets(tf.constant(texts, tf.string))
    for text, row, start, end in zip(texts, ids.to_list(), starts.to_list(), ends.to_list()):
        pieces, spans = host.tokenize_with_offsets(text)
        assert row == host.convert_tokens_to_ids(pieces), text
        assert list(zip(start, end)) == byte_spans(text, spans), text


@pytest.mark.parametrize("prefix", [False, True])
def test_golden_texts(hosts, modules, prefix):
    assert_graph_equals_host(hosts[prefix], modules[prefix], golden_texts())


@pytest.mark.parametrize("prefix", [False, True])
def test_fuzz(hosts, modules, prefix):
    texts = fuzz_texts(1500, seed=prefix) + ["", " ", "\n", "\t\t", "\u3000", " \u00a0 "]
    assert_graph_equals_host(hosts[prefix], modules[prefix], texts)


@pytest.mark.slow
@pytest.mark.parametrize("prefix", [False, True])
def test_fuzz_large(hosts, modules, prefix):
    """40,000 texts per setting, in batches of 4,000, longer texts among them."""
    for batch in range(10):
        texts = (fuzz_texts(3000, seed=100 + 2 * batch + prefix)
                 + fuzz_texts(1000, seed=200 + 2 * batch + prefix, max_pieces=80))
        assert_graph_equals_host(hosts[prefix], modules[prefix], texts)


def test_words_take_a_prefix_space(hosts, modules):
    words = ["Hello", " world", "\tx", "<mask>", "a<s>b", "", "😀", "it's"]
    ids = modules[False].tokenize_words(tf.constant(words)).to_list()
    assert ids == [hosts[True].tokenize_to_ids(w) for w in words]


def test_bytes_that_are_not_utf8_are_dropped(hosts, modules):
    raw = [b"caf\xc3\xa9 \xff x", b"\xe2\x82 <mask>\x80", b"\xf0\x9f\x98", b"ok\xc3"]
    ids = modules[False](tf.constant(raw)).to_list()
    assert ids == [hosts[False].tokenize_to_ids(r) for r in raw]
    ids, starts, ends = modules[False].tokenize_with_offsets(tf.constant(raw))
    # Offsets are into the input bytes: a piece's bytes are valid UTF-8 of that input.
    for r, start, end in zip(raw, starts.to_list(), ends.to_list()):
        for a, b in zip(start, end):
            assert 0 <= a <= b <= len(r)
            r[a:b].decode("utf-8")


def test_empty_batch_and_one_trace(hosts):
    module = TokenizerModule(hosts[False].vocab)
    empty = module(tf.constant([], tf.string))
    assert empty.shape[0] == 0
    for texts in (["a"], ["a b", "c"], ["x"] * 7):
        module(tf.constant(texts))
    assert module.__call__.experimental_get_tracing_count() == 1


def test_refusals(hosts):
    vocab = hosts[False].vocab
    with pytest.raises(RobertaGraphTokenizerError, match="do_lower_case=True"):
        TokenizerModule(vocab, do_lower_case=True)
    with pytest.raises(RobertaGraphTokenizerError, match="core TensorFlow ops only"):
        TokenizerModule(vocab, core_ops=False)
    with pytest.raises(RobertaGraphTokenizerError, match="ByteLevelBPEVocab"):
        TokenizerModule(dict(vocab))


@pytest.mark.slow
def test_saved_model_loads_with_tensorflow_alone(tmp_path, hosts, modules):
    module = modules[False]
    path = str(tmp_path / "tokenizer")
    tf.saved_model.save(module, path)
    texts = ["Hello world, it's 😀 <mask>!", "  \u3000x\n\n", "", "\x00<s>a</s>"]
    script = (
        "import json, sys\n"
        "import tensorflow as tf\n"
        f"module = tf.saved_model.load({path!r})\n"
        f"texts = tf.constant({texts!r})\n"
        "ids = module(texts).to_list()\n"
        "_, starts, ends = module.tokenize_with_offsets(texts)\n"
        "loaded = sorted(m for m in sys.modules if m.startswith(('bert_tf', 'tensorflow_text')))\n"
        "print(json.dumps([ids, starts.to_list(), ends.to_list(), loaded]))\n")
    result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                            cwd=str(tmp_path), timeout=300,
                            env={**os.environ, "PYTHONPATH": ""})
    assert result.returncode == 0, result.stderr[-2000:]
    ids, starts, ends, loaded = json.loads(result.stdout.strip().splitlines()[-1])
    assert loaded == []
    host = hosts[False]
    assert ids == [host.tokenize_to_ids(t) for t in texts]
    for text, start, end in zip(texts, starts, ends):
        assert list(zip(start, end)) == byte_spans(text, host.tokenize_with_offsets(text)[1])
