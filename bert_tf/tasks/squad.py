"""SQuAD 1.1 / 2.0 as a task of the trainer: the original `run_squad.py` (REFERENCE.md §12,
FINETUNING.md §2).

`SquadTask` gives the trainer the encoder + `SpanHead` (`cls/squad/output_weights` [2, H],
`cls/squad/output_bias` [2]), the records of `bert_tf.data.squad`, the loss (the mean of the
start and end cross-entropies over every position, padding included, as the original) and the
per-window logits that `bert_tf.evaluation.squad_predictions` turns into answers; `run` is what
run_squad.py does.
"""

import dataclasses
import functools
import json
import os
import random

import tensorflow as tf
from absl import logging

from bert_tf import families, files
from bert_tf.data import squad as squad_data
from bert_tf.evaluation import squad_eval, squad_predictions
from bert_tf.layers.heads import SpanHead
from bert_tf.models import BertTaskModel
from bert_tf.tasks.finetuning import FineTuningOptions, max_seq_length_problem
from bert_tf.text import validate_case_matches_checkpoint
from bert_tf.training.task import Task
from bert_tf.training.trainer import Trainer, TrainingError


class SquadError(TrainingError):
    """Flags or files that do not make a valid run_squad.py run; the message says which."""


class SquadTask(Task):
    """Answer-span prediction over `[CLS] question [SEP] window [SEP]` records.

    Args:
      max_seq_length: the records' sequence length.
      version_2_with_negative: SQuAD 2.0 (saved with the checkpoints; the model is the same).
      predict_dynamic_padding: let dynamic padding cut prediction batches too (see
        `cut_predict_batches`); False (the default) keeps the original's n-best.
    """

    step_keys = ("total_loss", "start_loss", "end_loss")
    log_names = ("loss", "start", "end")
    # The span head reads the sequence output only: as in the original, the pooler gets no
    # gradient, hence no update and no Adam slots.
    unused_variable_prefixes = ("bert/pooler/",)
    # The loss is a softmax over every position, padding included (as the original's): the
    # logits at padded positions are not zero, so a cut batch would change it. Training keeps
    # max_seq_length.
    cut_training_batches = False
    # Prediction too, by default: the original's n-best takes each window's n_best_size
    # highest start and end logits over all max_seq_length positions, padding included, and
    # then drops those outside the document. A padded position among them takes a slot that a
    # cut batch (which has no logit there) gives to a real position, so the answers can
    # differ. The real positions' logits are the same either way: cutting is an opt-in.
    cut_predict_batches = False
    # Positions past a cut batch's length get no logit: -inf, never among the n best.
    sequence_outputs = {"start_logits": float("-inf"), "end_logits": float("-inf")}

    def __init__(self, max_seq_length, version_2_with_negative=False,
                 predict_dynamic_padding=False):
        self.max_seq_length = max_seq_length
        self.version_2_with_negative = version_2_with_negative
        self.cut_predict_batches = bool(predict_dynamic_padding)
        self.name = "squad2" if version_2_with_negative else "squad"

    def build_model(self, config):
        head = SpanHead(config.hidden_size, config.initializer_range, name="squad")
        return BertTaskModel(config, head, name="bert_squad")

    def feature_spec(self, is_training):
        """The original's records (`bert_tf.data.squad.record_feature_spec`)."""
        return squad_data.record_feature_spec(self.max_seq_length, is_training)

    @staticmethod
    def _position_loss(logits, positions):
        """float32 [B]: -log softmax(logits)[position] over all positions."""
        log_probs = tf.nn.log_softmax(logits, axis=-1)
        positions = tf.cast(tf.reshape(positions, [-1]), tf.int32)
        return -tf.gather(log_probs, positions, batch_dims=1)

    def compute_loss(self, outputs, features, normalizers):
        batch = normalizers[0]
        start = tf.reduce_sum(self._position_loss(outputs["start_logits"],
                                                  features["start_positions"])) / batch
        end = tf.reduce_sum(self._position_loss(outputs["end_logits"],
                                                features["end_positions"])) / batch
        return {"total_loss": (start + end) / 2.0, "start_loss": start, "end_loss": end}

    def predict_outputs(self, outputs, features):
        return {
            "unique_ids": features["unique_ids"],
            "start_logits": outputs["start_logits"],
            "end_logits": outputs["end_logits"],
        }


@dataclasses.dataclass(kw_only=True)
class SquadOptions(FineTuningOptions):
    """run_squad.py's flags (the original's names and defaults, REFERENCE.md §12), plus the
    trainer's."""

    train_file: str | None = None
    predict_file: str | None = None
    max_seq_length: int = 384
    doc_stride: int = 128
    max_query_length: int = 64
    n_best_size: int = 20
    max_answer_length: int = 30
    verbose_logging: bool = False
    version_2_with_negative: bool = False
    null_score_diff_threshold: float = 0.0
    # Prediction batches cut as --dynamic_padding cuts (not the original's n-best: SquadTask).
    predict_dynamic_padding: bool = False

    def problems(self, config):
        problems = super().problems(config)
        for name in ("n_best_size", "max_answer_length"):
            if getattr(self, name) <= 0:
                problems.append(f"--{name} must be positive, got {getattr(self, name)}")
        return problems


def validate_flags(config, options, do_train, do_predict):
    """The original's start-up checks, in its order (`validate_flags_or_throw`), then the
    ones it lacks (a doc_stride that never advances or skips past the window)."""
    try:
        validate_case_matches_checkpoint(options.do_lower_case,
                                                      options.init_checkpoint)
    except ValueError as e:
        raise SquadError(str(e)) from None
    if not do_train and not do_predict:
        raise SquadError("At least one of `do_train` or `do_predict` must be True.")
    if do_train and not options.train_file:
        raise SquadError("If `do_train` is True, then `train_file` must be specified.")
    if do_predict and not options.predict_file:
        raise SquadError("If `do_predict` is True, then `predict_file` must be specified.")
    if options.max_seq_length > config.max_sequence_length:
        raise SquadError(max_seq_length_problem(options.max_seq_length, config))
    # [CLS] query [SEP] window [SEP]: 3 special tokens for BERT (the family's layout).
    special = families.of(config).tokenizer.special_tokens
    reserved = options.max_seq_length - special.pair_budget(options.max_seq_length)
    if options.max_seq_length <= options.max_query_length + reserved:
        raise SquadError(
            f"The max_seq_length ({options.max_seq_length}) must be greater than "
            f"max_query_length ({options.max_query_length}) + {reserved}")
    window = options.max_seq_length - options.max_query_length - reserved
    if options.doc_stride <= 0:
        raise SquadError(f"--doc_stride={options.doc_stride} must be positive (the windows "
                         "over a long context would never advance)")
    if options.doc_stride > window:
        raise SquadError(
            f"--doc_stride={options.doc_stride} is larger than the document window of "
            f"--max_seq_length - --max_query_length - {reserved} = {window} tokens: choose a "
            "stride at most the window, so that consecutive windows overlap or touch")
    options.validate(config)


def _read_examples(path, is_training, options, flag):
    try:
        return squad_data.read_squad_examples(path, is_training,
                                              options.version_2_with_negative)
    except (squad_data.SquadDataError, OSError) as e:
        raise SquadError(f"--{flag}: {e}") from None


def _has_answers(dataset_json):
    return any(qa.get("answers") or qa.get("is_impossible")
               for entry in dataset_json.get("data", [])
               for paragraph in entry.get("paragraphs", [])
               for qa in paragraph.get("qas", []))


def run(config, options, strategy=None, do_train=False, do_predict=False, step_callback=None):
    """What run_squad.py does: its checks, then train, then predict (predictions.json,
    nbest_predictions.json, null_odds.json with 2.0) and, when the predict file has answers,
    the official evaluation in eval_results.json. Returns a dict: `checkpoint`,
    `predictions` (path or None), `eval_results` (dict or None)."""
    validate_flags(config, options, do_train, do_predict)
    output_dir = options.output_dir
    tf.io.gfile.makedirs(output_dir)
    # The context comes as words, each tokenized alone (the question with the same tokenizer).
    tokenizer = families.make_tokenizer(config, options.vocab_file, options.do_lower_case,
                                        options.tokenizer_files, words=True)
    task = SquadTask(options.max_seq_length, options.version_2_with_negative,
                     options.predict_dynamic_padding)
    convert = functools.partial(
        squad_data.convert_examples_to_features, tokenizer=tokenizer,
        max_seq_length=options.max_seq_length, doc_stride=options.doc_stride,
        max_query_length=options.max_query_length)

    train_examples = None
    if do_train:
        train_examples = _read_examples(options.train_file, True, options, "train_file")
        # Steps count examples, not windows, as the original.
        options = options.with_training_steps(
            len(train_examples), f"--train_file={options.train_file}", error=SquadError)
        # The original shuffles the examples once, with a fixed seed, before converting.
        random.Random(12345).shuffle(train_examples)
    trainer = Trainer(config, task, options, strategy)
    out = {"checkpoint": None, "predictions": None, "eval_results": None}
    if do_train:
        train_file = os.path.join(output_dir, "train.tf_record")
        with squad_data.FeatureWriter(train_file, is_training=True) as writer:
            convert(train_examples, is_training=True, output_fn=writer.process_feature)
        logging.info("***** Running training *****")
        logging.info("  Num orig examples = %d", len(train_examples))
        logging.info("  Num split examples = %d", writer.num_features)
        logging.info("  Batch size = %d", options.train_batch_size)
        logging.info("  Num steps = %d", options.num_train_steps)
        del train_examples
        out["checkpoint"] = trainer.train([train_file], step_callback=step_callback)
    else:
        out["checkpoint"] = trainer.restore_weights()
    if do_predict:
        out.update(_predict(trainer, options, convert, tokenizer.special_tokens))
    return out


def _predict(trainer, options, convert, special_tokens):
    output_dir = options.output_dir
    examples = _read_examples(options.predict_file, False, options, "predict_file")
    features = []
    eval_file = os.path.join(output_dir, "eval.tf_record")
    with squad_data.FeatureWriter(eval_file, is_training=False) as writer:
        def keep(feature):
            features.append(feature)
            writer.process_feature(feature)
        convert(examples, is_training=False, output_fn=keep)
    logging.info("***** Running predictions *****")
    logging.info("  Num orig examples = %d", len(examples))
    logging.info("  Num split examples = %d", len(features))
    logging.info("  Batch size = %d", options.predict_batch_size)
    results = []
    for batch in trainer.predict([eval_file], options.predict_batch_size):
        for i, unique_id in enumerate(batch["unique_ids"]):
            if unique_id:  # 0: padding of the last batch
                results.append(squad_predictions.RawResult(
                    int(unique_id), batch["start_logits"][i], batch["end_logits"][i]))
        if len(results) // 1000 != (len(results) - len(batch["unique_ids"])) // 1000:
            logging.info("Processing example: %d", len(results))
    paths = {name: os.path.join(output_dir, f"{name}.json")
             for name in ("predictions", "nbest_predictions", "null_odds")}
    predictions, _, null_odds = squad_predictions.write_predictions(
        examples, features, results, options.n_best_size, options.max_answer_length,
        options.do_lower_case, paths["predictions"], paths["nbest_predictions"],
        paths["null_odds"], version_2_with_negative=options.version_2_with_negative,
        null_score_diff_threshold=options.null_score_diff_threshold,
        verbose_logging=options.verbose_logging, special_tokens=special_tokens)
    out = {"predictions": paths["predictions"], "eval_results": None}
    with tf.io.gfile.GFile(options.predict_file) as f:
        dataset = json.load(f)
    if _has_answers(dataset):
        scores = squad_eval.evaluate(
            dataset, predictions, na_probs=null_odds if options.version_2_with_negative else None)
        files.write_atomic(os.path.join(output_dir, "eval_results.json"),
                           json.dumps(scores, indent=2) + "\n")
        logging.info("***** Eval results (official SQuAD evaluation) *****")
        for key, value in scores.items():
            logging.info("  %s = %s", key, value)
        out["eval_results"] = scores
    return out
