"""SQuAD 1.1 / 2.0 as a task of the trainer: the original `run_squad.py` (REFERENCE.md §12,
FINETUNING.md §2).

`SquadTask` gives the trainer the encoder + `SpanHead` (`cls/squad/output_weights` [2, H],
`cls/squad/output_bias` [2]), the records of `bert_tf.data.squad`, the loss (the mean of the
start and end cross-entropies over every position, padding included, as the original) and the
per-window logits that `bert_tf.squad_predictions` turns into answers.
"""

import tensorflow as tf

from bert_tf.heads import SpanHead
from bert_tf.models import BertTaskModel
from bert_tf.training.task import Task


class SquadTask(Task):
    """Answer-span prediction over `[CLS] question [SEP] window [SEP]` records.

    Args:
      max_seq_length: the records' sequence length.
      version_2_with_negative: SQuAD 2.0 (saved with the checkpoints; the model is the same).
    """

    step_keys = ("total_loss", "start_loss", "end_loss")
    log_names = ("loss", "start", "end")
    # The span head reads the sequence output only: as in the original, the pooler gets no
    # gradient, hence no update and no Adam slots.
    unused_variable_prefixes = ("bert/pooler/",)

    def __init__(self, max_seq_length, version_2_with_negative=False):
        self.max_seq_length = max_seq_length
        self.version_2_with_negative = version_2_with_negative
        self.name = "squad2" if version_2_with_negative else "squad"

    def build_model(self, config):
        head = SpanHead(config.hidden_size, config.initializer_range, name="squad")
        return BertTaskModel(config, head, name="bert_squad")

    def feature_spec(self, is_training):
        """The original's records: int64 unique_ids [1], input_ids, input_mask, segment_ids
        [L]; training adds start_positions and end_positions [1]."""
        length = [self.max_seq_length]
        spec = {"unique_ids": tf.io.FixedLenFeature([], tf.int64)}
        for name in ("input_ids", "input_mask", "segment_ids"):
            spec[name] = tf.io.FixedLenFeature(length, tf.int64)
        if is_training:
            spec["start_positions"] = tf.io.FixedLenFeature([], tf.int64)
            spec["end_positions"] = tf.io.FixedLenFeature([], tf.int64)
        return spec

    @staticmethod
    def _position_loss(logits, positions):
        """float32 [B]: -log softmax(logits)[position] over all positions."""
        log_probs = tf.nn.log_softmax(logits, axis=-1)
        positions = tf.cast(tf.reshape(positions, [-1]), tf.int32)
        return -tf.gather(log_probs, positions, batch_dims=1)

    def compute_loss(self, outputs, features, normalizers):
        batch = normalizers[0]
        start = tf.reduce_sum(self._position_loss(outputs["start_logits"],
                                                  features["start_positions"])) / batch
        end = tf.reduce_sum(self._position_loss(outputs["end_logits"],
                                                features["end_positions"])) / batch
        return {"total_loss": (start + end) / 2.0, "start_loss": start, "end_loss": end}

    def predict_outputs(self, outputs, features):
        return {
            "unique_ids": features["unique_ids"],
            "start_logits": outputs["start_logits"],
            "end_logits": outputs["end_logits"],
        }
