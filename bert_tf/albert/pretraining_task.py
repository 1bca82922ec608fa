"""ALBERT pretraining as a task of the trainer: google-research/albert's `run_pretraining.py`.

BERT's pretraining task and trainer (`bert_tf.bert.pretraining_task`) with ALBERT's parts:
  - the model `AlbertPretrainingModel` (masked LM + sentence order on the pooled output); the
    loss is BERT's (masked LM sum(w * nll) / (sum(w) + 1e-5) + the sentence-order mean), its
    labels the records' `next_sentence_labels`;
  - the optimizers of its `create_optimizer`: `--optimizer=lamb` (the default) is its
    LAMBOptimizer (`bert_tf.training.lamb.AlbertLamb`: no bias correction, slots adam_m /
    adam_v), `adamw` BERT's AdamWeightDecay;
  - its schedule: polynomial decay of power `poly_power`, the warmup counted from
    `start_warmup_step`;
  - `--init_from_group0`: a variable of group N missing from --init_checkpoint starts from the
    checkpoint's group 0 (`load_from_group0`);
  - eval: the keys masked_lm_accuracy, masked_lm_loss, sentence_order_accuracy,
    sentence_order_loss, loss, global_step in eval_results.txt as its eval loop writes them,
    and on a masked_lm_accuracy above the best of the run (0 at its start, as the original's)
    the evaluated checkpoint copied to model.ckpt-best.*;
  - beside every checkpoint a `.meta` (a MetaGraphDef of the checkpoint's variables and a
    Saver): the original's eval loop copies model.ckpt-N.meta, so it runs on our output_dir.

`run` is what `python -m bert_tf.albert.run_pretraining` calls.
"""

import dataclasses
import os
import re

import tensorflow as tf
from absl import logging

from bert_tf import checkpoints, files
from bert_tf.albert.estimator import OPTIMIZERS, MetaGraphCheckpoints, copy_to_best
from bert_tf.albert.pretraining import AlbertPretrainingModel
from bert_tf.bert import pretraining_task
from bert_tf.bert.pretraining_task import PretrainingOptions, PretrainingTask, Pretrainer
from bert_tf.checkpoints import CheckpointError
from bert_tf.training import metrics
from bert_tf.training.schedule import WarmupLinearDecay
from bert_tf.training.trainer import Trainer, TrainingError

# BERT's eval keys -> the original ALBERT's.
_EVAL_KEYS = {"next_sentence_accuracy": "sentence_order_accuracy",
              "next_sentence_loss": "sentence_order_loss"}
# The metric whose improvement makes the evaluated checkpoint model.ckpt-best.
BEST_KEY = "masked_lm_accuracy"
# `--init_from_group0`'s fallbacks, in the order of the original's
# `get_assignment_map_from_checkpoint`.
_GROUP0_FALLBACKS = ((re.compile(r"/group_\d+/"), "/group_0/"),
                     (re.compile(r"/ffn_\d+/"), "/ffn_1/"),
                     (re.compile(r"/attention_\d+/"), "/attention_1/"))


@dataclasses.dataclass(kw_only=True)
class AlbertPretrainingOptions(PretrainingOptions):
    """BERT's pretraining options with the original ALBERT's defaults and its own flags."""

    max_seq_length: int = 512
    train_batch_size: int = 4096
    eval_batch_size: int = 64
    learning_rate: float = 0.00176
    num_train_steps: int = 125000
    num_warmup_steps: int = 3125
    save_checkpoints_steps: int = 5000
    optimizer: str = "lamb"
    poly_power: float = 1.0
    start_warmup_step: int = 0
    init_from_group0: bool = False
    masked_lm_budget: float = 0.0

    def problems(self, config):
        problems = super().problems(config)
        if self.masked_lm_budget:
            problems.append(
                f"--masked_lm_budget={self.masked_lm_budget}: masking while training (from "
                "token_boundary) is not implemented, nor does the original run it (its input "
                "then drops masked_lm_positions, which its model reads: KeyError); use the "
                "records' masks of create_pretraining_data with --masked_lm_budget=0")
        if self.init_from_group0 and self.init_optimizer_state:
            problems.append("--init_from_group0 starts new groups from group 0's weights; it "
                            "cannot continue --init_checkpoint's optimizer state "
                            "(--init_optimizer_state)")
        return problems


class AlbertPretrainingTask(PretrainingTask):
    """Masked LM + sentence order on ALBERT's `create_pretraining_data.py` records."""

    name = "albert_pretraining"
    log_names = ("loss", "mlm", "sop")
    # The original looks token types up with tf.nn.embedding_lookup (BERT: a one-hot matmul),
    # so their gradient is an IndexedSlices, clipped by its rows (one per token); the word
    # embeddings' is dense, as in BERT's pretraining (the tied masked-LM output adds a dense
    # part).
    row_norm_variables = ("bert/embeddings/token_type_embeddings",)

    def build_model(self, config):
        return AlbertPretrainingModel(config)

    def finalize_eval(self, batches, global_step):
        results = super().finalize_eval(batches, global_step)
        return {_EVAL_KEYS.get(k, k): v for k, v in results.items()}


def load_from_group0(model, path):
    """Loads checkpoint `path` into `model` as the original's `--init_from_group0`: a variable
    is read under its own name, or else (with more than one group) under the name with
    `/group_N/` -> `/group_0/` (then `/ffn_N/` -> `/ffn_1/`, `/attention_N/` ->
    `/attention_1/`), e.g. a 1-group checkpoint growing into G groups that all start as its
    group 0. The original counts num_hidden_layers "groups" when the config's
    net_structure_type > 0.

    Returns {variable name: checkpoint name read}. Raises CheckpointError naming the encoder
    variables found under no name, or of another shape (nothing is assigned then).
    """
    config = model.config
    num_groups = config.num_hidden_groups
    if getattr(config, "net_structure_type", 0) > 0:
        num_groups = config.num_hidden_layers
    prefix = checkpoints.resolve_checkpoint_path(path)
    reader = checkpoints.open_checkpoint(prefix)
    shapes = reader.get_variable_to_shape_map()
    table = checkpoints.original_variable_map(model)
    required = model.required_checkpoint_scopes()
    sources, problems, missing = {}, [], []
    for name, variable in table.items():
        source = name if name in shapes else None
        for pattern, group_0 in _GROUP0_FALLBACKS:
            if source is None and num_groups > 1 and pattern.sub(group_0, name) in shapes:
                source = pattern.sub(group_0, name)
        if source is None:
            if name.startswith(required):
                problems.append(f"{name}: not in the checkpoint, nor as group 0's")
            else:
                missing.append(name)
        elif tuple(shapes[source]) != tuple(variable.shape):
            problems.append(f"{name}: expected shape {list(variable.shape)}, {source} has "
                            f"{list(shapes[source])}")
        else:
            sources[name] = source
    if problems:
        raise CheckpointError(f"--init_checkpoint={prefix} with --init_from_group0 does not fit "
                              f"the model: {'; '.join(problems)}")
    values = {name: checkpoints.read_tensor(reader, prefix, source)
              for name, source in sources.items()}
    for name, value in values.items():
        table[name].assign(value.astype("float32", copy=False))
    from_group0 = sorted(n for n, s in sources.items() if s != n)
    logging.info("Initialized weights from %s (--init_from_group0: %d variables from group 0's)",
                 prefix, len(from_group0))
    if missing:
        logging.warning("--init_checkpoint %s lacks %s: they keep their random initial values",
                        prefix, ", ".join(missing))
    return sources


class AlbertPretrainer(MetaGraphCheckpoints, Pretrainer):
    """The trainer with ALBERT's task, optimizers, schedule, init_from_group0, `.meta` files and
    eval results (see the module docstring).

    Args:
      config: the `AlbertConfig`.
      options: `AlbertPretrainingOptions`.
      strategy: a tf.distribute.Strategy (default: TensorFlow's default strategy).
    """

    task_class = AlbertPretrainingTask
    optimizers = OPTIMIZERS

    def __init__(self, config, options, strategy=None):
        super().__init__(config, options, strategy)
        # The checkpoint of output_dir the model's weights are (None: init_checkpoint or
        # random ones), whose files an eval copies to model.ckpt-best.
        self.weights_checkpoint = None

    def make_schedule(self):
        opts = self.options
        return WarmupLinearDecay(opts.learning_rate, opts.num_train_steps, opts.num_warmup_steps,
                                 power=opts.poly_power, start_warmup_step=opts.start_warmup_step)

    # -- checkpoints ---------------------------------------------------------------------
    def restore(self, weights_only=False):
        """As `Trainer.restore`; with init_from_group0, --init_checkpoint (read when
        output_dir has no checkpoint yet) is loaded by `load_from_group0`."""
        own = tf.io.gfile.exists(os.path.join(self.options.output_dir,
                                              checkpoints.STATE_FILE))
        if self.options.init_from_group0 and self.options.init_checkpoint and not own:
            try:
                load_from_group0(self.model, self.options.init_checkpoint)
            except CheckpointError as e:
                raise TrainingError(str(e)) from None
            prefix = None
        else:
            prefix = super().restore(weights_only)
        if not weights_only and self.global_step.numpy() < self.options.start_warmup_step:
            logging.warning(
                "global_step %d < --start_warmup_step=%d: until then the learning rate is "
                "negative, as in the original", int(self.global_step.numpy()),
                self.options.start_warmup_step)
        self.weights_checkpoint = prefix
        return prefix

    def save(self, stream=None):
        saved = super().save(stream)
        self.weights_checkpoint = saved
        return saved

    # -- eval ----------------------------------------------------------------------------
    def evaluate(self):
        """Evaluates the weights (of `weights_checkpoint`, else init_checkpoint's) on up to
        max_eval_steps whole batches of the input files, in order, once; writes
        eval_results.txt as the original (its keys, and the files it copied) and copies the
        evaluated checkpoint to model.ckpt-best.* when masked_lm_accuracy > 0, the original's
        best at the start of a run. Returns the results."""
        results = Trainer.evaluate(self, self.options.input_files,
                                   max_batches=self.options.max_eval_steps, results_file=None)
        if not self.is_chief:
            return results
        copied = []
        if self.weights_checkpoint and results[BEST_KEY] > 0:
            copied = copy_to_best(self.weights_checkpoint)
        path = os.path.join(self.options.output_dir, "eval_results.txt")
        files.write_atomic(path, eval_results_text(results, copied))
        logging.info("Wrote %s", path)
        return results


def eval_results_text(results, copied=()):
    """eval_results.txt as the original's eval loop writes it: `key = value` lines by key,
    and after the first one the `saved <source> to <target>` lines of the copied files."""
    lines = metrics.format_results(results).splitlines(keepends=True)
    saved = [f"saved {source} to {target}\n" for source, target in copied]
    return "".join(lines[:1] + saved + lines[1:])


def run(config, options, strategy=None, do_train=True, do_eval=False, step_callback=None):
    """What `python -m bert_tf.albert.run_pretraining` does: train and/or eval (BERT's `run`
    with `AlbertPretrainer`). Returns (last checkpoint prefix or None, eval results or None)."""
    return pretraining_task.run(config, options, strategy, do_train=do_train, do_eval=do_eval,
                                step_callback=step_callback, trainer_class=AlbertPretrainer)
