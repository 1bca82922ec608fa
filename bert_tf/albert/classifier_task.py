"""ALBERT sentence (pair) classification on the trainer: google-research/albert's
`run_classifier.py` (with its `classifier_utils.py`); `run` is what
`python -m bert_tf.albert.run_classifier` does.

The model, loss and head are bert_tf's classification task (`bert_tf.tasks.classification`:
`output_weights` [num_labels, H] and `output_bias` at the top level of the checkpoint, on the
pooled output, dropout 0.1 in training; cross-entropy, or for sts-b one output and the squared
error) on ALBERT's encoder. What is ALBERT's:

  - the records: the GLUE root's files through the original's processors
    (`bert_tf.albert.classifier_data`), cached as `<cached_dir>/<task>_train.tf_record` and
    `<task>_eval.tf_record`, and `<output_dir>/predict.tf_record`;
  - training: `--train_step` steps, `--warmup_step` warmup, on
    `bert_tf.albert.finetuning.AlbertFineTuningTrainer`: `--optimizer` adamw (BERT's
    AdamWeightDecay) or lamb (ALBERT's LAMB); as the original's Estimator, model.ckpt-<step> is
    saved when training starts (model.ckpt-0), with a .meta beside each, and every checkpoint
    is kept (its RunConfig keeps all: --keep_checkpoint_max is unused there);
  - eval (`evaluate_checkpoints`): every checkpoint of output_dir newer than best_trial.txt's
    step, in step order, with the original's keys, its eval_results.txt blocks and
    best_trial.txt; the evaluated checkpoints that are not the best and have two newer ones are
    removed, as the original does; the best is copied to model.ckpt-best (the original moves it);
  - predict: model.ckpt-best's weights, test_results.tsv and submit_results.tsv.
"""

import dataclasses
import os

import numpy as np
import tensorflow as tf
from absl import logging

from bert_tf import checkpoints, files
from bert_tf.albert import classifier_data
from bert_tf.albert.estimator import BEST_NAME, copy_to_best
from bert_tf.albert.finetuning import (EVAL_RESULTS_FILE, SEPARATOR, AlbertFineTuningTrainer,
                                       cached_records, count_newer, numbered_checkpoints,
                                       remove_checkpoint, sequence_length_problems)
from bert_tf.albert.tokenization import FullTokenizer
from bert_tf.data.classifier import ClassifierDataError
from bert_tf.data.records import records_meta
from bert_tf.evaluation import classifier_metrics
from bert_tf.tasks.classification import ClassificationTask
from bert_tf.training.trainer import TrainerOptions, TrainingError

BEST_TRIAL_FILE = "best_trial.txt"
TEST_RESULTS_FILE = "test_results.tsv"
SUBMIT_RESULTS_FILE = "submit_results.tsv"


class AlbertClassifierError(TrainingError):
    """Flags or files that do not make a valid run; the message says which."""


def best_key(task_name):
    """The metric the original picks the best checkpoint by."""
    return {"sts-b": "pearson", "cola": "matthew_corr"}.get(task_name, "eval_accuracy")


class AlbertClassificationTask(ClassificationTask):
    """The classification task with the eval results of the original's `metric_fn`.

    Keys (besides the Estimator's `loss`, the mean of the batches' mean losses, and
    `global_step`):
      sts-b: `pred`, `label_ids` (every example's prediction and score, float32 arrays),
        `pearson`, `MSE`, `eval_loss`, and ours `spearman`;
      cola: `matthew_corr`, `eval_accuracy`, `eval_loss`;
      others: `eval_accuracy`, `eval_loss`; mrpc and qqp also ours `eval_f1` (of label 1).
    The original's `pearson` is NaN with fewer than 2 examples or a constant prediction or
    score (0/0 in its streaming covariance); so is ours.
    """

    def finalize_eval(self, batches, global_step):
        weights = np.concatenate([b["is_real_example"] for b in batches]).astype(np.float64)
        losses = np.concatenate([b["per_example_loss"] for b in batches]).astype(np.float64)
        logits = np.concatenate([b["logits"] for b in batches])
        labels = np.concatenate([b["label_ids"] for b in batches])
        batch_means = [(b["is_real_example"] * b["per_example_loss"]).sum() /
                       b["is_real_example"].sum() for b in batches if b["is_real_example"].sum()]
        total = weights.sum()
        real = weights > 0
        results = {
            "eval_loss": np.float32((weights * losses).sum() / total),
            "global_step": int(global_step),
            "loss": np.float32(np.mean(batch_means)),
        }
        if self.is_regression:
            predictions = logits[real, 0].astype(np.float32)
            scores = labels[real].astype(np.float32)
            results["pred"] = predictions
            results["label_ids"] = scores
            results["MSE"] = np.float32(np.mean(np.square(
                scores.astype(np.float64) - predictions.astype(np.float64))))
            constant = predictions.size < 2 or np.ptp(predictions) == 0 or np.ptp(scores) == 0
            results["pearson"] = (np.float32("nan") if constant
                                  else classifier_metrics.pearson(predictions, scores))
            results["spearman"] = (np.float32("nan") if constant
                                   else classifier_metrics.spearman(predictions, scores))
            return results
        predictions = np.argmax(logits[real], axis=-1)
        labels = labels[real]
        results["eval_accuracy"] = np.float32((predictions == labels).sum() / total)
        if self.task_name == "cola":
            results["matthew_corr"] = classifier_metrics.matthews_corrcoef(labels, predictions)
        if self.task_name in ("mrpc", "qqp"):
            results["eval_f1"] = classifier_metrics.f1_score(labels, predictions)
        return results


@dataclasses.dataclass(kw_only=True)
class AlbertClassifierOptions(TrainerOptions):
    """The original run_classifier.py's flags (its names and defaults; num_train_steps is
    --train_step, num_warmup_steps --warmup_step), plus the trainer's."""

    data_dir: str
    task_name: str
    spm_model_file: str
    vocab_file: str | None = None
    cached_dir: str | None = None
    do_lower_case: bool = True
    max_seq_length: int = 512
    predict_batch_size: int = 8
    learning_rate: float = 5e-5
    num_train_steps: int = 1000
    num_warmup_steps: int = 0
    # Dropout on the pooled output in training; the original fixes it at 0.1.
    classifier_dropout: float = 0.1

    def problems(self, config):
        problems = super().problems(config)
        problems += sequence_length_problems(self.max_seq_length, config, 3,
                                             "[CLS], [SEP] and a piece")
        if self.predict_batch_size <= 0:
            problems.append(f"--predict_batch_size must be positive, got "
                            f"{self.predict_batch_size}")
        if not 0 <= self.classifier_dropout < 1:
            problems.append(f"--classifier_dropout must be in [0, 1), got "
                            f"{self.classifier_dropout}")
        return problems


# -- records -------------------------------------------------------------------------------
def records(path, examples, label_list, options, tokenizer, input_file, task):
    """The record file `path` of `examples`: reused when its sidecar says it holds them (the
    same input file, flags and SentencePiece model), or when it has no sidecar (the original
    reuses any file of that name: e.g. one it wrote); else (re)written. Returns `path`."""
    meta = records_meta(task.task_name, [input_file], options.max_seq_length,
                        options.spm_model_file, options.do_lower_case, label_list,
                        family="albert")

    def mismatch(problem):
        return ClassifierDataError(
            f"{path}: its records are not this run's (max_seq_length {task.max_seq_length}, "
            f"{'float' if task.is_regression else 'int'} label_ids): {problem}; delete it or "
            "use another --cached_dir")

    def write():
        logging.info("Writing %d examples to %s", len(examples), path)
        classifier_data.write_records(examples, label_list, options.max_seq_length, tokenizer,
                                      path, meta=meta)

    return cached_records(path, meta, task.feature_spec(is_training=False), write, mismatch,
                          "the original reuses a cached record file as it is; delete it to "
                          f"rebuild it from {input_file}")


# -- eval over the checkpoints --------------------------------------------------------------
def read_best_trial(output_dir):
    """(global_step, best step, best value) of best_trial.txt, else (-1, -1, -1)."""
    path = os.path.join(output_dir, BEST_TRIAL_FILE)
    if not files.is_file(path):
        return -1, -1, -1
    with tf.io.gfile.GFile(path, "r") as f:
        text = f.read()
    try:
        step, best_step, value = text.split(":")
        return int(step), int(best_step), float(value)
    except ValueError:
        raise AlbertClassifierError(
            f"{path}: expected 'global_step:best_step:best_value', found {text[:80]!r}; delete "
            "it to evaluate every checkpoint again") from None


def format_result(value):
    """A value as the original writes it: `str()` (numpy arrays as numpy prints them)."""
    return str(value)


def evaluate_checkpoints(trainer, task, eval_file, output_dir, num_train_steps):
    """The original's eval loop: scores every checkpoint of output_dir newer than best_trial.txt's
    global_step, in step order; after each writes eval_results.txt (this run's blocks: its
    results `key = value` by key, `best = <the best before it>`, a line of 50 "="), and
    best_trial.txt (`global_step:best_step:best_value`); removes the evaluated checkpoints that
    are not the best while two newer ones exist (and so the older ones a previous eval left); then
    copies the best to model.ckpt-best. The original then waits for newer checkpoints until
    --train_step; this ends (saying so when the newest is older).

    Without any checkpoint in output_dir, evaluates the weights of --init_checkpoint (the
    original waits forever) and writes eval_results.txt only.

    Every worker evaluates; the chief alone writes and removes files.

    Returns the results of the last checkpoint evaluated (or None).
    """
    chief = trainer.is_chief
    key = best_key(task.task_name)
    global_step, best_step, best_value = read_best_trial(output_dir)
    logging.info("Best trial info: Step: %s, Best Value Step: %s, Best Value: %s",
                 global_step, best_step, best_value)
    found = numbered_checkpoints(output_dir)
    logging.info("found %d files.", len(found))
    if not found:
        trainer.restore_weights()
        results = trainer.evaluate([eval_file], pad_final_batch=True, results_file=None)
        if chief:
            _write_eval_text(output_dir, [_block(results, None)])
        logging.info("No checkpoint in %s: evaluated the weights of --init_checkpoint",
                     output_dir)
        return results

    blocks, results = [], None
    for step, prefix in sorted(found.items()):
        if global_step >= step:
            if chief and best_step != step and count_newer(output_dir, step) > 1:
                remove_checkpoint(prefix)
            continue
        report = checkpoints.load_original_checkpoint(trainer.model, prefix)
        trainer.global_step.assign(step if report.global_step is None else report.global_step)
        logging.info("Evaluating %s", prefix)
        results = trainer.evaluate([eval_file], pad_final_batch=True, results_file=None)
        global_step = results["global_step"]
        blocks.append(_block(results, best_value))
        if results[key] > best_value:
            best_value, best_step = results[key], global_step
        elif chief and count_newer(output_dir, global_step) > 1:
            remove_checkpoint(prefix)
        if chief:
            _write_eval_text(output_dir, blocks)
            files.write_atomic(os.path.join(output_dir, BEST_TRIAL_FILE),
                               f"{global_step}:{best_step}:{best_value}")
    if not blocks:
        logging.info("Every checkpoint of %s was evaluated before (%s: step %s); %s kept as "
                     "it was", output_dir, BEST_TRIAL_FILE, global_step, EVAL_RESULTS_FILE)
    if global_step < num_train_steps:
        logging.warning("The newest checkpoint evaluated is of step %d < --train_step=%d (the "
                        "original would wait for newer ones)", global_step, num_train_steps)
    source = os.path.join(output_dir, f"model.ckpt-{best_step}")
    if chief and tf.io.gfile.exists(source + ".index"):
        copy_to_best(source)
    elif chief and best_step >= 0:
        logging.warning("%s (best_trial.txt's best) is gone: %s not updated", source,
                        os.path.join(output_dir, BEST_NAME))
    return results


def _block(results, best_value):
    lines = [f"{k} = {format_result(results[k])}" for k in sorted(results)]
    if best_value is not None:
        lines.append(f"best = {best_value}")
        lines.append(SEPARATOR)
    return "".join(line + "\n" for line in lines)


def _write_eval_text(output_dir, blocks):
    path = files.write_atomic(os.path.join(output_dir, EVAL_RESULTS_FILE), "".join(blocks))
    logging.info("Wrote %s", path)


# -- predict -------------------------------------------------------------------------------
def predict_checkpoint(trainer, output_dir):
    """Loads the weights to predict with: model.ckpt-best, as the original (which fails without
    it); else output_dir's latest checkpoint, else --init_checkpoint's. Returns the prefix
    loaded, or None for init_checkpoint."""
    best = os.path.join(output_dir, BEST_NAME)
    if tf.io.gfile.exists(best + ".index"):
        checkpoints.load_original_checkpoint(trainer.model, best)
        logging.info("Predicting with %s", best)
        return best
    latest = trainer.restore_weights()
    logging.warning("No %s in %s (written by --do_eval): predicting with %s", BEST_NAME,
                    output_dir, latest or "the weights of --init_checkpoint")
    return latest


def write_predictions(output_dir, examples, rows, task):
    """test_results.tsv (per example its class probabilities, or sts-b's score, `str()` of
    float32, tab-joined) and submit_results.tsv (`index<TAB>prediction` header, then guid and
    predicted label, or the score), as the original; each written whole. Returns both paths."""
    if len(rows) != len(examples):
        raise AssertionError(f"{len(rows)} predictions for {len(examples)} examples")
    test_path = os.path.join(output_dir, TEST_RESULTS_FILE)
    submit_path = os.path.join(output_dir, SUBMIT_RESULTS_FILE)
    with files.atomic_open(test_path) as f:
        for row in rows:
            f.write(classifier_metrics.format_probabilities_line(row))
    with files.atomic_open(submit_path) as f:
        f.write("index\tprediction\n")
        for example, row in zip(examples, rows):
            row = np.asarray(row, np.float32).reshape(-1)
            label = str(row[0]) if task.is_regression else task.label_list[int(np.argmax(row))]
            f.write(f"{example.guid}\t{label}\n")
    return test_path, submit_path


# -- the run -------------------------------------------------------------------------------
def run(config, options, strategy=None, do_train=False, do_eval=False, do_predict=False,
        step_callback=None):
    """What the original's run_classifier.py does: records, train, eval of every checkpoint,
    predict with model.ckpt-best. Returns a dict: `checkpoint` (the last trained, or None),
    `eval_results` (the last evaluated checkpoint's, or None), `test_results` (path or None)."""
    if not (do_train or do_eval or do_predict):
        raise AlbertClassifierError(
            "At least one of `do_train`, `do_eval`, `do_predict' or `export_dir` must be True.")
    # The original's RunConfig keeps every checkpoint (keep_checkpoint_max=0): the eval
    # scores them all, then prunes.
    options = dataclasses.replace(options, keep_checkpoint_max=0)
    options.validate(config)
    processor = classifier_data.get_processor(options.task_name, options.do_lower_case)
    data_dir, output_dir = options.data_dir, options.output_dir
    # Missing dev/test files are said before training, not after it.
    for split, wanted in (("train", do_train), ("dev", do_eval), ("test", do_predict)):
        path = processor.input_file(data_dir, split)
        if wanted and not files.is_file(path):
            raise ClassifierDataError(
                f"{path}: no such file (task {processor.task_name!r} reads its {split} set "
                f"from {processor.layouts[split].file} under --data_dir, the GLUE root)")
    tokenizer = FullTokenizer(options.vocab_file, options.do_lower_case,
                              spm_model_file=options.spm_model_file)
    label_list = processor.get_labels()
    task = AlbertClassificationTask(processor.task_name, label_list, options.max_seq_length,
                                    dropout_rate=options.classifier_dropout)
    tf.io.gfile.makedirs(output_dir)
    cached_dir = options.cached_dir or output_dir
    trainer = AlbertFineTuningTrainer(config, task, options, strategy)
    out = {"checkpoint": None, "eval_results": None, "test_results": None}
    name = processor.task_name

    def make_records(split, path):
        examples = processor.get_examples(data_dir, split)
        return examples, records(path, examples, label_list, options, tokenizer,
                                 processor.input_file(data_dir, split), task)

    if do_train:
        examples, train_file = make_records(
            "train", os.path.join(cached_dir, f"{name}_train.tf_record"))
        logging.info("***** Running training *****")
        logging.info("  Num examples = %d", len(examples))
        logging.info("  Batch size = %d", options.train_batch_size)
        logging.info("  Num steps = %d", options.num_train_steps)
        out["checkpoint"] = trainer.train([train_file], step_callback=step_callback)

    if do_eval:
        examples, eval_file = make_records(
            "dev", os.path.join(cached_dir, f"{name}_eval.tf_record"))
        logging.info("***** Running evaluation *****")
        logging.info("  Num examples = %d (%d actual, %d padding)", len(examples),
                     len(examples), 0)
        logging.info("  Batch size = %d", options.eval_batch_size)
        out["eval_results"] = evaluate_checkpoints(trainer, task, eval_file, output_dir,
                                                   options.num_train_steps)

    if do_predict:
        examples, predict_file = make_records("test",
                                              os.path.join(output_dir, "predict.tf_record"))
        logging.info("***** Running prediction*****")
        logging.info("  Num examples = %d (%d actual, %d padding)", len(examples),
                     len(examples), 0)
        logging.info("  Batch size = %d", options.predict_batch_size)
        predict_checkpoint(trainer, output_dir)
        key = "predictions" if task.is_regression else "probabilities"
        rows = []
        for batch in trainer.predict([predict_file], options.predict_batch_size):
            rows.extend(batch[key][batch["is_real_example"] > 0])
        paths = write_predictions(output_dir, examples, rows, task)
        out["test_results"] = paths[0]
        logging.info("Wrote %s and %s", *paths)
    return out
