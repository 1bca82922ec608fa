"""ELECTRA's dynamic masking and generator sampling, in the graph (google-research/electra's
`pretrain/pretrain_helpers.py`).

Per example, `num_to_predict` = int(round(sum(input_mask) * mask_prob)) clipped to
[1, max_predictions_per_seq]; that many positions are drawn with replacement, uniformly among the
candidates (real tokens other than [CLS], [SEP] and [MASK]), by one categorical draw of
max_predictions_per_seq positions of which the first `num_to_predict` count; 85% of the drawn
positions get [MASK], the others keep their token (there is no random-token branch).
`scatter_update` writes into a sequence as the original does: position 0 is never written, and a
position drawn several times receives the floor of the mean of its integer updates.

Every random number comes from a `RandomDraws` layer (a Keras seed generator, so the trainer
saves and restores its state with a checkpoint); tests substitute fixed draws.
"""

import keras
import tensorflow as tf

# The share of drawn positions that become [MASK].
MASK_TOKEN_PROB = 0.85
# The original's guards in its Gumbel noise -log(-log(u + eps) + eps).
_GUMBEL_EPS = 1e-9


class RandomDraws(keras.layers.Layer):
    """The source of the random numbers of masking and sampling: stateless draws whose seeds come
    from the layer's `keras.random.SeedGenerator` (its state is saved with checkpoints). Under a
    strategy with several replicas, each replica folds its replica id into the seed, so the
    replicas' examples get independent masks and samples.

    Args:
      seed: optional int seed of the seed generator.
    """

    def __init__(self, seed=None, **kwargs):
        super().__init__(**kwargs)
        self.seed = seed
        self.seed_generator = keras.random.SeedGenerator(seed)

    def _next_seed(self):
        """int32 [2]."""
        seed = self.seed_generator.next()
        seed = tf.cast(tf.math.floormod(seed, tf.int32.max - 1), tf.int32)
        ctx = tf.distribute.get_replica_context()
        if ctx is not None and ctx.num_replicas_in_sync > 1:
            seed = tf.random.experimental.stateless_fold_in(
                seed, tf.cast(ctx.replica_id_in_sync_group, tf.int32))
        return seed

    def categorical(self, logits, num_samples):
        """int32 [B, num_samples] draws (with replacement) from float32 logits [B, C]."""
        return tf.random.stateless_categorical(logits, num_samples, seed=self._next_seed(),
                                               dtype=tf.int32)

    def uniform(self, shape):
        """float32 uniform [0, 1) of `shape`."""
        return tf.random.stateless_uniform(shape, seed=self._next_seed(), dtype=tf.float32)

    def get_config(self):
        config = super().get_config()
        config.update(seed=self.seed)
        return config


def num_to_predict(input_mask, mask_prob, max_predictions_per_seq):
    """int32 [B]: how many positions of each example are masked (the original's formula).

    Args:
      input_mask: int [B, S], 1 for real tokens ([CLS] and [SEP] count).
    """
    num_tokens = tf.cast(tf.reduce_sum(tf.cast(input_mask, tf.int32), -1), tf.float32)
    count = tf.cast(tf.round(num_tokens * mask_prob), tf.int32)
    return tf.maximum(1, tf.minimum(max_predictions_per_seq, count))


def masked_lm_weight_sum(input_mask, mask_prob, max_predictions_per_seq):
    """float32 scalar: the sum of the masked-LM weights masking will give `input_mask`'s batch
    (known before drawing, so the trainer can all-reduce it as a loss normaliser)."""
    return tf.cast(tf.reduce_sum(num_to_predict(input_mask, mask_prob, max_predictions_per_seq)),
                   tf.float32)


def candidates_mask(input_ids, input_mask, special_ids):
    """bool [B, S]: the positions that may be masked: real tokens not in `special_ids`
    (the ids of [SEP], [CLS] and [MASK])."""
    mask = tf.cast(input_mask, tf.bool)
    for token_id in special_ids:
        mask &= tf.not_equal(input_ids, token_id)
    return mask


def scatter_update(sequence, updates, positions):
    """Writes `updates` [B, N] at `positions` [B, N] of the int sequence [B, S].

    Updates to position 0 are dropped; a position given k times receives the floor of the mean
    of its k updates. Returns (the updated int32 sequence [B, S], int32 [B, S] 1 where written).
    """
    sequence = tf.cast(sequence, tf.int32)
    batch_size = tf.shape(sequence)[0]
    seq_length = sequence.shape[1] if sequence.shape[1] is not None else tf.shape(sequence)[1]
    num_positions = tf.shape(positions)[1]
    batch_index = tf.repeat(tf.range(batch_size)[:, None], num_positions, axis=1)
    index = tf.stack([batch_index, tf.cast(positions, tf.int32)], axis=-1)
    shape = tf.stack([batch_size, seq_length])
    sums = tf.scatter_nd(index, tf.cast(updates, tf.int32), shape)
    counts = tf.scatter_nd(index, tf.ones_like(positions, tf.int32), shape)
    not_first = tf.concat([tf.zeros_like(counts[:, :1]), tf.ones_like(counts[:, 1:])], axis=1)
    counts *= not_first
    values = tf.math.floordiv(sums, tf.maximum(1, counts))
    written = tf.minimum(counts, 1)
    return (1 - written) * sequence + written * values, written


def mask(input_ids, input_mask, draws, *, mask_id, special_ids, mask_prob,
         max_predictions_per_seq):
    """The original's `pretrain_helpers.mask` (uniform proposal).

    Args:
      input_ids, input_mask: int [B, S].
      draws: a `RandomDraws`.
      mask_id: the id of [MASK].
      special_ids: ids never masked ([SEP], [CLS], [MASK]).
      mask_prob: the share of real tokens to mask.
      max_predictions_per_seq: N.
    Returns:
      dict: `input_ids` int32 [B, S] (with [MASK]s), `masked_lm_positions` int32 [B, N] (0 beyond
      the example's count), `masked_lm_ids` int32 [B, N] (0 beyond it), `masked_lm_weights`
      float32 [B, N] (1 for the first `num_to_predict` entries).
    """
    input_ids = tf.cast(input_ids, tf.int32)
    n = max_predictions_per_seq
    batch_size = tf.shape(input_ids)[0]
    candidates = tf.cast(candidates_mask(input_ids, input_mask, special_ids), tf.float32)
    count = num_to_predict(input_mask, mask_prob, n)
    weights = tf.cast(tf.sequence_mask(count, n), tf.float32)
    total = tf.reduce_sum(candidates, axis=-1, keepdims=True)
    # An example without a candidate (the original divides 0 by 0 there) predicts nothing.
    has_candidate = total > 0
    probs = tf.where(has_candidate, candidates / tf.where(has_candidate, total, 1.0), 1.0)
    weights *= tf.cast(has_candidate, tf.float32)
    positions = draws.categorical(tf.math.log(probs), n)
    int_weights = tf.cast(weights, tf.int32)
    positions *= int_weights
    masked_lm_ids = tf.gather(input_ids, positions, batch_dims=1) * int_weights
    to_mask = tf.cast(draws.uniform(tf.stack([batch_size, n])) < MASK_TOKEN_PROB, tf.int32)
    masked_ids, _ = scatter_update(input_ids, tf.fill(tf.shape(positions), mask_id),
                                   positions * to_mask)
    return {
        "input_ids": tf.stop_gradient(masked_ids),
        "masked_lm_positions": positions,
        "masked_lm_ids": masked_lm_ids,
        "masked_lm_weights": weights,
    }


def sample_from_softmax(logits, draws, disallow=None):
    """Gumbel-max sampling as the original: argmax(softmax(logits + g)) with
    g = -log(-log(u + 1e-9) + 1e-9), u uniform.

    Args:
      logits: float32 [..., V].
      draws: a `RandomDraws`.
      disallow: optional float [..., V], 1 for tokens to avoid (their logits lose 1000).
    Returns:
      int32 [...]: the sampled ids.
    """
    if disallow is not None:
        logits -= 1000.0 * disallow
    noise = draws.uniform(tf.shape(logits))
    gumbel = -tf.math.log(-tf.math.log(noise + _GUMBEL_EPS) + _GUMBEL_EPS)
    return tf.argmax(tf.nn.softmax(logits + gumbel), axis=-1, output_type=tf.int32)
