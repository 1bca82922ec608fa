"""bert_tf.roberta.masking: fairseq's dynamic masking rule (MaskTokensDataset, v0.12.2) on
RoBERTa records, drawn statelessly from (seed, epoch, index).

The statistical checks compare frequencies over many draws with exact binomial acceptance
intervals computed here (`binomial_interval`): each interval fails by chance with probability
at most ALPHA (split over the checks of one test by Bonferroni). The draws are deterministic
(fixed seeds), so a test either always passes or always fails: a failure is a wrong rule, not
bad luck, unless the fixed draws fell in a 1e-6 tail.
"""

import math
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import tensorflow as tf

from bert_tf.roberta import masking, pretraining_data
from bert_tf.roberta.masking import DynamicMasking, MaskingError

REPO = Path(__file__).resolve().parents[1]
VOCAB = REPO / "tests" / "data" / "roberta_tokenizer" / "vocab.json"

# Per-test chance of a false failure of the statistical checks.
ALPHA = 1e-6

# A toy RoBERTa vocabulary: fairseq's four specials first, 20 words, a dictionary filler, <mask>
# last (as roberta-base: <s> 0, <pad> 1, </s> 2, <unk> 3, ..., madeupword0000-2, <mask>).
WORDS = [chr(ord("a") + i) for i in range(20)]
TOY_VOCAB = {"<s>": 0, "<pad>": 1, "</s>": 2, "<unk>": 3,
             **{w: 4 + i for i, w in enumerate(WORDS)}, "madeupword0000": 24, "<mask>": 25}
BOS, PAD, EOS, UNK, MASK = 0, 1, 2, 3, 25
SPECIAL_IDS = {BOS, PAD, EOS, UNK, MASK}
RANDOM_IDS = sorted(set(TOY_VOCAB.values()) - SPECIAL_IDS)  # 21 ids


def binomial_interval(trials, p, alpha):
    """[lo, hi] with P(X < lo) <= alpha / 2 and P(X > hi) <= alpha / 2 for X ~ Bin(trials, p),
    from the exact probabilities (log-space, so large `trials` do not underflow)."""
    if p <= 0.0:
        return 0, 0
    if p >= 1.0:
        return trials, trials
    log_p, log_q = math.log(p), math.log1p(-p)
    log_fact = [0.0] * (trials + 1)
    for k in range(1, trials + 1):
        log_fact[k] = log_fact[k - 1] + math.log(k)
    pmf = [math.exp(log_fact[trials] - log_fact[k] - log_fact[trials - k] + k * log_p
                    + (trials - k) * log_q) for k in range(trials + 1)]
    lo, tail = 0, 0.0
    while tail + pmf[lo] <= alpha / 2:
        tail += pmf[lo]
        lo += 1
    hi, tail = trials, 0.0
    while tail + pmf[hi] <= alpha / 2:
        tail += pmf[hi]
        hi -= 1
    return lo, hi


def assert_binomial(successes, trials, p, alpha, what):
    lo, hi = binomial_interval(trials, p, alpha)
    assert lo <= successes <= hi, (
        f"{what}: {successes} of {trials} ({successes / trials:.4f}); expected p={p:.4f}, "
        f"acceptance [{lo}, {hi}] at alpha={alpha:g}")


def test_binomial_interval_covers_and_excludes():
    # The helper itself: Bin(10, 0.5) has P(X <= 0) = P(X >= 10) = 1/1024.
    assert binomial_interval(10, 0.5, 2 / 1024) == (1, 9)
    assert binomial_interval(10, 0.5, 1.99 / 1024) == (0, 10)
    assert binomial_interval(100, 0.0, ALPHA) == (0, 0)


def records(lengths, seq, token=None, seed=0):
    """int32 [len(lengths), seq]: <s> words </s> of each length (n >= 2 real tokens), then
    <pad>. Words random (or all `token`)."""
    rng = np.random.RandomState(seed)
    ids = np.full((len(lengths), seq), PAD, np.int32)
    for row, n in enumerate(lengths):
        ids[row, 0], ids[row, n - 1] = BOS, EOS
        ids[row, 1:n - 1] = token if token is not None else rng.randint(4, 24, size=n - 2)
    return ids


def toy_masking(seq, seed=1, **kwargs):
    return DynamicMasking.for_vocab(TOY_VOCAB, seq, seed, **kwargs)


def draw(m, ids, epoch=0, first_index=0):
    """The masking of each row of `ids` with index first_index + row, as numpy."""
    index = tf.range(first_index, first_index + len(ids), dtype=tf.int64)
    return {k: v.numpy() for k, v in m(tf.constant(ids), epoch, index).items()}


# --- options --------------------------------------------------------------------------------

def test_max_predictions_holds_every_count():
    # int(p * n + U) <= floor(p * S) + 1 for every n <= S, with U at its largest double below 1
    # (numpy's 1 - 2**-53; TensorFlow's float64 uniform stops at 1 - 2**-52), in float64 as
    # computed: also where p * n is whole (the sum may round up to p * n + 1).
    u_max = np.nextafter(1.0, 0.0)
    for p in (0.15, 0.2, 0.5):
        for seq in range(1, 600):
            bound = masking.max_predictions(seq, p)
            counts = np.floor(np.float64(p) * np.arange(seq + 1, dtype=np.float64) + u_max)
            assert counts.max() <= bound, (p, seq)
            assert bound <= math.ceil(p * seq) + 1
    assert masking.max_predictions(512) == 77  # 76.8
    assert masking.max_predictions(128) == 20  # 19.2
    assert masking.max_predictions(100, 0.5) == 51  # 50 whole: 50 + U may round to 51


@pytest.mark.parametrize("kwargs, message", [
    ({"mask_prob": 0.0}, "--mask_prob=0.0"),
    ({"mask_prob": 1.0}, "--mask_prob=1.0"),
    ({"leave_unmasked_prob": -0.1}, "--leave_unmasked_prob"),
    ({"random_token_prob": 1.5}, "--random_token_prob"),
    ({"leave_unmasked_prob": 0.6, "random_token_prob": 0.5}, "exceed 1"),
    ({"max_predictions_per_seq": 76}, "--max_predictions_per_seq=76 is too small"),
    ({"max_predictions_per_seq": 513}, "exceeds --max_seq_length=512"),
])
def test_refuses_bad_options(kwargs, message):
    with pytest.raises(MaskingError, match=message):
        toy_masking(512, **kwargs)


def test_refuses_bad_vocab_and_seed():
    with pytest.raises(MaskingError, match="--vocab_file: the vocabulary has no <mask>"):
        DynamicMasking.for_vocab({k: v for k, v in TOY_VOCAB.items() if k != "<mask>"}, 16, 1)
    with pytest.raises(MaskingError, match="only special tokens"):
        DynamicMasking(MASK, PAD, [], 16, 1)
    with pytest.raises(MaskingError, match="never special"):
        DynamicMasking(MASK, PAD, [MASK, 5], 16, 1)
    with pytest.raises(MaskingError, match="--seed=-1"):
        toy_masking(16, seed=-1)


def test_for_vocab_draws_from_all_but_the_special_tokens():
    m = toy_masking(16)
    assert (m.mask_id, m.pad_id) == (MASK, PAD)
    # fairseq zeroes <s> <pad> </s> <unk>; <mask> is excluded too (module docstring); the
    # dictionary filler is an ordinary entry, as in fairseq.
    assert m.random_token_ids == list(range(4, 25))
    from bert_tf.roberta import tokenization  # pylint: disable=import-outside-toplevel

    vocab = tokenization.RobertaTokenizer(str(VOCAB)).vocab
    m = DynamicMasking.for_vocab(vocab, 16, 1)
    assert m.mask_id == vocab["<mask>"] and m.pad_id == vocab["<pad>"]
    assert len(m.random_token_ids) == len(vocab) - 5
    assert not {vocab[t] for t in ("<s>", "<pad>", "</s>", "<unk>", "<mask>")} & set(
        m.random_token_ids)


# --- the rule --------------------------------------------------------------------------------

@pytest.mark.slow
def test_count_is_int_of_mask_prob_n_plus_uniform():
    # count = floor(x + U), x = 0.15 n: floor(x) + 1 with probability frac(x), else floor(x).
    seq, trials = 128, 1000
    m = toy_masking(seq)
    lengths = (7, 10, 17, 100, 128)  # x = 1.05, 1.5, 2.55, 15.000000000000002, 19.2
    checks = len(lengths)
    out = draw(m, records([n for n in lengths for _ in range(trials)], seq))
    all_counts = out["masked_lm_weights"].sum(axis=1).astype(int).reshape(checks, trials)
    for n, counts in zip(lengths, all_counts):
        x = np.float64(0.15) * n
        low = int(np.floor(x))
        assert set(counts) <= {low, low + 1}, (n, sorted(set(counts)))
        assert_binomial(int((counts == low + 1).sum()), trials, float(x - low),
                        ALPHA / checks, f"n={n}: count {low + 1}")


def test_all_padding_masks_nothing():
    out = draw(toy_masking(8), np.full((3, 8), PAD, np.int32))
    assert out["masked_lm_weights"].sum() == 0
    assert (out["input_ids"] == PAD).all() and out["input_mask"].sum() == 0


def test_positions_uniform_without_replacement_never_on_padding():
    # Every real position, <s> (0) and </s> (n - 1) included as in fairseq, is drawn with
    # probability E[count] / n = mask_prob exactly (E[floor(x + U)] = x); padding never.
    seq, n, trials = 16, 10, 3000
    m = toy_masking(seq)
    out = draw(m, records([n] * trials, seq), epoch=3)
    hits = np.zeros(seq, int)
    for positions, weights in zip(out["masked_lm_positions"], out["masked_lm_weights"]):
        drawn = positions[weights > 0]
        assert len(set(drawn)) == len(drawn), drawn  # without replacement
        assert (np.diff(drawn) > 0).all()  # ascending
        assert (drawn < n).all()  # never on padding
        assert (positions[weights == 0] == 0).all()
        hits[drawn] += 1
    assert (hits[n:] == 0).all()
    for position in range(n):
        assert_binomial(int(hits[position]), trials, 0.15, ALPHA / n, f"position {position}")


def test_80_10_10_and_random_tokens_uniform_never_special():
    # Records of one word c: a drawn position shows <mask> (p 0.8), c (kept, 0.1, or a random
    # token that happens to be c, 0.1 / A) or another word (0.1 (A - 1) / A), A = 21 random ids.
    seq, trials, c = 64, 1500, 10
    m = toy_masking(seq)
    ids = np.full((trials, seq), c, np.int32)
    out = draw(m, ids, epoch=1)
    weights = out["masked_lm_weights"] > 0
    shown = np.take_along_axis(out["input_ids"], out["masked_lm_positions"], axis=1)[weights]
    slots = len(shown)
    a = len(RANDOM_IDS)
    checks = 3 + a
    assert_binomial(int((shown == MASK).sum()), slots, 0.8, ALPHA / checks, "<mask>")
    assert_binomial(int((shown == c).sum()), slots, 0.1 + 0.1 / a, ALPHA / checks, "kept")
    other = shown[(shown != MASK) & (shown != c)]
    assert_binomial(len(other), slots, 0.1 * (a - 1) / a, ALPHA / checks, "random")
    assert not set(other.tolist()) & SPECIAL_IDS
    assert set(other.tolist()) <= set(RANDOM_IDS)
    for token in RANDOM_IDS:
        if token != c:
            assert_binomial(int((other == token).sum()), len(other), 1 / (a - 1),
                            ALPHA / checks, f"random token {token}")
    # Nothing but the drawn positions changes.
    rows, slots_used = np.nonzero(weights)
    drawn = np.zeros(ids.shape, bool)
    drawn[rows, out["masked_lm_positions"][rows, slots_used]] = True
    assert not ((out["input_ids"] != ids) & ~drawn).any()


def test_labels_and_features():
    seq = 32
    m = toy_masking(seq, seed=5)
    ids = records([2, 5, 20, 32, 31, 9], seq, seed=2)
    out = draw(m, ids, epoch=2, first_index=40)
    assert out["input_mask"].tolist() == (ids != PAD).astype(int).tolist()
    assert (out["segment_ids"] == 0).all()
    assert out["masked_lm_positions"].shape == (6, masking.max_predictions(seq))
    for row in range(len(ids)):
        count = int(out["masked_lm_weights"][row].sum())
        assert out["masked_lm_weights"][row].tolist() == [1.0] * count + [0.0] * (
            m.max_predictions_per_seq - count)
        positions = out["masked_lm_positions"][row]
        assert out["masked_lm_ids"][row].tolist() == (
            ids[row][positions[:count]].tolist() + [0] * (m.max_predictions_per_seq - count))
        keep = np.ones(seq, bool)
        keep[positions[:count]] = False
        assert (out["input_ids"][row][keep] == ids[row][keep]).all()
    for name, dtype in (("input_ids", np.int32), ("masked_lm_positions", np.int32),
                        ("masked_lm_ids", np.int32), ("masked_lm_weights", np.float32)):
        assert out[name].dtype == dtype


def test_bos_and_eos_are_drawn_as_fairseq_does():
    seq, n, trials = 16, 6, 400
    out = draw(toy_masking(seq), records([n] * trials, seq))
    weights = out["masked_lm_weights"] > 0
    targets = out["masked_lm_ids"][weights]
    assert (targets == BOS).any() and (targets == EOS).any()


# --- determinism ------------------------------------------------------------------------------

def test_same_seed_epoch_index_same_masks_else_different():
    seq = 128
    m = toy_masking(seq, seed=7)
    ids = records([128], seq)[0]

    def masked(masker, epoch, index):
        return masker(ids, epoch, index)["input_ids"].numpy()

    first = masked(m, 1, 5)
    assert (masked(m, 1, 5) == first).all()
    assert (masked(toy_masking(seq, seed=7), 1, 5) == first).all()
    for other in (masked(m, 2, 5), masked(m, 1, 6), masked(toy_masking(seq, seed=8), 1, 5)):
        # Two independent draws of ~19 of 128 positions agree with probability ~1e-20.
        assert (other != first).any()
    # Large indexes and epochs (int64) are folded in whole.
    assert (masked(m, 1, 2**40 + 5) != first).any()


def test_a_row_masks_alike_alone_or_in_any_batch():
    seq = 24
    m = toy_masking(seq, seed=3)
    ids = records([24, 10, 3, 17], seq, seed=4)
    epochs = tf.constant([0, 0, 1, 1], tf.int64)
    index = tf.constant([9, 3, 3, 100], tf.int64)
    batch = m(tf.constant(ids), epochs, index)
    reversed_batch = m(tf.constant(ids[::-1]), epochs[::-1], index[::-1])
    for row in range(len(ids)):
        alone = m(ids[row], epochs[row], index[row])
        for name, value in alone.items():
            assert (batch[name][row].numpy() == value.numpy()).all(), name
            assert (reversed_batch[name][len(ids) - 1 - row].numpy() == value.numpy()).all()


def _record_file(path, lengths, seq):
    encoder = pretraining_data.RecordEncoder(seq, len(TOY_VOCAB), BOS, PAD)
    rng = np.random.RandomState(0)
    with tf.io.TFRecordWriter(str(path)) as writer:
        for n in lengths:
            writer.write(encoder.encode(list(rng.randint(4, 24, size=n - 2)) + [EOS]))
    return str(path)


def _masked_stream(path, masker, num_records, seed):
    """A training stream as the trainer could build it: a fresh seeded permutation of the
    record indexes each epoch (input_pipeline's PERMUTE_EACH_EPOCH), the stream position giving
    the epoch, each record masked from (seed, epoch, its index), then batched."""
    spec = pretraining_data.feature_spec(masker.max_seq_length)
    serialized = tf.constant(list(tf.data.TFRecordDataset(path).as_numpy_iterator()))
    d = tf.data.Dataset.range(num_records)
    d = d.shuffle(num_records, seed=seed, reshuffle_each_iteration=True).repeat().enumerate()

    def mask(position, index):
        ids = tf.io.parse_single_example(tf.gather(serialized, index), spec)["input_ids"]
        features = masker(ids, position // num_records, index)
        features["index"] = index
        return features

    return d.map(mask, num_parallel_calls=tf.data.AUTOTUNE, deterministic=True).batch(4)


@pytest.mark.slow
def test_in_tf_data_fresh_each_epoch_and_resumes_exactly(tmp_path):
    seq, num_records = 16, 8
    masker = toy_masking(seq, seed=11)
    path = _record_file(tmp_path / "records.tfrecord", [16, 3, 9, 12, 16, 5, 7, 16], seq)
    d = _masked_stream(path, masker, num_records, seed=2)

    @tf.function
    def step(iterator):  # the trainer takes its batches inside a tf.function
        return next(iterator)

    iterator = iter(d)
    batches = [{k: v.numpy() for k, v in step(iterator).items()} for _ in range(6)]
    for batch in batches:
        assert batch["input_ids"].shape == (4, seq)
        assert batch["masked_lm_positions"].shape == (4, masking.max_predictions(seq))
    # Each epoch (2 batches of 4) holds every record once; a record's masks change with the
    # epoch (compared on the 16-token records, whose ~2.4 of 16 positions repeat rarely).
    by_epoch = []
    for epoch in range(3):
        rows = {}
        for batch in batches[2 * epoch:2 * epoch + 2]:
            for i, index in enumerate(batch["index"]):
                rows[int(index)] = batch["input_ids"][i]
        assert sorted(rows) == list(range(num_records))
        by_epoch.append(rows)
    assert any((by_epoch[0][i] != by_epoch[1][i]).any() for i in (0, 4, 7))
    assert any((by_epoch[1][i] != by_epoch[2][i]).any() for i in (0, 4, 7))

    # Save the iterator after 3 batches, read 3 more; a new iterator restored there reads the
    # same 3 batches, masks included (the position is all that is saved: masks are stateless).
    iterator = iter(_masked_stream(path, masker, num_records, seed=2))
    for _ in range(3):
        step(iterator)
    checkpoint = tf.train.Checkpoint(iterator=iterator)
    prefix = checkpoint.write(str(tmp_path / "ckpt"))
    expected = [step(iterator) for _ in range(3)]
    restored = iter(_masked_stream(path, toy_masking(seq, seed=11), num_records, seed=2))
    tf.train.Checkpoint(iterator=restored).read(prefix).assert_consumed()
    for want in expected:
        got = step(restored)
        for name in want:
            assert (got[name].numpy() == want[name].numpy()).all(), name
    for want, batch in zip(expected, batches[3:]):
        assert (want["input_ids"].numpy() == batch["input_ids"]).all()


def masks_digest():
    """sha256 of fixed inputs' masks (seed 123, epoch 4, indexes 0-5)."""
    import hashlib  # pylint: disable=import-outside-toplevel

    ids = np.full((6, 40), 7, np.int32)
    ids[:, 30:] = PAD
    out = DynamicMasking(MASK, PAD, RANDOM_IDS, 40, 123)(tf.constant(ids), 4,
                                                         tf.range(6, dtype=tf.int64))
    h = hashlib.sha256()
    for name in sorted(out):
        h.update(out[name].numpy().tobytes())
    return h.hexdigest()


@pytest.mark.slow
def test_same_masks_in_a_new_process():
    import os  # pylint: disable=import-outside-toplevel

    script = ("import sys; sys.path[:0] = [sys.argv[1], sys.argv[2]]; "
              "import test_roberta_masking as t; print(t.masks_digest())")
    # The other process with oneDNN's setting flipped: the masks use no oneDNN kernel.
    onednn = os.environ.get("TF_ENABLE_ONEDNN_OPTS", "1")
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3",
               TF_ENABLE_ONEDNN_OPTS="0" if onednn != "0" else "1")
    result = subprocess.run([sys.executable, "-c", script, str(REPO), str(REPO / "tests")],
                            cwd=REPO, env=env, capture_output=True, text=True, check=True)
    assert result.stdout.strip().splitlines()[-1] == masks_digest()
