"""A training run's output_dir: the files the trainer keeps there, from resume to save.

`OutputDirectory` owns these files of output_dir (N: the global_step they were written at):

  model.ckpt-N.index, .data-*         the checkpoints, in the original's names and format
                                      (`bert_tf.checkpoints`): weights, optimizer slots,
                                      global_step, the fp16 loss scale
  model.ckpt-N.input-<w>-of-<W>.*     beside each, worker w's input position (the input
                                      iterator's state) and the dropout RNG states, so that a
                                      restarted run continues where the checkpoint was taken
  checkpoint                          the state file: the latest and the kept checkpoints
  task.json                           which task (and label set) the checkpoints belong to
                                      (`task_file`), written with the first checkpoint
  damaged/                            the files of damaged checkpoints a resume set aside

and their life cycle: at start, deleting what a run killed mid-write left (temporaries
only, never complete files); restoring the run's state from the newest intact checkpoint (a
damaged newer one is passed over and, to train, its files moved into damaged/), after checking
that the directory holds checkpoints of this task and model (task.json, bert_config.json), or
else from --init_checkpoint; restoring the input position; saving (input position first, on
every worker, then the checkpoint, on the chief); pruning to keep_checkpoint_max.

Not its files: bert_config.json (the scripts write it; a resume only checks it),
eval_results.txt and the TensorBoard events (the trainer), and the lock bert_tf.lock
(`output_lock`, which the scripts hold around the whole run). The Model Garden analogue is
the checkpoint manager that Orbit's controller keeps apart from its loop.
"""

import json
import os
import re

import numpy as np
import tensorflow as tf
from absl import logging

from bert_tf import checkpoints, families, files
from bert_tf.checkpoints import CheckpointError
from bert_tf.training import task_file
from bert_tf.training.strategy import worker_info

CHECKPOINT_BASENAME = "model.ckpt"
# Where a resumed run moves the files of damaged checkpoints newer than the one it resumes.
DAMAGED_DIR = "damaged"
# The config keys that decide the variables' shapes: a checkpoint of a config differing in one
# of them belongs to another model.
_ARCHITECTURE_KEYS = (
    "vocab_size", "hidden_size", "num_hidden_layers", "num_attention_heads",
    "intermediate_size", "max_position_embeddings", "type_vocab_size",
)


class ResumeError(ValueError):
    """output_dir's checkpoints, or --init_checkpoint, cannot start this run; the message says
    which file and what to do (the trainer raises it as a `TrainingError`)."""


def _checkpoint_step(path):
    """N of `.../model.ckpt-N` or of any file `model.ckpt-N.<suffix>`, else None."""
    match = re.match(rf"{re.escape(CHECKPOINT_BASENAME)}-(\d+)(?:[._]|$)", os.path.basename(path))
    return int(match.group(1)) if match else None


class OutputDirectory:
    """The checkpoints, input positions, state file, task.json and damaged/ of one run's
    output_dir (see the module docstring), and where the run's state starts: output_dir's
    latest checkpoint, else --init_checkpoint.

    Args:
      options: the run's `TrainerOptions` (output_dir, keep_checkpoint_max, init_checkpoint,
        init_optimizer_state, optimizer).
      model: the task's model, whose weights are saved and restored.
      optimizer: its optimizer (`get_state()` / `set_state()`: the slots beside the weights).
      global_step: the int64 step variable.
      config: the model config (a resume checks bert_config.json's architecture against it).
      task: the `Task` (its `describe()` is task.json).
      strategy: the tf.distribute.Strategy (this worker's index, the save barrier).
      loss_scale: the fp16 `precision.DynamicLossScale`, or None.
      rng_states: the dropout RNG state variables, saved with the input position.
    """

    def __init__(self, options, model, optimizer, global_step, *, config, task, strategy,
                 loss_scale=None, rng_states=()):
        self.options = options
        self.directory = options.output_dir
        self.model = model
        self.optimizer = optimizer
        self.global_step = global_step
        self.config = config
        self.task = task
        self.strategy = strategy
        self.loss_scale = loss_scale
        self.rng_states = rng_states
        self.worker_index, self.num_workers, self.is_chief = worker_info(strategy)

    # -- start ---------------------------------------------------------------------------
    def remove_interrupted_writes(self):
        """Deletes what a run killed mid-write left in output_dir: temporary files of
        checkpoint, input-state, state-file, config, task-file and eval-results writes, and
        of any other `files.atomic_path` write there (never complete files)."""
        if not self.is_chief or not tf.io.gfile.isdir(self.directory):
            return
        patterns = (f"{CHECKPOINT_BASENAME}-*.tmp*", f"{CHECKPOINT_BASENAME}-*_temp*",
                    f"{checkpoints.STATE_FILE}.tmp*", "eval_results.txt.tmp-*",
                    f"{task_file.TASK_FILE}.tmp-*", f"{checkpoints.CONFIG_FILE}.tmp-*")
        found = {path for pattern in patterns for path in tf.io.gfile.glob(
            os.path.join(self.directory, pattern))}
        found.update(path for path in tf.io.gfile.glob(
            os.path.join(self.directory, "*.tmp-*")) if files.is_temporary_name(path))
        for path in sorted(found):
            logging.info("Removing %s, left by an interrupted write", path)
            files.remove(path)

    # -- resume --------------------------------------------------------------------------
    def restore(self, weights_only=False):
        """Loads the latest checkpoint of output_dir (weights, Adam moments, global_step), or
        else the weights of init_checkpoint. Returns the prefix loaded from output_dir, or None.
        With weights_only (eval), the Adam moments are not needed.

        A latest checkpoint whose files are missing, cut short or corrupt is passed over for the
        newest intact one, with a warning naming both; to train, the damaged files (which the
        run would overwrite) are first moved into output_dir/damaged/.

        Raises:
          ResumeError: checkpoints of another task or model, none intact, not a training
            checkpoint, or a damaged init_checkpoint.
        """
        resumed = self._resume(weights_only)
        if resumed:
            latest, report = resumed
            if weights_only:
                self.global_step.assign(report.global_step or 0)
                return latest
            if report.not_in_checkpoint:
                raise ResumeError(
                    f"{latest}: not a training checkpoint of this model; it lacks "
                    f"{', '.join(report.not_in_checkpoint)}"
                )
            if report.global_step is None:
                raise ResumeError(
                    f"{latest} has no global_step: it is not a training checkpoint (to start "
                    "from its weights, pass it as --init_checkpoint with a fresh --output_dir)"
                )
            try:
                self.optimizer.set_state(report.slots, source=latest)
            except ValueError as e:
                raise ResumeError(str(e)) from None
            self.global_step.assign(report.global_step)
            self._restore_loss_scale(latest)
            logging.info("Resuming from %s at global_step %d", latest, report.global_step)
            return latest
        if self.options.init_checkpoint:
            try:
                report = checkpoints.load_original_checkpoint(
                    self.model, self.options.init_checkpoint)
            except CheckpointError as e:
                raise ResumeError(f"--init_checkpoint: {e}") from None
            if self.options.init_optimizer_state and not weights_only:
                self._continue_optimizer_state(report)
                return None
            if report.not_in_checkpoint:
                logging.warning(
                    "--init_checkpoint %s lacks %s: they keep their random initial values",
                    report.prefix, ", ".join(report.not_in_checkpoint),
                )
            logging.info("Initialized weights from %s (Adam moments and step start at 0)",
                         report.prefix)
        return None

    def _restore_loss_scale(self, prefix):
        if self.loss_scale is not None and not self.loss_scale.set_state_from_checkpoint(prefix):
            logging.info("%s has no loss scale (not an fp16 run): starting at %g", prefix,
                         float(self.loss_scale.scale.numpy()))

    def _continue_optimizer_state(self, report):
        """--init_optimizer_state: the optimizer slots, global_step and loss scale of the
        init_checkpoint continue (e.g. phase 2 of two-phase pretraining on longer sequences)."""
        flag = f"--init_checkpoint={self.options.init_checkpoint} with --init_optimizer_state"
        if report.not_in_checkpoint or report.global_step is None:
            raise ResumeError(
                f"{flag}: {report.prefix} is not a training checkpoint of this model (it lacks "
                f"{', '.join(report.not_in_checkpoint) or 'global_step'}); drop "
                "--init_optimizer_state to start fresh optimizer state from its weights"
            )
        try:
            self.optimizer.set_state(report.slots, source=report.prefix)
        except ValueError as e:
            raise ResumeError(
                f"{flag} (--optimizer={self.options.optimizer}): {e}") from None
        self.global_step.assign(report.global_step)
        self._restore_loss_scale(report.prefix)
        logging.info("Initialized weights, %s slots and global_step %d from %s",
                     self.options.optimizer, report.global_step, report.prefix)

    def _resume(self, weights_only):
        """Loads the weights of output_dir's newest intact checkpoint into the model (see
        `restore`); to train (the chief), sets the damaged newer ones aside and makes it the
        latest of the state file. Returns (its prefix, its load report), or None when
        output_dir has no state file."""
        candidates = self._resume_candidates()
        if not candidates:
            return None
        self._check_belongs(candidates[0])
        latest, report, damaged = self._load_newest_intact(candidates, weights_only)
        training_chief = not weights_only and self.is_chief
        if training_chief and (damaged or latest != checkpoints.latest_checkpoint(
                self.directory)):
            self._set_aside(damaged)
            self._rewrite_state(latest)
        if damaged:
            kept = ""
            if training_chief:
                kept = f"; its files are kept in {os.path.join(self.directory, DAMAGED_DIR)}"
            logging.warning("%s%s; %s %s, the newest intact checkpoint%s",
                            damaged[0], f" (and {len(damaged) - 1} more)"
                            if len(damaged) > 1 else "",
                            "using the weights of" if weights_only else "resuming from",
                            latest,
                            kept)
        return latest, report

    def _check_belongs(self, latest):
        """Raises ResumeError when task.json or bert_config.json says that output_dir's
        checkpoints (`latest` the newest) are of another task or model."""
        try:
            saved = task_file.load_task_file(self.directory)
        except (OSError, ValueError):
            saved = None
        else:
            if saved != self.task.describe():
                raise ResumeError(
                    f"--output_dir={self.directory} holds checkpoints of another task "
                    f"({latest}; {task_file.task_file_path(self.directory)}: "
                    f"{json.dumps(saved, sort_keys=True)}, this run: "
                    f"{json.dumps(self.task.describe(), sort_keys=True)}): use a new --output_dir"
                )
        path = os.path.join(self.directory, checkpoints.CONFIG_FILE)
        if not tf.io.gfile.exists(path):
            return
        try:
            saved = families.read_config(path)
        except ValueError:
            return
        differing = [
            f"{k} {getattr(saved, k)} there, {getattr(self.config, k)} here"
            for k in _ARCHITECTURE_KEYS if getattr(saved, k) != getattr(self.config, k)
        ]
        if differing:
            raise ResumeError(
                f"--output_dir={self.directory} holds checkpoints of another model "
                f"({latest}; {path}: {'; '.join(differing)}): use a new --output_dir, or the "
                "bert config of that model"
            )

    def _resume_candidates(self):
        """output_dir's checkpoints, newest first: those its `checkpoint` state file lists
        (the latest first, whether their files exist or not), or, when that file cannot be
        read, every model.ckpt-N there by N. [] without a state file."""
        state_path = os.path.join(self.directory, checkpoints.STATE_FILE)
        if not tf.io.gfile.exists(state_path):
            return []
        listed = checkpoints.listed_checkpoints(self.directory)
        if listed:
            return listed
        found = self._checkpoints_on_disk()[::-1]
        if found:
            logging.warning("%s lists no checkpoint (unreadable): taking the checkpoints of "
                            "%s by their step", state_path, self.directory)
        return found

    def _checkpoints_on_disk(self):
        """Every output_dir/model.ckpt-N with an index, by N."""
        return sorted(
            (path[:-len(".index")] for path in tf.io.gfile.glob(
                os.path.join(self.directory, f"{CHECKPOINT_BASENAME}-*.index"))
             if re.fullmatch(rf"{re.escape(CHECKPOINT_BASENAME)}-\d+\.index",
                             os.path.basename(path))),
            key=_checkpoint_step)

    def _load_newest_intact(self, candidates, weights_only):
        """Loads the first of `candidates` (newest first) whose files are intact (and, to
        train on one worker, its input position's). Returns (prefix, report, the
        DamagedCheckpointErrors of the newer ones)."""
        damaged = []
        for prefix in candidates:
            try:
                if not tf.io.gfile.exists(prefix + ".index"):  # listed, but lost
                    raise checkpoints.damaged_checkpoint_error(prefix)
                report = checkpoints.load_original_checkpoint(self.model, prefix)
                state = self._input_state_prefix(prefix)
                # Workers decide alone: only with one are they sure to agree on the fallback.
                if (not weights_only and self.num_workers == 1
                        and (tf.io.gfile.exists(state + ".index")
                             or checkpoints.data_files(state))):
                    try:
                        checkpoints.verify_checkpoint(state)
                    except checkpoints.DamagedCheckpointError as e:
                        raise checkpoints.DamagedCheckpointError(
                            prefix, f"its input position: {e.what}") from None
            except checkpoints.DamagedCheckpointError as e:
                damaged.append(e)
                continue
            except CheckpointError as e:
                raise ResumeError(
                    f"--output_dir={self.directory} holds checkpoints of another "
                    f"model: {e}") from None
            return prefix, report, damaged
        others = f" (and {len(damaged) - 1} older ones)" if len(damaged) > 1 else ""
        raise ResumeError(
            f"--output_dir={self.directory}: no intact checkpoint to resume from: "
            f"{damaged[0]}{others}; move the damaged files out of the directory to start "
            "afresh, or use a new --output_dir")

    def _set_aside(self, damaged):
        """Moves the files of the `damaged` checkpoints (all newer than the one resumed, which
        this run would overwrite) into output_dir/damaged/. Nothing is deleted."""
        aside = os.path.join(self.directory, DAMAGED_DIR)
        for error in damaged:
            for path in tf.io.gfile.glob(f"{error.prefix}.*"):
                tf.io.gfile.makedirs(aside)
                target = os.path.join(aside, os.path.basename(path))
                n = 1
                while tf.io.gfile.exists(target):
                    target = os.path.join(aside, f"{os.path.basename(path)}.{n}")
                    n += 1
                tf.io.gfile.rename(path, target)

    def _rewrite_state(self, resumed):
        """Makes `resumed` the latest of the state file, after the intact checkpoints it lists
        (or, when it cannot be read, those on disk up to `resumed`), so that the next save
        keeps and prunes them as usual."""
        kept = checkpoints.checkpoint_prefixes(self.directory) or [
            p for p in self._checkpoints_on_disk()
            if _checkpoint_step(p) <= _checkpoint_step(resumed)]
        kept = [p for p in kept if p != resumed]
        checkpoints.write_checkpoint_state(self.directory, resumed, kept + [resumed])

    # -- the input position --------------------------------------------------------------
    def _input_state_prefix(self, prefix):
        return f"{prefix}.input-{self.worker_index}-of-{self.num_workers}"

    def _input_checkpoint(self, stream):
        kwargs = {"iterator": stream.iterator}
        if self.rng_states:
            kwargs["rng_states"] = [v.value if hasattr(v, "value") else v for v in self.rng_states]
        return tf.train.Checkpoint(**kwargs)

    def restore_input_state(self, prefix, stream):
        """Restores this worker's input position (and the dropout RNG states) saved beside
        checkpoint `prefix` into `stream` (an `input_pipeline.InputStream`). Returns whether
        it did; when there is none (or the stream cannot be restored), a warning says the
        stream starts afresh.

        Raises:
          ResumeError: it is damaged (with several workers) or of other input flags.
        """
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
        except (tf.errors.OpError, AssertionError, ValueError, IndexError) as e:
            try:
                checkpoints.verify_checkpoint(state)
            except checkpoints.DamagedCheckpointError as damaged:
                # One worker alone cannot pass over it (see _load_newest_intact).
                raise ResumeError(
                    f"{damaged}; with several workers a damaged input position is not passed "
                    f"over: move the files {prefix}.* out of --output_dir and restart to "
                    "resume from the checkpoint before it") from None
            raise ResumeError(
                f"{state}: cannot restore the input position ({str(e).splitlines()[0]}); the "
                "input files or flags (batch size, shuffle_buffer_size, seed, group_by_length) "
                "must be those of the run that wrote it"
            ) from None
        logging.info("Restored the input position from %s", state)
        return True

    # -- save ----------------------------------------------------------------------------
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
        """Writes output_dir/model.ckpt-<global_step>: the input state file first (every worker),
        then (chief) task.json if absent and the model checkpoint, which also makes it the
        latest; then prunes to keep_checkpoint_max. Returns the prefix.

        Raises:
          files.OutputError: the disk is full (one line: the directory, the space needed, the
            checkpoint to resume from). What this call wrote is removed; the earlier
            checkpoints and the state file are as they were.
        """
        step = int(self.global_step.numpy())
        prefix = os.path.join(self.directory, f"{CHECKPOINT_BASENAME}-{step}")
        tf.io.gfile.makedirs(self.directory)
        try:
            if stream is not None and stream.checkpointable:
                self._write_input_state(stream, prefix)
            self._barrier()
            if self.is_chief:
                self._write_task_file()
                checkpoints.save_original_checkpoint(
                    self.model, prefix, optimizer_state=self.optimizer.get_state(),
                    global_step=step,
                    extra_tensors=self.loss_scale.get_state() if self.loss_scale else None,
                )
        except files.OutputError as e:
            self._remove_input_state(prefix)
            previous = checkpoints.latest_checkpoint(self.directory)
            resume = (f"{previous} and the '{checkpoints.STATE_FILE}' file are as they were: "
                      f"free space, then run the same command to resume from {previous}"
                      if previous else "free space, then run the same command")
            raise files.OutputError(f"{e}; {resume}") from None
        if self.is_chief:
            self._prune(prefix)
            logging.info("Saved checkpoint %s", prefix)
        self._barrier()
        return prefix

    def _write_task_file(self):
        if self.is_chief and not tf.io.gfile.exists(task_file.task_file_path(self.directory)):
            task_file.write_task_file(self.directory, self.task.describe())

    def _input_state_files(self, prefix):
        state = self._input_state_prefix(prefix)
        # tf.train.Checkpoint.write builds `<state>_temp/` then merges it into `<state>.*`.
        return [path for pattern in (f"{state}_temp*", f"{state}.index", f"{state}.data-*")
                for path in tf.io.gfile.glob(pattern)]

    def _remove_input_state(self, prefix):
        for path in self._input_state_files(prefix):
            files.remove(path)

    def _write_input_state(self, stream, prefix):
        state = self._input_state_prefix(prefix)
        try:
            self._input_checkpoint(stream).write(state)
        except Exception as e:  # pylint: disable=broad-except  (tf.errors.*, OSError)
            written = sum(files.size(p) for p in self._input_state_files(prefix))
            self._remove_input_state(prefix)
            if not files.is_out_of_space(e):
                raise
            # The input position (as large as this worker's previous one, if it has one, else
            # at least what was written) and the model checkpoint after it.
            previous = checkpoints.latest_checkpoint(self.directory)
            needed = max(written, sum(files.size(p) for p in self._input_state_files(previous))
                         if previous else 0)
            needed += sum(v.numpy().nbytes for v in self.model.weights)
            needed += sum(np.asarray(v).nbytes for values in self.optimizer.get_state().values()
                          for v in values.values())
            raise files.OutputError(files.out_of_space_message(
                f"checkpoint {prefix} (its input position {os.path.basename(state)})",
                self.directory, needed=needed)) from None

    def _prune(self, latest):
        keep = self.options.keep_checkpoint_max
        if not keep:
            return
        prefixes = checkpoints.checkpoint_prefixes(self.directory)
        kept = prefixes[-keep:]
        if latest not in kept:
            kept = kept[1:] + [latest]
        if len(prefixes) > keep:
            checkpoints.write_checkpoint_state(self.directory, latest, kept)
        # Delete every file of an older step that is not kept: the dropped checkpoints and
        # anything a run killed mid-prune or mid-save left behind.
        kept_steps = {_checkpoint_step(p) for p in kept}
        latest_step = _checkpoint_step(latest)
        for path in sorted(tf.io.gfile.glob(
                os.path.join(self.directory, f"{CHECKPOINT_BASENAME}-*")),
                key=lambda p: not p.endswith(".index")):  # index files first
            step = _checkpoint_step(path)
            if step is not None and step < latest_step and step not in kept_steps:
                if tf.io.gfile.isdir(path):
                    tf.io.gfile.rmtree(path)
                else:
                    tf.io.gfile.remove(path)
