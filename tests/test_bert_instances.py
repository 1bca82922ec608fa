"""Instance building and masking (bert_tf/bert/instances.py).

`_reference_instances` is a deliberately plain version of the original algorithm (token
strings, list deletions, `random.Random.shuffle` / `randint` called directly), written from
REFERENCE.md §9; the optimized `InstanceMaker` (ids, index ranges, inlined draws) must agree
with it on random corpora and flags. Property tests check the masking rule, truncation and the
random-next logic directly.
"""

import collections
import random

import pytest

from bert_tf.bert import instances
from bert_tf.data.documents import Corpus


def _vocab():
    tokens = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
    tokens += [f"w{i}" for i in range(60)] + [f"##s{i}" for i in range(25)]
    return collections.OrderedDict((t, i) for i, t in enumerate(tokens))


VOCAB = _vocab()
INV = {i: t for t, i in VOCAB.items()}
WORDS = [t for t in VOCAB if t.startswith("w")]
PIECES = [t for t in VOCAB if t.startswith("##")]


def _random_documents(seed, num_docs, max_sentences=8, max_len=40):
    r = random.Random(seed)
    docs = []
    for _ in range(num_docs):
        doc = []
        for _ in range(r.randint(1, max_sentences)):
            length = r.choice([r.randint(1, 6), r.randint(1, max_len)])
            doc.append([r.choice(PIECES) if r.random() < 0.3 else r.choice(WORDS)
                        for _ in range(length)])
        docs.append(doc)
    return docs


def _reference_instances(docs, max_seq_length, short_seq_prob, masked_lm_prob,
                         max_predictions, wwm, dupe_factor, seed):
    """The original algorithm on token strings; returns the final list of instances."""
    rng = random.Random(seed)
    docs = [d for d in docs if d]
    rng.shuffle(docs)
    vocab_words = list(VOCAB.keys())
    max_num_tokens = max_seq_length - 3
    out = []

    def mask(tokens):
        cand = []
        for i, t in enumerate(tokens):
            if t in ("[CLS]", "[SEP]"):
                continue
            if wwm and cand and t.startswith("##"):
                cand[-1].append(i)
            else:
                cand.append([i])
        rng.shuffle(cand)
        output = list(tokens)
        num = min(max_predictions, max(1, int(round(len(tokens) * masked_lm_prob))))
        picked, covered = [], set()
        for group in cand:
            if len(picked) >= num:
                break
            if len(picked) + len(group) > num:
                continue
            if any(i in covered for i in group):
                continue
            for i in group:
                covered.add(i)
                if rng.random() < 0.8:
                    word = "[MASK]"
                elif rng.random() < 0.5:
                    word = tokens[i]
                else:
                    word = vocab_words[rng.randint(0, len(vocab_words) - 1)]
                output[i] = word
                picked.append((i, tokens[i]))
        picked.sort()
        return output, [p for p, _ in picked], [t for _, t in picked]

    for _ in range(dupe_factor):
        for di, doc in enumerate(docs):
            target = max_num_tokens
            if rng.random() < short_seq_prob:
                target = rng.randint(2, max_num_tokens)
            chunk, length, i = [], 0, 0
            while i < len(doc):
                chunk.append(doc[i])
                length += len(doc[i])
                if i == len(doc) - 1 or length >= target:
                    a_end = rng.randint(1, len(chunk) - 1) if len(chunk) >= 2 else 1
                    a = [t for s in chunk[:a_end] for t in s]
                    b = []
                    if len(chunk) == 1 or rng.random() < 0.5:
                        random_next = True
                        for _ in range(10):
                            ri = rng.randint(0, len(docs) - 1)
                            if ri != di:
                                break
                        other = docs[ri]
                        for s in other[rng.randint(0, len(other) - 1):]:
                            b.extend(s)
                            if len(b) >= target - len(a):
                                break
                        i -= len(chunk) - a_end
                    else:
                        random_next = False
                        b = [t for s in chunk[a_end:] for t in s]
                    while len(a) + len(b) > max_num_tokens:
                        longer = a if len(a) > len(b) else b
                        if rng.random() < 0.5:
                            del longer[0]
                        else:
                            longer.pop()
                    tokens = ["[CLS]"] + a + ["[SEP]"] + b + ["[SEP]"]
                    masked, positions, labels = mask(tokens)
                    out.append((masked, len(a) + 2, positions, labels, random_next))
                    chunk, length = [], 0
                i += 1
    rng.shuffle(out)
    return out


def _ours(docs, max_seq_length, short_seq_prob, masked_lm_prob, max_predictions, wwm,
          dupe_factor, seed):
    corpus = Corpus.from_documents([[[VOCAB[t] for t in s] for s in d] for d in docs])
    maker = instances.InstanceMaker(VOCAB, max_seq_length, short_seq_prob, masked_lm_prob,
                                    max_predictions, wwm, random.Random(seed))
    store = maker.make_instances(corpus, dupe_factor)
    out = []
    for i in maker.final_order(len(store)):
        ids, num_a, positions, labels, random_next = store.get(i)
        out.append(([INV[x] for x in ids], num_a, list(positions), [INV[x] for x in labels],
                    random_next))
    return out


@pytest.mark.parametrize("wwm", [False, True])
@pytest.mark.parametrize("max_seq_length,short_seq_prob,masked_lm_prob,max_predictions", [
    (128, 0.1, 0.15, 20),
    (12, 0.5, 0.5, 4),
    (5, 1.0, 1.0, 5),
    (32, 0.0, 0.3, 3),
])
@pytest.mark.parametrize("seed,num_docs", [(1, 7), (2, 1), (3, 2)])
def test_matches_plain_reference(wwm, max_seq_length, short_seq_prob, masked_lm_prob,
                                 max_predictions, seed, num_docs):
    docs = _random_documents(seed, num_docs)
    args = (max_seq_length, short_seq_prob, masked_lm_prob, max_predictions, wwm, 3, seed)
    expected = _reference_instances(docs, *args)
    assert expected, "the reference made no instance"
    assert _ours(docs, *args) == expected


def test_shuffle_and_randbelow_draw_like_random():
    for n in [0, 1, 2, 3, 17, 128, 1000]:
        a, b = random.Random(n), random.Random(n)
        x, y = list(range(n)), list(range(n))
        a.shuffle(x)
        instances.shuffle_in_place(y, b.getrandbits)
        assert x == y and a.random() == b.random()
    a, b = random.Random(5), random.Random(5)
    for n in [1, 2, 3, 7, 8, 9, 30522, 2**31 + 1]:
        assert a.randint(0, n - 1) == instances.randbelow(n, b.getrandbits)
    assert a.random() == b.random()


def _run(docs, **kw):
    flags = dict(max_seq_length=64, short_seq_prob=0.1, masked_lm_prob=0.15, max_predictions=10,
                 wwm=False, dupe_factor=5, seed=0)
    flags.update(kw)
    return _ours(docs, **flags)


def _unmasked(instance):
    tokens, _, positions, labels, _ = instance
    tokens = list(tokens)
    for p, t in zip(positions, labels):
        tokens[p] = t
    return tokens


def test_masking_rule_80_10_10_and_never_cls_sep():
    docs = _random_documents(11, 60)
    result = _run(docs, dupe_factor=10)
    counts = collections.Counter()
    for instance in result:
        tokens, num_a, positions, labels, _ = instance
        n = len(tokens)
        assert positions == sorted(set(positions))
        special = {0, num_a - 1, n - 1}
        assert not special & set(positions), "[CLS]/[SEP] must never be masked"
        assert [tokens[i] for i in special] == ["[CLS]", "[SEP]", "[SEP]"]
        want = min(10, max(1, int(round(n * 0.15))))
        assert len(positions) == min(want, n - 3)
        for p, label in zip(positions, labels):
            if tokens[p] == "[MASK]":
                counts["mask"] += 1
            elif tokens[p] == label:
                counts["keep"] += 1
            else:
                counts["random"] += 1
    total = sum(counts.values())
    assert total > 5000
    assert abs(counts["mask"] / total - 0.8) < 0.02
    # A random word can equal the original, so "keep" gets a little more than 10%.
    assert abs(counts["keep"] / total - 0.1) < 0.02
    assert abs(counts["random"] / total - 0.1) < 0.02


def test_whole_words_stay_whole():
    docs = _random_documents(12, 40)
    result = _run(docs, wwm=True, masked_lm_prob=0.3, dupe_factor=5)
    partial = 0
    for instance in result:
        tokens = _unmasked(instance)
        num_a = instance[1]
        masked = set(instance[2])
        assert len(masked) <= min(10, max(1, int(round(len(tokens) * 0.3))))
        # Rebuild the words: a "##" piece continues the previous non-special token.
        words = []
        for i, t in enumerate(tokens):
            if i in (0, num_a - 1, len(tokens) - 1):
                continue
            if words and t.startswith("##"):
                words[-1].append(i)
            else:
                words.append([i])
        for word in words:
            hit = [i in masked for i in word]
            assert all(hit) or not any(hit), (tokens, word, sorted(masked))
            partial += len(word) > 1 and all(hit)
    assert partial > 50, "multi-piece words should get masked whole"


def test_truncation_keeps_both_sides_and_limit():
    long_docs = [[["w1"] * 50, ["w2"] * 70, ["w3"] * 5], [["w4"] * 90], [["w5"] * 3, ["w6"] * 200]]
    result = _run(long_docs, max_seq_length=16, dupe_factor=20)
    for instance in result:
        tokens, num_a, *_ = instance
        assert len(tokens) <= 16
        assert num_a >= 3 and len(tokens) - num_a >= 2, "A and B must keep a token each"
    # Front/back coin per removed token: the 60-token sentence is cut to a window whose start is
    # Binomial(removed, 1/2), so on average as much is cut from the front as from the back.
    sentence = [f"w{i}" for i in range(60)]
    offsets = []
    for instance in _run([[sentence], [["##s1"] * 2]], max_seq_length=14, dupe_factor=200,
                         masked_lm_prob=0.01):
        a = _unmasked(instance)[1:instance[1] - 1]
        if a[0] in sentence:
            start = sentence.index(a[0])
            assert a == sentence[start:start + len(a)], "truncation must keep a contiguous window"
            offsets.append((start, 60 - start - len(a)))
    assert len(offsets) > 100
    front = sum(f for f, _ in offsets) / len(offsets)
    back = sum(b for _, b in offsets) / len(offsets)
    assert abs(front - back) < 0.1 * (front + back)


def test_random_next_logic():
    docs = _random_documents(13, 30, max_sentences=10, max_len=12)
    flat_docs = [" ".join(t for s in d for t in s) for d in docs]
    result = _run(docs, max_seq_length=48, dupe_factor=10, masked_lm_prob=0.05)
    labels = collections.Counter()
    for instance in result:
        tokens = _unmasked(instance)
        num_a, random_next = instance[1], instance[4]
        a = " ".join(tokens[1:num_a - 1])
        b = " ".join(tokens[num_a:-1])
        labels[random_next] += 1
        if not random_next:
            # Actual next: B follows A in the same document (truncation may cut between them).
            assert any(d.find(a) >= 0 and d.find(b, d.find(a) + len(a)) >= 0 for d in flat_docs)
    share = labels[True] / sum(labels.values())
    assert 0.45 < share < 0.75  # 50% of multi-sentence chunks, plus every 1-sentence chunk

    # A one-sentence chunk always gets a random B; with one document, from itself.
    single = _run([[["w1", "w2"], ["w3"] * 100]], max_seq_length=32, dupe_factor=4)
    assert all(inst[4] for inst in single if inst[1] > 20)
    one_doc = _run([[["w1", "w2"]]], max_seq_length=16, dupe_factor=3)
    assert all(inst[4] for inst in one_doc)
