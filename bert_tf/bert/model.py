"""`BertModel`: the BERT encoder (embeddings, transformer stack, pooler), without heads."""

import keras

from bert_tf import families
from bert_tf.layers.checkpoint_names import dense_variables
from bert_tf.layers.dense import Dense
from bert_tf.layers.embeddings import BertEmbeddings
from bert_tf.layers.inputs import ENCODER_INPUTS, check_inputs
from bert_tf.layers.pooler import Pooler
from bert_tf.layers.transformer_encoder import TransformerEncoder


class BertModel(keras.Model):
    """The encoder of the original `modeling.BertModel`.

    Call with a dict of int tensors `input_ids`, `input_mask` (1 = real token, 0 = padding) and
    `segment_ids`, each [B, S]. Returns a dict:
      `embedding_output` [B, S, H], `all_encoder_layers` (list of L [B, S, H]),
      `sequence_output` [B, S, H] (the last layer), `pooled_output` [B, H].
    Dropout runs only with `training=True`. All variables exist once the model is constructed.

    With `config.embedding_size` E != H the embeddings are E wide and a dense
    `embeddings_project` [E, H] (Glorot-uniform initialised, as ELECTRA's tf.layers.dense
    default) maps them to H; `embedding_output` is the projected one. A subclass without a
    pooler (`has_pooler` False: ELECTRA's) returns the [CLS] vector `sequence_output[:, 0]` as
    `pooled_output`.

    Class attributes: `model_type`, the family whose configs it takes; `scope`, its checkpoint
    scope (`bert/...`); `has_pooler`. A family whose transformer differs (ALBERT's shared
    blocks) overrides `_embeddings_project` and `_transformer`; one whose positions differ
    (RoBERTa's, from the mask) overrides `_position_ids`.

    Args:
      config: a config (or its dict) of model_type `model_type`.
      embeddings: optional `BertEmbeddings` layer of another model to share (ELECTRA's
        generator uses the discriminator's whole embedding scope); its width must be E.
    """

    model_type = "bert"
    scope = "bert"
    has_pooler = True

    def __init__(self, config, embeddings=None, **kwargs):
        if isinstance(config, dict):
            config = families.config_from_dict(config)
        if config.model_type != self.model_type:
            raise ValueError(
                f"{type(self).__name__} takes a config of model_type {self.model_type!r}, got "
                f"{config.model_type!r}: build the encoder with "
                "bert_tf.families.build_encoder(config)")
        kwargs.setdefault("name", "bert")
        super().__init__(**kwargs)
        self.config = config
        if embeddings is None:
            embeddings = BertEmbeddings(
                vocab_size=config.vocab_size,
                hidden_size=config.embedding_size,
                type_vocab_size=config.type_vocab_size,
                max_position_embeddings=config.max_position_embeddings,
                hidden_dropout_prob=config.hidden_dropout_prob,
                initializer_range=config.initializer_range,
                layer_norm_eps=config.layer_norm_eps,
                name="embeddings",
            )
        elif embeddings.hidden_size != config.embedding_size:
            raise ValueError(f"shared embeddings are {embeddings.hidden_size} wide, the config's "
                             f"embedding_size is {config.embedding_size}")
        self.embeddings = embeddings
        self.embeddings_project = self._embeddings_project(config)
        self.encoder = self._transformer(config)
        self.pooler = None
        if self.has_pooler:
            self.pooler = Pooler(config.hidden_size, config.initializer_range, name="pooler")
        self.build()

    def _embeddings_project(self, config):
        """The dense [E, H] between the embeddings and the transformer where E != H (None
        otherwise): `embeddings_project`, Glorot-uniform initialised (ELECTRA's)."""
        if config.embedding_size == config.hidden_size:
            return None
        return Dense(config.hidden_size, kernel_initializer="glorot_uniform",
                                  name="embeddings_project")

    def _transformer(self, config):
        """The transformer: a layer called with (embedding_output [B, S, H or E], input_mask
        [B, S], training) returning the list of every block's output [B, S, H], with
        `build()` and `checkpoint_variables(scope)` (scope `<scope>/encoder`)."""
        return TransformerEncoder(
            num_hidden_layers=config.num_hidden_layers,
            hidden_size=config.hidden_size,
            num_attention_heads=config.num_attention_heads,
            intermediate_size=config.intermediate_size,
            hidden_act=config.hidden_act,
            hidden_dropout_prob=config.hidden_dropout_prob,
            attention_probs_dropout_prob=config.attention_probs_dropout_prob,
            initializer_range=config.initializer_range,
            layer_norm_eps=config.layer_norm_eps,
            name="encoder",
        )

    def _position_ids(self, inputs):
        """The rows of the position table the tokens of `inputs` take, int [B, S], or None for
        the original's 0, 1, ..., S - 1 in every sequence."""
        return None

    def build(self, input_shape=None):
        if not self.embeddings.built:
            self.embeddings.build()
        if self.embeddings_project is not None:
            self.embeddings_project.build((None, None, self.config.embedding_size))
        self.encoder.build()
        if self.pooler is not None:
            self.pooler.build()
        self.built = True

    @property
    def embedding_table(self):
        """The word embeddings [V, E] (float32; bfloat16 in a model built at
        --precision=bfloat16), shared with the masked-LM output layer."""
        return self.embeddings.word_embeddings

    @property
    def gathered_tables(self):
        """The embedding tables the original looks up with `tf.nn.embedding_lookup` in
        fine-tuning (off TPU), so that their gradient is an IndexedSlices clipped by its rows
        (`Task.row_norm_variables`): BERT's word embeddings; its token types go through a
        one-hot matmul."""
        return (self.embeddings.word_embeddings,)

    def call(self, inputs, training=False):
        check_inputs(inputs, ENCODER_INPUTS, type(self).__name__)
        embedding_output = self.embeddings(
            inputs["input_ids"], inputs["segment_ids"], position_ids=self._position_ids(inputs),
            training=training
        )
        if self.embeddings_project is not None:
            embedding_output = self.embeddings_project(embedding_output)
        all_encoder_layers = self.encoder(embedding_output, inputs["input_mask"], training=training)
        sequence_output = all_encoder_layers[-1]
        if self.pooler is not None:
            pooled_output = self.pooler(sequence_output)
        else:
            pooled_output = sequence_output[:, 0]
        return {
            "embedding_output": embedding_output,
            "all_encoder_layers": all_encoder_layers,
            "sequence_output": sequence_output,
            "pooled_output": pooled_output,
        }

    def checkpoint_variables(self, scope=None, embeddings=True):
        """{original name: variable} of the encoder under `scope` (default `self.scope`), in
        the original's order; without `embeddings` the embedding tables are left out (a model
        whose second encoder shares them names them once)."""
        scope = scope or self.scope
        table = {}
        if embeddings:
            table.update(self.embeddings.checkpoint_variables(f"{scope}/embeddings"))
        if self.embeddings_project is not None:
            table.update(dense_variables(f"{scope}/embeddings_project", self.embeddings_project))
        table.update(self.encoder.checkpoint_variables(f"{scope}/encoder"))
        if self.pooler is not None:
            table.update(self.pooler.checkpoint_variables(f"{scope}/pooler"))
        return table

    def required_checkpoint_scopes(self):
        """Name prefixes every variable of which a checkpoint of this model must hold."""
        return (f"{self.scope}/",)

    def get_config(self):
        return {"config": self.config.to_dict(), "name": self.name}

    @classmethod
    def from_pretrained(cls, path):
        """The encoder with the weights of a local folder: a Google release
        (`bert_config.json`, `bert_model.ckpt.*`) or a Hugging Face Hub snapshot (`config.json`,
        `model.safetensors` or `pytorch_model.bin`), converted as `python -m bert_tf.hf import`
        does. No download."""
        # An import upward, at call time: the Hub bridge builds and loads models of this layer.
        from bert_tf.hf.convert import load_pretrained

        return load_pretrained(path, lambda config, folder: cls(config))

    @classmethod
    def from_config(cls, config):
        return cls(**config)
