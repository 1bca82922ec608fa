"""RoBERTa's dynamic masking: fresh masked-LM masks every epoch, drawn from (seed, epoch, index).

RoBERTa (Liu et al. 2019, §4.1) masks each training sequence anew every time it is read instead
of once when the data is made. fairseq does it in `MaskTokensDataset` (v0.12.2), with the
arguments of its `masked_lm` task for RoBERTa (mask_prob 0.15, leave_unmasked_prob 0.1,
random_token_prob 0.1, no whole-word masking, no frequency-weighted replacement). For one sample
`item` (the record without its padding: `<s>` block, so n = the number of non-pad tokens), with
numpy's generator seeded from hash((seed, epoch, index)):

  1. num_mask = int(mask_prob * n + U), U uniform in [0, 1): probabilistic rounding, so the
     expected count is exactly mask_prob * n. Every real position counts, `<s>` and `</s>`
     included (fairseq draws over `range(len(item))`, after `PrependTokenDataset` put `<s>`
     first): they can be masked and predicted like any token. Padding is never a position.
  2. num_mask positions are drawn uniformly without replacement among the n.
  3. Each drawn position independently stays unchanged with probability leave_unmasked_prob,
     gets a random token with probability random_token_prob, and `<mask>` otherwise (80/10/10;
     fairseq draws two uniforms per position, `rand < 0.2` then `rand < 0.5`, which is the same
     distribution as our one uniform against 0.1 and 0.2).
  4. A random token is uniform over the vocabulary but the special tokens (fairseq: weights 0
     for its dictionary's `nspecial` first symbols `<s>`, `<pad>`, `</s>`, `<unk>`). It may equal
     the token it replaces.
  5. Every drawn position is a target (the unchanged and random ones too): the loss is the mean
     cross-entropy over all drawn positions of the batch.

Here the same rule runs in TensorFlow, on one sequence at a time (a tf.data map before
batching) or on a batch (`tf.map_fn` over its rows), with stateless random ops whose seed is
folded from (seed, epoch, index): the masks of a record depend on nothing else (not the batch it
lands in, the replica, the number of workers or the order of reading), so an input pipeline that
saves its iterator with a checkpoint resumes with exactly the masks it would have drawn.

Differences from fairseq (the rule is the same; the draws are not):
  * The random numbers: TensorFlow's Philox (stateless, `alg` pinned so no device picks another
    generator) seeded by folding epoch and index into [0, seed], not numpy's Mersenne twister
    seeded with `hash((seed, epoch, index)) % 1e6`. Same distributions, other values.
  * `<mask>` is never a random token. fairseq's weights zero only its four constructor specials;
    `<mask>` (added by the task after the dictionary is read) keeps weight 1, so 1 in ~50,261
    of its random replacements is `<mask>`. The issue asks for random tokens that are never
    special, and a random `<mask>` is indistinguishable from the 80% branch. The
    `madeupword000k` fillers fairseq pads its dictionary with are ordinary entries there and here.
  * Labels are BERT's fixed-size `masked_lm_positions` / `masked_lm_ids` / `masked_lm_weights`
    [P] (P = `max_predictions_per_seq`), so RoBERTa reuses BERT's masked-LM head (which gathers
    the P positions) and its loss (sum of weight x cross-entropy / sum of weights = fairseq's
    mean over masked tokens), instead of fairseq's [S] targets with `<pad>` where unmasked. P
    must hold the largest count the rule can give at n = max_seq_length; `max_predictions`
    says which (77 for 512), and a smaller P is refused rather than silently truncating.
"""

import math

import numpy as np
import tensorflow as tf

from bert_tf.roberta import tokenization

# fairseq's masked_lm task defaults, which RoBERTa's recipe keeps.
MASK_PROB = 0.15
LEAVE_UNMASKED_PROB = 0.1
RANDOM_TOKEN_PROB = 0.1

# Pinned so the masks of a record are the same on every device and TensorFlow build
# ("auto_select" may pick another generator on GPU/TPU).
_ALG = "philox"
# Sub-streams of one example's seed: the count, the positions, the 80/10/10 choice, the tokens.
_COUNT, _POSITIONS, _KIND, _TOKENS = range(4)


class MaskingError(ValueError):
    """Masking options that cannot work (named by their flag)."""


def max_predictions(max_seq_length, mask_prob=MASK_PROB):
    """The smallest `max_predictions_per_seq` that holds every count the rule can give a
    sequence of at most `max_seq_length` real tokens: floor(mask_prob * max_seq_length) + 1.

    int(x + U) with U in [0, 1) is floor(x) or floor(x) + 1, and x = mask_prob * n grows with n.
    When x is whole the true maximum is x, but the float64 sum x + U can round up to x + 1
    (U's largest value is 1 - 2**-52), so floor(x) + 1 is the bound that holds for the
    arithmetic actually done: 77 for 512 (0.15 * 512 = 76.8), 20 for 128 (19.2).
    """
    return int(math.floor(mask_prob * max_seq_length)) + 1


def example_seed(seed, epoch, index):
    """The stateless seed (int64 [2]) of one example's masks: epoch, then index, folded into
    [0, seed] with Philox. `seed` is a Python int (the run's --seed); `epoch` and `index` int
    scalars (tensors or ints)."""
    base = tf.constant([0, seed], tf.int64)
    folded = tf.random.experimental.stateless_fold_in(
        base, tf.cast(epoch, tf.int64), alg=_ALG)
    return tf.random.experimental.stateless_fold_in(
        folded, tf.cast(index, tf.int64), alg=_ALG)


class DynamicMasking:
    """fairseq's MaskTokensDataset rule on RoBERTa records, deterministic in (seed, epoch, index).

    Args:
      mask_id, pad_id: the ids of `<mask>` and `<pad>`.
      random_token_ids: the ids a random replacement is drawn from, uniformly (the vocabulary
        without its special tokens: `for_vocab` builds it).
      max_seq_length: S, the records' length.
      seed: the run's seed (a Python int >= 0).
      max_predictions_per_seq: P, the size of the label features; default `max_predictions(S,
        mask_prob)`, the smallest that always suffices (a smaller one is refused).
      mask_prob, leave_unmasked_prob, random_token_prob: fairseq's arguments.

    Call with int `input_ids` [S] (one record) or [B, S] (a batch), and int `epoch`, `index`
    (scalars, or [B] for a batch; a scalar epoch is shared by the batch). Returns a dict:
      input_ids            int32 [..., S]  the masked sequence
      input_mask           int32 [..., S]  1 for real tokens (input_ids != pad_id)
      segment_ids          int32 [..., S]  zeros (RoBERTa has one segment)
      masked_lm_positions  int32 [..., P]  the drawn positions, ascending, then 0
      masked_lm_ids        int32 [..., P]  the original tokens there, then 0
      masked_lm_weights    float32 [..., P] 1 for the drawn positions, then 0
    """

    def __init__(self, mask_id, pad_id, random_token_ids, max_seq_length, seed,
                 max_predictions_per_seq=None, mask_prob=MASK_PROB,
                 leave_unmasked_prob=LEAVE_UNMASKED_PROB, random_token_prob=RANDOM_TOKEN_PROB):
        # fairseq's own checks (MaskTokensDataset.__init__), as one-line errors naming the flag.
        if not 0.0 < mask_prob < 1.0:
            raise MaskingError(f"--mask_prob={mask_prob}: expected 0 < mask_prob < 1")
        for flag, value in (("--leave_unmasked_prob", leave_unmasked_prob),
                            ("--random_token_prob", random_token_prob)):
            if not 0.0 <= value <= 1.0:
                raise MaskingError(f"{flag}={value}: expected a probability in [0, 1]")
        if leave_unmasked_prob + random_token_prob > 1.0:
            raise MaskingError(
                f"--leave_unmasked_prob={leave_unmasked_prob} + --random_token_prob="
                f"{random_token_prob} exceed 1")
        if not isinstance(max_seq_length, int) or max_seq_length < 1:
            raise MaskingError(f"--max_seq_length={max_seq_length}: expected a positive integer")
        if not isinstance(seed, (int, np.integer)) or not 0 <= seed < 2**63:
            raise MaskingError(f"--seed={seed}: expected an integer in [0, 2**63)")
        needed = max_predictions(max_seq_length, mask_prob)
        if max_predictions_per_seq is None:
            max_predictions_per_seq = needed
        if max_predictions_per_seq < needed:
            raise MaskingError(
                f"--max_predictions_per_seq={max_predictions_per_seq} is too small: "
                f"int({mask_prob} * n + U) reaches {needed} at --max_seq_length="
                f"{max_seq_length}; use at least {needed}")
        if max_predictions_per_seq > max_seq_length:
            raise MaskingError(f"--max_predictions_per_seq={max_predictions_per_seq} exceeds "
                               f"--max_seq_length={max_seq_length}")
        random_token_ids = sorted({int(i) for i in random_token_ids})
        if random_token_prob > 0 and not random_token_ids:
            raise MaskingError("no token to draw random replacements from: the vocabulary "
                               "holds only special tokens")
        if mask_id in random_token_ids or pad_id in random_token_ids:
            raise MaskingError(f"random_token_ids holds the mask id {mask_id} or the pad id "
                               f"{pad_id}: random tokens are never special")
        self.mask_id = int(mask_id)
        self.pad_id = int(pad_id)
        self.random_token_ids = random_token_ids
        self.max_seq_length = max_seq_length
        self.max_predictions_per_seq = int(max_predictions_per_seq)
        self.seed = int(seed)
        self.mask_prob = float(mask_prob)
        self.leave_unmasked_prob = float(leave_unmasked_prob)
        self.random_token_prob = float(random_token_prob)
        # A batch is masked row by row in a while loop: compiled, so an eager call does not
        # run the loop op by op from Python (inside a tf.function or tf.data it is inlined).
        self._mask_batch = tf.function(self._mask_rows)

    @classmethod
    def for_vocab(cls, vocab, max_seq_length, seed, special_tokens=tokenization.SPECIAL_TOKENS,
                  **kwargs):
        """The masking of a RoBERTa vocabulary ({token: id}, e.g. `RobertaTokenizer.vocab`):
        `<mask>` and `<pad>` by name, random tokens = every id of the vocabulary but those of
        its special tokens (`<s>`, `<pad>`, `</s>`, `<unk>`, `<mask>`). Other arguments as
        the constructor's."""
        names = tokenization.special_token_names(special_tokens)
        missing = [name for name in names if name not in vocab]
        if missing:
            raise MaskingError(f"--vocab_file: the vocabulary has no {', '.join(missing)} entry")
        special_ids = {vocab[name] for name in names}
        random_ids = [i for i in vocab.values() if i not in special_ids]
        return cls(vocab[special_tokens.mask], vocab[special_tokens.pad], random_ids,
                   max_seq_length, seed, **kwargs)

    def __call__(self, input_ids, epoch, index):
        input_ids = tf.convert_to_tensor(input_ids)
        if input_ids.shape.rank == 1:
            return self.mask_sequence(input_ids, example_seed(self.seed, epoch, index))
        if input_ids.shape.rank != 2:
            raise ValueError(f"DynamicMasking: input_ids must be [S] or [B, S], got shape "
                             f"{input_ids.shape}")
        # As tensors, so that new epochs and indexes do not trace the function again.
        return self._mask_batch(input_ids, tf.cast(epoch, tf.int64), tf.cast(index, tf.int64))

    def _mask_rows(self, input_ids, epoch, index):
        batch_size = tf.shape(input_ids)[0]
        epoch = tf.broadcast_to(tf.cast(epoch, tf.int64), [batch_size])
        index = tf.broadcast_to(tf.cast(index, tf.int64), [batch_size])
        seq, preds = self.max_seq_length, self.max_predictions_per_seq
        signature = {
            "input_ids": tf.TensorSpec([seq], tf.int32),
            "input_mask": tf.TensorSpec([seq], tf.int32),
            "segment_ids": tf.TensorSpec([seq], tf.int32),
            "masked_lm_positions": tf.TensorSpec([preds], tf.int32),
            "masked_lm_ids": tf.TensorSpec([preds], tf.int32),
            "masked_lm_weights": tf.TensorSpec([preds], tf.float32),
        }
        # One row at a time: stateless ops take one seed per call, and a row's masks must not
        # depend on the batch it is in.
        return tf.map_fn(
            lambda row: self.mask_sequence(row[0], example_seed(self.seed, row[1], row[2])),
            (input_ids, epoch, index), fn_output_signature=signature)

    def mask_sequence(self, input_ids, seed):
        """The masks of one sequence (int [S]) drawn from a stateless seed (int64 [2]); the
        dict of `__call__` for one record."""
        seq, preds = self.max_seq_length, self.max_predictions_per_seq
        input_ids = tf.ensure_shape(tf.cast(input_ids, tf.int32), [seq])

        def substream(k):
            return tf.random.experimental.stateless_fold_in(seed, tf.constant(k, tf.int64),
                                                            alg=_ALG)

        real = tf.not_equal(input_ids, self.pad_id)
        num_real = tf.reduce_sum(tf.cast(real, tf.int32))
        # 1. int(mask_prob * n + U), in float64 as fairseq (numpy) computes it.
        u = tf.random.stateless_uniform([], substream(_COUNT), dtype=tf.float64, alg=_ALG)
        count = tf.cast(tf.floor(self.mask_prob * tf.cast(num_real, tf.float64) + u), tf.int32)
        # Never binds: the constructor checked P >= max_predictions(S), the largest count.
        count = tf.minimum(count, preds)
        # 2. A uniform random order of the real positions (i.i.d. keys, padding last), of
        # which the first `count` are drawn: a uniform subset without replacement. float64
        # keys have 52 random bits, so ties (which top_k breaks by position) have probability
        # below S**2 / 2**53 per sequence.
        keys = tf.random.stateless_uniform([seq], substream(_POSITIONS), dtype=tf.float64,
                                           alg=_ALG)
        keys = tf.where(real, keys, -1.0)
        _, order = tf.math.top_k(keys, k=preds)
        drawn = tf.range(preds) < count
        positions = tf.sort(tf.where(drawn, order, seq))  # ascending, unused slots last
        positions = tf.where(drawn, positions, 0)
        originals = tf.gather(input_ids, positions)
        # 3. 80/10/10 for each drawn position: unchanged below leave_unmasked_prob, a random
        # token below leave_unmasked_prob + random_token_prob, else <mask>.
        kind = tf.random.stateless_uniform([preds], substream(_KIND), dtype=tf.float64,
                                           alg=_ALG)
        keep = kind < self.leave_unmasked_prob
        random = ~keep & (kind < self.leave_unmasked_prob + self.random_token_prob)
        # 4. Uniform over the non-special ids (int64 draws: the modulo bias of an int draw is
        # below size / 2**64).
        if self.random_token_ids:
            candidates = tf.constant(self.random_token_ids, tf.int32)
            pick = tf.random.stateless_uniform(
                [preds], substream(_TOKENS), minval=0, maxval=len(self.random_token_ids),
                dtype=tf.int64, alg=_ALG)
            random_tokens = tf.gather(candidates, pick)
        else:  # random_token_prob == 0: the branch is never taken
            random_tokens = tf.fill([preds], self.mask_id)
        replaced = tf.where(keep, originals, tf.where(random, random_tokens, self.mask_id))
        # Write the replacements as differences, so the unused slots (position 0, difference
        # 0) add nothing even where position 0 was drawn.
        delta = tf.where(drawn, replaced - originals, 0)
        masked = input_ids + tf.scatter_nd(positions[:, None], delta, [seq])
        int_drawn = tf.cast(drawn, tf.int32)
        return {
            "input_ids": masked,
            "input_mask": tf.cast(real, tf.int32),
            "segment_ids": tf.zeros([seq], tf.int32),
            "masked_lm_positions": positions,
            "masked_lm_ids": originals * int_drawn,
            "masked_lm_weights": tf.cast(drawn, tf.float32),
        }
