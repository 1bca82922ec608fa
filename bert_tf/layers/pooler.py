"""The pooler: a tanh Dense on the first ([CLS]) position."""

import keras

from bert_tf.layers.checkpoint_names import dense_variables
from bert_tf.layers.dense import Dense
from bert_tf.layers.initializers import truncated_normal


class Pooler(keras.layers.Layer):
    """`tanh(dense(sequence_output[:, 0]))`; weights `dense/{kernel [H, H], bias [H]}`."""

    def __init__(self, hidden_size, initializer_range=0.02, **kwargs):
        super().__init__(**kwargs)
        self.hidden_size = hidden_size
        self.initializer_range = initializer_range
        self.dense = Dense(
            hidden_size, activation="tanh",
            kernel_initializer=truncated_normal(initializer_range), name="dense",
        )

    def build(self, input_shape=None):
        self.dense.build((None, self.hidden_size))
        self.built = True

    def call(self, sequence_output):
        """[B, S, H] -> [B, H]."""
        return self.dense(sequence_output[:, 0])

    def checkpoint_variables(self, scope):
        """{`scope/dense/kernel`, `scope/dense/bias`} (scope e.g. `bert/pooler`)."""
        return dense_variables(f"{scope}/dense", self.dense)

    def get_config(self):
        config = super().get_config()
        config.update(hidden_size=self.hidden_size, initializer_range=self.initializer_range)
        return config
