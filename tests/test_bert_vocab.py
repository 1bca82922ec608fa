"""bert_tf.vocab: the WordPiece vocabulary builder."""

import os
import random
import subprocess
import sys
from pathlib import Path

import pytest

from bert_tf.bert import tokenization, vocab
from conftest import SHARED_DIR

REPO = Path(__file__).resolve().parents[1]
SAMPLE_TEXT = SHARED_DIR / "data" / "sample_text.txt"

CORPUS = """The quick brown fox jumps over the lazy dog. The dog sleeps; the fox runs!
Running foxes and sleeping dogs: a tokenizer's favourite sentences.

Café au lait, naïve résumé — ÜBER straße. 北京欢迎你。
unbelievable unbelievably believable believer believing believed
""" * 20


@pytest.fixture
def corpus(tmp_path):
    path = tmp_path / "corpus.txt"
    path.write_text(CORPUS, encoding="utf-8")
    return path


@pytest.mark.parametrize("lower", [True, False], ids=["uncased", "cased"])
def test_builds_a_vocab_that_covers_its_corpus(tmp_path, corpus, lower):
    out = tmp_path / "vocab.txt"
    words = vocab.build_vocab_file(str(corpus), str(out), vocab_size=120, do_lower_case=lower,
                                   lower_thresh=1)
    assert words[:5] == ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
    assert 0.95 * 120 <= len(words) <= 120
    loaded = tokenization.load_vocab(str(out))  # raises on duplicates
    assert list(loaded) == words
    tok = tokenization.FullTokenizer(str(out), do_lower_case=lower)
    tokens = tok.tokenize(CORPUS)
    assert "[UNK]" not in tokens  # every character and its ## continuation is in
    assert ("The" in words) == (not lower)
    assert ("Caf\u00e9" in words) == (not lower)  # accents stripped only when lower-casing
    assert ("cafe" in words) == lower


def test_multiple_inputs_globs_and_extra_reserved(tmp_path, corpus):
    second = tmp_path / "more_1.txt"
    second.write_text("zebra zebras zebra\n" * 30, encoding="utf-8")
    out = tmp_path / "v.txt"
    words = vocab.build_vocab_file(f"{corpus},{tmp_path}/more_*.txt", str(out), vocab_size=150,
                                   extra_reserved_tokens=["[unused0]", "[unused1]"],
                                   lower_thresh=1)
    assert words[:7] == ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "[unused0]", "[unused1]"]
    assert "zebra" in words


def test_overshoot_keeps_alphabet_and_frequent_pieces():
    # Many words seen once: even at threshold 1 the learner overshoots a small size, and the
    # builder trims the least frequent pieces, never the alphabet.
    rng = random.Random(0)
    lines = [" ".join("".join(rng.choice("abcdefghij") for _ in range(rng.randint(3, 9)))
                      for _ in range(20)) for _ in range(200)]
    counts = vocab.count_words(lines, do_lower_case=True)
    big = vocab.learn_vocab(counts, 100_000, lower_thresh=1)
    small = vocab.learn_vocab(counts, 60, lower_thresh=1)
    assert len(small) == 60 < len(big)
    alphabet = {t for t in big if len(t) == 1 or (t.startswith("##") and len(t) == 3)}
    assert alphabet <= set(small)
    assert small[:5] == list(vocab.RESERVED_TOKENS) and len(set(small)) == 60


def test_count_words_uses_the_tokenizers_words():
    counts = vocab.count_words(["Hello, WORLD!", b"hello world\xff"], do_lower_case=True)
    assert counts == {"hello": 2, ",": 1, "world": 2, "!": 1}


@pytest.mark.parametrize("make_input,kwargs,message", [
    (lambda d: str(d / "missing.txt"), {}, "no file matches .*missing.txt"),
    (lambda d: (d / "empty.txt").write_text(" \n\t\n") and str(d / "empty.txt"), {}, "no words"),
    (lambda d: (d / "c.txt").write_text(CORPUS) and str(d / "c.txt"), {"vocab_size": 5},
     "leaves no room"),
    (lambda d: (d / "c.txt").write_text(CORPUS) and str(d / "c.txt"), {"vocab_size": 20},
     "alphabet alone needs"),
])
def test_errors(tmp_path, make_input, kwargs, message):
    out = tmp_path / "vocab.txt"
    with pytest.raises(vocab.VocabBuildError, match=message):
        vocab.build_vocab_file(make_input(tmp_path), str(out),
                               **{"vocab_size": 100, "lower_thresh": 1, **kwargs})
    assert not out.exists()
    assert not list(tmp_path.glob("vocab.txt.tmp*"))


def test_missing_output_directory(tmp_path, corpus):
    with pytest.raises(vocab.VocabBuildError, match="directory .* does not exist"):
        vocab.build_vocab_file(str(corpus), str(tmp_path / "no" / "vocab.txt"), vocab_size=100,
                               lower_thresh=1)


def test_command_line(tmp_path, corpus):
    out = tmp_path / "vocab.txt"
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2")
    ok = subprocess.run(
        [sys.executable, "-c", "import sys, runpy\nsys.argv = ['bert_tf.vocab'] + sys.argv[1:]\n"
         "try:\n  runpy.run_module('bert_tf.vocab', run_name='__main__')\n"
         "finally:\n  assert 'tensorflow' not in sys.modules, 'imported tensorflow'",
         f"--input_file={corpus}", f"--output_file={out}", "--vocab_size=130",
         "--do_lower_case=false", "--lower_thresh=1"],
        cwd=REPO, env=env, capture_output=True, text=True)
    assert ok.returncode == 0, ok.stderr
    assert f"wrote {len(out.read_text().splitlines())} entries to {out}" in ok.stdout
    assert out.read_text(encoding="utf-8").split("\n")[:5] == ["[PAD]", "[UNK]", "[CLS]", "[SEP]",
                                                               "[MASK]"]
    bad = subprocess.run(
        [sys.executable, "-m", "bert_tf.vocab", f"--input_file={tmp_path}/nothing*.txt",
         f"--output_file={tmp_path}/v2.txt", "--vocab_size=100"],
        cwd=REPO, env=env, capture_output=True, text=True)
    assert bad.returncode == 1
    assert "error: --input_file: no file matches" in bad.stderr
    assert "Traceback" not in bad.stderr


@pytest.mark.skipif(not SAMPLE_TEXT.exists(), reason="../shared/data/sample_text.txt is absent")
def test_sample_text_vocab(tmp_path):
    out = tmp_path / "vocab.txt"
    words = vocab.build_vocab_file(str(SAMPLE_TEXT), str(out), vocab_size=500, lower_thresh=1)
    assert len(words) == 500  # the sample overshoots at threshold 1 and is trimmed to size
    tok = tokenization.FullTokenizer(str(out))
    assert "[UNK]" not in tok.tokenize(SAMPLE_TEXT.read_text(encoding="utf-8"))
