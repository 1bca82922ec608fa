"""`RobertaConfig`: the hyper-parameters of a RoBERTa model, as in its `bert_config.json`."""

from bert_tf.bert.config import BertConfig, BertConfigError

# fairseq's dictionary puts <s>, <pad>, </s>, <unk> at 0..3: padding is id 1, and so is the
# position "before the first token" (fairseq's make_positions).
DEFAULT_PAD_TOKEN_ID = 1
# fairseq's (and every released RoBERTa's) LayerNorm epsilon; the original BERT's is 1e-12.
DEFAULT_LAYER_NORM_EPS = 1e-5
# fairseq's roberta_base architecture, for a config built in Python (`RobertaConfig(vocab_size)`);
# a config file must give BERT's keys (`BertConfig.from_dict`).
DEFAULTS = {
    "hidden_size": 768,
    "num_hidden_layers": 12,
    "num_attention_heads": 12,
    "intermediate_size": 3072,
    "hidden_act": "gelu_exact",
    "hidden_dropout_prob": 0.1,
    "attention_probs_dropout_prob": 0.1,
    "max_position_embeddings": 514,
    "type_vocab_size": 1,
    "initializer_range": 0.02,
}


class RobertaConfigError(BertConfigError):
    """A bert_config.json (or dict) of model_type roberta that does not describe a valid
    RoBERTa model."""


class RobertaConfig(BertConfig):
    """Configuration of a RoBERTa model: BERT's keys, plus

    - `pad_token_id` (default 1, fairseq's): the id of `<pad>`, and the position index of
      padding; real tokens take positions `pad_token_id + 1, pad_token_id + 2, ...`, so the
      encoder takes at most `max_sequence_length` = max_position_embeddings - pad_token_id - 1
      tokens (512 of roberta-base's 514 rows).
    - `layer_norm_eps` (default 1e-5, fairseq's).
    - `model_type` "roberta".

    `to_dict` always writes all three (and `hidden_act`, required as in BERT's file: the
    released models compute the exact GELU, `gelu_exact`). The checkpoints of such a model name
    their variables under `roberta/`, so no BERT code loads them as a BERT's (docs/roberta.md).
    """

    MODEL_TYPES = ("roberta",)
    default_layer_norm_eps = DEFAULT_LAYER_NORM_EPS

    def __init__(self, vocab_size, source="RobertaConfig", **kwargs):
        given = {**DEFAULTS, **kwargs}
        given.setdefault("model_type", "roberta")
        self.pad_token_id = given.pop("pad_token_id", DEFAULT_PAD_TOKEN_ID)
        try:
            super().__init__(vocab_size, source=source, **given)
        except RobertaConfigError:
            raise
        except BertConfigError as e:
            raise RobertaConfigError(str(e)) from None
        self._validate_roberta(source)

    def _validate_roberta(self, source):
        pad = self.pad_token_id
        if isinstance(pad, bool) or not isinstance(pad, int) or not 0 <= pad < self.vocab_size:
            raise RobertaConfigError(f"{source}: pad_token_id must be an integer in "
                                     f"[0, vocab_size={self.vocab_size}), got {pad!r}")
        if self.max_position_embeddings <= pad + 1:
            raise RobertaConfigError(
                f"{source}: max_position_embeddings ({self.max_position_embeddings}) must be "
                f"larger than pad_token_id + 1 ({pad + 1}): RoBERTa's first position is "
                "pad_token_id + 1")

    @property
    def max_sequence_length(self):
        """max_position_embeddings - pad_token_id - 1: positions pad_token_id + 1 ..
        max_position_embeddings - 1 are the real tokens'."""
        return self.max_position_embeddings - self.pad_token_id - 1

    @property
    def mlm_hidden_act(self):
        """fairseq's (and Transformers') lm_head applies the exact GELU whatever hidden_act."""
        return "gelu_exact"

    @classmethod
    def from_dict(cls, json_object, source="roberta config"):
        """Builds a config from a dict of `bert_config.json`: BERT's keys are required,
        pad_token_id and layer_norm_eps take fairseq's defaults (1, 1e-5)."""
        try:
            return super().from_dict(json_object, source=source)
        except RobertaConfigError:
            raise
        except BertConfigError as e:
            raise RobertaConfigError(str(e)) from None

    def to_dict(self):
        out = super().to_dict()
        out["model_type"] = self.model_type
        out["pad_token_id"] = self.pad_token_id
        out["layer_norm_eps"] = self.layer_norm_eps
        return out

    def __repr__(self):
        return f"RobertaConfig({self.to_dict()!r})"
