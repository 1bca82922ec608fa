"""Sentence (pair) classification and regression as a task of the trainer: the original
`run_classifier.py` (REFERENCE.md §11, FINETUNING.md §1).

`ClassificationTask` gives the trainer the encoder + `ClassifierHead` (`output_weights`
[num_labels, H] and `output_bias` [num_labels] at the top level of the checkpoint), the records
of `bert_tf.data.classifier`, the loss (mean per-example cross-entropy; for a regression task
such as STS-B one output and the mean squared error) and the eval metrics; `run` is what
run_classifier.py does: records, train, eval, predict, and the original's output files.
"""

import collections
import dataclasses
import os

import numpy as np
import tensorflow as tf
from absl import logging
from bert_tf import families, files
from bert_tf.data import classifier as data
from bert_tf.data.classifier_tasks import get_processor
from bert_tf.data.records import records_are_current, records_meta
from bert_tf.evaluation import classifier_metrics
from bert_tf.layers.heads import ClassifierHead
from bert_tf.models import BertTaskModel
from bert_tf.tasks.finetuning import FineTuningOptions, tokenizer_files_meta
from bert_tf.text import validate_case_matches_checkpoint
from bert_tf.training import metrics
from bert_tf.training.task import Task
from bert_tf.training.task_file import TASK_FILE, read_task_file
from bert_tf.training.trainer import Trainer, TrainingError


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
    # Outputs read [CLS] only, which a cut batch computes as the padded one does.
    eval_by_length = True

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
        results.update(classifier_metrics.task_metrics(self.task_name, labels[real],
                                                       predictions))
        return results

    def predict_outputs(self, outputs, features):
        values = {"is_real_example": features["is_real_example"]}
        if self.is_regression:
            values["predictions"] = outputs["logits"][:, 0]
        else:
            values["probabilities"] = outputs["probabilities"]
        return values


@dataclasses.dataclass(kw_only=True)
class ClassifierOptions(FineTuningOptions):
    """run_classifier.py's flags (the original's names and defaults, REFERENCE.md §11), plus
    the trainer's."""

    data_dir: str
    task_name: str
    # Dropout on the pooled output in training; the original fixes it at 0.1.
    classifier_dropout: float = 0.1
    # The custom task's label list (comma list); default: the training file's sorted labels.
    labels: str | None = None

    def problems(self, config):
        problems = super().problems(config)
        if not 0 <= self.classifier_dropout < 1:
            problems.append(f"--classifier_dropout must be in [0, 1), got "
                            f"{self.classifier_dropout}")
        return problems


def _records(output_file, examples, label_list, options, tokenizer, input_file):
    """Writes the records of `examples` to `output_file` unless it already holds exactly
    them (the same input file, flags and vocab, per its sidecar); returns the file."""
    meta = records_meta(options.task_name.lower(), [input_file], options.max_seq_length,
                        options.vocab_file, options.do_lower_case, label_list,
                        **tokenizer_files_meta(options))
    if records_are_current(output_file, meta):
        logging.info("Reusing %s (made from the same files and flags)", output_file)
        return output_file
    logging.info("Writing %d examples to %s", len(examples), output_file)
    data.write_classifier_records(examples, label_list, options.max_seq_length, tokenizer,
                                  output_file, meta=meta)
    return output_file


def write_test_results(path, rows):
    """test_results.tsv as the original: one line per real example, its class probabilities
    (or regression score) as `str(np.float32)` joined by tabs. Written whole or not at all."""
    with files.atomic_open(path) as f:
        for row in rows:
            f.write(classifier_metrics.format_probabilities_line(row))
    return path


def warn_if_labels_in_runs(labels, shuffle_buffer_size, source):
    """Logs a warning (and returns True) when the training labels come in runs far longer than
    in a random order (a file sorted or grouped by label) while the input is mixed by a
    shuffle buffer much smaller than the file: its batches would hold mostly one label.
    Regression scores (all distinct) never warn."""
    n = len(labels)
    if shuffle_buffer_size <= 0 or n <= 2 * shuffle_buffer_size:
        return False
    shares = [count / n for count in collections.Counter(labels).values()]
    expected = (n - 1) * (1.0 - sum(p * p for p in shares))
    changes = sum(a != b for a, b in zip(labels, labels[1:]))
    if expected < 20 or changes >= 0.25 * expected:
        return False
    logging.warning(
        "%s: the training labels come in long runs (%d label changes between consecutive "
        "examples, about %.0f in a random order): --shuffle_buffer_size=%d mixes only "
        "neighbouring records, so most batches would hold one label; "
        "--shuffle_buffer_size=-1 takes a fresh permutation of the training set each epoch",
        source, changes, expected, shuffle_buffer_size)
    return True


def _split_suffix(split, default):
    """"" for the task's default dev (test) split, else e.g. "_mismatched" for MNLI's
    `dev_mismatched` (results keys `eval_accuracy_mismatched`, eval_mismatched.tf_record) and
    `test_mismatched` (predict_mismatched.tf_record, test_results_mismatched.tsv)."""
    return "" if split == default else "_" + split.removeprefix("dev_").removeprefix("test_")


def _splits_to_run(processor, data_dir, splits):
    """The first of `splits` (the one the original reads: an error when absent) and each other
    one whose file is in data_dir; a skipped one is logged."""
    present = list(splits[:1])
    for split in splits[1:]:
        if processor.has_split(data_dir, split):
            present.append(split)
        else:
            logging.info("%s: absent from --data_dir; skipping the %s set",
                         processor.input_file(data_dir, split), split)
    return present


def _init_checkpoint_labels(options):
    """--labels, or for task custom without it, the label list (in id order) that task.json
    beside --init_checkpoint holds (written by a classifier run or `python -m bert_tf.hf
    import`), so that the head's outputs keep their meaning and prediction needs no train file."""
    if options.labels or (options.task_name or "").lower() != "custom" or not options.init_checkpoint:
        return options.labels
    init = options.init_checkpoint
    directory = init if tf.io.gfile.isdir(init) else os.path.dirname(init)
    saved = read_task_file(directory)
    if saved is None:
        return None
    labels = saved.get("labels")
    if (not str(saved.get("task", "")).startswith("classifier:") or not isinstance(labels, list)
            or not labels or not all(isinstance(x, str) and x for x in labels)):
        return None
    logging.info("Labels of %s (from %s): %s", init, os.path.join(directory, TASK_FILE),
                 ", ".join(labels))
    return labels


def run(config, options, strategy=None, do_train=False, do_eval=False, do_predict=False,
        step_callback=None):
    """What run_classifier.py does: its start-up checks in its order, then train, eval (every
    dev split of the task: MNLI's matched and, when its file is there, mismatched) and predict
    (the same for the test splits). Returns a dict: `checkpoint` (last prefix or None),
    `eval_results` (dict or None), `test_results` (path or None) and, for MNLI's mismatched
    test set, `test_results_mismatched`."""
    if not (do_train or do_eval or do_predict):
        raise ClassifierError(
            "At least one of `do_train`, `do_eval` or `do_predict' must be True.")
    try:
        validate_case_matches_checkpoint(options.do_lower_case,
                                                      options.init_checkpoint)
    except ValueError as e:
        raise ClassifierError(str(e)) from None
    options.validate(config)
    tf.io.gfile.makedirs(options.output_dir)
    processor = get_processor(options.task_name, labels=_init_checkpoint_labels(options))
    if do_predict and not processor.test_splits:
        processor.get_test_examples(options.data_dir)  # raises, saying why
    tokenizer = families.make_tokenizer(config, options.vocab_file, options.do_lower_case,
                                        options.tokenizer_files)
    label_list = processor.get_labels(options.data_dir)
    data_dir, output_dir = options.data_dir, options.output_dir

    train_examples = None
    if do_train:
        train_examples = processor.get_train_examples(data_dir)
        options = options.with_training_steps(
            len(train_examples), processor.input_file(data_dir, "train"), error=ClassifierError)
        warn_if_labels_in_runs([e.label for e in train_examples], options.shuffle_buffer_size,
                               processor.input_file(data_dir, "train"))

    task = ClassificationTask(processor.task_name, label_list, options.max_seq_length,
                              dropout_rate=options.classifier_dropout)
    trainer = Trainer(config, task, options, strategy)
    out = {"checkpoint": None, "eval_results": None, "test_results": None}
    if do_train:
        train_file = _records(os.path.join(output_dir, "train.tf_record"), train_examples,
                              label_list, options, tokenizer,
                              processor.input_file(data_dir, "train"))
        logging.info("***** Running training *****")
        logging.info("  Num examples = %d", len(train_examples))
        logging.info("  Batch size = %d", options.train_batch_size)
        logging.info("  Num steps = %d", options.num_train_steps)
        out["checkpoint"] = trainer.train([train_file], step_callback=step_callback)
    else:
        out["checkpoint"] = trainer.restore_weights()

    if do_eval:
        results = {}
        for split in _splits_to_run(processor, data_dir, processor.dev_splits):
            suffix = _split_suffix(split, processor.dev_splits[0])
            examples = processor.get_dev_examples(data_dir, split)
            eval_file = _records(os.path.join(output_dir, f"eval{suffix}.tf_record"), examples,
                                 label_list, options, tokenizer,
                                 processor.input_file(data_dir, split))
            logging.info("***** Running evaluation *****")
            logging.info("  Num examples = %d (%d actual, %d padding)", len(examples),
                         len(examples), 0)
            logging.info("  Batch size = %d", options.eval_batch_size)
            split_results = trainer.evaluate([eval_file], pad_final_batch=True,
                                             results_file=None)
            if suffix:
                split_results = {f"{k}{suffix}": v for k, v in split_results.items()
                                 if k.startswith("eval_")}
            results.update(split_results)
        logging.info("Wrote %s", metrics.write_eval_results(output_dir, results))
        out["eval_results"] = results

    if do_predict:
        for split in _splits_to_run(processor, data_dir, processor.test_splits):
            suffix = _split_suffix(split, processor.test_splits[0])
            examples = processor.get_test_examples(data_dir, split)
            predict_file = _records(os.path.join(output_dir, f"predict{suffix}.tf_record"),
                                    examples, label_list, options, tokenizer,
                                    processor.input_file(data_dir, split))
            logging.info("***** Running prediction*****")
            logging.info("  Num examples = %d (%d actual, %d padding)", len(examples),
                         len(examples), 0)
            logging.info("  Batch size = %d", options.predict_batch_size)
            key = "predictions" if task.is_regression else "probabilities"
            rows = []
            for batch in trainer.predict([predict_file], options.predict_batch_size):
                rows.extend(batch[key][batch["is_real_example"] > 0])
            if len(rows) != len(examples):
                raise AssertionError(f"{len(rows)} predictions for {len(examples)} examples")
            out[f"test_results{suffix}"] = write_test_results(
                os.path.join(output_dir, f"test_results{suffix}.tsv"), rows)
            logging.info("Wrote %s", out[f"test_results{suffix}"])
    return out
