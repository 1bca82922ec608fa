"""SQuAD 2.0 as google-research/albert's run_squad_v2.py does it, as a task of the trainer.

`SquadV2Model`: the encoder of the config's family with `bert_tf.albert.heads.SquadV2Head` (the
original's XLNet-style start / end / answer-class head). `SquadV2Task` gives the trainer that
model, the records of the original's FeatureWriter (`bert_tf.albert.squad_data`, with `p_mask`,
and `is_impossible` for training) and its loss (`squad_utils.v2_model_fn_builder`):

    total = (start + end) / 2 + 0.5 * mean(sigmoid cross-entropy(cls_logits, is_impossible))

start and end being the mean over the batch of -log_softmax(masked logits)[gold position], the
end logits conditioned on the gold start.

`run` is what `python -m bert_tf.albert.run_squad_v2` does (see that module for the flags and
where we differ from the original), training as the original's Estimator
(`bert_tf.albert.finetuning.AlbertFineTuningTrainer`: model.ckpt-0 when training starts, each
checkpoint with its `.meta`, all kept for the prediction loop, which scores model.ckpt-0 too).
"""

import dataclasses
import json
import os
import random

import keras
import tensorflow as tf
from absl import logging

from bert_tf import families
from bert_tf.albert import squad_data
from bert_tf.albert.estimator import BEST_NAME
from bert_tf.albert.finetuning import (AlbertFineTuningTrainer, load_scored_checkpoint,
                                       score_checkpoints)
from bert_tf.albert.heads import SquadV2Head
from bert_tf.albert.squad_task import SquadFileOptions, check_files_and_length
from bert_tf.albert.tokenization import AlbertTokenizer
from bert_tf.evaluation import squad_beam_predictions, squad_eval
from bert_tf.layers.inputs import ENCODER_INPUTS, check_inputs
from bert_tf.training.task import Task
from bert_tf.training.trainer import TrainingError

# The records' features with a sequence axis.
SEQUENCE_FEATURES = ("input_ids", "input_mask", "segment_ids", "p_mask")
# What a prediction gives per window (the original's PREDICT spec).
PREDICTION_KEYS = ("unique_ids", "start_top_log_probs", "start_top_index", "end_top_log_probs",
                   "end_top_index", "cls_logits")


class SquadV2Model(keras.Model):
    """The encoder (`self.bert`, of the config's family) and `SquadV2Head` (`self.head`).

    Call with a dict of int tensors `input_ids`, `input_mask`, `segment_ids`, `p_mask` [B, S]
    and, when `training`, `start_positions` [B] (the end logits are then conditioned on them,
    as the original's is_training graph). Returns the encoder's outputs updated with the
    head's (see `SquadV2Head.call`).

    Args:
      config: the model config (an `AlbertConfig`; any family's works).
      start_n_top, end_n_top: the inference beam (the original's flags, default 5 and 5).
      dropout_prob: the dropout of the answer-class layer in training (the original's
        `--dropout_prob`, default 0.1; the encoder's are the config's).
    """

    def __init__(self, config, start_n_top=5, end_n_top=5, dropout_prob=0.1, **kwargs):
        if isinstance(config, dict):
            config = families.config_from_dict(config)
        kwargs.setdefault("name", "albert_squad_v2")
        super().__init__(**kwargs)
        self.config = config
        self.bert = families.build_encoder(config, name="bert")
        self.head = SquadV2Head(
            config.hidden_size, config.initializer_range, start_n_top=start_n_top,
            end_n_top=end_n_top, dropout_rate=dropout_prob,
            layer_norm_eps=getattr(config, "layer_norm_eps", 1e-12), name="squad_v2")
        self.build()

    def build(self, input_shape=None):
        self.head.build()
        self.built = True

    def call(self, inputs, training=False):
        names = ENCODER_INPUTS + ("p_mask",) + (("start_positions",) if training else ())
        check_inputs(inputs, names, type(self).__name__)
        outputs = dict(self.bert(inputs, training=training))
        outputs.update(self.head(
            outputs["sequence_output"], inputs["p_mask"],
            inputs["start_positions"] if training else None, training=training))
        return outputs

    def checkpoint_variables(self):
        """{original name: variable}: the encoder's, then the head's (top level)."""
        return {**self.bert.checkpoint_variables(), **self.head.checkpoint_variables()}

    def required_checkpoint_scopes(self):
        """The encoder's: a pretrained checkpoint has no head."""
        return self.bert.required_checkpoint_scopes()

    def get_config(self):
        return {"config": self.config.to_dict(), "start_n_top": self.head.start_n_top,
                "end_n_top": self.head.end_n_top, "dropout_prob": self.head.dropout_rate,
                "name": self.name}

    @classmethod
    def from_config(cls, config):
        return cls(**config)


def _position_loss(log_probs, positions):
    """float32 [B]: -log_probs[b, positions[b]]."""
    positions = tf.cast(tf.reshape(positions, [-1, 1]), tf.int32)
    return -tf.gather(log_probs, positions, batch_dims=1)[:, 0]


class SquadV2Task(Task):
    """The original run_squad_v2's model, records and loss (see the module docstring).

    Args:
      max_seq_length: the records' sequence length.
      start_n_top, end_n_top, dropout_prob: as `SquadV2Model`.
    """

    name = "albert_squad_v2"
    step_keys = ("total_loss", "start_loss", "end_loss", "cls_loss")
    log_names = ("loss", "start", "end", "cls")
    # The head reads the sequence output only: the pooler gets no gradient, hence (as in the
    # original) no update and no Adam slots.
    unused_variable_prefixes = ("bert/pooler/",)
    sequence_keys = SEQUENCE_FEATURES
    position_keys = ("start_positions", "end_positions")
    # Positions past a window's input_mask have p_mask 1: their logits are -1e30, their
    # softmax weight exactly 0, in the loss as in the answer class's start-weighted feature;
    # a cut batch computes the same loss and outputs.
    cut_training_batches = True

    def __init__(self, max_seq_length, start_n_top=5, end_n_top=5, dropout_prob=0.1):
        self.max_seq_length = max_seq_length
        self.start_n_top = start_n_top
        self.end_n_top = end_n_top
        self.dropout_prob = dropout_prob

    def build_model(self, config):
        return SquadV2Model(config, self.start_n_top, self.end_n_top, self.dropout_prob)

    def feature_spec(self, is_training):
        """The original's v2 records (`squad_data.record_feature_spec`): unique_ids,
        input_ids, input_mask, segment_ids, p_mask and, for training, start_positions,
        end_positions, is_impossible."""
        return squad_data.record_feature_spec(self.max_seq_length, is_training, is_v2=True)

    def compute_loss(self, outputs, features, normalizers):
        batch = normalizers[0]
        start = tf.reduce_sum(_position_loss(outputs["start_log_probs"],
                                             features["start_positions"])) / batch
        end = tf.reduce_sum(_position_loss(outputs["end_log_probs"],
                                           features["end_positions"])) / batch
        labels = tf.cast(tf.reshape(features["is_impossible"], [-1]), tf.float32)
        cls = tf.reduce_sum(tf.nn.sigmoid_cross_entropy_with_logits(
            labels=labels, logits=outputs["cls_logits"])) / batch
        # The original halves the answer-class loss "so that the scale is comparable to
        # start_loss and end_loss".
        total = (start + end) * 0.5 + cls * 0.5
        return {"total_loss": total, "start_loss": start, "end_loss": end, "cls_loss": cls}

    def predict_outputs(self, outputs, features):
        values = {key: outputs[key] for key in PREDICTION_KEYS[1:]}
        values["unique_ids"] = features["unique_ids"]
        return values


# -- run_squad_v2 ------------------------------------------------------------------------

class SquadV2Error(TrainingError):
    """Flags or files that do not make a valid run_squad_v2 run; the message says which."""



@dataclasses.dataclass(kw_only=True)
class SquadV2Options(SquadFileOptions):
    """run_squad_v2.py's flags (the original's names and defaults) and the trainer's."""

    spm_model_file: str
    start_n_top: int = 5
    end_n_top: int = 5
    dropout_prob: float = 0.1

    def problems(self, config):
        problems = super().problems(config)
        for name in ("start_n_top", "end_n_top"):
            value = getattr(self, name)
            if value <= 0:
                problems.append(f"--{name} must be positive, got {value}")
            elif value > self.max_seq_length:
                problems.append(f"--{name}={value} is more than the --max_seq_length="
                                f"{self.max_seq_length} positions a window has")
            elif self.dynamic_padding and value > self.padding_width:
                problems.append(
                    f"--{name}={value} is more than the --padding_width={self.padding_width} "
                    "positions of the shortest cut batch: raise --padding_width or use "
                    "--nodynamic_padding")
        if not 0 <= self.dropout_prob < 1:
            problems.append(f"--dropout_prob must be in [0, 1), got {self.dropout_prob}")
        return problems


def _predict_dataset(path):
    """The parsed predict file, whose answers choose the null threshold and the best
    checkpoint: every question must have an `answers` list (empty: unanswerable)."""
    try:
        with tf.io.gfile.GFile(path) as f:
            dataset = json.load(f)
    except (OSError, tf.errors.OpError, UnicodeDecodeError, json.JSONDecodeError) as e:
        raise SquadV2Error(f"--predict_file={path}: cannot read SQuAD JSON "
                           f"({str(e).splitlines()[0]})") from None
    questions = [qa for entry in dataset.get("data", []) if isinstance(entry, dict)
                 for paragraph in entry.get("paragraphs", []) if isinstance(paragraph, dict)
                 for qa in paragraph.get("qas", []) if isinstance(qa, dict)]
    without = [qa.get("id") for qa in questions if not isinstance(qa.get("answers"), list)]
    if without:
        raise SquadV2Error(
            f"--predict_file={path}: question {without[0]!r} has no 'answers' list: "
            "run_squad_v2 chooses the null threshold and the best checkpoint on the predict "
            "file's answers (an empty list for an unanswerable question), as the original")
    return dataset


def validate_flags(config, options, do_train, do_predict):
    """The original's `validate_flags_or_throw`, in its order, then what it lacks."""
    if not do_train and not do_predict:
        raise SquadV2Error("At least one of `do_train` or `do_predict` must be True.")
    check_files_and_length(config, options, do_train, do_predict, SquadV2Error)
    try:
        squad_data.check_feature_settings(options.max_seq_length, options.doc_stride,
                                          options.max_query_length)
    except ValueError as e:
        raise SquadV2Error(str(e)) from None
    options.validate(config)


def _read_examples(path, is_training, flag):
    try:
        return squad_data.read_squad_examples(path, is_training)
    except squad_data.SquadDataError as e:
        raise SquadV2Error(f"--{flag}: {e}") from None


def run(config, options, strategy=None, do_train=False, do_predict=False, step_callback=None):
    """What run_squad_v2.py does: its checks; training on --train_file's records; then each
    checkpoint of output_dir scored on --predict_file (predictions.json, nbest_predictions.json,
    null_odds.json, eval_results.txt), the best by F1 copied to model.ckpt-best, and the final
    files written from it. Returns a dict: `checkpoint` (the last one trained), `predictions`
    (path or None), `eval_results` (the final scores or None)."""
    validate_flags(config, options, do_train, do_predict)
    tf.io.gfile.makedirs(options.output_dir)
    tokenizer = AlbertTokenizer(options.vocab_file, options.do_lower_case,
                                spm_model_file=options.spm_model_file)
    dataset = _predict_dataset(options.predict_file) if do_predict else None
    num_train_steps = None
    train_examples = None
    if options.train_file:
        train_examples = _read_examples(options.train_file, True, "train_file")
        num_train_steps = int(len(train_examples) / options.train_batch_size
                              * options.num_train_epochs)
        if do_train:
            options = options.with_training_steps(
                len(train_examples), f"--train_file={options.train_file}", error=SquadV2Error)
            # The original shuffles the examples once, with a fixed seed, before converting.
            random.Random(12345).shuffle(train_examples)
    task = SquadV2Task(options.max_seq_length, options.start_n_top, options.end_n_top,
                       options.dropout_prob)
    trainer = AlbertFineTuningTrainer(config, task, options, strategy)
    out = {"checkpoint": None, "predictions": None, "eval_results": None}
    if do_train:
        out["checkpoint"] = _train(trainer, options, train_examples, tokenizer, step_callback)
    if do_predict:
        out.update(_predict(trainer, options, tokenizer, dataset, num_train_steps))
    return out


def _convert(options, tokenizer, examples, is_training, output_fn):
    try:
        return squad_data.convert_examples_to_features(
            examples, tokenizer, options.max_seq_length, options.doc_stride,
            options.max_query_length, is_training, output_fn, options.do_lower_case)
    except ValueError as e:
        raise SquadV2Error(str(e)) from None


def _train(trainer, options, examples, tokenizer, step_callback):
    path = options.train_feature_file
    if not path:
        # The original reads --train_feature_file unchecked (and fails without one).
        path = os.path.join(options.output_dir, "train.tf_record")
        logging.info("No --train_feature_file: the training records go to %s", path)
    if tf.io.gfile.exists(path):
        logging.info("Reusing the training records of %s (--train_feature_file exists; delete "
                     "it to rebuild it from --train_file)", path)
    else:
        with squad_data.FeatureWriter(path, is_training=True) as writer:
            summary = _convert(options, tokenizer, examples, True, writer.process_feature)
        logging.info("  Num split examples = %d", summary.num_features)
    logging.info("***** Running training *****")
    logging.info("  Num orig examples = %d", len(examples))
    logging.info("  Batch size = %d", options.train_batch_size)
    logging.info("  Num steps = %d", options.num_train_steps)
    return trainer.train([path], step_callback=step_callback)


def _predict_features(options, examples, tokenizer):
    """The predict windows: read from --predict_feature_left_file when it and
    --predict_feature_file exist (the original's cache), else converted from the examples and
    written to both. The left file is the original's pickle of its InputFeatures
    (`squad_data.save_features` / `load_features`, as run_squad_v1's): either run's file,
    ours or the original's, is read by the other."""
    records, left = options.predict_feature_file, options.predict_feature_left_file
    if tf.io.gfile.exists(records) and tf.io.gfile.exists(left):
        logging.info("Loading eval features from %s", left)
        try:
            return squad_data.load_features(left)
        except squad_data.SquadDataError as e:
            message = (f"--predict_feature_left_file={e}; delete it and --predict_feature_file "
                       "to rebuild both from --predict_file")
            raise SquadV2Error(message) from None
    features = []

    def keep(feature):
        features.append(feature)
        writer.process_feature(feature)

    with squad_data.FeatureWriter(records, is_training=False) as writer:
        _convert(options, tokenizer, examples, False, keep)
    squad_data.save_features(left, features)
    return features


class _Predictor:
    """Scores checkpoints on the predict file, as the original's `get_result`."""

    def __init__(self, trainer, options, examples, features, dataset, sep_token):
        self.trainer, self.options = trainer, options
        self.examples, self.features, self.dataset = examples, features, dataset
        self.sep_token = sep_token
        self.paths = {name: os.path.join(options.output_dir, f"{name}.json")
                      for name in ("predictions", "nbest_predictions", "null_odds")}
        # The checkpoint whose predictions are on disk.
        self.written = None

    def __call__(self, prefix, flag=None):
        """(scores, global_step) of checkpoint `prefix`; writes the prediction files."""
        global_step = load_scored_checkpoint(self.trainer.model, prefix, "SQuAD 2.0", "predict",
                                             SquadV2Error, flag)
        logging.info("***** Running predictions ***** %s", prefix)
        logging.info("  Num orig examples = %d", len(self.examples))
        logging.info("  Num split examples = %d", len(self.features))
        logging.info("  Batch size = %d", self.options.predict_batch_size)
        results = []
        for batch in self.trainer.predict([self.options.predict_feature_file],
                                          self.options.predict_batch_size):
            for i, unique_id in enumerate(batch["unique_ids"]):
                if unique_id:  # 0: padding of the last batch
                    results.append(squad_beam_predictions.RawResultV2(
                        int(unique_id), *(batch[key][i] for key in PREDICTION_KEYS[1:])))
        expected = {f.unique_id for f in self.features}
        if {r.unique_id for r in results} != expected:
            raise SquadV2Error(
                f"--predict_feature_file={self.options.predict_feature_file} holds "
                f"{len(results)} windows, --predict_feature_left_file="
                f"{self.options.predict_feature_left_file} {len(expected)} other ones: delete "
                "both to rebuild them from --predict_file")
        result_dict, cls_dict = {}, {}
        squad_beam_predictions.accumulate(
            result_dict, cls_dict, self.examples, self.features, results,
            self.options.start_n_top, self.options.end_n_top, self.options.max_answer_length,
            self.sep_token)
        try:
            scores = squad_beam_predictions.evaluate(
                result_dict, cls_dict, self.dataset, self.examples, self.features,
                self.options.n_best_size, self.paths["predictions"],
                self.paths["nbest_predictions"], self.paths["null_odds"])
        except squad_eval.SquadEvalError as e:
            raise SquadV2Error(f"--predict_file={self.options.predict_file}: {e}") from None
        self.written = prefix
        return scores, global_step


def evaluate_checkpoints(output_dir, score, num_train_steps, init_checkpoint=None):
    """The original's prediction loop (`finetuning.score_checkpoints`) with `score(prefix)` ->
    (scores, step); the final scores are model.ckpt-best's. Unlike the original, it does not
    wait for checkpoints a training elsewhere has yet to write; without any checkpoint it
    predicts with `init_checkpoint` (the original waits forever). Returns the final scores."""
    if num_train_steps is None:
        logging.info("No --train_file: scoring the checkpoints of %s (the original reads "
                     "--train_file for the last step it waits for)", output_dir)

    def init():
        if not init_checkpoint:
            raise SquadV2Error(
                f"--output_dir={output_dir} has no checkpoint (model.ckpt-N or {BEST_NAME}) "
                "to predict with and there is no --init_checkpoint: train first (--do_train)")
        logging.info("No checkpoint in %s: predicting with --init_checkpoint=%s", output_dir,
                     init_checkpoint)
        scores, global_step = score(init_checkpoint, flag="init_checkpoint")
        return scores, global_step, f"predicted with --init_checkpoint={init_checkpoint}\n"

    return score_checkpoints(output_dir, score, init, num_train_steps)


def _predict(trainer, options, tokenizer, dataset, num_train_steps):
    examples = _read_examples(options.predict_file, False, "predict_file")
    features = _predict_features(options, examples, tokenizer)
    predictor = _Predictor(trainer, options, examples, features, dataset,
                           tokenizer.special_tokens.sep)
    scores = evaluate_checkpoints(options.output_dir, predictor, num_train_steps,
                                  options.init_checkpoint)
    return {"predictions": predictor.paths["predictions"], "eval_results": scores}
