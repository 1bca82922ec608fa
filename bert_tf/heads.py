"""The pretraining heads: masked-LM (tied to the word embeddings) and next-sentence prediction."""

import keras
import tensorflow as tf

from bert_tf.layers.activations import get_activation
from bert_tf.layers.initializers import truncated_normal
from bert_tf.layers.layer_norm import layer_norm


def gather_indexes(sequence_tensor, positions):
    """Gathers the vectors at `positions` of every sequence.

    Args: `sequence_tensor` [B, S, H]; `positions` int [B, P].
    Returns: [B * P, H], batch-major, as the original's gather_indexes.
    """
    gathered = tf.gather(sequence_tensor, positions, batch_dims=1)
    return tf.reshape(gathered, [-1, sequence_tensor.shape[-1]])


class MaskedLMHead(keras.layers.Layer):
    """Predicts the original token at each masked position.

    `transform/dense` [H, H] + hidden_act, `transform/LayerNorm`, then logits against the word
    embeddings (passed in, so the output projection stays tied) plus `output_bias` [V].
    The logits and log-softmax are float32.
    """

    def __init__(self, vocab_size, hidden_size, hidden_act="gelu", initializer_range=0.02, **kwargs):
        super().__init__(**kwargs)
        self.vocab_size = vocab_size
        self.hidden_size = hidden_size
        self.hidden_act = hidden_act
        self.initializer_range = initializer_range
        self.dense = keras.layers.Dense(
            hidden_size, activation=get_activation(hidden_act),
            kernel_initializer=truncated_normal(initializer_range), name="transform",
        )
        self.layer_norm = layer_norm("transform_layer_norm")

    def build(self, input_shape=None):
        self.dense.build((None, self.hidden_size))
        self.layer_norm.build((None, self.hidden_size))
        self.output_bias = self.add_weight(
            name="output_bias", shape=(self.vocab_size,), initializer="zeros",
            dtype="float32", autocast=False,
        )
        self.built = True

    def call(self, sequence_output, masked_lm_positions, embedding_table):
        """Args:
          sequence_output: [B, S, H].
          masked_lm_positions: int [B, P].
          embedding_table: the word embeddings [V, H].
        Returns:
          float32 log-probabilities [B * P, V].
        """
        x = gather_indexes(sequence_output, masked_lm_positions)
        x = self.layer_norm(self.dense(x))
        x = tf.cast(x, self.compute_dtype)
        logits = tf.matmul(x, tf.cast(embedding_table, self.compute_dtype), transpose_b=True)
        logits = tf.cast(logits, tf.float32) + self.output_bias
        return tf.nn.log_softmax(logits, axis=-1)

    def get_config(self):
        config = super().get_config()
        config.update(
            vocab_size=self.vocab_size,
            hidden_size=self.hidden_size,
            hidden_act=self.hidden_act,
            initializer_range=self.initializer_range,
        )
        return config


class NextSentenceHead(keras.layers.Layer):
    """Is-next classifier on the pooled output.

    Weights as in the original checkpoint: `output_weights` [2, H] (the transpose of a Dense
    kernel) and `output_bias` [2]. Computed in float32: it is tiny.
    """

    def __init__(self, hidden_size, initializer_range=0.02, **kwargs):
        super().__init__(**kwargs)
        self.hidden_size = hidden_size
        self.initializer_range = initializer_range

    def build(self, input_shape=None):
        self.output_weights = self.add_weight(
            name="output_weights", shape=(2, self.hidden_size),
            initializer=truncated_normal(self.initializer_range), dtype="float32", autocast=False,
        )
        self.output_bias = self.add_weight(
            name="output_bias", shape=(2,), initializer="zeros", dtype="float32", autocast=False,
        )
        self.built = True

    def call(self, pooled_output):
        """[B, H] -> float32 log-probabilities [B, 2]; class 0 = IsNext, 1 = random."""
        logits = tf.matmul(tf.cast(pooled_output, tf.float32), self.output_weights, transpose_b=True)
        return tf.nn.log_softmax(logits + self.output_bias, axis=-1)

    def get_config(self):
        config = super().get_config()
        config.update(hidden_size=self.hidden_size, initializer_range=self.initializer_range)
        return config
