"""Token classification (NER, chunking) on CoNLL files as a task of the trainer; not in the
original, which has no tagging script (issue 12).

`TaggingTask` gives the trainer the encoder + `TokenClassifierHead`
(`bert_tf/tagging/output_weights` [num_labels, H], `bert_tf/tagging/output_bias`
[num_labels]: a scope no original checkpoint holds), the window records of
`bert_tf.data.conll`, the loss (cross-entropy at the first piece of every word, weighted by
`label_weights`, averaged over the predicted words of the GLOBAL batch) and the eval metrics
of `bert_tf.evaluation.tagging_metrics` computed on one tag per word; `run` is what run_tagging.py does.

Data (`--data_dir`): `train.txt`, `dev.txt` and `test.txt`, CoNLL files (see
`bert_tf.data.conll`). The label list is "O" then the other tags of train.txt, sorted; a run
without train.txt takes the list saved in output_dir's task.json by an earlier training run.
test.txt is read for its words only (its lines are copied to the predictions, so a test file
with gold tags gives a file conlleval reads).
"""

import dataclasses
import os
import types

import numpy as np
import tensorflow as tf
from absl import logging

from bert_tf import families
from bert_tf.data import conll
from bert_tf.evaluation import tagging_metrics
from bert_tf.layers.heads import TokenClassifierHead
from bert_tf.models import BertTaskModel
from bert_tf.tasks.finetuning import FineTuningOptions
from bert_tf.text import validate_case_matches_checkpoint
from bert_tf.training.input_pipeline import PERMUTE_EACH_EPOCH
from bert_tf.training.task import Task
from bert_tf.training.task_file import read_task_file
from bert_tf.training.trainer import Trainer, TrainingError

SPLIT_FILES = {"train": "train.txt", "dev": "dev.txt", "test": "test.txt"}
RECORD_FILES = {"train": "train.tf_record", "dev": "eval.tf_record", "test": "predict.tf_record"}
PREDICTION_FILES = {"eval_predictions": "eval_predictions.txt",
                    "test_predictions": "test_predictions.txt"}


class TaggingError(TrainingError):
    """Flags or files that do not make a valid run_tagging.py run; the message says which."""


RECORD_KEYS = ("predictions", "label_weights", "word_ids", "sentence_index")


def real_records(batches, keys=RECORD_KEYS):
    """The records of eval/predict `batches` without the padding of the last one: dict
    key -> array [N, ...] in record order."""
    batches = list(batches)
    real = np.concatenate([b["is_real_example"] for b in batches]) > 0
    return {k: np.concatenate([b[k] for b in batches])[real] for k in keys}


class TaggingTask(Task):
    """A tag per word from the sequence output at the word's first piece.

    Args:
      label_list: the tags (index = label id), "O" first.
      max_seq_length: the records' sequence length.
      dropout_rate: dropout on the sequence output in training.

    Eval needs the sentences the eval records were made from: call
    `set_eval_sentences(sentences, windows)` before `Trainer.evaluate`; afterwards
    `eval_word_tags` holds the predicted tags (one list per sentence).
    """

    name = "tagging"
    step_keys = ("total_loss",)
    log_names = ("loss",)
    eval_per_example_keys = ("predictions", "label_ids", "label_weights", "word_ids",
                             "sentence_index", "window_index", "is_real_example",
                             "weighted_loss", "weight")
    sequence_keys = ("input_ids", "input_mask", "segment_ids", "label_ids", "label_weights",
                     "word_ids")
    # Past a cut batch's length: what the records hold at padding (word_ids -1), and tag 0;
    # none of these positions has a label weight.
    sequence_outputs = {"predictions": 0, "label_ids": 0, "label_weights": 0.0, "word_ids": -1}
    eval_by_length = True
    # The tagging head reads the sequence output only: the pooler gets no gradient, hence (as
    # for SQuAD in the original) no update and no Adam slots.
    unused_variable_prefixes = ("bert/pooler/",)

    def __init__(self, label_list, max_seq_length, dropout_rate=0.1):
        self.label_list = list(label_list)
        self.num_labels = len(self.label_list)
        self.max_seq_length = max_seq_length
        self.dropout_rate = dropout_rate
        self.eval_sentences = None
        self.eval_windows = None
        self.eval_word_tags = None

    def describe(self):
        return {"task": self.name, "labels": self.label_list, "num_labels": self.num_labels}

    def build_model(self, config):
        head = TokenClassifierHead(self.num_labels, config.hidden_size,
                                   config.initializer_range, dropout_rate=self.dropout_rate,
                                   name="tagging")
        return BertTaskModel(config, head, name="bert_tagging")

    def feature_spec(self, is_training):
        return conll.feature_spec(self.max_seq_length)

    def set_eval_sentences(self, sentences, windows):
        """The Sentence list (with tags) and the Window list of the next evaluation's
        records, in record order."""
        self.eval_sentences = list(sentences)
        self.eval_windows = [(w.sentence_index, w.window_index) for w in windows]
        self.eval_word_tags = None

    def local_normalizers(self, features):
        # The loss averages over predicted words, not sequences.
        return tf.reshape(tf.reduce_sum(features["label_weights"]), [1])

    @staticmethod
    def _weighted_losses(outputs, features):
        """float32 [B, S]: label_weights * -log p(label) at every position."""
        labels = tf.cast(features["label_ids"], tf.int32)
        losses = -tf.gather(outputs["log_probs"], labels, batch_dims=2)
        return tf.cast(features["label_weights"], tf.float32) * losses

    def compute_loss(self, outputs, features, normalizers):
        # A global batch without a predicted word (only pieceless words) has loss 0, not NaN.
        total = tf.math.divide_no_nan(
            tf.reduce_sum(self._weighted_losses(outputs, features)), normalizers[0])
        return {"total_loss": total}

    @staticmethod
    def _predictions(outputs):
        return tf.argmax(outputs["logits"], axis=-1, output_type=tf.int32)

    @staticmethod
    def _is_real(features):
        # Every record has [CLS] at position 0; the all-zero padding of the last batch has not.
        return features["input_mask"][:, 0]

    def eval_outputs(self, outputs, features, losses, normalizers):
        values = {name: features[name] for name in (
            "label_ids", "label_weights", "word_ids", "sentence_index", "window_index")}
        values.update(
            predictions=self._predictions(outputs),
            is_real_example=self._is_real(features),
            # Per record, so that the batch losses can be formed for any batching.
            weighted_loss=tf.reduce_sum(self._weighted_losses(outputs, features), axis=1),
            weight=tf.reduce_sum(tf.cast(features["label_weights"], tf.float32), axis=1),
        )
        return values

    def word_tags(self, sentences, records):
        """One predicted tag per word of `sentences` from records (dict of arrays
        `predictions`, `label_weights`, `word_ids`, `sentence_index`)."""
        windows = [types.SimpleNamespace(sentence_index=int(s[0]), label_weights=w, word_ids=i)
                   for s, w, i in zip(records["sentence_index"], records["label_weights"],
                                      records["word_ids"])]
        return conll.word_predictions(sentences, windows, records["predictions"],
                                      self.label_list)

    def finalize_eval(self, batches, global_step):
        """eval_precision, eval_recall, eval_f1 (entities: exact span and type, conlleval),
        eval_accuracy (tokens), the same per entity type (eval_f1_PER...), eval_loss (mean
        cross-entropy over the predicted words), loss (mean over batches of the batch loss)
        and global_step."""
        if self.eval_sentences is None:
            raise AssertionError("set_eval_sentences() must be called before evaluating")
        records = real_records(batches, RECORD_KEYS + ("window_index",))
        evaluated = [(int(s[0]), int(w[0])) for s, w in zip(records["sentence_index"],
                                                              records["window_index"])]
        if evaluated != self.eval_windows:
            raise AssertionError(f"{len(evaluated)} eval records evaluated do not match the "
                                 f"{len(self.eval_windows)} written, in order")
        self.eval_word_tags = self.word_tags(self.eval_sentences, records)
        scores = tagging_metrics.entity_scores([s.tags for s in self.eval_sentences],
                                               self.eval_word_tags)
        weight = sum(float(np.sum(b["weight"], dtype=np.float64)) for b in batches)
        # A batch's loss (as in training): its weighted loss over its weight, 0 without one.
        batch_losses = []
        for b in batches:
            batch_weight = np.sum(b["weight"], dtype=np.float64)
            batch_losses.append(np.sum(b["weighted_loss"], dtype=np.float64) / batch_weight
                                if batch_weight else 0.0)
        results = {
            "eval_accuracy": np.float32(scores["accuracy"]),
            "eval_precision": np.float32(scores["precision"]),
            "eval_recall": np.float32(scores["recall"]),
            "eval_f1": np.float32(scores["f1"]),
            "eval_loss": np.float32(sum(float(np.sum(b["weighted_loss"], dtype=np.float64))
                                        for b in batches) / weight if weight else np.nan),
            "loss": np.float32(np.mean(batch_losses)),
            "global_step": int(global_step),
        }
        for kind, per_type in scores["per_type"].items():
            for name in ("precision", "recall", "f1"):
                results[f"eval_{name}_{kind}"] = np.float32(per_type[name])
        return results

    def predict_outputs(self, outputs, features):
        return {
            "predictions": self._predictions(outputs),
            "label_weights": features["label_weights"],
            "word_ids": features["word_ids"],
            "sentence_index": features["sentence_index"],
            "is_real_example": self._is_real(features),
        }


@dataclasses.dataclass(kw_only=True)
class TaggingOptions(FineTuningOptions):
    """run_tagging.py's flags (run_classifier.py's names and defaults where it has them, plus
    SQuAD's doc_stride) and the trainer's. num_train_steps and num_warmup_steps are derived
    from the number of training windows (records), not sentences."""

    data_dir: str
    doc_stride: int = 64
    tagging_dropout: float = 0.1
    # A fresh permutation of the training windows each epoch (CoNLL files are in document
    # order, which the classifier's buffer of 100 barely mixes).
    shuffle_buffer_size: int = PERMUTE_EACH_EPOCH

    def problems(self, config):
        problems = super().problems(config)
        if self.max_seq_length < 3:
            problems.append(f"--max_seq_length must be at least 3 ([CLS], one word piece, "
                            f"[SEP]), got {self.max_seq_length}")
        if self.doc_stride <= 0:
            problems.append(f"--doc_stride must be positive, got {self.doc_stride}")
        if not 0 <= self.tagging_dropout < 1:
            problems.append(f"--tagging_dropout must be in [0, 1), got {self.tagging_dropout}")
        return problems


def _split_path(options, split):
    return os.path.join(options.data_dir, SPLIT_FILES[split])


def _saved_labels(output_dir):
    """The label list of output_dir's task.json when a tagging run wrote it, else None."""
    saved = read_task_file(output_dir) or {}
    if saved.get("task") != TaggingTask.name or not isinstance(saved.get("labels"), list):
        return None
    return saved["labels"]


def _label_list(options, train_sentences):
    if train_sentences is not None:
        return conll.label_list(train_sentences)
    path = _split_path(options, "train")
    if tf.io.gfile.exists(path):
        return conll.label_list(conll.read_conll(path))
    labels = _saved_labels(options.output_dir)
    if labels is None:
        raise TaggingError(
            f"{path}: not found, and --output_dir={options.output_dir} has no task.json of a "
            "tagging run: the label list comes from the training file")
    return labels


def run(config, options, strategy=None, do_train=False, do_eval=False, do_predict=False,
        step_callback=None):
    """What run_tagging.py does: checks, then train on train.txt, eval on dev.txt
    (eval_results.txt, eval_predictions.txt) and predict on test.txt (test_predictions.txt).
    Returns a dict: `checkpoint` (last prefix or None), `eval_results` (dict or None),
    `eval_predictions` and `test_predictions` (paths or None)."""
    if not (do_train or do_eval or do_predict):
        raise TaggingError("At least one of `do_train`, `do_eval` or `do_predict' must be True.")
    try:
        validate_case_matches_checkpoint(options.do_lower_case,
                                                      options.init_checkpoint)
    except ValueError as e:
        raise TaggingError(str(e)) from None
    options.validate(config)
    output_dir = options.output_dir
    tf.io.gfile.makedirs(output_dir)
    tokenizer = families.make_tokenizer(config, options.vocab_file, options.do_lower_case,
                                        options.tokenizer_files, words=True)

    def windows_of(sentences, labels, split):
        return conll.convert_sentences(sentences, labels, tokenizer, options.max_seq_length,
                                       options.doc_stride, path=_split_path(options, split))

    # Every input file is read and converted before the model is built, so that a bad dev or
    # test file is reported at once, not after training.
    train_sentences = None
    if do_train:
        train_sentences = conll.read_conll(_split_path(options, "train"))
    label_list = _label_list(options, train_sentences)
    data = {}
    if do_train:
        data["train"] = (train_sentences, windows_of(train_sentences, label_list, "train"))
    if do_eval:
        sentences = conll.read_conll(_split_path(options, "dev"))
        data["dev"] = (sentences, windows_of(sentences, label_list, "dev"))
    if do_predict:
        sentences = conll.read_conll(_split_path(options, "test"), has_tags=False)
        data["test"] = (sentences, windows_of(sentences, None, "test"))

    if do_train:
        train_windows = data["train"][1]
        # Steps count windows: a long sentence is several records of a training epoch.
        options = options.with_training_steps(
            len(train_windows), _split_path(options, "train"), what="training windows",
            error=TaggingError)

    task = TaggingTask(label_list, options.max_seq_length, dropout_rate=options.tagging_dropout)
    trainer = Trainer(config, task, options, strategy)
    out = {"checkpoint": None, "eval_results": None, "eval_predictions": None,
           "test_predictions": None}

    def records(split, title, batch_size):
        """Writes the split's records; returns (record file, sentences, windows)."""
        sentences, windows = data[split]
        path = os.path.join(output_dir, RECORD_FILES[split])
        conll.write_windows(path, windows)
        logging.info("***** Running %s *****", title)
        logging.info("  Num sentences = %d, windows = %d", len(sentences), len(windows))
        logging.info("  Batch size = %d", batch_size)
        return path, sentences, windows

    def write_predictions(key, sentences, tags):
        out[key] = os.path.join(output_dir, PREDICTION_FILES[key])
        conll.write_conll_predictions(out[key], sentences, tags)
        logging.info("Wrote %s", out[key])

    if do_train:
        train_file, _, _ = records("train", "training", options.train_batch_size)
        logging.info("  Num steps = %d", options.num_train_steps)
        out["checkpoint"] = trainer.train([train_file], step_callback=step_callback)
    else:
        out["checkpoint"] = trainer.restore_weights()

    if do_eval:
        eval_file, sentences, windows = records("dev", "evaluation", options.eval_batch_size)
        task.set_eval_sentences(sentences, windows)
        # eval_results.txt, sorted keys (by the chief).
        out["eval_results"] = trainer.evaluate([eval_file], pad_final_batch=True)
        write_predictions("eval_predictions", sentences, task.eval_word_tags)

    if do_predict:
        predict_file, sentences, windows = records("test", "prediction",
                                                   options.predict_batch_size)
        predicted = real_records(trainer.predict([predict_file], options.predict_batch_size))
        if len(predicted["predictions"]) != len(windows):
            raise AssertionError(f"{len(predicted['predictions'])} predictions for "
                                 f"{len(windows)} windows")
        write_predictions("test_predictions", sentences, task.word_tags(sentences, predicted))
    return out
