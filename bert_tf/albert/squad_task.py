"""ALBERT SQuAD 1.1 on the trainer: google-research/albert's `run_squad_v1.py` (with its
`squad_utils.py`); `run_v1` is what `python -m bert_tf.albert.run_squad_v1` does.

The model, head and loss are bert_tf's SQuAD task (`bert_tf.tasks.squad.SquadTask`: the span
head `cls/squad/output_weights` [2, H] and `cls/squad/output_bias` [2] on the sequence output,
the mean of the start and end cross-entropies over every position, padding included) on
ALBERT's encoder, with ALBERT's records (`bert_tf.albert.squad_data`: the original's features,
`p_mask` written but not parsed by v1). What is ALBERT's:

  - the feature files: --train_feature_file (written unless it holds this run's records; the
    original reuses any file of that name, so a file without our sidecar `.meta.json`, e.g.
    the original's, is reused too); --predict_feature_file and --predict_feature_left_file
    (the records and the pickled features, read back when both exist, the original's or ours);
  - training as its Estimator (`bert_tf.albert.finetuning.AlbertFineTuningTrainer`):
    model.ckpt-0 is saved when training starts, every checkpoint is kept (its RunConfig keeps
    all), each with a `.meta` beside it (the original's eval loop copies it);
  - prediction scores every checkpoint of output_dir (`evaluate_checkpoints`, on
    `bert_tf.albert.finetuning.score_checkpoints`, run_squad_v2's loop too): each one's
    predictions.json / nbest_predictions.json (`bert_tf.evaluation.squad_char_spans`) and its
    official v1.1 exact_match / f1 against the predict file's answers, the best f1 copied to
    model.ckpt-best.*, checkpoints pruned as the original prunes them, eval_results.txt as its
    loop writes it; then model.ckpt-best's predictions, which are the files left.

What is v1's: `AlbertSquadV1Task`, `v1_result`, `run_v1`.

Where we differ from the original (each where it crashes, hangs or silently goes wrong):
  - `--do_predict` without `--do_train`: the original compares the step with an unset
    num_train_steps and crashes (Python 3); ours scores the checkpoints output_dir has (and
    model.ckpt-best), and with none predicts with --init_checkpoint's weights, saying so;
  - the original then waits for newer checkpoints until num_train_steps (forever on a
    directory whose training stopped earlier); ours scores what is there and ends;
  - `--do_train` without `--train_feature_file` (the original crashes): the records go to
    <output_dir>/train.tf_record, said in the log;
  - a checkpoint file the original would copy or delete but which is absent (a `.meta` of a
    checkpoint another tool wrote) is skipped instead of crashing the loop.
"""

import dataclasses
import json
import os
import random

import tensorflow as tf
from absl import logging

from bert_tf import checkpoints, files
from bert_tf.albert import squad_data
from bert_tf.albert.finetuning import (AlbertFineTuningTrainer, record_parse_error,
                                       score_checkpoints)
from bert_tf.albert.tokenization import FullTokenizer
from bert_tf.data.records import (read_records_meta, records_are_current, records_meta,
                                  write_records_meta)
from bert_tf.evaluation import squad_char_spans, squad_eval
from bert_tf.tasks.finetuning import FineTuningOptions
from bert_tf.tasks.squad import SquadTask
from bert_tf.training.trainer import TrainingError


class AlbertSquadError(TrainingError):
    """Flags or files that do not make a valid run; the message says which."""


class AlbertSquadV1Task(SquadTask):
    """SQuAD 1.1's span task on ALBERT's records (v1 parses no p_mask). Its n-best, as the
    original v1's (`accumulate_predictions_v1`), ranks every position's logits, padding
    included: prediction batches are cut only with `predict_dynamic_padding`."""

    def __init__(self, max_seq_length, predict_dynamic_padding=False):
        super().__init__(max_seq_length, version_2_with_negative=False,
                         predict_dynamic_padding=predict_dynamic_padding)
        self.name = "albert_squad_v1"

    def feature_spec(self, is_training):
        return squad_data.record_feature_spec(self.max_seq_length, is_training, is_v2=False)


@dataclasses.dataclass(kw_only=True)
class SquadFileOptions(FineTuningOptions):
    """The flags run_squad_v1.py and run_squad_v2.py share (the original's names and
    defaults: the SentencePiece model, the SQuAD and feature files, the window lengths, the
    n-best, every checkpoint kept), and the trainer's. `vocab_file` is unused with
    SentencePiece, as in the original."""

    vocab_file: str | None = None
    spm_model_file: str | None = None
    train_file: str | None = None
    predict_file: str | None = None
    train_feature_file: str | None = None
    predict_feature_file: str | None = None
    predict_feature_left_file: str | None = None
    max_seq_length: int = 384
    doc_stride: int = 128
    max_query_length: int = 64
    n_best_size: int = 20
    max_answer_length: int = 30
    # The original's RunConfig keeps every checkpoint; its prediction loop prunes them.
    keep_checkpoint_max: int = 0


@dataclasses.dataclass(kw_only=True)
class AlbertSquadOptions(SquadFileOptions):
    """run_squad_v1.py's flags, the original's names and defaults, and the trainer's."""

    # Prediction batches cut as --dynamic_padding cuts (not the original's n-best: SquadTask).
    predict_dynamic_padding: bool = False

    def problems(self, config):
        problems = super().problems(config)
        for name in ("n_best_size", "max_answer_length", "doc_stride"):
            if getattr(self, name) <= 0:
                problems.append(f"--{name} must be positive, got {getattr(self, name)}")
        if self.max_query_length < 0:
            problems.append(f"--max_query_length must be >= 0, got {self.max_query_length}")
        return problems


def check_files_and_length(config, options, do_train, do_predict, error):
    """The checks of the original's `validate_flags_or_throw` both SQuAD scripts make, its
    messages and order: the files --do_train and --do_predict need, --max_seq_length against
    the model's max_position_embeddings. Raises `error` (an exception class)."""
    if do_train and not options.train_file:
        raise error("If `do_train` is True, then `train_file` must be specified.")
    if do_predict:
        for name in ("predict_file", "predict_feature_file", "predict_feature_left_file"):
            if not getattr(options, name):
                raise error(f"If `do_predict` is True, then `{name}` must be specified.")
    if options.max_seq_length > config.max_position_embeddings:
        raise error(
            f"Cannot use sequence length {options.max_seq_length} because the ALBERT model "
            f"was only trained up to sequence length {config.max_position_embeddings}")


def validate_flags(config, options, do_train, do_predict, export_dir=None):
    """The original's `validate_flags_or_throw`, its messages and order."""
    if not do_train and not do_predict and not export_dir:
        raise AlbertSquadError(
            "At least one of `do_train` or `do_predict` or `export_dir`must be True.")
    check_files_and_length(config, options, do_train, do_predict, AlbertSquadError)
    if options.max_seq_length <= options.max_query_length + 3:
        raise AlbertSquadError(
            f"The max_seq_length ({options.max_seq_length}) must be greater than "
            f"max_query_length ({options.max_query_length}) + 3")
    if not options.spm_model_file:
        raise AlbertSquadError("--spm_model_file must be set: ALBERT's SQuAD features are "
                               "SentencePiece pieces aligned to characters")
    options.validate(config)


# -- feature files -------------------------------------------------------------------------
def _records_meta(options, input_file, is_training, task_name):
    return records_meta(task_name, [input_file], options.max_seq_length, options.spm_model_file,
                        options.do_lower_case, None, doc_stride=options.doc_stride,
                        max_query_length=options.max_query_length,
                        is_training=bool(is_training))


def _check_reused_records(path, spec):
    """Raises AlbertSquadError when the first record of `path` does not parse with `spec`."""
    problem = record_parse_error(path, spec)
    if problem:
        raise AlbertSquadError(
            f"{path}: its records are not this run's (max_seq_length "
            f"{spec['input_ids'].shape[0]}): {problem}; delete it or name another file")


def _convert(examples, tokenizer, options, is_training, output_fn):
    return squad_data.convert_examples_to_features(
        examples, tokenizer, options.max_seq_length, options.doc_stride,
        options.max_query_length, is_training, output_fn, options.do_lower_case)


def train_records(options, tokenizer, examples, spec, task_name):
    """The training record file of `examples` (already shuffled): --train_feature_file (default
    <output_dir>/train.tf_record), reused when its sidecar says it holds them or when it has
    none (the original reuses any file of that name), else (re)written. Returns its path."""
    path = options.train_feature_file
    if not path:
        path = os.path.join(options.output_dir, "train.tf_record")
        logging.info("No --train_feature_file (the original needs one): the training records "
                     "go to %s", path)
    meta = _records_meta(options, options.train_file, True, task_name)
    if records_are_current(path, meta):
        logging.info("Reusing %s (made from the same files and flags)", path)
        return path
    if files.is_file(path) and read_records_meta(path) is None:
        _check_reused_records(path, spec)
        logging.info("Reusing %s: it exists (the original reuses a feature file as it is; "
                     "delete it to rebuild it from %s)", path, options.train_file)
        return path
    tf.io.gfile.makedirs(os.path.dirname(path) or ".")
    with squad_data.FeatureWriter(path, is_training=True) as writer:
        summary = _convert(examples, tokenizer, options, True, writer.process_feature)
    write_records_meta(path, meta, summary.num_features)
    logging.info("Wrote %d training features of %d examples to %s", summary.num_features,
                 len(examples), path)
    return path


def predict_features(options, tokenizer, examples, spec, task_name):
    """The prediction features and their record file: --predict_feature_file and
    --predict_feature_left_file read back when both exist (unless our sidecar says they were
    made from other files or flags), else written (the records, their sidecar, the pickled
    features). Returns (features, records path)."""
    records, left = options.predict_feature_file, options.predict_feature_left_file
    meta = _records_meta(options, options.predict_file, False, task_name)
    if files.is_file(records) and files.is_file(left):
        sidecar = read_records_meta(records)
        if sidecar is None or records_are_current(records, meta):
            if sidecar is None:
                _check_reused_records(records, spec)
            logging.info("Loading eval features from %s", left)
            features = squad_data.load_features(left)
            return features, records
        logging.info("Rewriting %s and %s: they were made from other files or flags",
                     records, left)
    features = []
    for path in (records, left):
        tf.io.gfile.makedirs(os.path.dirname(path) or ".")
    with squad_data.FeatureWriter(records, is_training=False) as writer:
        def keep(feature):
            features.append(feature)
            writer.process_feature(feature)
        summary = _convert(examples, tokenizer, options, False, keep)
    write_records_meta(records, meta, summary.num_features)
    squad_data.save_features(left, features)
    return features, records


# -- the original's prediction loop over checkpoints ----------------------------------------
def evaluate_checkpoints(output_dir, get_result, num_train_steps=None, init_result=None):
    """The original's prediction loop (`finetuning.score_checkpoints`) with `get_result(prefix)`
    -> (results dict with f1, global_step). Without any checkpoint (nor model.ckpt-best) the
    original waits; `init_result()` (the weights of --init_checkpoint) is scored instead, when
    given, else AlbertSquadError. Returns the results of model.ckpt-best (or of init_result).
    """
    def init():
        if init_result is None:
            raise AlbertSquadError(f"{output_dir}: no checkpoint to predict with")
        logging.info("No checkpoint in %s: predicting with the weights of --init_checkpoint",
                     output_dir)
        result, global_step = init_result()
        return result, global_step, f"best perf happened at step: {global_step}"

    return score_checkpoints(output_dir, get_result, init, num_train_steps)


# -- v1 ------------------------------------------------------------------------------------
def checkpoint_step(prefix):
    """The global_step a checkpoint holds (0 when it has none, e.g. a release)."""
    reader = checkpoints.open_checkpoint(checkpoints.resolve_checkpoint_path(prefix))
    if reader.has_tensor(checkpoints.GLOBAL_STEP):
        return int(reader.get_tensor(checkpoints.GLOBAL_STEP))
    return 0


def predict_logits(trainer, records, batch_size):
    """RawResult (unique_id, start and end logits as lists of floats) of every record."""
    results = []
    for batch in trainer.predict([records], batch_size):
        for i, unique_id in enumerate(batch["unique_ids"]):
            if unique_id:  # 0: padding of the last batch
                results.append(squad_char_spans.RawResult(
                    int(unique_id), batch["start_logits"][i].tolist(),
                    batch["end_logits"][i].tolist()))
    return results


def v1_result(trainer, options, examples, features, records, dataset):
    """get_result of `evaluate_checkpoints` for v1: f(prefix or None) -> (results,
    global_step). The weights of `prefix` (None: the trainer's current ones, and the step of
    --init_checkpoint), their predictions.json / nbest_predictions.json in output_dir, and the
    official v1.1 exact_match / f1 against `dataset`'s answers."""

    def get_result(prefix):
        if prefix is not None:
            report = checkpoints.load_original_checkpoint(trainer.model, prefix)
            if report.not_in_checkpoint:
                raise AlbertSquadError(
                    f"{prefix} has no {', '.join(report.not_in_checkpoint)}: not a checkpoint "
                    "of this SQuAD model (another task's output_dir?)")
            step = checkpoint_step(prefix)
        else:
            step = checkpoint_step(options.init_checkpoint) if options.init_checkpoint else 0
        logging.info("***** Running predictions with %s *****",
                     prefix or options.init_checkpoint or "random weights")
        results = predict_logits(trainer, records, options.predict_batch_size)
        result_dict = {}
        squad_char_spans.accumulate_predictions_v1(
            result_dict, examples, features, results, options.n_best_size,
            options.max_answer_length)
        predictions = squad_char_spans.write_predictions_v1(
            result_dict, examples, features, results, options.n_best_size,
            options.max_answer_length,
            os.path.join(options.output_dir, "predictions.json"),
            os.path.join(options.output_dir, "nbest_predictions.json"))
        return dict(squad_eval.evaluate(dataset, predictions, version="1.1")), step

    return get_result


def _read(path, is_training, flag):
    try:
        return squad_data.read_squad_examples(path, is_training)
    except squad_data.SquadDataError as e:
        raise AlbertSquadError(f"--{flag}: {e}") from None


def run_v1(config, options, strategy=None, do_train=False, do_predict=False,
           step_callback=None):
    """What the original's run_squad_v1.py does: train on --train_file's records, then score
    every checkpoint on --predict_file and write model.ckpt-best's predictions. Returns a dict:
    `checkpoint` (the last trained, or None), `eval_results` (model.ckpt-best's, or None),
    `predictions` (path or None)."""
    validate_flags(config, options, do_train, do_predict)
    output_dir = options.output_dir
    tf.io.gfile.makedirs(output_dir)
    tokenizer = FullTokenizer(options.vocab_file, options.do_lower_case,
                              spm_model_file=options.spm_model_file)
    task = AlbertSquadV1Task(options.max_seq_length, options.predict_dynamic_padding)
    out = {"checkpoint": None, "eval_results": None, "predictions": None}
    train_examples = None
    if do_train:
        train_examples = _read(options.train_file, True, "train_file")
        options = options.with_training_steps(
            len(train_examples), f"--train_file={options.train_file}", error=AlbertSquadError)
        # Pre-shuffled once, with the original's seed, before the conversion.
        random.Random(12345).shuffle(train_examples)
    trainer = AlbertFineTuningTrainer(config, task, options, strategy)
    if do_train:
        path = train_records(options, tokenizer, train_examples, task.feature_spec(True),
                             task.name)
        logging.info("***** Running training *****")
        logging.info("  Num orig examples = %d", len(train_examples))
        logging.info("  Batch size = %d", options.train_batch_size)
        logging.info("  Num steps = %d", options.num_train_steps)
        del train_examples
        out["checkpoint"] = trainer.train([path], step_callback=step_callback)
    if do_predict:
        examples = _read(options.predict_file, False, "predict_file")
        features, records = predict_features(options, tokenizer, examples,
                                             task.feature_spec(False), task.name)
        logging.info("***** Running predictions *****")
        logging.info("  Num orig examples = %d", len(examples))
        logging.info("  Num split examples = %d", len(features))
        logging.info("  Batch size = %d", options.predict_batch_size)
        dataset = squad_eval_dataset(options.predict_file)
        get_result = v1_result(trainer, options, examples, features, records, dataset)

        def init_result():
            trainer.restore_weights()
            if options.init_checkpoint and not tf.train.load_checkpoint(
                    checkpoints.resolve_checkpoint_path(options.init_checkpoint)).has_tensor(
                        "cls/squad/output_weights"):
                logging.warning("--init_checkpoint %s has no SQuAD head (cls/squad/...): the "
                                "predictions are those of a randomly initialized head",
                                options.init_checkpoint)
            return get_result(None)

        out["eval_results"] = evaluate_checkpoints(
            output_dir, get_result, options.num_train_steps if do_train else None, init_result)
        out["predictions"] = os.path.join(output_dir, "predictions.json")
    return out


def squad_eval_dataset(path):
    """The predict file as `squad_eval.evaluate` reads it (already checked by the reader)."""
    with tf.io.gfile.GFile(path, "r") as f:
        dataset = json.load(f)
    if not any(qa.get("answers") for entry in dataset["data"]
               for paragraph in entry["paragraphs"] for qa in paragraph["qas"]):
        logging.warning("%s has no answers: every checkpoint scores 0 and the first one scored "
                        "is kept as model.ckpt-best", path)
    return dataset
