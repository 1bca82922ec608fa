"""The task-agnostic trainer: training, eval and predict of any `Task` on tf.distribute.

`Trainer` owns the model of its task, the optimizer and `global_step` (all created inside the
strategy's scope), runs `iterations_per_loop` steps inside one `tf.function` call, and does the
host work (progress log, TensorBoard, checkpoints) between calls. It knows nothing of BERT's
heads: the task (`bert_tf.training.task.Task`) supplies the model, the records, the loss, the
eval metrics and the predict outputs. Nor does it handle the files of output_dir: its
`output_directory` (`bert_tf.training.output_dir.OutputDirectory`) resumes, saves and prunes
the checkpoints `output_dir/model.ckpt-N` in the original names, readable by any tool built
for Google's release, and beside each one the input stream's position and the dropout RNG
state, so a restarted run continues exactly where the checkpoint was taken.

One training step (`_replica_train_step`, in replica context):
  1. the task's normalizers of the GLOBAL batch (all-reduced; e.g. the number of sequences),
     so each replica's loss is its share of the global batch's loss;
  2. gradients of that share, summed over replicas -> the single-device gradient; with
     gradient_accumulation_steps=K the replica's batch is cut into K micro-batches in-graph and
     their gradients summed (the normalisers of step 1 cover the whole global batch, so the
     sum is the gradient of the whole batch); with fp16 the loss is scaled and the gradients
     unscaled (`precision.DynamicLossScale`);
  3. clipping by global norm 1.0, then AdamWeightDecay (or LAMB) with lr(global_step), skipped
     when fp16 gradients are not finite; global_step += 1.
With use_xla, step 2 (forward and backward over the micro-batches) is compiled with
jit_compile=True, as is the eval forward pass; the all-reduces and the optimizer's merge_call
stay outside the compiled function (XLA cannot hold them under every strategy), and each
variable's update is compiled on its own (as with fused_optimizer).
"""

import dataclasses
import math
import os
import time

import keras
import numpy as np
import tensorflow as tf
from absl import logging

from bert_tf import checkpoints
from bert_tf.training import input_pipeline, metrics, padding, precision
from bert_tf.training.input_pipeline import InputError, first_line
from bert_tf.training.lamb import Lamb
from bert_tf.training.optimizer import (
    AdamWeightDecay, clip_by_global_norm, layerwise_lr_multipliers,
)
from bert_tf.training.output_dir import OutputDirectory, ResumeError
from bert_tf.training.schedule import WarmupLinearDecay
from bert_tf.training.strategy import worker_info
from bert_tf.training.summaries import ScalarWriter


class TrainingError(ValueError):
    """Flags or files that do not make a valid training run; the message says which."""


OPTIMIZERS = {"adamw": AdamWeightDecay, "lamb": Lamb}


@dataclasses.dataclass(kw_only=True)
class TrainerOptions:
    """The settings every task's run shares; the original's flag names and defaults."""

    output_dir: str
    init_checkpoint: str | None = None
    train_batch_size: int = 32
    eval_batch_size: int = 8
    learning_rate: float = 5e-5
    num_train_steps: int = 100000
    num_warmup_steps: int = 10000
    save_checkpoints_steps: int = 1000
    iterations_per_loop: int = 1000
    shuffle_buffer_size: int = 100  # input_pipeline.PERMUTE_EACH_EPOCH: a permutation per epoch
    keep_checkpoint_max: int = 5
    seed: int | None = 12345
    clip_norm: float = 1.0
    weight_decay_rate: float = 0.01
    # Each variable's optimizer update compiled into one XLA kernel (implied by use_xla):
    # faster; equal to the op-by-op update up to float32 rounding (XLA may contract
    # multiply-adds), not bit for bit.
    fused_optimizer: bool = False
    mixed_precision: str = "none"          # none | bf16 | fp16
    use_xla: bool = False                  # jit_compile the forward/backward and eval passes
    optimizer: str = "adamw"               # adamw | lamb
    gradient_accumulation_steps: int = 1   # micro-batches per optimizer step
    # With init_checkpoint: also continue its optimizer slots, global_step (hence the
    # learning-rate schedule) and loss scale, instead of fresh ones.
    init_optimizer_state: bool = False
    initial_loss_scale: float = 2.0 ** 15
    loss_scale_growth_interval: int = 2000
    # ELECTRA's layer-wise learning-rate decay (optimizer.layerwise_lr_multipliers); 1.0 = off.
    layerwise_lr_decay: float = 1.0
    # Each batch cut to its longest real sequence, rounded up to a multiple of padding_width
    # (bert_tf.training.padding); eval and predict also in length order. False: every batch
    # at max_seq_length, as the original.
    dynamic_padding: bool = True
    padding_width: int = padding.DEFAULT_WIDTH
    # Training batches of similar lengths from windows of the shuffled stream, in random
    # order: fewer padded positions, but not the original's batches.
    group_by_length: bool = False
    # --predict_precision: the precision `predict` builds its model at (a key of
    # bert_tf.training.precision.PREDICT_PRECISIONS, or "auto"); training and eval stay as they are.
    predict_precision: str = "float32"

    _POSITIVE = ("train_batch_size", "eval_batch_size", "num_train_steps",
                 "save_checkpoints_steps", "iterations_per_loop", "padding_width")
    _NON_NEGATIVE = ("num_warmup_steps", "keep_checkpoint_max")

    def problems(self, config):
        """The list of what is wrong with these settings for `config` (empty if nothing)."""
        problems = []
        for name in self._POSITIVE:
            if getattr(self, name) <= 0:
                problems.append(f"--{name} must be positive, got {getattr(self, name)}")
        for name in self._NON_NEGATIVE:
            if getattr(self, name) < 0:
                problems.append(f"--{name} must be >= 0, got {getattr(self, name)}")
        if self.shuffle_buffer_size < input_pipeline.PERMUTE_EACH_EPOCH:
            problems.append(f"--shuffle_buffer_size must be >= 0, or "
                            f"{input_pipeline.PERMUTE_EACH_EPOCH} for a fresh permutation of "
                            f"the training records each epoch, got {self.shuffle_buffer_size}")
        if self.mixed_precision not in precision.POLICIES:
            problems.append(f"--mixed_precision={self.mixed_precision!r}: expected one of "
                            f"{', '.join(precision.POLICIES)}")
        problem = precision.predict_precision_problem(self.predict_precision)
        if problem:
            problems.append(problem)
        if self.optimizer not in OPTIMIZERS:
            problems.append(f"--optimizer={self.optimizer!r}: expected one of "
                            f"{', '.join(OPTIMIZERS)}")
        if self.gradient_accumulation_steps <= 0:
            problems.append("--gradient_accumulation_steps must be positive, got "
                            f"{self.gradient_accumulation_steps}")
        elif self.train_batch_size % self.gradient_accumulation_steps:
            problems.append(
                f"--train_batch_size={self.train_batch_size} is not divisible by "
                f"--gradient_accumulation_steps={self.gradient_accumulation_steps}"
            )
        if self.init_optimizer_state and not self.init_checkpoint:
            problems.append("--init_optimizer_state needs --init_checkpoint (the checkpoint "
                            "whose optimizer state and global_step to continue)")
        if not self.initial_loss_scale > 0 or self.loss_scale_growth_interval <= 0:
            problems.append("the initial loss scale and its growth interval must be positive")
        if self.learning_rate <= 0:
            problems.append(f"--learning_rate must be positive, got {self.learning_rate}")
        return problems

    def validate(self, config):
        problems = self.problems(config)
        if problems:
            raise TrainingError("; ".join(problems))


def _format_duration(seconds):
    if not math.isfinite(seconds):
        return "?"
    seconds = int(round(seconds))
    hours, rest = divmod(seconds, 3600)
    minutes, secs = divmod(rest, 60)
    return f"{hours}h{minutes:02d}m{secs:02d}s" if hours else f"{minutes}m{secs:02d}s"


def _with_record_index(values, features):
    """`values` plus the records' `RECORD_INDEX` when the batch is in length order."""
    if input_pipeline.RECORD_INDEX in features:
        values = dict(values, **{input_pipeline.RECORD_INDEX:
                                 features[input_pipeline.RECORD_INDEX]})
    return values


def _normalizer_vector(normalizers):
    if len(normalizers) == 1:
        return normalizers[0]
    return tf.stack([tf.cast(n, tf.float32) for n in normalizers])


class Trainer:
    """Training, eval and predict of `task`'s model under a tf.distribute strategy.

    Args:
      config: the model config (`BertConfig`, ...).
      task: a `bert_tf.training.task.Task`.
      options: `TrainerOptions` (or a subclass).
      strategy: a tf.distribute.Strategy (default: TensorFlow's default strategy).
    """

    # --optimizer name -> optimizer class (a trainer of another model family may override it,
    # e.g. ALBERT's LAMB).
    optimizers = OPTIMIZERS

    def __init__(self, config, task, options, strategy=None):
        self.config = config
        self.task = task
        self.options = options
        self.strategy = strategy or tf.distribute.get_strategy()
        options.validate(config)
        self.worker_index, self.num_workers, self.is_chief = worker_info(self.strategy)
        if options.seed is not None:
            keras.utils.set_random_seed(options.seed)
        self.schedule = self.make_schedule()
        replicas = self.strategy.num_replicas_in_sync
        accumulation = options.gradient_accumulation_steps
        if options.train_batch_size % (replicas * accumulation):
            raise TrainingError(
                f"--train_batch_size={options.train_batch_size} must be divisible by the "
                f"{replicas} replica(s) x --gradient_accumulation_steps={accumulation}"
            )
        with self.strategy.scope():
            with precision.dtype_policy(options.mixed_precision):
                self.model = task.build_model(config)
            self.loss_scale = None
            if options.mixed_precision == "fp16":
                self.loss_scale = precision.DynamicLossScale(
                    options.initial_loss_scale, options.loss_scale_growth_interval)
            self.global_step = tf.Variable(
                0, dtype=tf.int64, trainable=False, name="global_step",
                aggregation=tf.VariableAggregation.ONLY_FIRST_REPLICA,
            )
            table = checkpoints.original_variable_map(self.model)
            # As the original optimizer skips variables without a gradient (e.g. the pooler
            # under a SQuAD head), they get no update and no optimizer slots.
            unused = task.unused_prefixes(
                getattr(getattr(self.model, "bert", None), "scope", "bert"))
            self.variable_names = [
                name for name, var in table.items()
                if var.trainable and not name.startswith(unused)
            ]
            self.train_variables = [table[name] for name in self.variable_names]
            self.row_norm_variables = task.row_norm_variables
            if self.row_norm_variables is None:
                gathered = self.model.bert.gathered_tables
                self.row_norm_variables = tuple(
                    name for name, var in table.items() if any(var is t for t in gathered))
            multipliers = layerwise_lr_multipliers(
                self.variable_names, config.num_hidden_layers, options.layerwise_lr_decay)
            if multipliers:
                logging.info("--layerwise_lr_decay=%g: learning rate x%.4g for the embeddings, "
                             "x%.4g for layer 0 ... x%.4g for layer %d, x1 for the rest",
                             options.layerwise_lr_decay,
                             options.layerwise_lr_decay ** (config.num_hidden_layers + 2),
                             options.layerwise_lr_decay ** (config.num_hidden_layers + 1),
                             options.layerwise_lr_decay ** 2, config.num_hidden_layers - 1)
            self.optimizer = self.optimizers[options.optimizer](
                weight_decay_rate=options.weight_decay_rate,
                jit_compile=options.fused_optimizer or options.use_xla,
                learning_rate_multipliers=multipliers)
            # Slots must exist before the first traced step (MirroredStrategy cannot create
            # variables inside a replica function).
            self.optimizer.build(dict(zip(self.variable_names, self.train_variables)))
        covered = {id(v) for v in table.values()}
        missing = [v.path for v in self.model.trainable_variables if id(v) not in covered]
        if missing:
            raise AssertionError(f"trainable variables without an original name: {missing}")
        # Dropout RNG states: saved beside checkpoints so a resumed run draws the same masks.
        named = {id(v) for v in self.model.weights}
        self.rng_states = [v for v in self.model.variables if id(v) not in named]
        self.output_directory = OutputDirectory(
            options, self.model, self.optimizer, self.global_step, config=config, task=task,
            strategy=self.strategy, loss_scale=self.loss_scale, rng_states=self.rng_states)
        self._summary_writers = {}
        # The model `predict` runs (`prediction_model`): this one at float32.
        self.predict_model = self.model
        self._predict_precision = None  # --predict_precision, "auto" resolved at first use
        self._gradients_fn = self._compute_gradients_and_sparse_norm
        self._eval_fn = self._eval_outputs
        self._predict_fn = self._predict_outputs
        if options.use_xla:
            self._gradients_fn = tf.function(self._compute_gradients_and_sparse_norm,
                                             jit_compile=True)
            self._eval_fn = tf.function(self._eval_outputs, jit_compile=True)
            self._predict_fn = tf.function(self._predict_outputs, jit_compile=True)

    def make_schedule(self):
        """The learning rate as a function of global_step: the original BERT's (a trainer of
        another model family overrides this)."""
        opts = self.options
        return WarmupLinearDecay(opts.learning_rate, opts.num_train_steps, opts.num_warmup_steps)

    # -- steps ---------------------------------------------------------------------------
    def _global_normalizers(self, features):
        ctx = tf.distribute.get_replica_context()
        local = tf.cast(self.task.local_normalizers(features), tf.float32)
        return ctx.all_reduce(tf.distribute.ReduceOp.SUM, local)

    def _micro_batch_gradients(self, features, *normalizers):
        """The task's loss shares [len(step_keys)] of `features` in the global batch, and the
        gradients of the first (multiplied by the loss scale under fp16).

        `normalizers`: the global batch's normalizer vector [K], or its K entries as
        separate scalars."""
        shares, grads, _ = self._micro_batch_gradients_and_sparse_norm(
            features, _normalizer_vector(normalizers))
        return shares, grads

    def _micro_batch_gradients_and_sparse_norm(self, features, normalizers):
        """As `_micro_batch_gradients`, plus the sum of the squared rows of the gradients that
        come as IndexedSlices and that the task's `row_norm_variables` name (the word
        embeddings': see `clip_by_global_norm`); which ones do is recorded in
        `self._sparse_gradients`. `normalizers`: the vector [K]."""
        with tf.GradientTape() as tape:
            outputs = self.model(features, training=True)
            losses = self.task.compute_loss(outputs, features, normalizers)
            loss = losses[self.task.step_keys[0]]
            if self.loss_scale is not None:
                loss = self.loss_scale.scale_loss(loss)
        grads = tape.gradient(loss, self.train_variables)
        unused = [n for n, g in zip(self.variable_names, grads) if g is None]
        if unused:
            raise AssertionError(
                f"the {self.task.name} loss does not depend on {unused}: list them in the "
                "task's unused_variable_prefixes")
        self._sparse_gradients = [name in self.row_norm_variables
                                  and isinstance(g, tf.IndexedSlices)
                                  for name, g in zip(self.variable_names, grads)]
        sparse_sq = tf.add_n([tf.constant(0.0)] + [
            tf.reduce_sum(tf.square(tf.cast(g.values, tf.float32)))
            for g, sparse in zip(grads, self._sparse_gradients) if sparse])
        grads = [tf.convert_to_tensor(g) if isinstance(g, tf.IndexedSlices) else g for g in grads]
        shares = tf.stack([tf.cast(losses[k], tf.float32) for k in self.task.step_keys])
        return shares, grads, sparse_sq

    def _compute_gradients(self, features, *normalizers):
        """Loss shares and (scaled) gradients of one replica's batch, summed over its
        gradient_accumulation_steps micro-batches (`normalizers` as _micro_batch_gradients)."""
        shares, grads, _ = self._compute_gradients_and_sparse_norm(
            features, _normalizer_vector(normalizers))
        return shares, grads

    def _compute_gradients_and_sparse_norm(self, features, normalizers):
        """As `_compute_gradients`, plus the squared-row sum of the IndexedSlices gradients
        over the micro-batches (each micro-batch's rows are further rows of the batch's)."""
        steps = self.options.gradient_accumulation_steps
        if steps == 1:
            return self._micro_batch_gradients_and_sparse_norm(features, normalizers)
        batch = features["input_ids"].shape[0]
        if batch is None:
            batch = tf.shape(features["input_ids"])[0]
        micro = batch // steps

        def body(i, shares, grads, sparse_sq):
            part = {k: v[i * micro:(i + 1) * micro] for k, v in features.items()}
            part_shares, part_grads, part_sq = self._micro_batch_gradients_and_sparse_norm(
                part, normalizers)
            return (i + 1, shares + part_shares,
                    [g + p for g, p in zip(grads, part_grads)], sparse_sq + part_sq)

        zeros = [tf.zeros(v.shape, tf.float32) for v in self.train_variables]
        _, shares, grads, sparse_sq = tf.while_loop(
            lambda i, *_: i < steps, body,
            (tf.constant(0), tf.zeros([len(self.task.step_keys)]), zeros, tf.constant(0.0)),
            parallel_iterations=1,
        )
        return shares, grads, sparse_sq

    def _replica_train_step(self, features):
        normalizers = self._global_normalizers(features)
        shares, grads, sparse_sq = self._gradients_fn(features, normalizers)
        ctx = tf.distribute.get_replica_context()
        if self.strategy.num_replicas_in_sync > 1:
            grads, sparse_sq = ctx.all_reduce(tf.distribute.ReduceOp.SUM, (grads, sparse_sq))
        should_apply = None
        if self.loss_scale is not None:
            loss_scale = self.loss_scale.scale.read_value()
            grads = self.loss_scale.unscale(grads)
            sparse_sq = sparse_sq / tf.square(loss_scale)
            # Summed over replicas first: every replica takes the same decision.
            should_apply = self.loss_scale.all_finite(grads)
        # The global norm counts the IndexedSlices gradients' rows as the original does.
        grads, grad_norm = clip_by_global_norm(
            grads, self.options.clip_norm, sparse=self._sparse_gradients,
            sparse_norm_sq=sparse_sq)
        learning_rate = self.schedule(self.global_step)
        with tf.control_dependencies([learning_rate]):
            update = self.optimizer.apply_gradients(
                grads, learning_rate, step=self.global_step + 1, should_apply=should_apply)
        after = [update]
        if self.loss_scale is not None:
            with tf.control_dependencies([update]):
                after.append(self.loss_scale.update(should_apply))
        with tf.control_dependencies(after):
            self.global_step.assign_add(1)
        values = {key: shares[i] for i, key in enumerate(self.task.step_keys)}
        values["learning_rate"] = learning_rate
        values["grad_norm"] = grad_norm
        if self.loss_scale is not None:
            values["loss_scale"] = loss_scale
        return values

    def make_train_function(self, stream):
        """tf.function(num_steps) running `num_steps` steps on batches of `stream` (an
        `input_pipeline.InputStream`, or any object whose `get_next()` returns a global batch
        as per-replica values); returns a dict of float32 [num_steps] arrays: the task's
        `step_keys` (global batch), learning_rate, grad_norm (and loss_scale under fp16)."""
        strategy = self.strategy
        sum_keys = self.task.step_keys
        keys = sum_keys + ("learning_rate", "grad_norm")
        if self.loss_scale is not None:
            keys += ("loss_scale",)  # the scale the step used

        @tf.function
        def train_steps(num_steps):
            arrays = tuple(tf.TensorArray(tf.float32, size=num_steps) for _ in keys)
            for i in tf.range(num_steps):
                per_replica = strategy.run(self._replica_train_step, args=(stream.get_next(),))
                values = []
                for k in keys:
                    if k in sum_keys:
                        values.append(strategy.reduce(
                            tf.distribute.ReduceOp.SUM, per_replica[k], axis=None))
                    else:  # identical on every replica
                        values.append(strategy.experimental_local_results(per_replica[k])[0])
                # Reassigned whole so autograph carries it as a loop variable.
                arrays = tuple(a.write(i, v) for a, v in zip(arrays, values))
            return {k: a.stack() for k, a in zip(keys, arrays)}

        return train_steps

    def _eval_outputs(self, features, normalizers):
        outputs = self.model(features, training=False)
        losses = self.task.compute_loss(outputs, features, normalizers)
        return _with_record_index(
            self.task.eval_outputs(outputs, features, losses, normalizers), features)

    def _replica_eval_step(self, features):
        return self._eval_fn(features, self._global_normalizers(features))

    def _gather_or_sum(self, per_replica, per_example_keys):
        """Per-example values concatenated over replicas (global batch order); the rest
        summed."""
        out = {}
        for k, v in per_replica.items():
            if k in per_example_keys:
                out[k] = self.strategy.gather(v, axis=0)
            else:
                out[k] = self.strategy.reduce(tf.distribute.ReduceOp.SUM, v, axis=None)
        return out

    def make_eval_function(self, stream):
        """tf.function() evaluating the next batch of `stream`; returns the task's
        `eval_outputs` (scalars summed over replicas, per-example values gathered). Raises
        OutOfRangeError at the end of the data."""
        strategy = self.strategy
        per_example_keys = self.task.eval_per_example_keys + (input_pipeline.RECORD_INDEX,)

        @tf.function
        def eval_step():
            per_replica = strategy.run(self._replica_eval_step, args=(stream.get_next(),))
            return self._gather_or_sum(per_replica, per_example_keys)

        return eval_step

    def _predict_outputs(self, features):
        outputs = self.predict_model(features, training=False)
        return _with_record_index(self.task.predict_outputs(outputs, features), features)

    def make_predict_function(self, stream):
        """tf.function() predicting the next batch of `stream`: the task's
        `predict_outputs`, gathered over replicas. Raises OutOfRangeError at the end."""
        strategy = self.strategy

        @tf.function
        def predict_step():
            per_replica = strategy.run(self._predict_fn, args=(stream.get_next(),))
            return {k: strategy.gather(v, axis=0) for k, v in per_replica.items()}

        return predict_step

    def _min_batches_over_workers(self, stream):
        local = int(stream.dataset.reduce(np.int64(0), lambda count, _: count + 1).numpy())
        total = self.strategy.reduce(
            tf.distribute.ReduceOp.SUM,
            self.strategy.run(lambda: tf.constant(float(local))), axis=None,
        )
        total_batches = int(round(float(total) / max(1, stream.local_replicas or 1)))
        # Batches are dealt round-robin, so the worker with fewest has floor(total / workers).
        return total_batches // self.num_workers

    # -- checkpoints (the files: output_dir.OutputDirectory) ------------------------------
    def restore(self, weights_only=False):
        """Loads the latest checkpoint of output_dir (weights, Adam moments, global_step), or
        else the weights of init_checkpoint (see `OutputDirectory.restore`). Returns the
        prefix loaded from output_dir, or None. With weights_only (eval), the Adam moments are
        not needed."""
        try:
            return self.output_directory.restore(weights_only)
        except ResumeError as e:
            raise TrainingError(str(e)) from None

    def restore_weights(self):
        """For eval or predict without training: the weights of output_dir's latest checkpoint,
        else of init_checkpoint (a warning when there is neither). Returns the prefix loaded
        from output_dir, or None."""
        latest = self.restore(weights_only=True)
        if latest is None and not self.options.init_checkpoint:
            logging.warning("No checkpoint in --output_dir and no --init_checkpoint: using "
                            "randomly initialized weights")
        return latest

    def restore_input_state(self, prefix, stream):
        """Restores the input position (and dropout RNG states) saved beside checkpoint
        `prefix` into `stream`; returns whether it did (see
        `OutputDirectory.restore_input_state`)."""
        try:
            return self.output_directory.restore_input_state(prefix, stream)
        except ResumeError as e:
            raise TrainingError(str(e)) from None

    def save(self, stream=None):
        """Writes output_dir/model.ckpt-<global_step>: the input state file first (every
        worker), then (chief) the model checkpoint, which also makes it the latest; then prunes
        to keep_checkpoint_max. Returns the prefix.

        Raises:
          files.OutputError: the disk is full (one line: the directory, the space needed, the
            checkpoint to resume from). What this call wrote is removed; the earlier
            checkpoints and the state file are as they were.
        """
        return self.output_directory.save(stream)

    # -- TensorBoard ---------------------------------------------------------------------
    def _writer(self, name):
        if not self.is_chief:
            return None
        if name not in self._summary_writers:
            self._summary_writers[name] = ScalarWriter(os.path.join(self.options.output_dir, name))
        return self._summary_writers[name]

    # -- training ------------------------------------------------------------------------
    def train(self, input_files, step_callback=None):
        """Trains from the current global_step (after `restore`) to num_train_steps on the
        task's records in `input_files`.

        Args:
          input_files: list of TFRecord files of the task's records.
          step_callback: optional f(step, values) called for every step with the step index
            and a dict of floats (the task's step_keys, learning_rate, grad_norm).
        Returns:
          the prefix of the last checkpoint written (or of the one resumed from).
        """
        opts = self.options
        self.output_directory.remove_interrupted_writes()
        resumed = self.restore()
        stream = self.input_stream(input_files, opts.train_batch_size, is_training=True)
        if resumed:
            self.restore_input_state(resumed, stream)
        step = int(self.global_step.numpy())
        last_checkpoint = resumed
        if step >= opts.num_train_steps:
            logging.info("global_step %d >= num_train_steps %d: nothing to train", step,
                         opts.num_train_steps)
            return last_checkpoint
        train_function = self.make_train_function(stream)
        logging.info(
            "***** Running training *****  steps %d -> %d, global batch %d over %d replica(s)",
            step, opts.num_train_steps, opts.train_batch_size, self.strategy.num_replicas_in_sync,
        )
        self._log_padding("Training", is_training=True)
        if opts.group_by_length:
            logging.info("Training: --group_by_length: batches of similar lengths from windows "
                         "of %d steps of the shuffled stream, in random order (not the "
                         "original's batches)", input_pipeline.GROUP_WINDOW_STEPS)
        writer = self._writer("train")
        start_time, start_step = time.time(), step
        while step < opts.num_train_steps:
            next_save = (step // opts.save_checkpoints_steps + 1) * opts.save_checkpoints_steps
            num_steps = min(opts.iterations_per_loop, next_save - step, opts.num_train_steps - step)
            loop_start = time.time()
            try:
                values = train_function(tf.constant(num_steps, tf.int32))
            except tf.errors.DataLossError as e:
                raise InputError(
                    f"corrupted record in the input files ({', '.join(input_files[:3])}"
                    f"{', ...' if len(input_files) > 3 else ''}): {first_line(e)}"
                ) from None
            values = {k: v.numpy() for k, v in values.items()}
            loop_seconds = time.time() - loop_start
            first = step
            step += num_steps
            loss = values[self.task.step_keys[0]]
            if not np.all(np.isfinite(loss)):
                raise FloatingPointError(
                    f"loss became {loss[-1]} by step {step}: lower --learning_rate"
                )
            self._log_progress(values, first, step, loop_seconds, start_time, start_step, writer)
            if step_callback is not None:
                for i in range(num_steps):
                    step_callback(first + i, {k: float(v[i]) for k, v in values.items()})
            if step % opts.save_checkpoints_steps == 0 or step == opts.num_train_steps:
                last_checkpoint = self.save(stream)
        if writer is not None:
            writer.flush()
        return last_checkpoint

    def _cuts_batches(self, is_training):
        """Whether dynamic padding cuts this run's batches (never under TPUStrategy, whose
        infeed and compiled steps need static shapes; only where the task allows it)."""
        return (self.options.dynamic_padding
                and not isinstance(self.strategy, tf.distribute.TPUStrategy)
                and (self.task.cut_training_batches if is_training
                     else self.task.cut_predict_batches))

    def _sorts_by_length(self, max_batches, pad_final_batch, per_example):
        """Whether eval/predict runs the records in length order: with dynamic padding, on one
        worker (the outputs of every record come back to it), over all the records, when the
        outputs are per-example (`per_example`)."""
        return (self._cuts_batches(False) and self.num_workers == 1 and max_batches is None
                and pad_final_batch and per_example)

    def _log_padding(self, what, is_training):
        opts = self.options
        length = self.task.max_seq_length
        if self._cuts_batches(is_training):
            shapes = f"at most {-(-length // opts.padding_width)} shapes" if length else ""
            logging.info(
                "%s: dynamic padding: each batch cut to its longest sequence, rounded up to a "
                "multiple of %d (%s%s)", what, opts.padding_width, shapes,
                ", each compiled once by XLA" if opts.use_xla else "")
        elif not opts.dynamic_padding:
            logging.info("%s: static shapes: every batch at max_seq_length "
                         "(--dynamic_padding=false)", what)
        elif isinstance(self.strategy, tf.distribute.TPUStrategy):
            logging.info("%s: static shapes: every batch at max_seq_length (TPUs compile one "
                         "shape)", what)
        elif is_training:
            logging.info("%s: static shapes: every batch at max_seq_length (the %s loss counts "
                         "the padded positions, as the original's)", what, self.task.name)
        else:
            logging.info("%s: static shapes: every batch at max_seq_length (the %s outputs "
                         "are read at the padded positions too, as the original's)", what,
                         self.task.name)

    def input_stream(self, input_files, global_batch_size, is_training, max_batches=None,
                     pad_final_batch=False, sort_by_length=False):
        """An `input_pipeline.InputStream` of the task's records for this worker: batches cut
        by dynamic padding where it applies (`_cuts_batches`), grouped by length in training
        with group_by_length, and in length order with `sort_by_length` (eval/predict)."""
        flag = "--train_batch_size" if is_training else "--eval_batch_size"
        cut = self._cuts_batches(is_training)
        return input_pipeline.InputStream(
            self.strategy, input_files, None, None, global_batch_size, is_training=is_training,
            shuffle_buffer_size=self.options.shuffle_buffer_size, seed=self.options.seed,
            worker_index=self.worker_index, num_workers=self.num_workers,
            max_batches=max_batches, batch_flag=flag,
            spec=self.task.feature_spec(is_training), pad_final_batch=pad_final_batch,
            sequence_keys=self.task.sequence_keys if cut else (),
            position_keys=self.task.position_keys, padding_width=self.options.padding_width,
            group_by_length=is_training and self.options.group_by_length,
            sort_by_length=sort_by_length, record_parser=self.task.record_parser(is_training),
        )

    def _log_progress(self, values, first, step, loop_seconds, start_time, start_step, writer):
        opts = self.options
        num_steps = step - first
        steps_per_sec = num_steps / max(loop_seconds, 1e-9)
        overall = (step - start_step) / max(time.time() - start_time, 1e-9)
        eta = (opts.num_train_steps - step) / overall if overall > 0 else float("inf")
        means = {k: float(np.mean(values[k])) for k in self.task.step_keys}
        logging.info(
            "step %d/%d  %s  lr %.6g  %.2f steps/s  %.1f examples/s  ETA %s",
            step, opts.num_train_steps, self.task.step_log(means),
            float(values["learning_rate"][-1]), steps_per_sec, steps_per_sec * opts.train_batch_size,
            _format_duration(eta),
        )
        if writer is None:
            return
        names = {self.task.step_keys[0]: "loss"}
        for i in range(num_steps):
            scalars = {names.get(k, k): values[k][i] for k in self.task.step_keys}
            scalars["learning_rate"] = values["learning_rate"][i]
            scalars["grad_norm"] = values["grad_norm"][i]
            if "loss_scale" in values:
                scalars["loss_scale"] = values["loss_scale"][i]
            writer.write(first + i + 1, scalars)
        writer.write(step, {
            "steps_per_sec": steps_per_sec,
            "examples_per_sec": steps_per_sec * opts.train_batch_size,
        })

    # -- eval and predict ----------------------------------------------------------------
    def evaluate(self, input_files, max_batches=None, pad_final_batch=False,
                 results_file="eval_results.txt"):
        """Evaluates the current weights on the task's records in `input_files` (read in
        order, once) in batches of eval_batch_size: at most `max_batches`, and with
        `pad_final_batch` every record (the last batch padded; the task weighs padding out).
        Writes output_dir/`results_file` (chief; not with results_file=None) and returns the
        results dict."""
        opts = self.options
        by_length = self._sorts_by_length(max_batches, pad_final_batch,
                                          self.task.eval_by_length)
        stream = self.input_stream(input_files, opts.eval_batch_size, is_training=False,
                                   max_batches=max_batches, pad_final_batch=pad_final_batch,
                                   sort_by_length=by_length)
        self._log_padding("Evaluation", is_training=False)
        eval_function = self.make_eval_function(stream)
        limit = max_batches if max_batches is not None else float("inf")
        if self.num_workers > 1:
            # Every worker must run the same number of steps (they meet in all-reduces).
            limit = min(limit, self._min_batches_over_workers(stream))
        logging.info("***** Running evaluation *****  batch %d%s", opts.eval_batch_size,
                     f", at most {max_batches} batches" if max_batches is not None else "")
        batches = []
        try:
            while len(batches) < limit:
                try:
                    batch = eval_function()
                except tf.errors.OutOfRangeError:
                    break
                batches.append(self._host_outputs(batch))
        except tf.errors.DataLossError as e:
            raise InputError(f"corrupted record in the eval input files: {first_line(e)}") from None
        if by_length:
            batches = self._input_order_batches(batches, opts.eval_batch_size)
        if not batches:
            raise InputError(
                f"no eval batch: the input files ({', '.join(input_files[:3])}) hold fewer "
                f"than --eval_batch_size={opts.eval_batch_size} records"
            )
        results = self.task.finalize_eval(batches, int(self.global_step.numpy()))
        logging.info("***** Eval results (%d batches) *****", len(batches))
        for key in sorted(results):
            logging.info("  %s = %s", key, results[key])
        if self.is_chief:
            if results_file:
                tf.io.gfile.makedirs(opts.output_dir)
                path = metrics.write_eval_results(opts.output_dir, results, filename=results_file)
                logging.info("Wrote %s", path)
            writer = self._writer("eval")
            writer.write(results["global_step"], {
                k: v for k, v in results.items()
                if k != "global_step" and np.ndim(v) == 0 and np.isreal(v)
            })
            writer.flush()
        return results

    def predict(self, input_files, batch_size):
        """Yields the task's `predict_outputs` for every record of `input_files` (in order):
        dicts of numpy arrays [N, ...], the task's `sequence_outputs` at max_seq_length. The
        last batch may be padded with all-zero records (the caller drops them: their
        `is_real_example` / unique id is 0). The model is `prediction_model()`'s: the trained
        one, or with --predict_precision a copy of it at that precision.

        With dynamic padding (one worker) the records run in length order, in batches cut to
        their longest, and come back in input order, a dict per run of records (up to a
        window of input_pipeline.SORT_WINDOW_BATCHES batches); else a dict per global batch
        of `batch_size`."""
        by_length = self._sorts_by_length(None, True, True)
        self.predict_model = self.prediction_model()
        stream = self.input_stream(input_files, batch_size, is_training=False,
                                   pad_final_batch=True, sort_by_length=by_length)
        self._log_padding("Prediction", is_training=False)
        predict_function = self.make_predict_function(stream)
        in_order = padding.InputOrder(input_pipeline.RECORD_INDEX)
        while True:
            try:
                batch = predict_function()
            except tf.errors.OutOfRangeError:
                break
            except tf.errors.DataLossError as e:
                raise InputError(
                    f"corrupted record in the predict input files: {first_line(e)}") from None
            batch = self._host_outputs(batch)
            if not by_length:
                yield batch
                continue
            rows = in_order.add(batch)
            if rows is not None:
                del rows[input_pipeline.RECORD_INDEX]
                yield rows
        if in_order.pending:
            raise AssertionError(f"{in_order.pending} predictions out of input order")

    def prediction_model(self):
        """The model `predict` runs at --predict_precision: `self.model` itself at float32
        (the original's numbers); else the task's model built at that precision by the
        `precision.build_at_precision` (bfloat16: the encoder's Dense weights stored and
        multiplied in bfloat16, its embedding tables stored in bfloat16), once, holding
        `self.model`'s current weights (assigned again on every call, so a prediction after
        more training or a restore uses them)."""
        if self._predict_precision is None:
            self._predict_precision = precision.resolve_precision(
                self.options.predict_precision, "--predict_precision")
        if self._predict_precision == "float32":
            return self.model
        trained = checkpoints.original_variable_map(self.model)

        def assign_trained_weights(model):
            # The float32 values rounded to the variables' dtype (bfloat16: nearest even), as
            # the export's load_original_checkpoint assigns a checkpoint's.
            for name, variable in checkpoints.original_variable_map(model).items():
                variable.assign(tf.cast(trained[name].value, variable.dtype))

        if self.predict_model is self.model:
            with self.strategy.scope():
                self.predict_model = precision.build_at_precision(
                    lambda: self.task.build_model(self.config), self._predict_precision,
                    assign_trained_weights)
            logging.info("Prediction: --predict_precision=%s (training and eval: the trained "
                         "model's own)", self._predict_precision)
        else:
            assign_trained_weights(self.predict_model)
        return self.predict_model

    def _host_outputs(self, batch):
        """numpy values of an eval/predict batch, the task's sequence outputs padded back to
        max_seq_length."""
        values = {k: v.numpy() for k, v in batch.items()}
        for key, fill in self.task.sequence_outputs.items():
            if key in values and values[key].ndim >= 2:
                values[key] = padding.pad_back(values[key], self.task.max_seq_length, fill)
        return values

    @staticmethod
    def _input_order_batches(batches, batch_size):
        """Per-example eval outputs computed in length order -> the batches of `batch_size`
        records in input order that an eval in input order makes (without the rows that pad
        the last batch), for the task's `finalize_eval`."""
        in_order = padding.InputOrder(input_pipeline.RECORD_INDEX)
        rows = [r for r in (in_order.add(b) for b in batches) if r is not None]
        if in_order.pending:
            raise AssertionError(f"{in_order.pending} eval outputs out of input order")
        if not rows:
            return []
        rows = {k: np.concatenate([r[k] for r in rows]) for k in rows[0]
                if k != input_pipeline.RECORD_INDEX}
        count = len(next(iter(rows.values())))
        return [{k: v[start:start + batch_size] for k, v in rows.items()}
                for start in range(0, count, batch_size)]
