"""`AlbertModel`: ALBERT's encoder (google-research/albert's `modeling.AlbertModel`): BERT's
embeddings at width E, a dense E -> H into the transformer, and blocks shared across layers."""

import keras

from bert_tf.albert.config import AlbertConfig
from bert_tf.bert.model import BertModel
from bert_tf.layers.checkpoint_names import dense_variables, layer_norm_variables
from bert_tf.layers.dense import Dense
from bert_tf.layers.initializers import truncated_normal
from bert_tf.layers.transformer import TransformerBlock


class AlbertTransformer(keras.layers.Layer):
    """The original's `transformer_model`: `embedding_hidden_mapping_in` [E, H] (only where
    E != H), then L layers; layer l runs the `inner_group_num` blocks of group
    `config.group_of_layer(l)` in sequence. The blocks are BERT's post-LN blocks (the same
    arithmetic); only the groups some layer uses exist, as in the original.

    Called with `embedding_output` [B, S, E] and `input_mask` int [B, S]; returns the list of
    L * inner_group_num block outputs [B, S, H] (the original's all_encoder_layers).

    Args:
      config: an `AlbertConfig`.
    """

    def __init__(self, config, **kwargs):
        super().__init__(**kwargs)
        self.config = config
        self.embedding_hidden_mapping_in = None
        if config.embedding_size != config.hidden_size:
            self.embedding_hidden_mapping_in = Dense(
                config.hidden_size, kernel_initializer=truncated_normal(config.initializer_range),
                name="embedding_hidden_mapping_in")
        self.groups = {
            group: [
                TransformerBlock(
                    hidden_size=config.hidden_size,
                    num_attention_heads=config.num_attention_heads,
                    intermediate_size=config.intermediate_size,
                    hidden_act=config.hidden_act,
                    hidden_dropout_prob=config.hidden_dropout_prob,
                    attention_probs_dropout_prob=config.attention_probs_dropout_prob,
                    initializer_range=config.initializer_range,
                    layer_norm_eps=config.layer_norm_eps,
                    name=f"group_{group}_inner_group_{inner}",
                )
                for inner in range(config.inner_group_num)
            ]
            for group in config.groups
        }

    def build(self, input_shape=None):
        if self.embedding_hidden_mapping_in is not None:
            self.embedding_hidden_mapping_in.build((None, None, self.config.embedding_size))
        for blocks in self.groups.values():
            for block in blocks:
                block.build()
        self.built = True

    def call(self, embedding_output, input_mask, training=False):
        hidden_states = embedding_output
        if self.embedding_hidden_mapping_in is not None:
            hidden_states = self.embedding_hidden_mapping_in(hidden_states)
        outputs = []
        for layer in range(self.config.num_hidden_layers):
            for block in self.groups[self.config.group_of_layer(layer)]:
                hidden_states = block(hidden_states, input_mask, training=training)
                outputs.append(hidden_states)
        return outputs

    def checkpoint_variables(self, scope):
        """{original name: variable} under `scope` (`bert/encoder`): the mapping, then
        `transformer/group_G/inner_group_K/{attention_1/self/{query,key,value},
        attention_1/output/dense, LayerNorm, ffn_1/intermediate/dense,
        ffn_1/intermediate/output/dense, LayerNorm_1}`."""
        table = {}
        if self.embedding_hidden_mapping_in is not None:
            table.update(dense_variables(f"{scope}/embedding_hidden_mapping_in",
                                         self.embedding_hidden_mapping_in))
        for group, blocks in self.groups.items():
            for inner, block in enumerate(blocks):
                prefix = f"{scope}/transformer/group_{group}/inner_group_{inner}"
                table.update(block.self_attention.checkpoint_variables(f"{prefix}/attention_1/self"))
                table.update(dense_variables(f"{prefix}/attention_1/output/dense",
                                             block.attention_output))
                table.update(layer_norm_variables(f"{prefix}/LayerNorm",
                                                  block.attention_layer_norm))
                table.update(dense_variables(f"{prefix}/ffn_1/intermediate/dense",
                                             block.intermediate))
                table.update(dense_variables(f"{prefix}/ffn_1/intermediate/output/dense",
                                             block.output_dense))
                table.update(layer_norm_variables(f"{prefix}/LayerNorm_1",
                                                  block.output_layer_norm))
        return table

    def get_config(self):
        config = super().get_config()
        config.update(config=self.config.to_dict())
        return config

    @classmethod
    def from_config(cls, config):
        config = dict(config)
        return cls(AlbertConfig.from_dict(config.pop("config")), **config)


class AlbertModel(BertModel):
    """The encoder of the original `modeling.AlbertModel`, for configs of model_type "albert".

    Call with a dict of int tensors `input_ids`, `input_mask`, `segment_ids` [B, S]. Returns a
    dict: `embedding_output` [B, S, E] (the embeddings after their LayerNorm, before the mapping
    to H, as the original's `get_embedding_output`), `all_encoder_layers` (list of
    L * inner_group_num [B, S, H]), `sequence_output` [B, S, H], `pooled_output` [B, H] (tanh
    pooler on [CLS], which feeds sentence-order prediction and the classifiers).

    Variables under `bert/` with the original's names and shapes (`checkpoint_variables`).
    """

    model_type = "albert"
    scope = "bert"
    has_pooler = True

    @property
    def gathered_tables(self):
        """The word and the token-type embeddings: the original's `embedding_postprocessor`
        looks token types up with `tf.nn.embedding_lookup` too (BERT's: a one-hot matmul)."""
        return (self.embeddings.word_embeddings, self.embeddings.token_type_embeddings)

    def _embeddings_project(self, config):
        return None  # ALBERT's mapping is the transformer's first layer

    def _transformer(self, config):
        return AlbertTransformer(config, name="encoder")
