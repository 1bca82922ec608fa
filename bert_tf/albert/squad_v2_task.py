"""SQuAD 2.0 as google-research/albert's run_squad_v2.py does it, as a task of the trainer.

`SquadV2Model`: the encoder of the config's family with `bert_tf.albert.heads.SquadV2Head` (the
original's XLNet-style start / end / answer-class head). `SquadV2Task` gives the trainer that
model, the records of the original's FeatureWriter (with `p_mask`, and `is_impossible` for
training) and its loss (`squad_utils.v2_model_fn_builder`):

    total = (start + end) / 2 + 0.5 * mean(sigmoid cross-entropy(cls_logits, is_impossible))

start and end being the mean over the batch of -log_softmax(masked logits)[gold position], the
end logits conditioned on the gold start.
"""

import keras
import tensorflow as tf

from bert_tf import families
from bert_tf.albert.heads import SquadV2Head
from bert_tf.layers.inputs import ENCODER_INPUTS, check_inputs
from bert_tf.training.task import Task

# The records' features (the original's FeatureWriter and input_fn_builder with is_v2).
SEQUENCE_FEATURES = ("input_ids", "input_mask", "segment_ids", "p_mask")
TRAINING_FEATURES = ("start_positions", "end_positions", "is_impossible")
# What a prediction gives per window (the original's PREDICT spec).
PREDICTION_KEYS = ("unique_ids", "start_top_log_probs", "start_top_index", "end_top_log_probs",
                   "end_top_index", "cls_logits")


class SquadV2Model(keras.Model):
    """The encoder (`self.bert`, of the config's family) and `SquadV2Head` (`self.head`).

    Call with a dict of int tensors `input_ids`, `input_mask`, `segment_ids`, `p_mask` [B, S]
    and, when `training`, `start_positions` [B] (the end logits are then conditioned on them,
    as the original's is_training graph). Returns the encoder's outputs updated with the
    head's (see `SquadV2Head.call`).

    Args:
      config: the model config (an `AlbertConfig`; any family's works).
      start_n_top, end_n_top: the inference beam (the original's flags, default 5 and 5).
      dropout_prob: the dropout of the answer-class layer in training (the original's
        `--dropout_prob`, default 0.1; the encoder's are the config's).
    """

    def __init__(self, config, start_n_top=5, end_n_top=5, dropout_prob=0.1, **kwargs):
        if isinstance(config, dict):
            config = families.config_from_dict(config)
        kwargs.setdefault("name", "albert_squad_v2")
        super().__init__(**kwargs)
        self.config = config
        self.bert = families.build_encoder(config, name="bert")
        self.head = SquadV2Head(
            config.hidden_size, config.initializer_range, start_n_top=start_n_top,
            end_n_top=end_n_top, dropout_rate=dropout_prob,
            layer_norm_eps=getattr(config, "layer_norm_eps", 1e-12), name="squad_v2")
        self.build()

    def build(self, input_shape=None):
        self.head.build()
        self.built = True

    def call(self, inputs, training=False):
        names = ENCODER_INPUTS + ("p_mask",) + (("start_positions",) if training else ())
        check_inputs(inputs, names, type(self).__name__)
        outputs = dict(self.bert(inputs, training=training))
        outputs.update(self.head(
            outputs["sequence_output"], inputs["p_mask"],
            inputs["start_positions"] if training else None, training=training))
        return outputs

    def checkpoint_variables(self):
        """{original name: variable}: the encoder's, then the head's (top level)."""
        return {**self.bert.checkpoint_variables(), **self.head.checkpoint_variables()}

    def required_checkpoint_scopes(self):
        """The encoder's: a pretrained checkpoint has no head."""
        return self.bert.required_checkpoint_scopes()

    def get_config(self):
        return {"config": self.config.to_dict(), "start_n_top": self.head.start_n_top,
                "end_n_top": self.head.end_n_top, "dropout_prob": self.head.dropout_rate,
                "name": self.name}

    @classmethod
    def from_config(cls, config):
        return cls(**config)


def _position_loss(log_probs, positions):
    """float32 [B]: -log_probs[b, positions[b]]."""
    positions = tf.cast(tf.reshape(positions, [-1, 1]), tf.int32)
    return -tf.gather(log_probs, positions, batch_dims=1)[:, 0]


class SquadV2Task(Task):
    """The original run_squad_v2's model, records and loss (see the module docstring).

    Args:
      max_seq_length: the records' sequence length.
      start_n_top, end_n_top, dropout_prob: as `SquadV2Model`.
    """

    name = "albert_squad_v2"
    step_keys = ("total_loss", "start_loss", "end_loss", "cls_loss")
    log_names = ("loss", "start", "end", "cls")
    # The head reads the sequence output only: the pooler gets no gradient, hence (as in the
    # original) no update and no Adam slots.
    unused_variable_prefixes = ("bert/pooler/",)
    # The original looks both tables up with tf.nn.embedding_lookup (use_one_hot_embeddings is
    # False off TPU): both gradients are IndexedSlices, whose part of the clipped global norm is
    # the sum of their squared rows.
    row_norm_variables = ("bert/embeddings/word_embeddings",
                          "bert/embeddings/token_type_embeddings")
    sequence_keys = SEQUENCE_FEATURES
    position_keys = ("start_positions", "end_positions")
    # Positions past a window's input_mask have p_mask 1: their logits are -1e30, their
    # softmax weight exactly 0, in the loss as in the answer class's start-weighted feature;
    # a cut batch computes the same loss and outputs.
    cut_training_batches = True

    def __init__(self, max_seq_length, start_n_top=5, end_n_top=5, dropout_prob=0.1):
        self.max_seq_length = max_seq_length
        self.start_n_top = start_n_top
        self.end_n_top = end_n_top
        self.dropout_prob = dropout_prob

    def build_model(self, config):
        return SquadV2Model(config, self.start_n_top, self.end_n_top, self.dropout_prob)

    def describe(self):
        return {"task": self.name, "start_n_top": self.start_n_top, "end_n_top": self.end_n_top}

    def feature_spec(self, is_training):
        """The original's records: unique_ids, input_ids, input_mask, segment_ids, p_mask
        and, for training, start_positions, end_positions, is_impossible (all int64)."""
        spec = {"unique_ids": tf.io.FixedLenFeature([], tf.int64)}
        spec.update({name: tf.io.FixedLenFeature([self.max_seq_length], tf.int64)
                     for name in SEQUENCE_FEATURES})
        if is_training:
            spec.update({name: tf.io.FixedLenFeature([], tf.int64)
                         for name in TRAINING_FEATURES})
        return spec

    def compute_loss(self, outputs, features, normalizers):
        batch = normalizers[0]
        start = tf.reduce_sum(_position_loss(outputs["start_log_probs"],
                                             features["start_positions"])) / batch
        end = tf.reduce_sum(_position_loss(outputs["end_log_probs"],
                                           features["end_positions"])) / batch
        labels = tf.cast(tf.reshape(features["is_impossible"], [-1]), tf.float32)
        cls = tf.reduce_sum(tf.nn.sigmoid_cross_entropy_with_logits(
            labels=labels, logits=outputs["cls_logits"])) / batch
        # The original halves the answer-class loss "so that the scale is comparable to
        # start_loss and end_loss".
        total = (start + end) * 0.5 + cls * 0.5
        return {"total_loss": total, "start_loss": start, "end_loss": end, "cls_loss": cls}

    def predict_outputs(self, outputs, features):
        values = {key: outputs[key] for key in PREDICTION_KEYS[1:]}
        values["unique_ids"] = features["unique_ids"]
        return values
