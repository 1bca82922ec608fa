"""Pretraining as a task of the trainer: the original `run_pretraining.py` (REFERENCE.md §4-7).

`PretrainingTask` gives the trainer the `BertPretrainingModel`, the records of
`create_pretraining_data.py`, the masked-LM + next-sentence loss and the original's eval
metrics; `Pretrainer` and `run` are what run_pretraining.py calls.
"""

import dataclasses

import tensorflow as tf
from bert_tf.bert.pretraining import BertPretrainingModel, pretraining_loss
from bert_tf.data.features import feature_spec
from bert_tf.training import input_pipeline, metrics
from bert_tf.training.task import Task
from bert_tf.training.trainer import Trainer, TrainerOptions, TrainingError

# Errors of a pretraining run are the trainer's (kept under this name for callers).
PretrainingError = TrainingError


@dataclasses.dataclass(kw_only=True)
class PretrainingOptions(TrainerOptions):
    """The run's settings; the names and defaults of the original's flags (REFERENCE.md §7)."""

    input_files: list
    max_seq_length: int = 128
    max_predictions_per_seq: int = 20
    max_eval_steps: int = 100

    def problems(self, config):
        problems = super().problems(config)
        for name in ("max_eval_steps", "max_seq_length", "max_predictions_per_seq"):
            if getattr(self, name) <= 0:
                problems.append(f"--{name} must be positive, got {getattr(self, name)}")
        if self.max_seq_length > config.max_position_embeddings:
            problems.append(
                f"--max_seq_length={self.max_seq_length} is larger than max_position_embeddings="
                f"{config.max_position_embeddings} of the bert config"
            )
        if self.max_predictions_per_seq > self.max_seq_length:
            problems.append(
                f"--max_predictions_per_seq={self.max_predictions_per_seq} exceeds "
                f"--max_seq_length={self.max_seq_length}"
            )
        return problems


class PretrainingTask(Task):
    """Masked LM + next-sentence prediction on `create_pretraining_data.py` records."""

    name = "pretraining"
    step_keys = ("total_loss", "masked_lm_loss", "next_sentence_loss")
    log_names = ("loss", "mlm", "nsp")
    row_norm_variables = ()
    # The masked-LM head gathers the sequence at these positions.
    position_keys = ("masked_lm_positions",)

    def __init__(self, max_seq_length, max_predictions_per_seq):
        self.max_seq_length = max_seq_length
        self.max_predictions_per_seq = max_predictions_per_seq

    def build_model(self, config):
        return BertPretrainingModel(config)

    def feature_spec(self, is_training):
        return feature_spec(self.max_seq_length, self.max_predictions_per_seq)

    def local_normalizers(self, features):
        """[masked-LM weight sum, number of sequences] of this replica's batch."""
        return tf.stack([
            tf.reduce_sum(tf.cast(features["masked_lm_weights"], tf.float32)),
            tf.cast(tf.shape(features["input_ids"])[0], tf.float32),
        ])

    def compute_loss(self, outputs, features, normalizers):
        return pretraining_loss(outputs, features, masked_lm_weight_sum=normalizers[0],
                                global_batch_size=normalizers[1])

    def eval_outputs(self, outputs, features, losses, normalizers):
        return metrics.batch_sums(outputs, features, losses)

    def finalize_eval(self, batches, global_step):
        sums = {k: sum(float(b[k]) for b in batches) for k in metrics.SUM_KEYS}
        return metrics.finalize(sums, len(batches), global_step)


class Pretrainer(Trainer):
    """The trainer with the pretraining task of `options` (`PretrainingOptions`), reading
    `options.input_files`.

    Args:
      config: the `BertConfig`.
      options: `PretrainingOptions`.
      strategy: a tf.distribute.Strategy (default: TensorFlow's default strategy).
    """

    # The task (a family's pretrainer names its own, e.g. ALBERT's sentence order).
    task_class = PretrainingTask

    def __init__(self, config, options, strategy=None):
        super().__init__(config, self.make_task(config, options), options, strategy)

    def make_task(self, config, options):
        """The task of `options` (a family's pretrainer may build its own differently)."""
        return self.task_class(options.max_seq_length, options.max_predictions_per_seq)

    def train(self, step_callback=None):
        """Trains to num_train_steps (see `Trainer.train`); returns the last checkpoint."""
        return super().train(self.options.input_files, step_callback=step_callback)

    def evaluate(self):
        """Evaluates on up to max_eval_steps whole batches of the input files, read in order;
        writes output_dir/eval_results.txt and returns the results."""
        return super().evaluate(self.options.input_files, max_batches=self.options.max_eval_steps)


def run(config, options, strategy=None, do_train=False, do_eval=False, step_callback=None,
        trainer_class=Pretrainer):
    """What run_pretraining.py does: train and/or eval with `trainer_class` (a `Pretrainer`).
    Returns (last checkpoint prefix or None, eval results or None)."""
    if not do_train and not do_eval:
        raise PretrainingError("at least one of --do_train or --do_eval must be set")
    options.validate(config)
    input_pipeline.check_records(
        options.input_files, options.max_seq_length, options.max_predictions_per_seq
    )
    tf.io.gfile.makedirs(options.output_dir)
    trainer = trainer_class(config, options, strategy)
    last_checkpoint, results = None, None
    if do_train:
        last_checkpoint = trainer.train(step_callback=step_callback)
    elif do_eval:
        last_checkpoint = trainer.restore_weights()
    if do_eval:
        results = trainer.evaluate()
    return last_checkpoint, results
