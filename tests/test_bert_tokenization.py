"""bert_tf.bert.tokenization gives exactly the original google-research/bert tokenizer's output.

Three layers of evidence:
  * hand-written expectations for the key rules (no external files needed);
  * tests/data/tokenization/adversarial_expected.jsonl: the ORIGINAL tokenization.py's output on
    the adversarial corpus (recorded by make_expected.py next to it), checked word by word and
    token by token, cased and uncased;
  * when a copy of the original repository exists (BERT_ORIGINAL_REPO, default /tmp/orig_bert),
    a live comparison on the corpus plus a seeded random fuzz corpus;
and the golden file ../shared/golden/tokenize/sample_uncased.jsonl.
"""

import json
import os
import random
import subprocess
import sys
import unicodedata
from pathlib import Path

import pytest

from bert_tf.bert import tokenization
from tools.original import load_original_module
from conftest import SHARED_DIR, load_recorder

REPO = Path(__file__).resolve().parents[1]
SHARED = SHARED_DIR
UNCASED_VOCAB = SHARED / "data" / "uncased_vocab.txt"
GOLDEN = SHARED / "golden" / "tokenize" / "sample_uncased.jsonl"
SAMPLE_TEXT = SHARED / "data" / "sample_text.txt"
DATA = Path(__file__).resolve().parent / "data" / "tokenization"
read_cases = load_recorder("tokenization").read_cases  # the recorder of the original's outputs
ORIGINAL_REPO = Path(os.environ.get("BERT_ORIGINAL_REPO", "/tmp/orig_bert"))

needs_shared = pytest.mark.skipif(
    not UNCASED_VOCAB.exists(), reason=f"{SHARED} (golden data and the real vocab) is absent")
needs_original = pytest.mark.skipif(
    not (ORIGINAL_REPO / "tokenization.py").exists(),
    reason=f"no copy of google-research/bert at {ORIGINAL_REPO} (set BERT_ORIGINAL_REPO)")


def read_expected():
    with open(DATA / "adversarial_expected.jsonl", encoding="utf-8") as f:
        return [json.loads(line) for line in f]


def write_vocab(path, tokens):
    path.write_text("".join(t + "\n" for t in tokens), encoding="utf-8")
    return str(path)


SMALL_VOCAB = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "un", "##aff", "##able", "runn",
               "##ing", "run", ",", ".", "!", "a", "##a", "b", "##b", "cafe", "café", "中", "[", "]",
               "cl", "##s", "e", "##e"]


@pytest.fixture
def small_vocab(tmp_path):
    return write_vocab(tmp_path / "vocab.txt", SMALL_VOCAB)


# ----------------------------------------------------------------------------------------------
# Hand-written expectations: the original's rules, independent of any external file.

@pytest.mark.parametrize("lower,text,expected", [
    (True, " \tHeLLo!how  \n Are yoU?  ", ["hello", "!", "how", "are", "you", "?"]),
    (False, " \tHeLLo!how  \n Are yoU?  ", ["HeLLo", "!", "how", "Are", "yoU", "?"]),
    (True, "H\u00e9llo", ["hello"]),          # NFD then Mn dropped
    (False, "H\u00e9llo", ["H\u00e9llo"]),    # cased: no normalization at all
    (False, "He\u0301llo", ["He\u0301llo"]),  # not even of decomposed input
    (True, "ah\u535a\u63a8zz", ["ah", "\u535a", "\u63a8", "zz"]),
    (True, "a\u4dc0b", ["a\u4dc0b"]),         # U+4DC0 is just outside the CJK blocks
    (True, "\u3072\u3089\u304c\u306a", ["\u3072\u3089\u304b\u306a"]),  # kana: one word, dakuten (Mn) dropped
    (False, "\u3072\u3089\u304c\u306a", ["\u3072\u3089\u304c\u306a"]),
    (True, "\ud55c\uad6d\uc5b4", ["\u1112\u1161\u11ab\u1100\u116e\u11a8\u110b\u1165"]),  # NFD jamo
    (False, "\ud55c\uad6d\uc5b4", ["\ud55c\uad6d\uc5b4"]),
    (True, "\u0e20\u0e32\u0e29\u0e32\u0e44\u0e17\u0e22", ["\u0e20\u0e32\u0e29\u0e32\u0e44\u0e17\u0e22"]),
    (True, "foo\x00bar\ufffdbaz", ["foobarbaz"]),  # removed, not whitespace
    (True, "a\x85b a\u200bb a\ufeffb", ["ab", "ab", "ab"]),  # Cc and Cf removed
    (True, "a\u00a0b\u3000c\u2028d\u2029e", ["a", "b", "c", "d", "e"]),
    (True, "[CLS] x [MASK]", ["[", "cls", "]", "x", "[", "mask", "]"]),
    (True, "$5^2`~", ["$", "5", "^", "2", "`", "~"]),  # ASCII symbols count as punctuation
    (True, "\u00bfqu\u00e9? \u00abx\u00bb \u2014", ["\u00bf", "que", "?", "\u00ab", "x", "\u00bb", "\u2014"]),
    (True, "\u20ac5 \u00a9", ["\u20ac5", "\u00a9"]),  # currency and other symbols are not
    (True, "\u0130stanbul", ["istanbul"]),  # U+0130 lower-cases to i + U+0307 (Mn, dropped)
    (True, "\u039f\u0394\u03a5\u03a3\u03a3\u0395\u03a5\u03a3", ["\u03bf\u03b4\u03c5\u03c3\u03c3\u03b5\u03c5\u03c2"]),
    (True, "\u0301 a", ["a"]),  # a word of accents only vanishes
    (True, "\uf900", ["\u8c48"]),  # compatibility ideograph: split, then NFD
    (False, "\uf900", ["\uf900"]),
    (True, b"caf\xc3\xa9 \xff\xfeok", ["cafe", "ok"]),  # undecodable bytes dropped
])
def test_basic_tokenizer_rules(lower, text, expected):
    assert tokenization.BasicTokenizer(do_lower_case=lower).tokenize(text) == expected


def test_wordpiece_greedy_longest_match(small_vocab):
    vocab = tokenization.load_vocab(small_vocab)
    wp = tokenization.WordpieceTokenizer(vocab=vocab)
    assert wp.tokenize("unaffable running") == ["un", "##aff", "##able", "runn", "##ing"]
    assert wp.tokenize("unaffablex") == ["[UNK]"]  # any uncoverable rest: the whole word is UNK
    assert wp.tokenize("") == []
    assert wp.tokenize("a" * 200) == ["a"] + ["##a"] * 199
    assert wp.tokenize("a" * 201) == ["[UNK]"]  # more than 200 code points


def test_full_tokenizer_small_vocab(small_vocab):
    tok = tokenization.FullTokenizer(small_vocab, do_lower_case=True)
    tokens = tok.tokenize("UNwant\u00e9d,running [CLS] Caf\u00e9 \u4e2d\u6587")
    assert tokens == ["[UNK]", ",", "runn", "##ing", "[", "cl", "##s", "]", "cafe", "\u4e2d",
                      "[UNK]"]
    ids = tok.convert_tokens_to_ids(tokens)
    assert ids == [1, 11, 8, 9, 21, 23, 24, 22, 18, 20, 1]
    assert tok.convert_ids_to_tokens(ids) == tokens
    assert tok.tokenize_to_ids("UNwant\u00e9d,running [CLS] Caf\u00e9 \u4e2d\u6587") == ids
    cased = tokenization.FullTokenizer(small_vocab, do_lower_case=False)
    assert cased.tokenize("caf\u00e9 Cafe") == ["caf\u00e9", "[UNK]"]
    # A word of 201 accented letters is 201 code points either way: UNK in both modes.
    assert tok.tokenize("\u00e9" * 201) == ["[UNK]"]
    # 150 decomposed letters are 300 code points cased, 150 after accent stripping.
    assert tok.tokenize("e\u0301" * 150) == ["e"] + ["##e"] * 149
    assert cased.tokenize("e\u0301" * 150) == ["[UNK]"]


def test_cache_does_not_change_output(small_vocab):
    cached = tokenization.FullTokenizer(small_vocab, cache_size=3)
    uncached = tokenization.FullTokenizer(small_vocab, cache_size=0)
    # "(running," shares its pieces with "running" and ",": the piece memo serves them.
    text = "unaffable running a b , ! cafe caf\u00e9 (running, (cafe) " * 5
    for _ in range(3):
        assert cached.tokenize(text) == uncached.tokenize(text)
        assert cached.tokenize_to_ids(text) == uncached.tokenize_to_ids(text)
    assert len(cached._cache) <= 3
    assert len(cached._piece_cache) <= 3
    assert not uncached._cache and not uncached._piece_cache


def test_full_tokenizer_given_vocab(small_vocab):
    # A vocab read by another rule (ALBERT's) is used as given; the file is not read.
    vocab = {t: i for i, t in enumerate(["[UNK]", "un", "##aff", "##able", "x"])}
    tok = tokenization.FullTokenizer("not-read.txt", vocab=vocab)
    assert tok.vocab is vocab
    assert tok.tokenize_to_ids("Unaffable X y") == [1, 2, 3, 4, 0]
    assert tok.convert_ids_to_tokens([2, 4]) == ["##aff", "x"]
    with pytest.raises(tokenization.VocabError, match="v.txt.*no \\[UNK\\]"):
        tokenization.FullTokenizer("v.txt", vocab={"a": 0})


def test_convert_to_unicode_and_printable_text():
    assert tokenization.convert_to_unicode(b"a\xffb\xc3\xa9") == "ab\u00e9"
    assert tokenization.convert_to_unicode("x") == "x"
    assert tokenization.printable_text(b"\xc3\xa9") == "\u00e9"
    with pytest.raises(ValueError, match="Unsupported string type"):
        tokenization.convert_to_unicode(3)


def test_load_vocab_format(tmp_path):
    path = tmp_path / "v.txt"
    path.write_bytes(b"[PAD]\r\n  [UNK] \nx\x0by\nlast")  # CRLF, padding, no final newline
    vocab = tokenization.load_vocab(str(path))
    assert list(vocab.items()) == [("[PAD]", 0), ("[UNK]", 1), ("x\x0by", 2), ("last", 3)]


@pytest.mark.parametrize("content,message", [
    (b"", "is empty"),
    (b"[PAD]\n[UNK]\nfoo\nbar\nfoo\n", "line 5: duplicate entry 'foo' \\(first seen on line 3\\)"),
    (b"[PAD]\n[UNK]\n\xff\xfe\n", "line 3: not valid UTF-8"),
])
def test_load_vocab_errors(tmp_path, content, message):
    path = tmp_path / "bad_vocab.txt"
    path.write_bytes(content)
    with pytest.raises(tokenization.VocabError, match=message) as info:
        tokenization.load_vocab(str(path))
    assert "bad_vocab.txt" in str(info.value)


def test_vocab_errors_missing_file_and_no_unk(tmp_path):
    with pytest.raises(tokenization.VocabError, match="nope.txt.*does not exist"):
        tokenization.FullTokenizer(str(tmp_path / "nope.txt"))
    path = write_vocab(tmp_path / "no_unk.txt", ["[PAD]", "a", "b"])
    with pytest.raises(tokenization.VocabError, match="no_unk.txt.*no \\[UNK\\]"):
        tokenization.FullTokenizer(path)


def test_validate_case_matches_checkpoint():
    v = tokenization.validate_case_matches_checkpoint
    v(True, "/m/uncased_L-12_H-768_A-12/bert_model.ckpt")
    v(False, "/m/cased_L-12_H-768_A-12/bert_model.ckpt")
    v(False, "/m/my_model/bert_model.ckpt")
    v(True, "")
    v(True, None)
    with pytest.raises(ValueError, match="--do_lower_case=False.*lowercased model"):
        v(False, "gs://b/uncased_L-24_H-1024_A-16/bert_model.ckpt")
    with pytest.raises(ValueError, match="--do_lower_case=True.*cased model.*--do_lower_case=False"):
        v(True, "/m/multi_cased_L-12_H-768_A-12/bert_model.ckpt")


def test_import_does_not_load_tensorflow():
    code = ("import sys, bert_tf.bert.tokenization as t; "
            "assert 'tensorflow' not in sys.modules, 'tensorflow was imported'")
    subprocess.run([sys.executable, "-c", code], check=True, cwd=REPO)


# ----------------------------------------------------------------------------------------------
# The original's recorded behaviour on the adversarial corpus.

def test_adversarial_corpus_covers_the_issue_list():
    names = " ".join(c["name"] for c in read_cases())
    for topic in ["invalid utf-8", "NUL", "controls", "format characters", "every Zs whitespace",
                  "combining accents", "CJK ideographs in every block", "hangul", "kana", "thai",
                  "unicode punctuation", "200 and 201", "cannot cover", "special tokens"]:
        assert topic in names, topic
    zs = [chr(c) for c in range(0x110000) if unicodedata.category(chr(c)) == "Zs"]
    text = next(c["text"] for c in read_cases() if c["name"] == "every Zs whitespace")
    assert all(ch in text for ch in zs)


def test_basic_tokenizer_matches_recorded_original():
    cases, expected = read_cases(), read_expected()
    assert [c["name"] for c in cases] == [e["name"] for e in expected]
    for lower, key in ((True, "uncased"), (False, "cased")):
        basic = tokenization.BasicTokenizer(do_lower_case=lower)
        for case, exp in zip(cases, expected):
            assert basic.tokenize(case["input"]) == exp[key + "_words"], (key, case["name"])


@needs_shared
@pytest.mark.parametrize("lower", [True, False], ids=["uncased", "cased"])
def test_full_tokenizer_matches_recorded_original(lower):
    key = "uncased" if lower else "cased"
    tok = tokenization.FullTokenizer(str(UNCASED_VOCAB), do_lower_case=lower)
    for case, exp in zip(read_cases(), read_expected()):
        tokens = tok.tokenize(case["input"])
        assert tokens == exp[key + "_tokens"], (key, case["name"])
        assert tok.convert_ids_to_tokens(tok.convert_tokens_to_ids(tokens)) == tokens


@needs_shared
def test_golden_sample_uncased():
    tok = tokenization.FullTokenizer(str(UNCASED_VOCAB), do_lower_case=True)
    assert len(tok.vocab) == 30522
    with open(SAMPLE_TEXT, encoding="utf-8") as f:
        lines = [line.rstrip("\n") for line in f]
    with open(GOLDEN, encoding="utf-8") as f:
        golden = [json.loads(line) for line in f]
    assert len(golden) == len(lines) > 0
    for line, exp in zip(lines, golden):
        tokens = tok.tokenize(line)
        assert tokens == exp["tokens"], line
        assert tok.convert_tokens_to_ids(tokens) == exp["ids"], line


# ----------------------------------------------------------------------------------------------
# Live comparison with the original code, when a copy is present.

def fuzz_corpus(n, seed=0):
    rng = random.Random(seed)
    pool = ([chr(c) for c in range(0x250)]
            + [chr(c) for c in rng.sample(range(0x110000), 4000) if not 0xD800 <= c < 0xE000]
            + list("\u03a3\u03c3\u03c2\u0130I\u0131\u0301\u0308\u2028\u00a0\u3000\u200b\ufeff"
                   "\ufffd\x00\x85\u4e2d\uf900\uac00\u3042")
            + ["the", "un", "##", "[CLS]", "[MASK]", "ing", "\u00e9", "e\u0301", " ", " ", " "])
    texts = ["".join(rng.choice(pool) for _ in range(rng.randint(0, 40))) for _ in range(n)]
    texts += [bytes(rng.randrange(256) for _ in range(rng.randint(0, 24))) for _ in range(n // 5)]
    return texts


@needs_original
@needs_shared
@pytest.mark.parametrize("lower", [True, False], ids=["uncased", "cased"])
def test_matches_live_original(lower):
    orig = load_original_module(ORIGINAL_REPO, "tokenization")
    theirs = orig.FullTokenizer(str(UNCASED_VOCAB), do_lower_case=lower)
    ours = tokenization.FullTokenizer(str(UNCASED_VOCAB), do_lower_case=lower)
    assert list(ours.vocab.items()) == list(theirs.vocab.items())
    texts = [c["input"] for c in read_cases()] + fuzz_corpus(3000, seed=1 if lower else 2)
    for text in texts:
        assert ours.tokenize(text) == theirs.tokenize(text), repr(text)
        assert (ours.basic_tokenizer.tokenize(text)
                == theirs.basic_tokenizer.tokenize(text)), repr(text)
