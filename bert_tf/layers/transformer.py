"""One post-LN transformer block of the BERT encoder."""

import keras
import tensorflow as tf

from bert_tf.layers.activations import get_activation
from bert_tf.layers.attention import SelfAttention
from bert_tf.layers.checkpoint_names import dense_variables, layer_norm_variables
from bert_tf.layers.dense import Dense
from bert_tf.layers.initializers import truncated_normal
from bert_tf.layers.layer_norm import LAYER_NORM_EPSILON, layer_norm


class TransformerBlock(keras.layers.Layer):
    """`a = LN(x + drop(dense(attn(x))))`, `y = LN(a + drop(dense(act(dense(a)))))`.

    Sublayers and their original names relative to `bert/encoder/layer_N/` (see
    `checkpoint_variables`): `self_attention` = `attention/self`, `attention_output` =
    `attention/output/dense`, `attention_layer_norm` = `attention/output/LayerNorm`,
    `intermediate` = `intermediate/dense`, `output_dense` = `output/dense`,
    `output_layer_norm` = `output/LayerNorm`.
    The residual sums run in float32, where the LayerNorms are.
    """

    def __init__(
        self,
        hidden_size,
        num_attention_heads,
        intermediate_size,
        hidden_act="gelu",
        hidden_dropout_prob=0.1,
        attention_probs_dropout_prob=0.1,
        initializer_range=0.02,
        layer_norm_eps=LAYER_NORM_EPSILON,
        **kwargs,
    ):
        super().__init__(**kwargs)
        self.hidden_size = hidden_size
        self.num_attention_heads = num_attention_heads
        self.intermediate_size = intermediate_size
        self.hidden_act = hidden_act
        self.hidden_dropout_prob = hidden_dropout_prob
        self.attention_probs_dropout_prob = attention_probs_dropout_prob
        self.initializer_range = initializer_range
        self.layer_norm_eps = layer_norm_eps
        self.activation = get_activation(hidden_act)
        self.self_attention = SelfAttention(
            hidden_size, num_attention_heads, attention_probs_dropout_prob, initializer_range,
            name="self_attention",
        )
        self.attention_output = Dense(
            hidden_size, kernel_initializer=truncated_normal(initializer_range),
            name="attention_output"
        )
        self.attention_layer_norm = layer_norm("attention_layer_norm", layer_norm_eps)
        self.intermediate = Dense(
            intermediate_size, kernel_initializer=truncated_normal(initializer_range),
            name="intermediate"
        )
        self.output_dense = Dense(
            hidden_size, kernel_initializer=truncated_normal(initializer_range), name="output"
        )
        self.output_layer_norm = layer_norm("output_layer_norm", layer_norm_eps)
        self.dropout = keras.layers.Dropout(hidden_dropout_prob)

    def build(self, input_shape=None):
        hidden = (None, None, self.hidden_size)
        self.self_attention.build(hidden)
        self.attention_output.build(hidden)
        self.attention_layer_norm.build(hidden)
        self.intermediate.build(hidden)
        self.output_dense.build((None, None, self.intermediate_size))
        self.output_layer_norm.build(hidden)
        self.built = True

    def call(self, hidden_states, input_mask, training=False):
        """Args: `hidden_states` [B, S, H]; `input_mask` int [B, S], 1 for real tokens.

        Returns [B, S, H] in the compute dtype.
        """
        attention = self.self_attention(hidden_states, input_mask, training=training)
        attention = self.dropout(self.attention_output(attention), training=training)
        attention = self.attention_layer_norm(
            tf.cast(attention, tf.float32) + tf.cast(hidden_states, tf.float32)
        )
        intermediate = self.activation(self.intermediate(attention))
        output = self.dropout(self.output_dense(intermediate), training=training)
        output = self.output_layer_norm(tf.cast(output, tf.float32) + attention)
        return tf.cast(output, self.compute_dtype)

    def checkpoint_variables(self, scope):
        """{original name: variable} under `scope` (e.g. `bert/encoder/layer_0`)."""
        return {
            **self.self_attention.checkpoint_variables(f"{scope}/attention/self"),
            **dense_variables(f"{scope}/attention/output/dense", self.attention_output),
            **layer_norm_variables(f"{scope}/attention/output/LayerNorm",
                                   self.attention_layer_norm),
            **dense_variables(f"{scope}/intermediate/dense", self.intermediate),
            **dense_variables(f"{scope}/output/dense", self.output_dense),
            **layer_norm_variables(f"{scope}/output/LayerNorm", self.output_layer_norm),
        }

    def get_config(self):
        config = super().get_config()
        config.update(
            hidden_size=self.hidden_size,
            num_attention_heads=self.num_attention_heads,
            intermediate_size=self.intermediate_size,
            hidden_act=self.hidden_act,
            hidden_dropout_prob=self.hidden_dropout_prob,
            attention_probs_dropout_prob=self.attention_probs_dropout_prob,
            initializer_range=self.initializer_range,
            layer_norm_eps=self.layer_norm_eps,
        )
        return config
