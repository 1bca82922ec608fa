"""bert_tf.albert.instances: ALBERT's sentence-order pairs, n-gram masking and token_boundary.

The records of whole runs are compared with the original's in
tests/test_albert_create_pretraining_data.py; here: the rules one by one, and (when a copy of
the original exists) the original's instance functions against ours on random corpora, in a
subprocess (its script defines absl flags when imported).
"""

import json
import os
import random
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from bert_tf.albert import instances
from bert_tf.albert.tokenization import SENTENCEPIECE_SPECIAL_TOKENS
from bert_tf.data.documents import Corpus
from conftest import ALBERT_ORIGINAL_REPO

REPO = Path(__file__).resolve().parents[1]
ORIGINAL_REPO = ALBERT_ORIGINAL_REPO
needs_original = pytest.mark.skipif(
    not (ORIGINAL_REPO / "create_pretraining_data.py").exists(),
    reason=f"no copy of google-research/albert at {ORIGINAL_REPO} (set ALBERT_ORIGINAL_REPO)")

PIECES = ["<pad>", "<unk>", "[CLS]", "[SEP]", "[MASK]", "▁the", "▁a", "ed", "s", "ing", "'s",
          ".", "..", ",", "▁1", "2", "é", "xyz", "▁cat", "▁dog", "-", "(", "€", "<x>", "abc"]
VOCAB = {p: i for i, p in enumerate(PIECES)}


@pytest.mark.parametrize("piece,start", [
    ("▁the", True), ("ed", False), ("'s", True), (".", True), ("..", False), (",", True),
    ("2", True), ("é", True), ("xyz", False), ("XYZ", False), ("abc", False), ("€", True),
    ("<unk>", True), ("<x>", True), ("-", True), ("a-b", False), ("a=b", True), ("中", True),
])
def test_is_start_piece_sp(piece, start):
    assert instances.is_start_piece_sp(piece) is start


def test_is_start_piece_wordpiece():
    assert instances.is_start_piece_wordpiece("un")
    assert not instances.is_start_piece_wordpiece("##aff")


@pytest.mark.parametrize("ngram,favor", [(3, True), (3, False), (1, True), (5, True)])
def test_ngram_draws_equal_numpy_choice(ngram, favor):
    """The doubles drawn in blocks, through the cdf, give np.random.choice's lengths."""
    ngrams = np.arange(1, ngram + 1, dtype=np.int64)
    pvals = 1. / np.arange(1, ngram + 1)
    pvals /= pvals.sum(keepdims=True)
    if not favor:
        pvals = pvals[::-1]
    np.random.seed(7)
    expected = [int(np.random.choice(ngrams, p=pvals / pvals.sum(keepdims=True)))
                for _ in range(3000)]
    np.random.seed(7)
    doubles = instances.numpy_doubles(block=100)
    cdf = instances.ngram_cdf(ngram, favor)
    import bisect
    ours = [1 + bisect.bisect_right(cdf, next(doubles)) for _ in range(3000)]
    assert ours == expected
    if ngram == 3:
        assert sorted(set(ours)) == [1, 2, 3]


def _maker(seed=0, wwm=True, **kw):
    is_start = bytearray(1 if instances.is_start_piece_sp(p) else 0 for p in PIECES)
    return instances.AlbertInstanceMaker(
        VOCAB, kw.pop("max_seq_length", 32), kw.pop("short_seq_prob", 0.1),
        kw.pop("masked_lm_prob", 0.3), kw.pop("max_predictions_per_seq", 8), wwm,
        random.Random(seed), is_start, SENTENCEPIECE_SPECIAL_TOKENS, **kw)


def _random_corpus(rng, num_docs=6):
    docs = [[[rng.randrange(5, len(PIECES)) for _ in range(rng.randint(1, 12))]
             for _ in range(rng.randint(1, 6))] for _ in range(num_docs)]
    return Corpus.from_documents(docs)


def test_token_boundary_and_whole_words():
    np.random.seed(0)
    maker = _maker(1)
    ids = [2, VOCAB["▁the"], VOCAB["ed"], VOCAB["s"], VOCAB["'s"], 3, VOCAB["ed"],
           VOCAB["▁cat"], VOCAB[".."], 3]
    original = list(ids)
    positions, labels, boundary = maker.mask(ids, 4)
    assert list(boundary) == [1, 1, 0, 0, 1, 1, 0, 1, 0, 1]
    assert labels == [original[p] for p in positions]
    assert positions == sorted(positions) and 0 not in positions and 5 not in positions
    # Whole words: "▁the ed s" is one word, and "ed" after [SEP] joins "'s" (the last of A).
    words = [{1, 2, 3}, {4, 6}, {7, 8}]
    for word in words:
        assert word <= set(positions) or not word & set(positions)


def test_masking_budget_and_rule_80_10_10():
    rng = random.Random(3)
    np.random.seed(3)
    maker = _maker(5, max_seq_length=64, max_predictions_per_seq=20, masked_lm_prob=0.15)
    kinds = {"mask": 0, "kept": 0, "other": 0}
    for _ in range(400):
        n_a = rng.randint(1, 30)
        body = [rng.randrange(5, len(PIECES)) for _ in range(n_a + rng.randint(1, 30))]
        ids = [2] + body[:n_a] + [3] + body[n_a:] + [3]
        before = list(ids)
        positions, labels, _ = maker.mask(ids, n_a)
        assert len(positions) <= maker.num_to_predict(len(ids))
        for p, label in zip(positions, labels):
            assert label == before[p] and before[p] not in (2, 3)
            kinds["mask" if ids[p] == 4 else "kept" if ids[p] == before[p] else "other"] += 1
        unmasked = set(range(len(ids))) - set(positions)
        assert all(ids[p] == before[p] for p in unmasked)
    total = sum(kinds.values())
    assert 0.75 < kinds["mask"] / total < 0.85
    assert 0.05 < kinds["kept"] / total < 0.15


def test_sentence_order_labels():
    """Label 1 = B before A (swap) or B from another document; 0 = A then B in order."""
    rng = random.Random(4)
    np.random.seed(4)
    corpus = _random_corpus(rng, 12)
    maker = _maker(9, masked_lm_prob=0.0, short_seq_prob=0.0, max_seq_length=40)
    store = maker.make_instances(corpus, 3)
    text = corpus.tokens.tolist()
    labels = set()
    for i in range(len(store)):
        ids, num_a, _, _, is_random_next, boundary = store.get(i)
        a, b = list(ids[1:num_a - 1]), list(ids[num_a:-1])
        labels.add(is_random_next)
        joined = " ".join(map(str, text))
        if not is_random_next:
            assert " ".join(map(str, a + b)) in joined
        assert len(boundary) == len(ids)
    assert labels == {False, True}


def test_no_masking_draws_nothing():
    np.random.seed(0)
    maker = _maker(2, masked_lm_prob=0.0)
    state = maker.rng.getstate()
    ids = [2, 5, 6, 3, 7, 3]
    assert maker.mask(ids, 2)[:2] == ([], [])
    assert maker.rng.getstate() == state and ids == [2, 5, 6, 3, 7, 3]


_LIVE = r"""
import json, random, sys
import numpy as np
sys.path.insert(0, sys.argv[1])
from tools.original import load_albert_module
from bert_tf.albert import instances
from bert_tf.albert.tokenization import SENTENCEPIECE_SPECIAL_TOKENS
from bert_tf.bert.tokenization import WORDPIECE_SPECIAL_TOKENS
from bert_tf.data.documents import Corpus
orig = load_albert_module(sys.argv[2], "create_pretraining_data")
F = orig.FLAGS
F(["x"])
results = []
sp_vocab = ["<pad>", "<unk>", "[CLS]", "[SEP]", "[MASK]", "\u2581the", "\u2581a", "ed", "s",
            "ing", "'s", ".", "..", ",", "\u2581a1", "2", "\u00e9", "xyz", "\u2581cat", "-", "(",
            "abc", "\u2581dog", "ly"]
wp_vocab = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "the", "a", "##ed", "##s", "##ing",
            "cat", "dog", ".", ",", "##ly", "run", "##n", "x", "##y", "z"]
for trial in range(int(sys.argv[3])):
    r = random.Random(trial)
    spm = trial % 2 == 0
    words = sp_vocab if spm else wp_vocab
    vocab = {w: i for i, w in enumerate(words)}
    F.spm_model_file = "x" if spm else None
    F.do_whole_word_mask = r.random() < 0.7
    F.random_next_sentence = r.random() < 0.3
    F.do_permutation = r.random() < 0.2
    F.favor_shorter_ngram = r.random() < 0.7
    F.ngram = r.randint(1, 4)
    max_seq, short, prob = r.randint(8, 48), r.choice([0.0, 0.1, 0.5]), r.choice([0.0, 0.15, 0.4])
    max_pred = r.randint(1, 10)
    docs = [[[words[r.randrange(5, len(words))] for _ in range(r.randint(1, 15))]
             for _ in range(r.randint(1, 5))] for _ in range(r.randint(1, 6))]
    seed = r.randrange(1000)
    np.random.seed(seed)
    rng = random.Random(seed)
    theirs = []
    for _ in range(2):
        for d in range(len(docs)):
            for inst in orig.create_instances_from_document(
                    docs, d, max_seq, short, prob, max_pred, words, rng):
                theirs.append([[vocab[t] for t in inst.tokens], inst.segment_ids,
                               inst.masked_lm_positions, [vocab[t] for t in inst.masked_lm_labels],
                               bool(inst.is_random_next), inst.token_boundary])
    np.random.seed(seed)
    rule = instances.is_start_piece_sp if spm else instances.is_start_piece_wordpiece
    maker = instances.AlbertInstanceMaker(
        vocab, max_seq, short, prob, max_pred, F.do_whole_word_mask, random.Random(seed),
        bytearray(1 if rule(w) else 0 for w in words),
        SENTENCEPIECE_SPECIAL_TOKENS if spm else WORDPIECE_SPECIAL_TOKENS,
        random_next_sentence=F.random_next_sentence, do_permutation=F.do_permutation,
        ngram=F.ngram, favor_shorter_ngram=F.favor_shorter_ngram)
    corpus = Corpus.from_documents([[[vocab[t] for t in s] for s in doc] for doc in docs])
    store = instances.AlbertInstanceStore()
    order = list(range(len(docs)))
    for _ in range(2):
        for d in range(len(docs)):
            maker.instances_from_document(corpus, order, d, store)
    ours = []
    for i in range(len(store)):
        ids, num_a, pos, lab, nsp, boundary = store.get(i)
        ours.append([list(ids), [0] * num_a + [1] * (len(ids) - num_a), list(pos), list(lab),
                     nsp, list(boundary)])
    results.append(ours == theirs and rng.getstate() == maker.rng.getstate())
print(json.dumps(results))
"""


@needs_original
def test_live_instances_equal_the_originals_on_random_corpora(tmp_path):
    script = tmp_path / "live.py"
    script.write_text(_LIVE, encoding="utf-8")
    env = dict(os.environ, PYTHONPATH=str(REPO), TF_CPP_MIN_LOG_LEVEL="3")
    result = subprocess.run([sys.executable, str(script), str(REPO), str(ORIGINAL_REPO), "120"],
                            capture_output=True, text=True, env=env, timeout=600)
    assert result.returncode == 0, result.stderr[-3000:]
    outcome = json.loads(result.stdout.strip().splitlines()[-1])
    assert len(outcome) == 120
    assert [i for i, ok in enumerate(outcome) if not ok] == []
