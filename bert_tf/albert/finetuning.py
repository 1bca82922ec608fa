"""What google-research/albert's fine-tuning commands (run_classifier, run_squad_v1/v2,
run_race: the same Estimator set-up) do around the model: the checkpoints their TPUEstimator
writes, the files of their loops over those checkpoints, and the cached record files they
reuse.

`AlbertFineTuningTrainer`: the trainer with the original's optimizers (`--optimizer=adamw`,
BERT's AdamWeightDecay; `lamb`, ALBERT's LAMB: `create_optimizer`'s two) and the checkpoints
of its Estimator: model.ckpt-<step> also when training starts (the CheckpointSaverHook saves
when its session starts, so the loops score the starting weights too), each with a `.meta`
file (names and shapes of the checkpoint's variables; not the model's computation), all kept
(the RunConfig's keep_checkpoint_max is 0; the loops remove what they have scored).

The loops' files: `numbered_checkpoints` (output_dir's model.ckpt-N), `count_newer` (the
original's `_find_valid_cands`), `remove_checkpoint` (an evaluated checkpoint's files, as the
original's loops remove them), `copy_to_best` (a checkpoint copied to model.ckpt-best.*, as
they do on a better score), `load_scored_checkpoint` (a checkpoint's weights, task head
included, into the model the loop scores with). `score_checkpoints`: run_squad_v1's and
run_squad_v2's loop (one loop in the original), with the task's scoring as a callback.

`cached_records`: a record file reused (ours with the same sidecar, or one without a sidecar
that holds this run's features, as the original reuses any) or written; `record_parse_error`:
whether a file without our sidecar holds them. `sequence_length_problems`: the --max_seq_length
checks of run_classifier and run_race.
"""

import os
import re

import tensorflow as tf
from absl import logging

from bert_tf import checkpoints, files
from bert_tf.albert.estimator import (BEST_NAME, CHECKPOINT_FILES, OPTIMIZERS,
                                      MetaGraphCheckpoints, copy_to_best)
from bert_tf.checkpoints import CheckpointError
from bert_tf.data.records import read_records_meta, records_are_current
from bert_tf.training.trainer import Trainer

EVAL_RESULTS_FILE = "eval_results.txt"
# The line the original's loops write after each checkpoint's results.
SEPARATOR = "=" * 50
_NUMBERED = re.compile(r"model\.ckpt-(\d+)")


class AlbertFineTuningTrainer(MetaGraphCheckpoints, Trainer):
    """The trainer with the original fine-tuning Estimator's optimizers and checkpoints (see
    the module docstring)."""

    optimizers = OPTIMIZERS

    def train(self, input_files, step_callback=None):
        """`Trainer.train`, after saving the starting weights as model.ckpt-<step> when
        output_dir has no checkpoint yet (model.ckpt-0 from --init_checkpoint)."""
        if (self.options.num_train_steps > 0 and not tf.io.gfile.exists(
                os.path.join(self.options.output_dir, checkpoints.STATE_FILE))):
            self.output_directory.remove_interrupted_writes()
            self.restore()
            stream = self.input_stream(input_files, self.options.train_batch_size,
                                       is_training=True)
            self.save(stream)
        return super().train(input_files, step_callback=step_callback)


# -- the loops' files -----------------------------------------------------------------------
def numbered_checkpoints(directory):
    """{N: prefix} of every `directory`/model.ckpt-N with an index (not model.ckpt-best)."""
    found = {}
    for path in tf.io.gfile.glob(os.path.join(directory, "model.ckpt-*.index")):
        match = _NUMBERED.fullmatch(os.path.basename(path)[:-len(".index")])
        if match:
            found[int(match.group(1))] = path[:-len(".index")]
    return found


def count_newer(directory, step):
    """How many numbered checkpoints of `directory` are newer than `step` (the original's
    `len(_find_valid_cands(step))`)."""
    return sum(1 for s in numbered_checkpoints(directory) if s > step)


def remove_checkpoint(prefix):
    """Deletes checkpoint `prefix` as the original's loops do (its .meta, data and index; the
    index first here, so it never looks complete with data missing), with the input position
    bert_tf saves beside it, and drops it from the `checkpoint` state file."""
    for ext in CHECKPOINT_FILES:
        if tf.io.gfile.exists(f"{prefix}.{ext}"):
            logging.info("removing %s.%s", prefix, ext)
    checkpoints.delete_checkpoint(prefix)
    for path in sorted(tf.io.gfile.glob(prefix + ".*")):
        if tf.io.gfile.isdir(path):
            tf.io.gfile.rmtree(path)
        else:
            files.remove(path)
    directory = os.path.dirname(prefix)
    latest = checkpoints.latest_checkpoint(directory)
    if latest and latest != prefix:
        checkpoints.write_checkpoint_state(directory, latest,
                                           checkpoints.checkpoint_prefixes(directory))


def load_scored_checkpoint(model, prefix, head, use, error, flag=None):
    """Loads checkpoint `prefix` into `model` (the task's model, whose weights a loop scores)
    and returns its global_step (0 when it has none, e.g. a release).

    Raises `error` (an exception class) in one line: the checkpoint unreadable or of another
    architecture (`checkpoints.CheckpointError`), or without some of `model`'s variables,
    i.e. without the task's head: "<checkpoint> has no <head> head (<the first three>): nothing
    to <use> with; ...", the checkpoint named as `--<flag>=<prefix>` when a flag gave it."""
    try:
        report = checkpoints.load_original_checkpoint(model, prefix)
    except CheckpointError as e:
        raise error(str(e)) from None
    missing = report.not_in_checkpoint
    if missing:
        where = f"--{flag}={prefix}" if flag else f"checkpoint {prefix}"
        raise error(f"{where} has no {head} head ({', '.join(missing[:3])}"
                    f"{', ...' if len(missing) > 3 else ''}): nothing to {use} with; "
                    "fine-tune it first (--do_train)")
    return int(report.global_step or 0)


def result_lines(result):
    """`key = value` lines of `result`, by key, as the original's loops write and log them
    (`str()` of each value: a numpy float32 as numpy prints it, not as a Python float)."""
    lines = []
    for key in sorted(result):
        logging.info("  %s = %s", key, result[key])
        lines.append(f"{key} = {str(result[key])}\n")
    return lines


# -- run_squad_v1/v2's loop -----------------------------------------------------------------
def score_checkpoints(output_dir, score, init, num_train_steps=None, key="f1"):
    """The original run_squad_v1's and run_squad_v2's prediction loop.

    `score(prefix)` predicts with checkpoint `prefix` (writing the prediction files) and
    returns (results dict with `key`, global_step). model.ckpt-best is scored first when it
    exists; then, in step order, every numbered checkpoint newer than its step: its results,
    and when `key` beats the best the copy to model.ckpt-best ("saved X to Y"), "best <key> =
    ...", a line of 50 "="; a scored checkpoint with more than two newer ones is removed, one
    passed over with more than one newer. The final results are model.ckpt-best's (scored
    again unless the last checkpoint scored was it: its prediction files are the ones left),
    ending the file with "best perf happened at step: N". eval_results.txt is rewritten whole
    after each checkpoint.

    The original then waits for newer checkpoints until `num_train_steps`; this ends, saying
    so when the newest scored is older. Without any checkpoint (nor model.ckpt-best) the
    original waits forever: `init()` is called instead and returns (results, global_step,
    the file's closing line); it may raise (nothing to predict with).

    Returns the final results.
    """
    path = os.path.join(output_dir, EVAL_RESULTS_FILE)
    best = os.path.join(output_dir, BEST_NAME)
    lines = []
    last = None  # (prefix, results, step) of the latest `score` call: the files on disk

    def scored(prefix):
        nonlocal last
        result, step = score(prefix)
        last = (prefix, result, step)
        return result, step

    def flush():
        files.write_atomic(path, "".join(lines))

    best_source = None
    if tf.io.gfile.exists(best + ".index"):
        result, global_step = scored(best)
        best_perf, best_source = result[key], best
    else:
        global_step, best_perf = -1, -1
    found = numbered_checkpoints(output_dir)
    logging.info("found %d files.", len(found))
    for step, prefix in sorted(found.items()):
        if global_step >= step:
            if count_newer(output_dir, step) > 1:
                remove_checkpoint(prefix)
            continue
        result, global_step = scored(prefix)
        logging.info("***** Eval results of %s *****", prefix)
        lines += result_lines(result)
        if result[key] > best_perf:
            best_perf, best_source = result[key], prefix
            lines += [f"saved {source} to {target}\n" for source, target in copy_to_best(prefix)]
        lines.append(f"best {key} = {best_perf}\n")
        logging.info("  best %s = %s", key, best_perf)
        if count_newer(output_dir, global_step) > 2:
            remove_checkpoint(prefix)
        lines.append(SEPARATOR + "\n")
        flush()
    if best_source is None:
        result, global_step, closing = init()
        lines += result_lines(result)
        lines.append(closing)
        flush()
        return result
    if num_train_steps is not None and global_step < num_train_steps:
        logging.warning("The newest checkpoint scored is of step %d < %d training steps (the "
                        "original would wait for newer ones)", global_step, num_train_steps)
    if last[0] in (best_source, best):
        # model.ckpt-best holds the weights just scored: their files are on disk already.
        _, result, global_step = last
    else:
        result, global_step = scored(best)
    logging.info("***** Final Eval results (%s, step %d) *****", best, global_step)
    lines += result_lines(result)
    lines.append(f"best perf happened at step: {global_step}")
    flush()
    return result


# -- cached record files --------------------------------------------------------------------
def record_parse_error(path, spec):
    """None when the first record of `path` parses with feature spec `spec`, else the first
    line of the parser's complaint (for a cached file the original would reuse as it is)."""
    try:
        for raw in tf.data.TFRecordDataset(path).take(1):
            tf.io.parse_single_example(raw, spec)
    except (tf.errors.OpError, ValueError) as e:
        return str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
    return None


def cached_records(path, meta, spec, write, mismatch, reuse_note):
    """The record file `path`: reused when its sidecar matches `meta` (the same input files,
    flags and SentencePiece model), or when it has no sidecar and its first record parses with
    feature spec `spec` (the original reuses any file of that name: e.g. one it wrote; logged
    with `reuse_note`); else (re)written by `write()`. A file without a sidecar that does not
    parse raises `mismatch(problem)` (the parser's complaint). Returns `path`."""
    if records_are_current(path, meta):
        logging.info("Reusing %s (made from the same files and flags)", path)
        return path
    if files.is_file(path) and read_records_meta(path) is None:
        problem = record_parse_error(path, spec)
        if problem:
            raise mismatch(problem)
        logging.info("Reusing %s: it exists (%s)", path, reuse_note)
        return path
    if files.is_file(path):
        logging.info("Rewriting %s: it was made from other files or flags", path)
    tf.io.gfile.makedirs(os.path.dirname(path) or ".")
    write()
    return path


# -- flags ---------------------------------------------------------------------------------
def sequence_length_problems(max_seq_length, config, minimum, layout):
    """The problems of --max_seq_length with ALBERT config `config` (list of str): longer than
    its position embeddings, or shorter than `minimum`, the pieces of the smallest sequence
    (`layout`, e.g. "[CLS], [SEP] and a piece")."""
    problems = []
    if max_seq_length > config.max_position_embeddings:
        problems.append(
            f"Cannot use sequence length {max_seq_length} because the ALBERT model "
            f"was only trained up to sequence length {config.max_position_embeddings} "
            "(--max_seq_length > max_position_embeddings of --albert_config_file)")
    if max_seq_length < minimum:
        problems.append(f"--max_seq_length must be at least {minimum} ({layout}), got "
                        f"{max_seq_length}")
    return problems
