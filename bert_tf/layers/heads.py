"""The layers of the heads on the encoder: pretraining (masked-LM tied to the word embeddings,
next-sentence) and fine-tuning (classifier, SQuAD span, token tags).

What else a fine-tuning head is (its checkpoint scope, its Hub names, its task name) is declared
in `bert_tf.heads`, under the layer's `kind`. The pretraining heads are named by the pretraining
models that hold them.
"""

import keras
import tensorflow as tf

from bert_tf.layers.activations import get_activation
from bert_tf.layers.initializers import truncated_normal
from bert_tf.layers.layer_norm import LAYER_NORM_EPSILON, layer_norm


def gather_indexes(sequence_tensor, positions):
    """Gathers the vectors at `positions` of every sequence.

    Args: `sequence_tensor` [B, S, H]; `positions` int [B, P].
    Returns: [B * P, H], batch-major, as the original's gather_indexes.
    """
    gathered = tf.gather(sequence_tensor, positions, batch_dims=1)
    return tf.reshape(gathered, [-1, sequence_tensor.shape[-1]])


class MaskedLMHead(keras.layers.Layer):
    """Predicts the original token at each masked position.

    `transform/dense` [H, E] + hidden_act, `transform/LayerNorm`, then logits against the word
    embeddings [V, E] (passed in, so the output projection stays tied) plus `output_bias` [V].
    E is `embedding_size` (default H; ELECTRA's generator maps its hidden size to the shared
    embeddings' width). The logits and log-softmax are float32.
    """

    def __init__(self, vocab_size, hidden_size, hidden_act="gelu", initializer_range=0.02,
                 layer_norm_eps=LAYER_NORM_EPSILON, embedding_size=None, **kwargs):
        super().__init__(**kwargs)
        self.vocab_size = vocab_size
        self.hidden_size = hidden_size
        self.embedding_size = embedding_size or hidden_size
        self.hidden_act = hidden_act
        self.initializer_range = initializer_range
        self.dense = keras.layers.Dense(
            self.embedding_size, activation=get_activation(hidden_act),
            kernel_initializer=truncated_normal(initializer_range), name="transform",
        )
        self.layer_norm_eps = layer_norm_eps
        self.layer_norm = layer_norm("transform_layer_norm", layer_norm_eps)

    def build(self, input_shape=None):
        self.dense.build((None, self.hidden_size))
        self.layer_norm.build((None, self.embedding_size))
        self.output_bias = self.add_weight(
            name="output_bias", shape=(self.vocab_size,), initializer="zeros",
            dtype="float32", autocast=False,
        )
        self.built = True

    def call(self, sequence_output, masked_lm_positions, embedding_table):
        """Args:
          sequence_output: [B, S, H].
          masked_lm_positions: int [B, P].
          embedding_table: the word embeddings [V, E].
        Returns:
          float32 log-probabilities [B * P, V].
        """
        return tf.nn.log_softmax(
            self.logits(sequence_output, masked_lm_positions, embedding_table), axis=-1)

    def logits(self, sequence_output, masked_lm_positions, embedding_table):
        """As `call`, but the float32 logits [B * P, V] before the softmax."""
        x = gather_indexes(sequence_output, masked_lm_positions)
        x = self.layer_norm(self.dense(x))
        x = tf.cast(x, self.compute_dtype)
        logits = tf.matmul(x, tf.cast(embedding_table, self.compute_dtype), transpose_b=True)
        return tf.cast(logits, tf.float32) + self.output_bias

    def get_config(self):
        config = super().get_config()
        config.update(
            vocab_size=self.vocab_size,
            hidden_size=self.hidden_size,
            hidden_act=self.hidden_act,
            initializer_range=self.initializer_range,
            layer_norm_eps=self.layer_norm_eps,
            embedding_size=self.embedding_size,
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


def _output_weights(layer, num_outputs, hidden_size, initializer_range):
    """`output_weights` [num_outputs, H] and `output_bias` [num_outputs], float32, as the
    original's fine-tuning heads create them (the transpose of a Dense kernel)."""
    weights = layer.add_weight(
        name="output_weights", shape=(num_outputs, hidden_size),
        initializer=truncated_normal(initializer_range), dtype="float32", autocast=False,
    )
    bias = layer.add_weight(
        name="output_bias", shape=(num_outputs,), initializer="zeros", dtype="float32",
        autocast=False,
    )
    return weights, bias


class FineTuningHead(keras.layers.Layer):
    """A fine-tuning head: `output_weights`, `output_bias` (float32); `kind` names its
    declaration in `bert_tf.heads.FINE_TUNING_HEADS`."""

    kind = None

    def checkpoint_variables(self, scope):
        """{original name: variable}: `<scope>output_weights`, `<scope>output_bias`."""
        return {f"{scope}output_weights": self.output_weights,
                f"{scope}output_bias": self.output_bias}


class _LabelHead(FineTuningHead):
    """`output_weights` [num_labels, H], `output_bias` [num_labels] and a float32 dropout at
    `dropout_rate` (training only): what the classifier and token-classifier heads share."""

    def __init__(self, num_labels, hidden_size, initializer_range=0.02, dropout_rate=0.1,
                 **kwargs):
        super().__init__(**kwargs)
        self.num_labels = num_labels
        self.hidden_size = hidden_size
        self.initializer_range = initializer_range
        self.dropout_rate = dropout_rate
        self.dropout = keras.layers.Dropout(dropout_rate, dtype="float32")

    def build(self, input_shape=None):
        self.output_weights, self.output_bias = _output_weights(
            self, self.num_labels, self.hidden_size, self.initializer_range)
        self.built = True

    def get_config(self):
        config = super().get_config()
        config.update(num_labels=self.num_labels, hidden_size=self.hidden_size,
                      initializer_range=self.initializer_range, dropout_rate=self.dropout_rate)
        return config


class ClassifierHead(_LabelHead):
    """The original `run_classifier.py` head on the pooled output.

    `output_weights` [num_labels, H] (truncated normal) and `output_bias` [num_labels] (zeros),
    at the top level of the checkpoint. In training, dropout at `dropout_rate` on the pooled
    output: the original fixes it at 0.1 whatever the config says. Float32 throughout (it is
    tiny, and the softmax must not run in a low precision).

    Called with the encoder's outputs dict; returns float32 `logits`, `log_probs` and
    `probabilities`, each [B, num_labels].
    """

    kind = "classifier"

    def call(self, encoder_outputs, training=False):
        pooled = tf.cast(encoder_outputs["pooled_output"], tf.float32)
        pooled = self.dropout(pooled, training=training)
        logits = tf.matmul(pooled, self.output_weights, transpose_b=True) + self.output_bias
        return {
            "logits": logits,
            "log_probs": tf.nn.log_softmax(logits, axis=-1),
            "probabilities": tf.nn.softmax(logits, axis=-1),
        }


class SpanHead(FineTuningHead):
    """The original `run_squad.py` head: start and end logits at every position.

    `output_weights` [2, H] and `output_bias` [2] (checkpoint names `cls/squad/...`); no
    dropout, no masking of padding positions (as the original). Float32.

    Called with the encoder's outputs dict; returns float32 `start_logits`, `end_logits`
    [B, S].
    """

    kind = "squad"

    def __init__(self, hidden_size, initializer_range=0.02, **kwargs):
        super().__init__(**kwargs)
        self.hidden_size = hidden_size
        self.initializer_range = initializer_range

    def build(self, input_shape=None):
        self.output_weights, self.output_bias = _output_weights(
            self, 2, self.hidden_size, self.initializer_range)
        self.built = True

    def call(self, encoder_outputs, training=False):
        sequence = tf.cast(encoder_outputs["sequence_output"], tf.float32)
        logits = tf.einsum("bsh,nh->nbs", sequence, self.output_weights)
        return {
            "start_logits": logits[0] + self.output_bias[0],
            "end_logits": logits[1] + self.output_bias[1],
        }

    def get_config(self):
        config = super().get_config()
        config.update(hidden_size=self.hidden_size, initializer_range=self.initializer_range)
        return config


class TokenClassifierHead(_LabelHead):
    """A tag for every position (token classification, e.g. NER); not in the original.

    `output_weights` [num_labels, H] and `output_bias` [num_labels], saved as
    `bert_tf/tagging/output_weights` and `bert_tf/tagging/output_bias` (a scope no original
    checkpoint holds, so a released or classifier checkpoint never fills them by accident).
    In training, dropout at `dropout_rate` on the sequence output. Float32.

    Called with the encoder's outputs dict; returns float32 `logits` and `log_probs`
    [B, S, num_labels].
    """

    kind = "tagging"

    def call(self, encoder_outputs, training=False):
        sequence = tf.cast(encoder_outputs["sequence_output"], tf.float32)
        sequence = self.dropout(sequence, training=training)
        logits = tf.einsum("bsh,nh->bsn", sequence, self.output_weights) + self.output_bias
        return {"logits": logits, "log_probs": tf.nn.log_softmax(logits, axis=-1)}

