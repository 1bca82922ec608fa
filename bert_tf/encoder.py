"""`BertModel`: the BERT encoder (embeddings, transformer stack, pooler), without heads."""

import keras

from bert_tf.config import BertConfig
from bert_tf.layers.embeddings import BertEmbeddings
from bert_tf.layers.pooler import Pooler
from bert_tf.layers.transformer_encoder import TransformerEncoder

ENCODER_INPUTS = ("input_ids", "input_mask", "segment_ids")


def check_inputs(inputs, names, model_name):
    """Fails clearly when a feature the model needs is missing from the input dict."""
    if not isinstance(inputs, dict):
        raise TypeError(f"{model_name} takes a dict of features {list(names)}, got {type(inputs).__name__}")
    missing = [name for name in names if name not in inputs]
    if missing:
        raise KeyError(
            f"{model_name}: input dict lacks {', '.join(missing)} (has {', '.join(sorted(inputs))})"
        )


class BertModel(keras.Model):
    """The encoder of the original `modeling.BertModel`.

    Call with a dict of int tensors `input_ids`, `input_mask` (1 = real token, 0 = padding) and
    `segment_ids`, each [B, S]. Returns a dict:
      `embedding_output` [B, S, H], `all_encoder_layers` (list of L [B, S, H]),
      `sequence_output` [B, S, H] (the last layer), `pooled_output` [B, H].
    Dropout runs only with `training=True`. All variables exist once the model is constructed.
    """

    def __init__(self, config, **kwargs):
        if isinstance(config, dict):
            config = BertConfig.from_dict(config)
        kwargs.setdefault("name", "bert")
        super().__init__(**kwargs)
        self.config = config
        self.embeddings = BertEmbeddings(
            vocab_size=config.vocab_size,
            hidden_size=config.hidden_size,
            type_vocab_size=config.type_vocab_size,
            max_position_embeddings=config.max_position_embeddings,
            hidden_dropout_prob=config.hidden_dropout_prob,
            initializer_range=config.initializer_range,
            layer_norm_eps=config.layer_norm_eps,
            name="embeddings",
        )
        self.encoder = TransformerEncoder(
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
        self.pooler = Pooler(config.hidden_size, config.initializer_range, name="pooler")
        self.build()

    def build(self, input_shape=None):
        self.embeddings.build()
        self.encoder.build()
        self.pooler.build()
        self.built = True

    @property
    def embedding_table(self):
        """The word embeddings [V, H] (float32), shared with the masked-LM output layer."""
        return self.embeddings.word_embeddings

    def call(self, inputs, training=False):
        check_inputs(inputs, ENCODER_INPUTS, type(self).__name__)
        embedding_output = self.embeddings(
            inputs["input_ids"], inputs["segment_ids"], training=training
        )
        all_encoder_layers = self.encoder(embedding_output, inputs["input_mask"], training=training)
        sequence_output = all_encoder_layers[-1]
        return {
            "embedding_output": embedding_output,
            "all_encoder_layers": all_encoder_layers,
            "sequence_output": sequence_output,
            "pooled_output": self.pooler(sequence_output),
        }

    def get_config(self):
        return {"config": self.config.to_dict(), "name": self.name}

    @classmethod
    def from_pretrained(cls, path):
        """The encoder with the weights of a local folder: a Google release
        (`bert_config.json`, `bert_model.ckpt.*`) or a Hugging Face Hub snapshot (`config.json`,
        `model.safetensors` or `pytorch_model.bin`), converted as `python -m bert_tf.hf import`
        does. No download."""
        from bert_tf.hf.convert import load_pretrained

        return load_pretrained(path, "encoder")

    @classmethod
    def from_config(cls, config):
        return cls(**config)
