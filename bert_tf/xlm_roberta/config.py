"""`XLMRobertaConfig`: the hyper-parameters of an XLM-RoBERTa model, as in its
`bert_config.json`: RoBERTa's (`bert_tf.roberta.config.RobertaConfig`) with `model_type`
"xlm-roberta"."""

from bert_tf.roberta.config import RobertaConfig, RobertaConfigError


class XLMRobertaConfigError(RobertaConfigError):
    """A bert_config.json (or dict) of model_type xlm-roberta that does not describe a valid
    XLM-RoBERTa model."""


class XLMRobertaConfig(RobertaConfig):
    """Configuration of an XLM-RoBERTa model (Conneau et al. 2020; fairseq's `xlmr` models,
    Transformers' `XLMRobertaConfig`): RoBERTa's keys and rules (`pad_token_id` 1, positions
    from pad_token_id + 1, epsilon 1e-5, the exact GELU), `model_type` "xlm-roberta". The
    encoder is RoBERTa's; only the vocabulary (SentencePiece with fairseq's dictionary
    offset, `bert_tf.xlm_roberta.tokenization`) differs. Python-built defaults are
    roberta-base's sizes but for `vocab_size`, which is always given (xlm-roberta-base's is
    250002)."""

    MODEL_TYPES = ("xlm-roberta",)

    def __init__(self, vocab_size, source="XLMRobertaConfig", **kwargs):
        kwargs.setdefault("model_type", "xlm-roberta")
        try:
            super().__init__(vocab_size, source=source, **kwargs)
        except XLMRobertaConfigError:
            raise
        except RobertaConfigError as e:
            raise XLMRobertaConfigError(str(e)) from None

    @classmethod
    def from_dict(cls, json_object, source="xlm-roberta config"):
        try:
            return super().from_dict(json_object, source=source)
        except XLMRobertaConfigError:
            raise
        except RobertaConfigError as e:
            raise XLMRobertaConfigError(str(e)) from None

    def __repr__(self):
        return f"XLMRobertaConfig({self.to_dict()!r})"
