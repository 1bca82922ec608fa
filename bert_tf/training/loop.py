"""The pretraining loop: the original `run_pretraining.py`'s training and eval on tf.distribute.

`Pretrainer` owns the model, the optimizer and `global_step` (all created inside the strategy's
scope), runs `iterations_per_loop` steps inside one `tf.function` call, and does the host work
(progress log, TensorBoard, checkpoints) between calls. Checkpoints are `output_dir/model.ckpt-N`
in the original names, readable by any tool built for Google's release; beside each one,
`model.ckpt-N.input-<worker>-of-<workers>` holds the input stream's position and the dropout
RNG state, so a restarted run continues exactly where the checkpoint was taken.

One training step (`_replica_train_step`, in replica context):
  1. the masked-LM weight sum and the batch size of the GLOBAL batch (all-reduced), so each
     replica's loss is its share of the global batch's loss;
  2. gradients of that share, summed over replicas -> the single-device gradient;
  3. clipping by global norm 1.0, then AdamWeightDecay with lr(global_step); global_step += 1.
"""

import dataclasses
import math
import os
import re
import time

import keras
import numpy as np
import tensorflow as tf
from absl import logging

from bert_tf import checkpoints
from bert_tf.checkpoints import CheckpointError
from bert_tf.config import BertConfig
from bert_tf.pretraining import BertPretrainingModel, pretraining_loss
from bert_tf.training import input_pipeline, metrics
from bert_tf.training.input_pipeline import InputError
from bert_tf.training.optimizer import AdamWeightDecay, clip_by_global_norm
from bert_tf.training.schedule import WarmupLinearDecay
from bert_tf.training.strategy import worker_info
from bert_tf.training.summaries import ScalarWriter

CHECKPOINT_BASENAME = "model.ckpt"
# The config keys that decide the variables' shapes: a checkpoint of a config differing in one
# of them belongs to another model.
_ARCHITECTURE_KEYS = (
    "vocab_size", "hidden_size", "num_hidden_layers", "num_attention_heads",
    "intermediate_size", "max_position_embeddings", "type_vocab_size",
)


class PretrainingError(ValueError):
    """Flags or files that do not make a valid pretraining run; the message says which."""


@dataclasses.dataclass
class PretrainingOptions:
    """The run's settings; the names and defaults of the original's flags (REFERENCE.md §7)."""

    input_files: list
    output_dir: str
    init_checkpoint: str | None = None
    max_seq_length: int = 128
    max_predictions_per_seq: int = 20
    train_batch_size: int = 32
    eval_batch_size: int = 8
    learning_rate: float = 5e-5
    num_train_steps: int = 100000
    num_warmup_steps: int = 10000
    save_checkpoints_steps: int = 1000
    iterations_per_loop: int = 1000
    max_eval_steps: int = 100
    shuffle_buffer_size: int = 100
    keep_checkpoint_max: int = 5
    seed: int | None = 12345
    clip_norm: float = 1.0
    weight_decay_rate: float = 0.01
    # XLA-fused optimizer update (faster; equal to the original's up to the last bit).
    fused_optimizer: bool = False

    def validate(self, config):
        problems = []
        for name in ("train_batch_size", "eval_batch_size", "num_train_steps",
                     "save_checkpoints_steps", "iterations_per_loop", "max_eval_steps",
                     "max_seq_length", "max_predictions_per_seq"):
            if getattr(self, name) <= 0:
                problems.append(f"--{name} must be positive, got {getattr(self, name)}")
        for name in ("num_warmup_steps", "shuffle_buffer_size", "keep_checkpoint_max"):
            if getattr(self, name) < 0:
                problems.append(f"--{name} must be >= 0, got {getattr(self, name)}")
        if self.learning_rate <= 0:
            problems.append(f"--learning_rate must be positive, got {self.learning_rate}")
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
        if problems:
            raise PretrainingError("; ".join(problems))


def _checkpoint_step(path):
    """N of `.../model.ckpt-N` or of any file `model.ckpt-N.<suffix>`, else None."""
    match = re.match(rf"{re.escape(CHECKPOINT_BASENAME)}-(\d+)(?:[._]|$)", os.path.basename(path))
    return int(match.group(1)) if match else None


def _format_duration(seconds):
    if not math.isfinite(seconds):
        return "?"
    seconds = int(round(seconds))
    hours, rest = divmod(seconds, 3600)
    minutes, secs = divmod(rest, 60)
    return f"{hours}h{minutes:02d}m{secs:02d}s" if hours else f"{minutes}m{secs:02d}s"


class Pretrainer:
    """Pretraining (and eval) of a `BertPretrainingModel` under a tf.distribute strategy.

    Args:
      config: the `BertConfig`.
      options: `PretrainingOptions`.
      strategy: a tf.distribute.Strategy (default: TensorFlow's default strategy).
    """

    def __init__(self, config, options, strategy=None):
        self.config = config
        self.options = options
        self.strategy = strategy or tf.distribute.get_strategy()
        options.validate(config)
        self.worker_index, self.num_workers, self.is_chief = worker_info(self.strategy)
        if options.seed is not None:
            keras.utils.set_random_seed(options.seed)
        self.schedule = WarmupLinearDecay(
            options.learning_rate, options.num_train_steps, options.num_warmup_steps
        )
        with self.strategy.scope():
            self.model = BertPretrainingModel(config)
            self.global_step = tf.Variable(
                0, dtype=tf.int64, trainable=False, name="global_step",
                aggregation=tf.VariableAggregation.ONLY_FIRST_REPLICA,
            )
            table = checkpoints.original_variable_map(self.model)
            self.variable_names = [name for name, var in table.items() if var.trainable]
            self.train_variables = [table[name] for name in self.variable_names]
            self.optimizer = AdamWeightDecay(weight_decay_rate=options.weight_decay_rate,
                                             jit_compile=options.fused_optimizer)
            # Slots must exist before the first traced step (MirroredStrategy cannot create
            # variables inside a replica function).
            self.optimizer.build(dict(zip(self.variable_names, self.train_variables)))
        covered = {id(v) for v in self.train_variables}
        missing = [v.path for v in self.model.trainable_variables if id(v) not in covered]
        if missing:
            raise AssertionError(f"trainable variables without an original name: {missing}")
        # Dropout RNG states: saved beside checkpoints so a resumed run draws the same masks.
        named = {id(v) for v in self.model.weights}
        self.rng_states = [v for v in self.model.variables if id(v) not in named]
        self._summary_writers = {}

    # -- steps ---------------------------------------------------------------------------
    def _global_sums(self, features):
        ctx = tf.distribute.get_replica_context()
        local = tf.stack([
            tf.reduce_sum(tf.cast(features["masked_lm_weights"], tf.float32)),
            tf.cast(tf.shape(features["input_ids"])[0], tf.float32),
        ])
        total = ctx.all_reduce(tf.distribute.ReduceOp.SUM, local)
        return total[0], total[1]

    def _compute_gradients(self, features, weight_sum, global_batch):
        """Loss share and gradients of one replica's batch (the place where issue-6 style
        micro-batch accumulation or loss scaling would go)."""
        with tf.GradientTape() as tape:
            outputs = self.model(features, training=True)
            losses = pretraining_loss(
                outputs, features, masked_lm_weight_sum=weight_sum, global_batch_size=global_batch
            )
        grads = tape.gradient(losses["total_loss"], self.train_variables)
        grads = [tf.convert_to_tensor(g) if isinstance(g, tf.IndexedSlices) else g for g in grads]
        return losses, grads

    def _replica_train_step(self, features):
        weight_sum, global_batch = self._global_sums(features)
        losses, grads = self._compute_gradients(features, weight_sum, global_batch)
        ctx = tf.distribute.get_replica_context()
        if self.strategy.num_replicas_in_sync > 1:
            grads = ctx.all_reduce(tf.distribute.ReduceOp.SUM, grads)
        grads, grad_norm = clip_by_global_norm(grads, self.options.clip_norm)
        learning_rate = self.schedule(self.global_step)
        with tf.control_dependencies([learning_rate]):
            update = self.optimizer.apply_gradients(grads, learning_rate)
        with tf.control_dependencies([update]):
            self.global_step.assign_add(1)
        return {
            "total_loss": losses["total_loss"],
            "masked_lm_loss": losses["masked_lm_loss"],
            "next_sentence_loss": losses["next_sentence_loss"],
            "learning_rate": learning_rate,
            "grad_norm": grad_norm,
        }

    def make_train_function(self, stream):
        """tf.function(num_steps) running `num_steps` steps on batches of `stream` (an
        `input_pipeline.InputStream`, or any object whose `get_next()` returns a global batch
        as per-replica values); returns a dict of
        float32 [num_steps] arrays: total_loss, masked_lm_loss, next_sentence_loss (global
        batch), learning_rate, grad_norm."""
        strategy = self.strategy
        keys = ("total_loss", "masked_lm_loss", "next_sentence_loss", "learning_rate", "grad_norm")
        sum_keys = ("total_loss", "masked_lm_loss", "next_sentence_loss")

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

    def _replica_eval_step(self, features):
        weight_sum, global_batch = self._global_sums(features)
        outputs = self.model(features, training=False)
        losses = pretraining_loss(
            outputs, features, masked_lm_weight_sum=weight_sum, global_batch_size=global_batch
        )
        return metrics.batch_sums(outputs, features, losses)

    def make_eval_function(self, stream):
        """tf.function() evaluating the next batch of `stream`; returns the summed
        `metrics.batch_sums` over replicas. Raises OutOfRangeError at the end of the data."""
        strategy = self.strategy

        @tf.function
        def eval_step():
            per_replica = strategy.run(self._replica_eval_step, args=(stream.get_next(),))
            return {
                k: strategy.reduce(tf.distribute.ReduceOp.SUM, v, axis=None)
                for k, v in per_replica.items()
            }

        return eval_step

    def _min_batches_over_workers(self, stream):
        local = int(stream.dataset.reduce(np.int64(0), lambda count, _: count + 1).numpy())
        total = self.strategy.reduce(
            tf.distribute.ReduceOp.SUM,
            self.strategy.run(lambda: tf.constant(float(local))), axis=None,
        )
        total_batches = int(round(float(total) / max(1, stream.local_replicas or 1)))
        # Batches are dealt round-robin, so the worker with fewest has floor(total / workers).
        return total_batches // self.num_workers

    # -- checkpoints ---------------------------------------------------------------------
    def _input_state_prefix(self, prefix):
        return f"{prefix}.input-{self.worker_index}-of-{self.num_workers}"

    def _input_checkpoint(self, stream):
        kwargs = {"iterator": stream.iterator}
        if self.rng_states:
            kwargs["rng_states"] = [v.value if hasattr(v, "value") else v for v in self.rng_states]
        return tf.train.Checkpoint(**kwargs)

    def _check_output_dir_config(self, latest):
        path = os.path.join(self.options.output_dir, checkpoints.CONFIG_FILE)
        if not tf.io.gfile.exists(path):
            return
        try:
            saved = BertConfig.from_json_file(path)
        except ValueError:
            return
        differing = [
            f"{k} {getattr(saved, k)} there, {getattr(self.config, k)} here"
            for k in _ARCHITECTURE_KEYS if getattr(saved, k) != getattr(self.config, k)
        ]
        if differing:
            raise PretrainingError(
                f"--output_dir={self.options.output_dir} holds checkpoints of another model "
                f"({latest}; {path}: {'; '.join(differing)}): use a new --output_dir, or the "
                "bert config of that model"
            )

    def restore(self, weights_only=False):
        """Loads the latest checkpoint of output_dir (weights, Adam moments, global_step), or
        else the weights of init_checkpoint. Returns the prefix loaded from output_dir, or None.
        With weights_only (eval), the Adam moments are not needed."""
        latest = checkpoints.latest_checkpoint(self.options.output_dir)
        if latest:
            self._check_output_dir_config(latest)
            try:
                report = checkpoints.load_original_checkpoint(self.model, latest)
            except CheckpointError as e:
                raise PretrainingError(
                    f"--output_dir={self.options.output_dir} holds checkpoints of another model "
                    f"or a damaged one: {e}"
                ) from None
            if weights_only:
                self.global_step.assign(report.global_step or 0)
                return latest
            if report.not_in_checkpoint:
                raise PretrainingError(
                    f"{latest}: not a training checkpoint of this model; it lacks "
                    f"{', '.join(report.not_in_checkpoint)}"
                )
            if report.global_step is None:
                raise PretrainingError(
                    f"{latest} has no global_step: it is not a training checkpoint (to start "
                    "from its weights, pass it as --init_checkpoint with a fresh --output_dir)"
                )
            try:
                self.optimizer.set_state(report.slots, source=latest)
            except ValueError as e:
                raise PretrainingError(str(e)) from None
            self.global_step.assign(report.global_step)
            logging.info("Resuming from %s at global_step %d", latest, report.global_step)
            return latest
        if self.options.init_checkpoint:
            try:
                report = checkpoints.load_original_checkpoint(self.model, self.options.init_checkpoint)
            except CheckpointError as e:
                raise PretrainingError(f"--init_checkpoint: {e}") from None
            if report.not_in_checkpoint:
                logging.warning(
                    "--init_checkpoint %s lacks %s: they keep their random initial values",
                    report.prefix, ", ".join(report.not_in_checkpoint),
                )
            logging.info("Initialized weights from %s (Adam moments and step start at 0)",
                         report.prefix)
        return None

    def remove_interrupted_writes(self):
        """Deletes what a run killed mid-write left in output_dir: temporary files of
        checkpoint, input-state, state-file and eval-results writes (never complete files)."""
        if not self.is_chief or not tf.io.gfile.isdir(self.options.output_dir):
            return
        patterns = (f"{CHECKPOINT_BASENAME}-*.tmp*", f"{CHECKPOINT_BASENAME}-*_temp*",
                    f"{checkpoints.STATE_FILE}.tmp*", "eval_results.txt.tmp-*")
        for pattern in patterns:
            for path in tf.io.gfile.glob(os.path.join(self.options.output_dir, pattern)):
                logging.info("Removing %s, left by an interrupted write", path)
                if tf.io.gfile.isdir(path):
                    tf.io.gfile.rmtree(path)
                else:
                    tf.io.gfile.remove(path)

    def _restore_input_state(self, prefix, stream):
        if not stream.checkpointable:
            logging.warning("The input position is not restored under %s: the input stream "
                            "starts afresh", type(self.strategy).__name__)
            return False
        state = self._input_state_prefix(prefix)
        if not tf.io.gfile.exists(state + ".index"):
            others = tf.io.gfile.glob(f"{prefix}.input-*.index")
            why = ("it was written by a different number of workers" if others
                   else "it has none (e.g. written by the original run_pretraining.py)")
            logging.warning(
                "%s: no input position for this worker (%s); the input stream starts afresh",
                prefix, why,
            )
            return False
        try:
            self._input_checkpoint(stream).read(state).assert_existing_objects_matched()
        except (tf.errors.OpError, AssertionError, ValueError) as e:
            raise PretrainingError(
                f"{state}: cannot restore the input position ({str(e).splitlines()[0]}); the "
                "input files or flags (batch size, shuffle_buffer_size, seed) must be those of "
                "the run that wrote it"
            ) from None
        logging.info("Restored the input position from %s", state)
        return True

    def _barrier(self):
        if self.num_workers > 1:
            @tf.function
            def sync():
                return self.strategy.reduce(
                    tf.distribute.ReduceOp.SUM,
                    self.strategy.run(lambda: tf.constant(1.0)), axis=None,
                )
            sync()

    def save(self, stream=None):
        """Writes output_dir/model.ckpt-<global_step>: the input state file first (every
        worker), then (chief) the model checkpoint, which also makes it the latest; then prunes
        to keep_checkpoint_max. Returns the prefix."""
        step = int(self.global_step.numpy())
        prefix = os.path.join(self.options.output_dir, f"{CHECKPOINT_BASENAME}-{step}")
        tf.io.gfile.makedirs(self.options.output_dir)
        if stream is not None and stream.checkpointable:
            self._input_checkpoint(stream).write(self._input_state_prefix(prefix))
        self._barrier()
        if self.is_chief:
            checkpoints.save_original_checkpoint(
                self.model, prefix, optimizer_state=self.optimizer.get_state(), global_step=step
            )
            self._prune(prefix)
            logging.info("Saved checkpoint %s", prefix)
        self._barrier()
        return prefix

    def _prune(self, latest):
        keep = self.options.keep_checkpoint_max
        if not keep:
            return
        prefixes = checkpoints.checkpoint_prefixes(self.options.output_dir)
        kept = prefixes[-keep:]
        if latest not in kept:
            kept = kept[1:] + [latest]
        if len(prefixes) > keep:
            checkpoints.write_checkpoint_state(self.options.output_dir, latest, kept)
        # Delete every file of an older step that is not kept: the dropped checkpoints and
        # anything a run killed mid-prune or mid-save left behind.
        kept_steps = {_checkpoint_step(p) for p in kept}
        latest_step = _checkpoint_step(latest)
        for path in sorted(tf.io.gfile.glob(
                os.path.join(self.options.output_dir, f"{CHECKPOINT_BASENAME}-*")),
                key=lambda p: not p.endswith(".index")):  # index files first
            step = _checkpoint_step(path)
            if step is not None and step < latest_step and step not in kept_steps:
                if tf.io.gfile.isdir(path):
                    tf.io.gfile.rmtree(path)
                else:
                    tf.io.gfile.remove(path)

    # -- TensorBoard ---------------------------------------------------------------------
    def _writer(self, name):
        if not self.is_chief:
            return None
        if name not in self._summary_writers:
            self._summary_writers[name] = ScalarWriter(os.path.join(self.options.output_dir, name))
        return self._summary_writers[name]

    # -- training ------------------------------------------------------------------------
    def train(self, step_callback=None):
        """Trains from the current global_step (after `restore`) to num_train_steps.

        Args:
          step_callback: optional f(step, values) called for every step with the step index
            and a dict of floats (total_loss, masked_lm_loss, next_sentence_loss,
            learning_rate, grad_norm).
        Returns:
          the prefix of the last checkpoint written (or of the one resumed from).
        """
        opts = self.options
        self.remove_interrupted_writes()
        resumed = self.restore()
        stream = input_pipeline.InputStream(
            self.strategy, opts.input_files, opts.max_seq_length, opts.max_predictions_per_seq,
            opts.train_batch_size, is_training=True, shuffle_buffer_size=opts.shuffle_buffer_size,
            seed=opts.seed, worker_index=self.worker_index, num_workers=self.num_workers,
            batch_flag="--train_batch_size",
        )
        if resumed:
            self._restore_input_state(resumed, stream)
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
                    f"corrupted record in the input files ({', '.join(opts.input_files[:3])}"
                    f"{', ...' if len(opts.input_files) > 3 else ''}): {str(e).splitlines()[0]}"
                ) from None
            values = {k: v.numpy() for k, v in values.items()}
            loop_seconds = time.time() - loop_start
            first = step
            step += num_steps
            if not np.all(np.isfinite(values["total_loss"])):
                raise FloatingPointError(
                    f"loss became {values['total_loss'][-1]} by step {step}: lower --learning_rate"
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

    def _log_progress(self, values, first, step, loop_seconds, start_time, start_step, writer):
        opts = self.options
        num_steps = step - first
        steps_per_sec = num_steps / max(loop_seconds, 1e-9)
        overall = (step - start_step) / max(time.time() - start_time, 1e-9)
        eta = (opts.num_train_steps - step) / overall if overall > 0 else float("inf")
        logging.info(
            "step %d/%d  loss %.4f  mlm %.4f  nsp %.4f  lr %.6g  %.2f steps/s  %.1f examples/s  ETA %s",
            step, opts.num_train_steps, float(np.mean(values["total_loss"])),
            float(np.mean(values["masked_lm_loss"])), float(np.mean(values["next_sentence_loss"])),
            float(values["learning_rate"][-1]), steps_per_sec, steps_per_sec * opts.train_batch_size,
            _format_duration(eta),
        )
        if writer is None:
            return
        for i in range(num_steps):
            writer.write(first + i + 1, {
                "loss": values["total_loss"][i],
                "masked_lm_loss": values["masked_lm_loss"][i],
                "next_sentence_loss": values["next_sentence_loss"][i],
                "learning_rate": values["learning_rate"][i],
                "grad_norm": values["grad_norm"][i],
            })
        writer.write(step, {
            "steps_per_sec": steps_per_sec,
            "examples_per_sec": steps_per_sec * opts.train_batch_size,
        })

    # -- eval ----------------------------------------------------------------------------
    def evaluate(self):
        """Evaluates the current weights on up to max_eval_steps batches of eval_batch_size,
        reading the input files in order once. Writes output_dir/eval_results.txt (chief) and
        returns the results dict."""
        opts = self.options
        stream = input_pipeline.InputStream(
            self.strategy, opts.input_files, opts.max_seq_length, opts.max_predictions_per_seq,
            opts.eval_batch_size, is_training=False, worker_index=self.worker_index,
            num_workers=self.num_workers, max_batches=opts.max_eval_steps,
            batch_flag="--eval_batch_size",
        )
        eval_function = self.make_eval_function(stream)
        limit = opts.max_eval_steps
        if self.num_workers > 1:
            # Every worker must run the same number of steps (they meet in all-reduces).
            limit = min(limit, self._min_batches_over_workers(stream))
        logging.info("***** Running evaluation *****  batch %d, at most %d batches",
                     opts.eval_batch_size, opts.max_eval_steps)
        sums = {k: 0.0 for k in metrics.SUM_KEYS}
        num_batches = 0
        try:
            while num_batches < limit:
                try:
                    batch = eval_function()
                except tf.errors.OutOfRangeError:
                    break
                for k, v in batch.items():
                    sums[k] += float(v.numpy())
                num_batches += 1
        except tf.errors.DataLossError as e:
            raise InputError(f"corrupted record in the eval input files: {str(e).splitlines()[0]}") from None
        if num_batches == 0:
            raise InputError(
                f"no eval batch: the input files hold fewer than --eval_batch_size="
                f"{opts.eval_batch_size} records"
            )
        results = metrics.finalize(sums, num_batches, int(self.global_step.numpy()))
        logging.info("***** Eval results (%d batches) *****", num_batches)
        for key in sorted(results):
            logging.info("  %s = %s", key, results[key])
        if self.is_chief:
            tf.io.gfile.makedirs(opts.output_dir)
            path = metrics.write_eval_results(opts.output_dir, results)
            logging.info("Wrote %s", path)
            writer = self._writer("eval")
            writer.write(results["global_step"],
                         {k: v for k, v in results.items() if k != "global_step"})
            writer.flush()
        return results


def run(config, options, strategy=None, do_train=False, do_eval=False, step_callback=None):
    """What run_pretraining.py does: train and/or eval. Returns (last checkpoint prefix or
    None, eval results or None)."""
    if not do_train and not do_eval:
        raise PretrainingError("at least one of --do_train or --do_eval must be set")
    options.validate(config)
    input_pipeline.check_records(
        options.input_files, options.max_seq_length, options.max_predictions_per_seq
    )
    tf.io.gfile.makedirs(options.output_dir)
    trainer = Pretrainer(config, options, strategy)
    last_checkpoint, results = None, None
    if do_train:
        last_checkpoint = trainer.train(step_callback=step_callback)
    elif do_eval:
        last_checkpoint = trainer.restore(weights_only=True)
        if last_checkpoint is None and not options.init_checkpoint:
            logging.warning("No checkpoint in --output_dir and no --init_checkpoint: evaluating "
                            "randomly initialized weights")
    if do_eval:
        results = trainer.evaluate()
    return last_checkpoint, results
