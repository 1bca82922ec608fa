"""`BertPretrainingModel` (encoder + masked-LM + next-sentence heads) and the pretraining loss."""

import keras
import tensorflow as tf

from bert_tf import families
from bert_tf.layers.checkpoint_names import dense_variables, layer_norm_variables
from bert_tf.layers.heads import MaskedLMHead, NextSentenceHead
from bert_tf.layers.inputs import ENCODER_INPUTS, check_inputs

PRETRAINING_INPUTS = ENCODER_INPUTS + ("masked_lm_positions",)
LABEL_FEATURES = ("masked_lm_ids", "masked_lm_weights", "next_sentence_labels")

# The original adds this to the masked-LM normaliser so an all-padding batch gives 0, not NaN.
_MLM_DENOMINATOR_EPSILON = 1e-5


class BertPretrainingModel(keras.Model):
    """BERT with the pretraining heads of the original `run_pretraining.py`.

    Call with a dict of int tensors `input_ids`, `input_mask`, `segment_ids` [B, S] and
    `masked_lm_positions` [B, P] (other keys are ignored). Returns the `BertModel` outputs
    (`embedding_output`, `all_encoder_layers`, `sequence_output`, `pooled_output`) plus
    `mlm_log_probs` float32 [B * P, V] and `nsp_log_probs` float32 [B, 2].
    All variables exist once the model is constructed. The encoder is the config's family's
    (ALBERT's pretraining model is this one on an ALBERT encoder). A subclass without the
    next-sentence head (`has_next_sentence` False: RoBERTa's, masked LM only) outputs no
    `nsp_log_probs` and has no `cls/seq_relationship` variables.
    """

    # Whether the model has BERT's next-sentence head (`cls/seq_relationship`).
    has_next_sentence = True

    def __init__(self, config, **kwargs):
        if isinstance(config, dict):
            config = families.config_from_dict(config)
        kwargs.setdefault("name", "bert_pretraining")
        super().__init__(**kwargs)
        self.config = config
        self.bert = families.build_encoder(config, name="bert")
        self.masked_lm = MaskedLMHead(
            config.vocab_size, config.hidden_size, config.mlm_hidden_act, config.initializer_range,
            layer_norm_eps=config.layer_norm_eps, embedding_size=config.embedding_size,
            name="predictions",
        )
        self.next_sentence = None
        if self.has_next_sentence:
            self.next_sentence = NextSentenceHead(
                config.hidden_size, config.initializer_range, name="seq_relationship"
            )
        self.build()

    def build(self, input_shape=None):
        self.masked_lm.build()
        if self.next_sentence is not None:
            self.next_sentence.build()
        self.built = True

    def call(self, inputs, training=False):
        check_inputs(inputs, PRETRAINING_INPUTS, type(self).__name__)
        outputs = dict(self.bert(inputs, training=training))
        outputs["mlm_log_probs"] = self.masked_lm(
            outputs["sequence_output"], inputs["masked_lm_positions"], self.bert.embedding_table
        )
        if self.next_sentence is not None:
            outputs["nsp_log_probs"] = self.next_sentence(outputs["pooled_output"])
        return outputs

    def checkpoint_variables(self):
        """{original name: variable}: the encoder's, then the heads' under `cls/`."""
        head = self.masked_lm
        variables = {
            **self.bert.checkpoint_variables(),
            **dense_variables("cls/predictions/transform/dense", head.dense),
            **layer_norm_variables("cls/predictions/transform/LayerNorm", head.layer_norm),
            "cls/predictions/output_bias": head.output_bias,
        }
        if self.next_sentence is not None:
            variables["cls/seq_relationship/output_weights"] = self.next_sentence.output_weights
            variables["cls/seq_relationship/output_bias"] = self.next_sentence.output_bias
        return variables

    def required_checkpoint_scopes(self):
        """Name prefixes every variable of which a checkpoint of this model must hold (the
        encoder's; the heads may be absent, as in a fine-tuned checkpoint)."""
        return self.bert.required_checkpoint_scopes()

    def get_config(self):
        return {"config": self.config.to_dict(), "name": self.name}

    @classmethod
    def from_config(cls, config):
        return cls(**config)


def _label_log_prob(log_probs, labels):
    """-log_probs[i, labels[i]] for each row: [N, C], int [N] -> [N]."""
    labels = tf.cast(tf.reshape(labels, [-1]), tf.int32)
    return -tf.gather(log_probs, labels, batch_dims=1)


def masked_lm_loss(mlm_log_probs, masked_lm_ids, masked_lm_weights, masked_lm_weight_sum=None):
    """The original's masked-LM loss: sum(w * nll) / (sum(w) + 1e-5).

    Args:
      mlm_log_probs: float32 [B * P, V] (`BertPretrainingModel`'s `mlm_log_probs`).
      masked_lm_ids: int [B, P]; masked_lm_weights: float [B, P] (0 for padding predictions).
      masked_lm_weight_sum: optional scalar, the weight sum of the whole global batch (this
        part's loss is then its share of the global batch's); default this batch's.
    Returns:
      (loss float32 scalar, per-prediction losses float32 [B * P]).
    """
    weights = tf.reshape(tf.cast(masked_lm_weights, tf.float32), [-1])
    example_loss = _label_log_prob(mlm_log_probs, masked_lm_ids)
    if masked_lm_weight_sum is None:
        masked_lm_weight_sum = tf.reduce_sum(weights)
    loss = tf.reduce_sum(weights * example_loss) / (
        tf.cast(masked_lm_weight_sum, tf.float32) + _MLM_DENOMINATOR_EPSILON
    )
    return loss, example_loss


def pretraining_loss(outputs, features, masked_lm_weight_sum=None, global_batch_size=None):
    """The original's pretraining loss: masked-LM + next-sentence.

    Args:
      outputs: the dict of `BertPretrainingModel`, with `mlm_log_probs` [B * P, V] and
        `nsp_log_probs` [B, 2].
      features: dict with int `masked_lm_ids` [B, P], float `masked_lm_weights` [B, P]
        (0 for padding predictions) and int `next_sentence_labels` [B, 1] (0 = IsNext).
      masked_lm_weight_sum: optional scalar, the sum of `masked_lm_weights` over the whole
        global batch. With `global_batch_size`, the losses returned are this part's share of the
        global batch's loss, so summing them over replicas or micro-batches gives exactly the
        loss of the whole batch on one device.
      global_batch_size: optional, the number of sequences in the whole global batch.
    Returns:
      dict of float32 scalars `total_loss`, `masked_lm_loss`, `next_sentence_loss` and
      per-example losses `masked_lm_example_loss` [B * P], `next_sentence_example_loss` [B].
    """
    check_inputs(features, LABEL_FEATURES, "pretraining_loss")
    if (masked_lm_weight_sum is None) != (global_batch_size is None):
        raise ValueError("pretraining_loss: give both masked_lm_weight_sum and global_batch_size, or neither")
    mlm_loss, mlm_example_loss = masked_lm_loss(
        outputs["mlm_log_probs"], features["masked_lm_ids"], features["masked_lm_weights"],
        masked_lm_weight_sum)
    nsp_example_loss = _label_log_prob(outputs["nsp_log_probs"], features["next_sentence_labels"])
    if global_batch_size is None:
        nsp_loss = tf.reduce_mean(nsp_example_loss)
    else:
        nsp_loss = tf.reduce_sum(nsp_example_loss) / tf.cast(global_batch_size, tf.float32)
    return {
        "total_loss": mlm_loss + nsp_loss,
        "masked_lm_loss": mlm_loss,
        "next_sentence_loss": nsp_loss,
        "masked_lm_example_loss": mlm_example_loss,
        "next_sentence_example_loss": nsp_example_loss,
    }
