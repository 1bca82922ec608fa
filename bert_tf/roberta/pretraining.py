"""`RobertaPretrainingModel` (encoder + masked-LM head, no next-sentence head) and its loss.

RoBERTa (Liu et al. 2019, §4.2) drops BERT's next-sentence objective: fairseq's `masked_lm`
criterion is the mean cross-entropy over the masked positions of the batch. Its `lm_head`
(dense H -> H, exact GELU, LayerNorm, logits on the word embeddings [V, H] + a bias) is BERT's
masked-LM head, so the model is `BertPretrainingModel` without the next-sentence head:
`cls/predictions/transform/dense`, `cls/predictions/transform/LayerNorm` (epsilon from the
config, 1e-5), `cls/predictions/output_bias`, the decoder tied to
`roberta/embeddings/word_embeddings` (Transformers' `RobertaForMaskedLM` names: `lm_head.dense`,
`lm_head.layer_norm`, `lm_head.bias`; docs/roberta.md).

The loss is BERT's masked-LM loss, sum(w * nll) / (sum(w) + 1e-5) over the labels of
`bert_tf.roberta.masking` (every drawn position weight 1): fairseq's sum over the masked tokens
divided by their number (the 1e-5 changes it by a relative 1e-5 / sum(w) at most, and keeps a
batch without any masked token at 0 instead of NaN).
"""

from bert_tf.bert.pretraining import BertPretrainingModel, masked_lm_loss
from bert_tf.layers.inputs import check_inputs
from bert_tf.roberta.config import RobertaConfig

__all__ = ["RobertaPretrainingModel", "mlm_loss", "LABEL_FEATURES"]

LABEL_FEATURES = ("masked_lm_ids", "masked_lm_weights")


class RobertaPretrainingModel(BertPretrainingModel):
    """`BertPretrainingModel` on a `RobertaModel` with the masked-LM head only.

    Call with a dict of int tensors `input_ids`, `input_mask`, `segment_ids` [B, S] and
    `masked_lm_positions` [B, P]. Returns the encoder's outputs (`embedding_output`,
    `all_encoder_layers`, `sequence_output` [B, S, H], `pooled_output` [B, H]) plus
    `mlm_log_probs` float32 [B * P, V] (log-softmax of the logits at the P positions of each
    sequence, row b * P + p).

    Args:
      config: a `RobertaConfig` (or its dict).
    """

    has_next_sentence = False

    def __init__(self, config, **kwargs):
        if isinstance(config, dict):
            config = RobertaConfig.from_dict(config)
        if not isinstance(config, RobertaConfig):
            raise TypeError(f"RobertaPretrainingModel takes a RobertaConfig, got {config!r}")
        kwargs.setdefault("name", "roberta_pretraining")
        super().__init__(config, **kwargs)


def mlm_loss(outputs, features, masked_lm_weight_sum=None):
    """RoBERTa's pretraining loss: the masked-LM loss alone.

    Args:
      outputs: `RobertaPretrainingModel`'s dict (`mlm_log_probs` [B * P, V]).
      features: int `masked_lm_ids` [B, P], float `masked_lm_weights` [B, P].
      masked_lm_weight_sum: optional scalar, the weight sum of the whole global batch: the
        loss is then this part's share (summed over replicas or micro-batches it is the
        global batch's loss).
    Returns:
      dict of float32 `total_loss` (= `masked_lm_loss`, a scalar) and `masked_lm_example_loss`
      [B * P].
    """
    check_inputs(features, LABEL_FEATURES, "mlm_loss")
    loss, example_loss = masked_lm_loss(outputs["mlm_log_probs"], features["masked_lm_ids"],
                                        features["masked_lm_weights"], masked_lm_weight_sum)
    return {"total_loss": loss, "masked_lm_loss": loss, "masked_lm_example_loss": example_loss}
