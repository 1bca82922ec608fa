"""Eval metrics of the original `run_pretraining.py` (REFERENCE.md §4) and `eval_results.txt`.

Each eval batch contributes sums (so replicas and batches add up exactly); `finalize` turns
them into the original's metrics:

  masked_lm_accuracy      sum(w * [argmax == label]) / sum(w)     (w = masked_lm_weights)
  masked_lm_loss          sum(w * example_loss) / sum(w)
  next_sentence_accuracy  mean([argmax == label])
  next_sentence_loss      mean(example_loss)
  loss                    mean over batches of the batch's total loss
  global_step             the step of the evaluated weights
"""

import os

import numpy as np
import tensorflow as tf

from bert_tf import files

SUM_KEYS = (
    "mlm_correct", "mlm_weight", "mlm_loss", "nsp_correct", "nsp_count", "nsp_loss", "total_loss",
)


def batch_sums(outputs, features, losses):
    """The additive eval statistics of one (replica's part of a) batch.

    Args:
      outputs: `BertPretrainingModel` outputs (`mlm_log_probs` [B*P, V], `nsp_log_probs` [B, 2]).
      features: the batch (`masked_lm_ids`, `masked_lm_weights` [B, P], `next_sentence_labels`).
      losses: `pretraining_loss(...)` of the batch; its `total_loss` must be this part's share
        of the global batch's loss, so that the sum over replicas is the batch's loss.
    Returns:
      dict SUM_KEYS -> float32 scalar.
    """
    weights = tf.reshape(tf.cast(features["masked_lm_weights"], tf.float32), [-1])
    mlm_ids = tf.reshape(tf.cast(features["masked_lm_ids"], tf.int32), [-1])
    mlm_pred = tf.argmax(outputs["mlm_log_probs"], axis=-1, output_type=tf.int32)
    nsp_labels = tf.reshape(tf.cast(features["next_sentence_labels"], tf.int32), [-1])
    nsp_pred = tf.argmax(outputs["nsp_log_probs"], axis=-1, output_type=tf.int32)
    nsp_correct = tf.cast(tf.equal(nsp_pred, nsp_labels), tf.float32)
    return {
        "mlm_correct": tf.reduce_sum(weights * tf.cast(tf.equal(mlm_pred, mlm_ids), tf.float32)),
        "mlm_weight": tf.reduce_sum(weights),
        "mlm_loss": tf.reduce_sum(weights * losses["masked_lm_example_loss"]),
        "nsp_correct": tf.reduce_sum(nsp_correct),
        "nsp_count": tf.cast(tf.size(nsp_labels), tf.float32),
        "nsp_loss": tf.reduce_sum(losses["next_sentence_example_loss"]),
        "total_loss": losses["total_loss"],
    }


def finalize(sums, num_batches, global_step):
    """The eval results dict from the summed statistics of `num_batches` batches."""

    def ratio(a, b):
        return np.float32(a / b) if b else np.float32("nan")

    return {
        "global_step": int(global_step),
        "loss": ratio(sums["total_loss"], num_batches),
        "masked_lm_accuracy": ratio(sums["mlm_correct"], sums["mlm_weight"]),
        "masked_lm_loss": ratio(sums["mlm_loss"], sums["mlm_weight"]),
        "next_sentence_accuracy": ratio(sums["nsp_correct"], sums["nsp_count"]),
        "next_sentence_loss": ratio(sums["nsp_loss"], sums["nsp_count"]),
    }


def format_results(results):
    """`key = value` lines sorted by key, as the original writes them."""
    return "".join(f"{key} = {str(results[key])}\n" for key in sorted(results))


def write_eval_results(output_dir, results, filename="eval_results.txt"):
    """Writes `output_dir/eval_results.txt` (whole or not at all); returns its path."""
    return files.write_atomic(os.path.join(output_dir, filename), format_results(results))
