"""The stack of L transformer blocks."""

import keras

from bert_tf.layers.transformer import TransformerBlock


class TransformerEncoder(keras.layers.Layer):
    """L `TransformerBlock`s; returns every block's output (the original's all_encoder_layers).

    Args:
      num_hidden_layers: L.
      **block_args: the arguments of `TransformerBlock` (hidden_size, num_attention_heads,
        intermediate_size, hidden_act, dropout probabilities, initializer_range), the same for
        every block.
    Block i carries the original name prefix `bert/encoder/layer_<i>/`.
    """

    def __init__(self, num_hidden_layers, name=None, dtype=None, trainable=True, **block_args):
        super().__init__(name=name, dtype=dtype, trainable=trainable)
        self.num_hidden_layers = num_hidden_layers
        self.block_args = block_args
        self.blocks = [
            TransformerBlock(**block_args, dtype=dtype, name=f"layer_{i}")
            for i in range(num_hidden_layers)
        ]

    def build(self, input_shape=None):
        for block in self.blocks:
            block.build()
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

    def checkpoint_variables(self, scope):
        """{original name: variable} of every block, `scope/layer_<i>/...` (e.g. scope
        `bert/encoder`), block by block."""
        table = {}
        for i, block in enumerate(self.blocks):
            table.update(block.checkpoint_variables(f"{scope}/layer_{i}"))
        return table

    def get_config(self):
        config = super().get_config()
        config.update(num_hidden_layers=self.num_hidden_layers, **self.block_args)
        return config
