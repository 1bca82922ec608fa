"""`AlbertPretrainingModel` (encoder + masked-LM + sentence-order heads) and its loss.

The original's `run_pretraining.py` puts on `AlbertModel` the heads of BERT's: the masked-LM head
`cls/predictions` (`transform/dense` H -> E with hidden_act, `transform/LayerNorm`, logits on the
word embeddings [V, E], `output_bias`) and a 2-way classifier on the pooled output,
`cls/seq_relationship` — there predicting sentence ORDER (label 1 = the two segments swapped or
the second from another document), read from the records' `next_sentence_labels`. The loss is
BERT's: masked-LM sum(w * nll) / (sum(w) + 1e-5) + the 2-way loss's mean (`pretraining_loss`).
"""

from bert_tf.albert.config import AlbertConfig
from bert_tf.bert.pretraining import BertPretrainingModel, pretraining_loss

__all__ = ["AlbertPretrainingModel", "pretraining_loss"]


class AlbertPretrainingModel(BertPretrainingModel):
    """`BertPretrainingModel` on an `AlbertModel`: outputs `mlm_log_probs` float32 [B * P, V]
    and `nsp_log_probs` float32 [B, 2], the sentence-order log-probabilities (class 0 = in
    order), beside the encoder's outputs.

    Args:
      config: an `AlbertConfig` (or its dict).
    """

    def __init__(self, config, **kwargs):
        if isinstance(config, dict):
            config = AlbertConfig.from_dict(config)
        if not isinstance(config, AlbertConfig):
            raise TypeError(f"AlbertPretrainingModel takes an AlbertConfig, got {config!r}")
        kwargs.setdefault("name", "albert_pretraining")
        super().__init__(config, **kwargs)
