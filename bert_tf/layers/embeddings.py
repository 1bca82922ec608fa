"""BERT's input embeddings: word + token type (segment) + learned position, LayerNorm, dropout."""

import keras
import tensorflow as tf

from bert_tf.layers.checkpoint_names import layer_norm_variables
from bert_tf.layers.initializers import truncated_normal
from bert_tf.layers.layer_norm import LAYER_NORM_EPSILON, layer_norm


class BertEmbeddings(keras.layers.Layer):
    """Sum of the three embeddings, normalised.

    Weights (original names under `bert/embeddings/`): `word_embeddings` [V, H],
    `token_type_embeddings` [T, H], `position_embeddings` [P, H], `LayerNorm/{gamma,beta}` [H].

    The tables are stored in the dtype policy's variable dtype: float32 under float32 and under
    the mixed policies of training (`mixed_bfloat16`, `mixed_float16`: checkpoints stay float32),
    bfloat16 under the plain `bfloat16` policy of a bfloat16 export or prediction run
    (`bert_tf.training.precision.build_at_precision`), which halves their bytes. They are never
    autocast: the gathered rows are cast to float32 (exact from bfloat16), so the sum and the
    LayerNorm run in float32 whatever the policy, and only the output is cast to the compute
    dtype. The masked-LM head reads `word_embeddings` for its tied output projection.
    """

    def __init__(
        self,
        vocab_size,
        hidden_size,
        type_vocab_size,
        max_position_embeddings,
        hidden_dropout_prob,
        initializer_range,
        layer_norm_eps=LAYER_NORM_EPSILON,
        **kwargs,
    ):
        super().__init__(**kwargs)
        self.vocab_size = vocab_size
        self.hidden_size = hidden_size
        self.type_vocab_size = type_vocab_size
        self.max_position_embeddings = max_position_embeddings
        self.hidden_dropout_prob = hidden_dropout_prob
        self.initializer_range = initializer_range
        self.layer_norm_eps = layer_norm_eps
        self.layer_norm = layer_norm("LayerNorm", layer_norm_eps)
        self.dropout = keras.layers.Dropout(hidden_dropout_prob)

    def build(self, input_shape=None):
        self.word_embeddings = self.add_weight(
            name="word_embeddings", shape=(self.vocab_size, self.hidden_size),
            initializer=truncated_normal(self.initializer_range), dtype=self.variable_dtype,
            autocast=False,
        )
        self.token_type_embeddings = self.add_weight(
            name="token_type_embeddings", shape=(self.type_vocab_size, self.hidden_size),
            initializer=truncated_normal(self.initializer_range), dtype=self.variable_dtype,
            autocast=False,
        )
        self.position_embeddings = self.add_weight(
            name="position_embeddings", shape=(self.max_position_embeddings, self.hidden_size),
            initializer=truncated_normal(self.initializer_range), dtype=self.variable_dtype,
            autocast=False,
        )
        self.layer_norm.build((None, None, self.hidden_size))
        self.built = True

    def call(self, input_ids, segment_ids, position_ids=None, training=False):
        """Args: `input_ids`, `segment_ids` int [B, S]; `position_ids` int [B, S], the rows of
        the position table each token takes, or None for the original's 0, 1, ..., S - 1 (the
        first S rows, added to every sequence). Returns [B, S, H] in the compute dtype."""
        if position_ids is None:
            seq_length = input_ids.shape[1]
            if seq_length is not None and seq_length > self.max_position_embeddings:
                raise ValueError(
                    f"sequence length {seq_length} is larger than max_position_embeddings "
                    f"({self.max_position_embeddings}) of the bert config"
                )
            positions = self.position_embeddings[:tf.shape(input_ids)[1]][tf.newaxis]
        else:
            positions = tf.gather(self.position_embeddings, position_ids)
        # Rows cast after the gather: only the rows read are widened (a bfloat16 table stays
        # bfloat16 in memory).
        embeddings = (
            tf.cast(tf.gather(self.word_embeddings, input_ids), tf.float32)
            + tf.cast(tf.gather(self.token_type_embeddings, segment_ids), tf.float32)
            + tf.cast(positions, tf.float32)
        )
        embeddings = self.layer_norm(embeddings)
        embeddings = self.dropout(embeddings, training=training)
        return tf.cast(embeddings, self.compute_dtype)

    @property
    def tables(self):
        """The three tables (word [V, H], token type [T, H], position [P, H]), in the
        policy's variable dtype."""
        return (self.word_embeddings, self.token_type_embeddings, self.position_embeddings)

    def checkpoint_variables(self, scope):
        """{original name: variable} under `scope` (e.g. `bert/embeddings`), in the original's
        order."""
        return {
            f"{scope}/word_embeddings": self.word_embeddings,
            f"{scope}/token_type_embeddings": self.token_type_embeddings,
            f"{scope}/position_embeddings": self.position_embeddings,
            **layer_norm_variables(f"{scope}/LayerNorm", self.layer_norm),
        }

    def get_config(self):
        config = super().get_config()
        config.update(
            vocab_size=self.vocab_size,
            hidden_size=self.hidden_size,
            type_vocab_size=self.type_vocab_size,
            max_position_embeddings=self.max_position_embeddings,
            hidden_dropout_prob=self.hidden_dropout_prob,
            initializer_range=self.initializer_range,
            layer_norm_eps=self.layer_norm_eps,
        )
        return config
