"""`RobertaModel`: RoBERTa's encoder (fairseq's `RobertaModel`, Transformers' `RobertaModel`):
BERT's encoder with positions counted from the mask, after `pad_token_id`."""

import numpy as np
import tensorflow as tf

from bert_tf.bert.model import BertModel
from bert_tf.layers.inputs import ENCODER_INPUTS, check_inputs


class RobertaModel(BertModel):
    """The RoBERTa encoder, for configs of model_type "roberta" (`RobertaConfig`).

    BERT's embeddings, post-LN blocks and tanh pooler (the same arithmetic, with the config's
    `layer_norm_eps` and `hidden_act`), except positions: token s of a sequence takes row

        position = cumsum(input_mask)[s] * input_mask[s] + pad_token_id

    of the position table [max_position_embeddings, H] (kept whole): real tokens
    pad_token_id + 1, pad_token_id + 2, ..., padding pad_token_id (fairseq's `make_positions`).
    A position depends only on its row's mask up to it, so a batch cut to its longest
    sequence (dynamic padding) or split over replicas gets the same positions, and the
    arithmetic is plain int32 ops XLA compiles. Transformers counts tokens whose id is not
    `pad_token_id` instead; the two agree wherever padding is `<pad>` with mask 0 (the padded
    rows' outputs differ where padding holds other ids, and no real token's does).

    Call with a dict of int tensors `input_ids`, `input_mask`, `segment_ids` [B, S], S at most
    `config.max_sequence_length` (max_position_embeddings - pad_token_id - 1) and every
    segment id below `type_vocab_size` (RoBERTa's is 1: all zeros). Returns BertModel's dict:
    `embedding_output`, `all_encoder_layers`, `sequence_output` [B, S, H], `pooled_output`
    [B, H] (the pooler on `<s>`, the first token; Transformers' classifier head is that
    pooler + a classifier). A longer S or a segment id out of range is refused with a
    ValueError naming the config (in a graph, an InvalidArgumentError; XLA drops such checks,
    so there the input pipeline must hold to them).

    Variables under `roberta/` with BERT's names (`checkpoint_variables`): no BERT code loads
    them as a BERT's weights and computes BERT's positions with them.
    """

    model_type = "roberta"
    scope = "roberta"
    has_pooler = True

    @property
    def gathered_tables(self):
        """No table: fairseq and Transformers train the embeddings with dense gradients (PyTorch's
        nn.Embedding), clipped by the norm of the summed gradient, not by rows."""
        return ()

    def call(self, inputs, training=False):
        check_inputs(inputs, ENCODER_INPUTS, type(self).__name__)
        inputs = dict(inputs, segment_ids=self._checked_segments(inputs["segment_ids"]))
        return super().call(inputs, training=training)

    def _checked_segments(self, segment_ids):
        """`segment_ids`, checked to be below type_vocab_size (a table lookup past it fails on
        a CPU, reads zeros on a GPU and clamps under XLA)."""
        size = self.config.type_vocab_size
        what = (f"segment_ids must be in [0, type_vocab_size={size}) of the roberta config "
                f"(RoBERTa's inputs are all segment 0)")
        if tf.executing_eagerly():
            values = np.asarray(segment_ids)
            if values.size and (values.min() < 0 or values.max() >= size):
                raise ValueError(f"{what}, got {int(values.min())}..{int(values.max())}")
            return segment_ids
        segment_ids = tf.convert_to_tensor(segment_ids)
        with tf.control_dependencies([
                tf.debugging.assert_non_negative(segment_ids, message=what),
                tf.debugging.assert_less(segment_ids, tf.cast(size, segment_ids.dtype),
                                         message=what)]):
            return tf.identity(segment_ids)

    def _position_ids(self, inputs):
        """cumsum(mask) * mask + pad_token_id, int32 [B, S]."""
        input_mask = inputs["input_mask"]
        usable = self.config.max_sequence_length
        what = (f"RoBERTa takes at most {usable} tokens (max_position_embeddings "
                f"{self.config.max_position_embeddings} - pad_token_id "
                f"{self.config.pad_token_id} - 1 of the roberta config)")
        length = input_mask.shape[1]
        if length is not None and length > usable:
            raise ValueError(f"sequence length {length} is too long: {what}")
        checks = []
        if length is None and not tf.executing_eagerly():
            checks.append(tf.debugging.assert_less_equal(tf.shape(input_mask)[1], usable,
                                                         message=what))
        with tf.control_dependencies(checks):
            mask = tf.cast(tf.not_equal(input_mask, 0), tf.int32)
        return tf.cumsum(mask, axis=1) * mask + self.config.pad_token_id
