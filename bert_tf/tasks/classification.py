"""Sentence (pair) classification and regression as a task of the trainer: the original
`run_classifier.py` (REFERENCE.md §11, FINETUNING.md §1).

`ClassificationTask` gives the trainer the encoder + `ClassifierHead` (`output_weights`
[num_labels, H] and `output_bias` [num_labels] at the top level of the checkpoint), the records
of `bert_tf.data.classifier`, the loss (mean per-example cross-entropy; for a regression task
such as STS-B one output and the mean squared error) and the eval metrics; `run` is what
run_classifier.py does: records, train, eval, predict, and the original's output files.
"""

import numpy as np
import tensorflow as tf
from bert_tf.heads import ClassifierHead
from bert_tf.models import BertTaskModel
from bert_tf.training.task import Task
from bert_tf.training.trainer import TrainingError


class ClassifierError(TrainingError):
    """Flags or files that do not make a valid run_classifier.py run; the message says which."""


class ClassificationTask(Task):
    """Classification (or regression) of `[CLS] a [SEP] (b [SEP])` from the pooled output.

    Args:
      task_name: the processor's name (saved with the checkpoints).
      label_list: the labels (index = label id), or None for a regression task.
      max_seq_length: the records' sequence length.
      dropout_rate: dropout on the pooled output in training (the original's fixed 0.1).
    """

    step_keys = ("total_loss",)
    log_names = ("loss",)
    eval_per_example_keys = ("per_example_loss", "logits", "label_ids", "is_real_example")

    def __init__(self, task_name, label_list, max_seq_length, dropout_rate=0.1):
        self.task_name = task_name
        self.label_list = None if label_list is None else list(label_list)
        self.is_regression = label_list is None
        self.num_labels = 1 if self.is_regression else len(self.label_list)
        self.max_seq_length = max_seq_length
        self.dropout_rate = dropout_rate
        self.name = f"classifier:{task_name}"

    def describe(self):
        return {"task": self.name, "labels": self.label_list, "num_labels": self.num_labels}

    def build_model(self, config):
        head = ClassifierHead(self.num_labels, config.hidden_size, config.initializer_range,
                              dropout_rate=self.dropout_rate, name="classifier")
        return BertTaskModel(config, head, name="bert_classifier")

    def feature_spec(self, is_training):
        """The records of `bert_tf.data.classifier` (the original's features; `label_ids` is
        a float for a regression task)."""
        ints = dict(input_ids=[self.max_seq_length], input_mask=[self.max_seq_length],
                    segment_ids=[self.max_seq_length], is_real_example=[])
        spec = {name: tf.io.FixedLenFeature(shape, tf.int64) for name, shape in ints.items()}
        spec["label_ids"] = tf.io.FixedLenFeature(
            [], tf.float32 if self.is_regression else tf.int64)
        return spec

    def per_example_loss(self, outputs, features):
        """float32 [B]: -log p(label), or (prediction - label)^2 for regression."""
        if self.is_regression:
            labels = tf.cast(features["label_ids"], tf.float32)
            return tf.square(outputs["logits"][:, 0] - labels)
        labels = tf.cast(tf.reshape(features["label_ids"], [-1]), tf.int32)
        return -tf.gather(outputs["log_probs"], labels, batch_dims=1)

    def compute_loss(self, outputs, features, normalizers):
        # The original's loss is the batch mean; here each replica's share of it.
        per_example = self.per_example_loss(outputs, features)
        return {"total_loss": tf.reduce_sum(per_example) / normalizers[0]}

    def eval_outputs(self, outputs, features, losses, normalizers):
        return {
            "per_example_loss": self.per_example_loss(outputs, features),
            "logits": outputs["logits"],
            "label_ids": features["label_ids"],
            "is_real_example": tf.cast(features["is_real_example"], tf.float32),
        }

    def finalize_eval(self, batches, global_step):
        """The original's eval_results.txt keys (eval_accuracy, eval_loss, global_step, loss;
        a regression task has no eval_accuracy) plus the metrics users report for the task
        (`classifier_metrics.task_metrics`)."""
        weights = np.concatenate([b["is_real_example"] for b in batches]).astype(np.float64)
        losses = np.concatenate([b["per_example_loss"] for b in batches]).astype(np.float64)
        logits = np.concatenate([b["logits"] for b in batches])
        labels = np.concatenate([b["label_ids"] for b in batches])
        # The Estimator's `loss`: the mean over batches of each batch's mean loss (the
        # original's last batch is partial; here it is padded, and the padding weighed out).
        batch_means = []
        for b in batches:
            w = b["is_real_example"].astype(np.float64)
            if w.sum():
                batch_means.append((w * b["per_example_loss"]).sum() / w.sum())
        total = weights.sum()
        results = {
            "eval_loss": np.float32((weights * losses).sum() / total),
            "global_step": int(global_step),
            "loss": np.float32(np.mean(batch_means)),
        }
        real = weights > 0
        if self.is_regression:
            predictions = logits[real, 0]
        else:
            predictions = np.argmax(logits[real], axis=-1)
            results["eval_accuracy"] = np.float32(
                (predictions == labels[real]).sum() / total)
        return results

    def predict_outputs(self, outputs, features):
        values = {"is_real_example": features["is_real_example"]}
        if self.is_regression:
            values["predictions"] = outputs["logits"][:, 0]
        else:
            values["probabilities"] = outputs["probabilities"]
        return values
