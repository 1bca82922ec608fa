"""ALBERT's own fine-tuning head: the SQuAD 2.0 answer head of google-research/albert's
run_squad_v2.py (`squad_utils.create_v2_model`, taken from XLNet).

Why here and not in `bert_tf/layers/heads.py`: the heads there are each declared in
`bert_tf.heads` (export `--task`, the Hub bridge's Transformers class and tensor names, the
task file), and every family's scripts can put them on their encoder. This head is only the
original ALBERT run_squad_v2's: no Transformers ALBERT class holds it (AlbertForQuestionAnswering
is the plain span head) and no export serves it, so it is not declared there; it is used by
`bert_tf.albert.squad_v2_task` alone. The layer itself reads nothing of ALBERT but the
sequence output, so any encoder could carry it.
"""

import keras
import tensorflow as tf

from bert_tf.layers.checkpoint_names import dense_variables, layer_norm_variables
from bert_tf.layers.initializers import truncated_normal
from bert_tf.layers.layer_norm import LAYER_NORM_EPSILON, layer_norm

# What the original adds to the logits of the positions p_mask excludes (after zeroing them).
MASKED_LOGIT = -1e30


def _masked(logits, p_mask):
    """The original's `logits * (1 - p_mask) - 1e30 * p_mask` (p_mask float32, 1 = excluded)."""
    return logits * (1.0 - p_mask) + MASKED_LOGIT * p_mask


class SquadV2Head(keras.layers.Layer):
    """Start, end and answerability of the original's SQuAD 2.0 head, on the sequence output.

    Variables (the original's names, all at the top level of a checkpoint, `checkpoint_variables`):
      start_logits/dense/{kernel [H, 1], bias [1]}: the start logit of each position;
      end_logits/dense_0/{kernel [2H, H], bias [H]} (tanh), end_logits/LayerNorm/{gamma, beta}
        [H], end_logits/dense_1/{kernel [H, 1], bias [1]}: the end logit of each position, from
        [its hidden state; the start position's hidden state];
      answer_class/dense_0/{kernel [2H, H], bias [H]} (tanh), then dropout at `dropout_rate`
        (training only), answer_class/dense_1/kernel [H, 1] (no bias): the answerability logit
        `cls_logits`, from [the start-probability-weighted hidden state; [CLS]'s (position 0)].

    `p_mask` (1 = not a possible answer position: the question, [SEP], padding) sets the start
    and end logits of those positions to -1e30 before the softmax, as the original.

    Training (`start_positions` given): the end logits are conditioned on the gold start
    position. Inference: a beam, the `start_n_top` best starts, and for each the `end_n_top` best
    ends conditioned on it.

    Everything runs in float32 (the LayerNorm and softmaxes must, and the rest is one
    dense layer's worth of work next to the encoder). The dense_0 of end_logits applies its
    kernel [2H, H] as two halves (position [H, H] once per position, start [H, H] once per
    candidate start) and adds them, instead of multiplying the concatenation of every position
    with every start: the same sum, start_n_top times less work.
    """

    def __init__(self, hidden_size, initializer_range=0.02, start_n_top=5, end_n_top=5,
                 dropout_rate=0.1, layer_norm_eps=LAYER_NORM_EPSILON, **kwargs):
        # float32 whatever the global policy (see the class docstring): the variables are read
        # uncast in `call`.
        kwargs.setdefault("dtype", "float32")
        super().__init__(**kwargs)
        self.hidden_size = hidden_size
        self.initializer_range = initializer_range
        self.start_n_top = start_n_top
        self.end_n_top = end_n_top
        self.dropout_rate = dropout_rate
        self.layer_norm_eps = layer_norm_eps

        def dense(units, name, activation=None, use_bias=True):
            return keras.layers.Dense(
                units, activation=activation, use_bias=use_bias,
                kernel_initializer=truncated_normal(initializer_range), dtype="float32",
                name=name)

        self.start_dense = dense(1, "start_logits_dense")
        self.end_dense_0 = dense(hidden_size, "end_logits_dense_0")
        self.end_layer_norm = layer_norm("end_logits_layer_norm", layer_norm_eps)
        self.end_dense_1 = dense(1, "end_logits_dense_1")
        self.answer_dense_0 = dense(hidden_size, "answer_class_dense_0", activation="tanh")
        self.answer_dropout = keras.layers.Dropout(dropout_rate, dtype="float32")
        self.answer_dense_1 = dense(1, "answer_class_dense_1", use_bias=False)

    def build(self, input_shape=None):
        h = self.hidden_size
        self.start_dense.build((None, h))
        self.end_dense_0.build((None, 2 * h))
        self.end_layer_norm.build((None, h))
        self.end_dense_1.build((None, h))
        self.answer_dense_0.build((None, 2 * h))
        self.answer_dense_1.build((None, h))
        self.built = True

    def _end_logits(self, sequence, start_features):
        """float32 [B, K, S]: the end logit of every position given each of K start features.

        Args: `sequence` [B, S, H]; `start_features` [B, K, H]."""
        h = self.hidden_size
        kernel, bias = self.end_dense_0.kernel, self.end_dense_0.bias
        position_part = tf.einsum("bsh,hk->bsk", sequence, kernel[:h])
        start_part = tf.einsum("bjh,hk->bjk", start_features, kernel[h:]) + bias
        hidden = tf.tanh(position_part[:, None, :, :] + start_part[:, :, None, :])
        hidden = self.end_layer_norm(hidden)
        return tf.squeeze(self.end_dense_1(hidden), -1)

    def call(self, sequence_output, p_mask, start_positions=None, training=False):
        """Args:
          sequence_output: the encoder's last layer [B, S, H].
          p_mask: int or float [B, S], 1 where no answer may start or end.
          start_positions: int [B], the gold starts (training); None for the beam.
        Returns a dict of float32 (indexes int32):
          training: `start_log_probs`, `end_log_probs` [B, S] (log-softmax of the masked
            logits), `cls_logits` [B];
          inference: `start_top_log_probs`, `start_top_index` [B, start_n_top],
            `end_top_log_probs`, `end_top_index` [B, start_n_top * end_n_top] (the ends of start
            i at i * end_n_top + j), `cls_logits` [B].
        """
        sequence = tf.cast(sequence_output, tf.float32)
        p_mask = tf.cast(p_mask, tf.float32)
        start_logits = _masked(tf.squeeze(self.start_dense(sequence), -1), p_mask)
        start_log_probs = tf.nn.log_softmax(start_logits, axis=-1)
        outputs = {}
        if start_positions is not None:
            positions = tf.cast(tf.reshape(start_positions, [-1, 1]), tf.int32)
            start_features = tf.gather(sequence, positions, batch_dims=1)  # [B, 1, H]
            end_logits = _masked(self._end_logits(sequence, start_features)[:, 0], p_mask)
            outputs["start_log_probs"] = start_log_probs
            outputs["end_log_probs"] = tf.nn.log_softmax(end_logits, axis=-1)
        else:
            start_top_log_probs, start_top_index = tf.math.top_k(
                start_log_probs, k=self.start_n_top)
            start_features = tf.gather(sequence, start_top_index, batch_dims=1)  # [B, K, H]
            end_logits = _masked(self._end_logits(sequence, start_features), p_mask[:, None])
            end_top_log_probs, end_top_index = tf.math.top_k(
                tf.nn.log_softmax(end_logits, axis=-1), k=self.end_n_top)
            beam = self.start_n_top * self.end_n_top
            outputs["start_top_log_probs"] = start_top_log_probs
            outputs["start_top_index"] = start_top_index
            outputs["end_top_log_probs"] = tf.reshape(end_top_log_probs, [-1, beam])
            outputs["end_top_index"] = tf.reshape(end_top_index, [-1, beam])

        # Answerability: no dependence on the end, so one logit per window.
        start_p = tf.nn.softmax(start_logits, axis=-1)
        start_feature = tf.einsum("bsh,bs->bh", sequence, start_p)
        answer = self.answer_dense_0(tf.concat([start_feature, sequence[:, 0]], axis=-1))
        answer = self.answer_dropout(answer, training=training)
        outputs["cls_logits"] = tf.squeeze(self.answer_dense_1(answer), -1)
        return outputs

    def checkpoint_variables(self, scope=""):
        """{original name: variable} under `scope` (the original's: the top level)."""
        return {
            **dense_variables(f"{scope}start_logits/dense", self.start_dense),
            **dense_variables(f"{scope}end_logits/dense_0", self.end_dense_0),
            **layer_norm_variables(f"{scope}end_logits/LayerNorm", self.end_layer_norm),
            **dense_variables(f"{scope}end_logits/dense_1", self.end_dense_1),
            **dense_variables(f"{scope}answer_class/dense_0", self.answer_dense_0),
            f"{scope}answer_class/dense_1/kernel": self.answer_dense_1.kernel,
        }

    def get_config(self):
        config = super().get_config()
        config.update(hidden_size=self.hidden_size, initializer_range=self.initializer_range,
                      start_n_top=self.start_n_top, end_n_top=self.end_n_top,
                      dropout_rate=self.dropout_rate, layer_norm_eps=self.layer_norm_eps)
        return config
