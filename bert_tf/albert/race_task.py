"""RACE as google-research/albert's run_race.py (with race_utils.py) does it, as a task of the
trainer; `run` is what `python -m bert_tf.albert.run_race` does.

`MultipleChoiceModel`: the records' [B, 4, S] features as B * 4 sequences through the
config's encoder, bert_tf's classifier head with one output (`output_weights` [1, H] and
`output_bias` [1] at the top level of the checkpoint, as race_utils.create_model names them;
dropout `--dropout_prob` on the pooled output in training), its logits [B * 4, 1] read as
[B, 4]. `RaceTask`: those records (`bert_tf.albert.race_data`), the loss (the batch mean of
-log_softmax(logits)[label]) and the eval results of the original's metric_fn.

The run (`run`), as the original's main():
  - records: --train_file and --eval_file are written from --data_dir when absent (else
    reused; ours rewrites one its sidecar says was made from other files or flags; without
    the flag, <output_dir>/train.tf_record, eval.tf_record); --predict_file likewise (the
    original writes <output_dir>/predict.tf_record every time);
  - training: --train_step steps from --init_checkpoint, --warmup_step warmup, AdamWeightDecay
    (`--optimizer=lamb`: ALBERT's LAMB); model.ckpt-0 at the start and a checkpoint every
    --save_checkpoints_steps, all kept (`bert_tf.albert.finetuning`);
  - eval (`evaluate_checkpoints`): model.ckpt-best (if any), then every model.ckpt-N of
    output_dir newer than it, in order, on the dev set; eval_results.txt as the original writes
    it (per checkpoint: its results, `best = <best eval_accuracy before it>`, the `saved ...`
    lines when it is better and copied to model.ckpt-best, a line of 50 "="); checkpoints with
    more than one newer one removed once scored (and the older ones at the start);
  - predict: model.ckpt-best evaluated on the test set (RACE's test answers are public):
    predict_results.txt (`***** Predict results *****`, its results, `best = ` the eval loop's).

Where the original fails or waits, ours works and says what it did: --do_predict on CPU (the
original reads predict_steps, set only with --use_tpu) evaluates the test set as its eval does
(no padding examples), and without --do_eval in the same run writes no `best` line (the
original's best_perf is unset); the loop does not wait for checkpoints a training elsewhere has
yet to write (the original polls until one of step >= --train_step); with no checkpoint in
output_dir it evaluates --init_checkpoint when that has a RACE head (the original waits
forever); predict without model.ckpt-best uses output_dir's latest checkpoint, else
--init_checkpoint's RACE head.
"""

import dataclasses
import os

import numpy as np
import tensorflow as tf
from absl import logging

from bert_tf import files
from bert_tf.albert import race_data
from bert_tf.albert.estimator import BEST_NAME, copy_to_best
from bert_tf.albert.finetuning import (EVAL_RESULTS_FILE, SEPARATOR, AlbertFineTuningTrainer,
                                       cached_records, count_newer, load_scored_checkpoint,
                                       numbered_checkpoints, remove_checkpoint, result_lines,
                                       sequence_length_problems)
from bert_tf.albert.tokenization import FullTokenizer
from bert_tf.data.records import records_meta
from bert_tf.heads import CLASSIFIER
from bert_tf.layers.inputs import ENCODER_INPUTS, check_inputs
from bert_tf.models import BertTaskModel
from bert_tf.tasks.classification import ClassificationTask
from bert_tf.training.trainer import TrainerOptions, TrainingError

TASK_NAME = "race"
PREDICT_RESULTS_FILE = "predict_results.txt"
# The metric the original's loop picks model.ckpt-best by.
BEST_KEY = "eval_accuracy"


class RaceError(TrainingError):
    """Flags or files that do not make a valid run_race run; the message says which."""


class MultipleChoiceModel(BertTaskModel):
    """The encoder of the config's family and a one-output classifier head scoring each of
    `num_choices` sequences of an example (see the module docstring).

    Call with a dict of int tensors `input_ids`, `input_mask`, `segment_ids` [B, C, S].
    Returns the encoder's `pooled_output` [B * C, H] and float32 `logits`, `log_probs`,
    `probabilities` [B, C] (softmax over the choices).
    """

    def __init__(self, config, head, num_choices=race_data.NUM_CHOICES, **kwargs):
        kwargs.setdefault("name", "multiple_choice")
        super().__init__(config, head, **kwargs)
        self.num_choices = num_choices

    def call(self, inputs, training=False):
        check_inputs(inputs, ENCODER_INPUTS, type(self).__name__)
        flat = {name: tf.reshape(inputs[name], [-1, tf.shape(inputs[name])[-1]])
                for name in ENCODER_INPUTS}
        outputs = self.bert(flat, training=training)
        scores = self.head(outputs, training=training)["logits"]
        logits = tf.reshape(scores, [-1, self.num_choices])
        return {
            "pooled_output": outputs["pooled_output"],
            "logits": logits,
            "log_probs": tf.nn.log_softmax(logits, axis=-1),
            "probabilities": tf.nn.softmax(logits, axis=-1),
        }

    def get_config(self):
        return dict(super().get_config(), num_choices=self.num_choices)


class RaceTask(ClassificationTask):
    """The original run_race's model, records and eval results; the loss (-log_softmax of the
    label's logit, the batch mean), eval and predict outputs are the classification task's over
    the 4 choices.

    Args:
      max_seq_length: the records' sequence length (of each choice).
      dropout_prob: dropout on the pooled output in training (--dropout_prob).
    """

    name = "albert_race"

    def __init__(self, max_seq_length, dropout_prob=0.1):
        super().__init__(TASK_NAME, race_data.LABELS, max_seq_length, dropout_rate=dropout_prob)
        # ClassificationTask names itself after the GLUE task; this is the class's name.
        self.name = type(self).name
        self.dropout_prob = dropout_prob

    def describe(self):
        return {"task": self.name, "labels": list(race_data.LABELS)}

    def build_model(self, config):
        head = CLASSIFIER.build(config, num_labels=1, dropout_rate=self.dropout_prob)
        return MultipleChoiceModel(config, head)

    def feature_spec(self, is_training):
        return race_data.record_feature_spec(self.max_seq_length)

    def finalize_eval(self, batches, global_step):
        """The original's results: `eval_accuracy` and `eval_loss` (tf.metrics' accuracy and
        mean over the real examples, float32 sums divided), `loss` (the Estimator's mean of
        the batches' mean losses; a batch of the original holds real examples only) and
        `global_step`."""
        correct = total = loss_sum = np.float32(0)
        batch_means = []
        for b in batches:
            weights = b["is_real_example"].astype(np.float32)
            if not weights.sum():
                continue
            hits = (np.argmax(b["logits"], axis=-1) == b["label_ids"]).astype(np.float32)
            losses = b["per_example_loss"].astype(np.float32)
            correct += np.sum(hits * weights, dtype=np.float32)
            total += np.sum(weights, dtype=np.float32)
            loss_sum += np.sum(losses * weights, dtype=np.float32)
            batch_means.append(np.sum(losses * weights, dtype=np.float32) / np.sum(weights))
        return {
            "eval_accuracy": np.float32(correct / total),
            "eval_loss": np.float32(loss_sum / total),
            "global_step": int(global_step),
            "loss": np.float32(np.mean(np.asarray(batch_means, np.float32), dtype=np.float32)),
        }


@dataclasses.dataclass(kw_only=True)
class RaceOptions(TrainerOptions):
    """run_race.py's flags (the original's names and defaults; num_train_steps is
    --train_step, num_warmup_steps --warmup_step), plus the trainer's."""

    data_dir: str
    spm_model_file: str
    vocab_file: str | None = None
    task_name: str = TASK_NAME
    train_file: str | None = None
    eval_file: str | None = None
    predict_file: str | None = None
    do_lower_case: bool = True
    dropout_prob: float = 0.1
    max_seq_length: int = 512
    max_qa_length: int = 128
    high_only: bool = False
    middle_only: bool = False
    train_batch_size: int = 32
    eval_batch_size: int = 8
    predict_batch_size: int = 8
    learning_rate: float = 1e-5
    num_train_steps: int = 12000
    num_warmup_steps: int = 1000
    save_checkpoints_steps: int = 100
    # The original's RunConfig keeps every checkpoint; its eval loop removes the old ones.
    keep_checkpoint_max: int = 0

    def problems(self, config):
        problems = super().problems(config)
        problems += sequence_length_problems(self.max_seq_length, config, 4,
                                             "[CLS] article [SEP] ending [SEP]")
        if self.max_qa_length < 0:
            problems.append(f"--max_qa_length must be >= 0, got {self.max_qa_length}")
        if self.predict_batch_size <= 0:
            problems.append(f"--predict_batch_size must be positive, got "
                            f"{self.predict_batch_size}")
        if not 0 <= self.dropout_prob < 1:
            problems.append(f"--dropout_prob must be in [0, 1), got {self.dropout_prob}")
        if self.high_only and self.middle_only:
            problems.append("--high_only and --middle_only together leave no level of RACE to "
                            "read: give at most one")
        return problems


# -- records -------------------------------------------------------------------------------
def records(path, examples, input_files, options, tokenizer, task):
    """The record file `path` of `examples`: reused when its sidecar says it holds them (the
    same input files, flags and SentencePiece model), or when it has no sidecar (the original
    reuses any file of that name, e.g. one it wrote); else (re)written. Returns `path`."""
    meta = records_meta(TASK_NAME, input_files, options.max_seq_length, options.spm_model_file,
                        options.do_lower_case, list(race_data.LABELS), family="albert",
                        max_qa_length=options.max_qa_length)
    spec = task.feature_spec(is_training=False)

    def mismatch(problem):
        return RaceError(f"{path}: its records are not this run's (4 choices of "
                         f"--max_seq_length={task.max_seq_length}): {problem}; delete it to "
                         "rebuild it")

    def write():
        logging.info("Writing %d examples to %s", len(examples), path)
        race_data.write_race_records(examples, options.max_seq_length, tokenizer, path,
                                     options.max_qa_length, meta=meta)

    return cached_records(path, meta, spec, write, mismatch,
                          "the original reuses its record files as they are; delete it to "
                          "rebuild it from --data_dir")


# -- scoring checkpoints -------------------------------------------------------------------
class _Scorer:
    """Evaluates checkpoints on one record file (`__call__(prefix) -> results`)."""

    def __init__(self, trainer, record_file, batch_size):
        self.trainer, self.record_file, self.batch_size = trainer, record_file, batch_size

    def load(self, prefix, flag=None):
        self.trainer.global_step.assign(load_scored_checkpoint(
            self.trainer.model, prefix, "RACE", "evaluate", RaceError, flag))

    def __call__(self, prefix, flag=None):
        self.load(prefix, flag)
        logging.info("Evaluating %s on %s", prefix, self.record_file)
        trainer = self.trainer
        options = trainer.options
        # The eval loop's batches are of this batch size (the `loss` averages them).
        trainer.options = dataclasses.replace(options, eval_batch_size=self.batch_size)
        try:
            return trainer.evaluate([self.record_file], pad_final_batch=True,
                                    results_file=None)
        finally:
            trainer.options = options


def evaluate_checkpoints(output_dir, score, train_step, init_checkpoint=None, is_chief=True):
    """The original run_race's eval loop (see the module docstring), with `score(prefix)` ->
    results. Writes eval_results.txt (chief) after each checkpoint scored; a run that scores
    none keeps the file as it was (the original empties it, then waits). Returns (results of
    the last checkpoint scored or None, the best eval_accuracy: -1 when none)."""
    eval_file = os.path.join(output_dir, EVAL_RESULTS_FILE)
    best = os.path.join(output_dir, BEST_NAME)
    found = numbered_checkpoints(output_dir)
    has_best = tf.io.gfile.exists(best + ".index")
    if not found and not has_best:
        if not init_checkpoint:
            raise RaceError(f"--output_dir={output_dir} has no checkpoint to evaluate "
                            f"(model.ckpt-N or {BEST_NAME}) and there is no --init_checkpoint: "
                            "train first (--do_train)")
        logging.info("No checkpoint in %s: evaluating --init_checkpoint=%s (the original "
                     "waits for one)", output_dir, init_checkpoint)
        results = score(init_checkpoint, flag="init_checkpoint")
        if is_chief:
            files.write_atomic(eval_file, "".join(result_lines(results)))
        return results, results[BEST_KEY]
    last = None
    if has_best:
        last = score(best)
        best_perf, global_step = last[BEST_KEY], last["global_step"]
        logging.info("%s: %s %s at step %d", best, BEST_KEY, best_perf, global_step)
    else:
        best_perf, global_step = -1, -1
    logging.info("found %d files.", len(found))

    lines = []
    for step, prefix in sorted(found.items()):
        if global_step >= step:
            if is_chief and count_newer(output_dir, step) > 1:
                remove_checkpoint(prefix)
            continue
        last = score(prefix)
        global_step = last["global_step"]
        logging.info("***** Eval results *****")
        lines += result_lines(last)
        # The original formats best_perf with str.format: a float32 result as a Python float.
        lines.append("best = {}\n".format(best_perf))
        if last[BEST_KEY] > best_perf:
            best_perf = last[BEST_KEY]
            if is_chief:
                lines += [f"saved {source} to {target}\n"
                          for source, target in copy_to_best(prefix)]
        if is_chief and count_newer(output_dir, global_step) > 1:
            remove_checkpoint(prefix)
        lines.append(SEPARATOR + "\n")
        if is_chief:
            files.write_atomic(eval_file, "".join(lines))
    if not lines:
        logging.info("No checkpoint of %s newer than step %d: nothing evaluated, %s kept as "
                     "it was", output_dir, global_step, eval_file)
    if global_step < train_step:
        logging.info("global_step %d < --train_step=%d: not waiting for the newer checkpoints "
                     "a training elsewhere may write (the original waits)", global_step,
                     train_step)
    return last, best_perf


def predict_weights(output_dir, init_checkpoint):
    """(prefix, flag) of the weights to predict with: model.ckpt-best (the original's), else
    output_dir's latest checkpoint, else --init_checkpoint."""
    best = os.path.join(output_dir, BEST_NAME)
    if tf.io.gfile.exists(best + ".index"):
        return best, None
    found = numbered_checkpoints(output_dir)
    if found:
        prefix = found[max(found)]
        logging.warning("No %s in %s (written by --do_eval): predicting with %s", BEST_NAME,
                        output_dir, prefix)
        return prefix, None
    if init_checkpoint:
        logging.warning("No checkpoint in %s: predicting with --init_checkpoint=%s", output_dir,
                        init_checkpoint)
        return init_checkpoint, "init_checkpoint"
    raise RaceError(f"--output_dir={output_dir} has no checkpoint to predict with "
                    f"({BEST_NAME}, model.ckpt-N) and there is no --init_checkpoint: train "
                    "first (--do_train --do_eval)")


def predict_results_text(results, best_perf=None):
    """predict_results.txt as the original writes it; `best_perf` None: no `best` line."""
    lines = ["***** Predict results *****\n"] + result_lines(results)
    if best_perf is not None:
        lines.append("best = {}\n".format(best_perf))
    return "".join(lines)


# -- the run -------------------------------------------------------------------------------
def run(config, options, strategy=None, do_train=True, do_eval=True, do_predict=False,
        step_callback=None):
    """What the original's run_race.py does (module docstring). Returns a dict: `checkpoint`
    (the last trained, or None), `eval_results` (the last checkpoint scored by the eval loop,
    or None), `best` (the loop's best eval_accuracy, or None), `predict_results` (dict or
    None)."""
    if not (do_train or do_eval or do_predict):
        raise RaceError("At least one of `do_train`, `do_eval` or `do_predict' must be True.")
    if (options.task_name or "").lower() != TASK_NAME:
        raise RaceError(f"Task not found: {(options.task_name or '').lower()} (--task_name: "
                        f"run_race has one task, {TASK_NAME})")
    options.validate(config)
    output_dir, data_dir = options.output_dir, options.data_dir
    processor = race_data.RaceProcessor(options.do_lower_case, options.high_only,
                                        options.middle_only)
    # Missing data files are said before training, not after it.
    splits = [s for s, wanted in (("train", do_train), ("dev", do_eval), ("test", do_predict))
              if wanted]
    input_files = {split: processor.input_files(data_dir, split) for split in splits}
    tf.io.gfile.makedirs(output_dir)
    tokenizer = FullTokenizer(options.vocab_file, options.do_lower_case,
                              spm_model_file=options.spm_model_file)
    task = RaceTask(options.max_seq_length, options.dropout_prob)
    trainer = AlbertFineTuningTrainer(config, task, options, strategy)
    out = {"checkpoint": None, "eval_results": None, "best": None, "predict_results": None}

    def make_records(split, flag, default_name):
        examples = processor.get_examples(data_dir, split)
        path = getattr(options, flag) or os.path.join(output_dir, default_name)
        if not getattr(options, flag):
            logging.info("No --%s: the %s records go to %s", flag, split, path)
        return examples, records(path, examples, input_files[split], options, tokenizer, task)

    if do_train:
        examples, train_file = make_records("train", "train_file", "train.tf_record")
        logging.info("***** Running training *****")
        logging.info("  Num examples = %d", len(examples))
        logging.info("  Batch size = %d", options.train_batch_size)
        logging.info("  Num steps = %d", options.num_train_steps)
        out["checkpoint"] = trainer.train([train_file], step_callback=step_callback)

    if do_eval:
        examples, eval_file = make_records("dev", "eval_file", "eval.tf_record")
        logging.info("***** Running evaluation *****")
        logging.info("  Num examples = %d (%d actual, %d padding)", len(examples),
                     len(examples), 0)
        logging.info("  Batch size = %d", options.eval_batch_size)
        results, best_perf = evaluate_checkpoints(
            output_dir, _Scorer(trainer, eval_file, options.eval_batch_size),
            options.num_train_steps, options.init_checkpoint, trainer.is_chief)
        out["eval_results"], out["best"] = results, best_perf

    if do_predict:
        examples, predict_file = make_records("test", "predict_file", "predict.tf_record")
        logging.info("***** Running prediction*****")
        logging.info("  Num examples = %d (%d actual, %d padding)", len(examples),
                     len(examples), 0)
        logging.info("  Batch size = %d", options.predict_batch_size)
        prefix, flag = predict_weights(output_dir, options.init_checkpoint)
        results = _Scorer(trainer, predict_file, options.predict_batch_size)(prefix, flag)
        if out["best"] is None:
            logging.info("No --do_eval in this run: predict_results.txt has no `best` line "
                         "(the best eval_accuracy of an eval loop)")
        path = os.path.join(output_dir, PREDICT_RESULTS_FILE)
        if trainer.is_chief:
            files.write_atomic(path, predict_results_text(results, out["best"]))
        logging.info("Wrote %s", path)
        out["predict_results"] = results
    return out
