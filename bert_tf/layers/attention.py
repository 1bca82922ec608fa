"""Multi-head self-attention built from Dense layers with the original [H, H] kernels."""

import math

import keras
import tensorflow as tf

from bert_tf.layers.checkpoint_names import dense_variables
from bert_tf.layers.dense import Dense
from bert_tf.layers.initializers import truncated_normal

# Added to the scores of padded keys: the original's constant, which makes their softmax weight
# exactly 0 in float32 while staying finite in float16.
MASK_ADDER = -10000.0


def attention_mask_adder(input_mask):
    """Turns `input_mask` int [B, S] (1 = real token) into float32 [B, 1, 1, S] to add to scores.

    Built from the integer mask inside each attention layer, so that Keras' autocasting of
    float arguments never rounds it to bfloat16/float16.
    """
    mask = tf.cast(input_mask, tf.float32)
    return (1.0 - mask)[:, tf.newaxis, tf.newaxis, :] * MASK_ADDER


class SelfAttention(keras.layers.Layer):
    """Scaled dot-product self-attention over A heads of size d = H / A.

    Weights (original names under `attention/self/`): `query`, `key`, `value`, each a Dense
    with kernel [H, H] and bias [H]; head h uses kernel columns h*d .. (h+1)*d, as in the
    original, so a checkpoint maps onto these kernels without any reshape.
    Scores and softmax run in float32 under mixed precision.
    """

    def __init__(
        self,
        hidden_size,
        num_attention_heads,
        attention_probs_dropout_prob,
        initializer_range,
        **kwargs,
    ):
        super().__init__(**kwargs)
        if hidden_size % num_attention_heads:
            raise ValueError(
                f"hidden_size ({hidden_size}) must be divisible by num_attention_heads "
                f"({num_attention_heads})"
            )
        self.hidden_size = hidden_size
        self.num_attention_heads = num_attention_heads
        self.attention_head_size = hidden_size // num_attention_heads
        self.attention_probs_dropout_prob = attention_probs_dropout_prob
        self.initializer_range = initializer_range
        self.query, self.key, self.value = (
            Dense(
                hidden_size, kernel_initializer=truncated_normal(initializer_range), name=name)
            for name in ("query", "key", "value")
        )
        self.dropout = keras.layers.Dropout(attention_probs_dropout_prob)

    def build(self, input_shape=None):
        for dense in (self.query, self.key, self.value):
            dense.build((None, None, self.hidden_size))
        self.built = True

    def _split_heads(self, x):
        """[B, S, H] -> [B, A, S, d]."""
        batch_size, seq_length = tf.shape(x)[0], tf.shape(x)[1]
        x = tf.reshape(
            x, [batch_size, seq_length, self.num_attention_heads, self.attention_head_size]
        )
        return tf.transpose(x, [0, 2, 1, 3])

    def call(self, hidden_states, input_mask, training=False):
        """Args:
          hidden_states: [B, S, H].
          input_mask: int [B, S], 1 for real tokens, 0 for padding (keys never attended to).
        Returns:
          The per-head contexts concatenated: [B, S, H] in the compute dtype.
        """
        query = self._split_heads(self.query(hidden_states))
        key = self._split_heads(self.key(hidden_states))
        value = self._split_heads(self.value(hidden_states))
        scores = tf.matmul(query, key, transpose_b=True)
        scores = tf.cast(scores, tf.float32) * (1.0 / math.sqrt(self.attention_head_size))
        probs = tf.nn.softmax(scores + attention_mask_adder(input_mask), axis=-1)
        probs = self.dropout(probs, training=training)
        context = tf.matmul(tf.cast(probs, value.dtype), value)  # [B, A, S, d]
        context = tf.transpose(context, [0, 2, 1, 3])
        batch_size, seq_length = tf.shape(context)[0], tf.shape(context)[1]
        return tf.reshape(context, [batch_size, seq_length, self.hidden_size])

    def checkpoint_variables(self, scope):
        """{original name: variable} under `scope` (e.g. `bert/encoder/layer_0/attention/self`)."""
        return {**dense_variables(f"{scope}/query", self.query),
                **dense_variables(f"{scope}/key", self.key),
                **dense_variables(f"{scope}/value", self.value)}

    def get_config(self):
        config = super().get_config()
        config.update(
            hidden_size=self.hidden_size,
            num_attention_heads=self.num_attention_heads,
            attention_probs_dropout_prob=self.attention_probs_dropout_prob,
            initializer_range=self.initializer_range,
        )
        return config
