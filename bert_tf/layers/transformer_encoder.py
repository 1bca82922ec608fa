"""The stack of L transformer blocks."""

import keras

from bert_tf.layers.transformer import TransformerBlock


class TransformerEncoder(keras.layers.Layer):
    """L `TransformerBlock`s; returns every block's output (the original's all_encoder_layers).

    Block i carries the original name prefix `bert/encoder/layer_<i>/`.
    """

    def __init__(
        self,
        num_hidden_layers,
        hidden_size,
        num_attention_heads,
        intermediate_size,
        hidden_act="gelu",
        hidden_dropout_prob=0.1,
        attention_probs_dropout_prob=0.1,
        initializer_range=0.02,
        **kwargs,
    ):
        super().__init__(**kwargs)
        self.num_hidden_layers = num_hidden_layers
        self.hidden_size = hidden_size
        self.num_attention_heads = num_attention_heads
        self.intermediate_size = intermediate_size
        self.hidden_act = hidden_act
        self.hidden_dropout_prob = hidden_dropout_prob
        self.attention_probs_dropout_prob = attention_probs_dropout_prob
        self.initializer_range = initializer_range
        self.blocks = [
            TransformerBlock(
                hidden_size, num_attention_heads, intermediate_size, hidden_act,
                hidden_dropout_prob, attention_probs_dropout_prob, initializer_range,
                name=f"layer_{i}",
            )
            for i in range(num_hidden_layers)
        ]

    def build(self, input_shape=None):
        for block in self.blocks:
            block.build((None, None, self.hidden_size))
        self.built = True

    def call(self, hidden_states, input_mask, training=False):
        """Args: `hidden_states` [B, S, H]; `input_mask` int [B, S], 1 for real tokens.

        Returns a list of L tensors [B, S, H], one per block.
        """
        outputs = []
        for block in self.blocks:
            hidden_states = block(hidden_states, input_mask, training=training)
            outputs.append(hidden_states)
        return outputs

    def get_config(self):
        config = super().get_config()
        config.update(
            num_hidden_layers=self.num_hidden_layers,
            hidden_size=self.hidden_size,
            num_attention_heads=self.num_attention_heads,
            intermediate_size=self.intermediate_size,
            hidden_act=self.hidden_act,
            hidden_dropout_prob=self.hidden_dropout_prob,
            attention_probs_dropout_prob=self.attention_probs_dropout_prob,
            initializer_range=self.initializer_range,
        )
        return config
