"""Export a fine-tuned BERT as a SavedModel that takes raw strings (`python -m bert_tf.export`).

    python -m bert_tf.export --task=classifier|squad|tagging|features \\
        --checkpoint=DIR_OR_PREFIX --bert_config_file=bert_config.json --vocab_file=vocab.txt \\
        --do_lower_case=true --output_dir=EXPORT_DIR [--max_seq_length=128] [--labels=a,b,c]

Tokenization runs in the graph (`bert_tf.serving_inputs.ServingInputs`, ids equal to
FullTokenizer's) in core TensorFlow ops only, so the SavedModel loads and answers in a process
that imports only `tensorflow`, and plain `saved_model_cli run` works (see docs/serving.md):
    saved_model_cli run --dir EXPORT_DIR --tag_set serve --signature_def serving_default \\
        --input_exprs 'text_a=["a text"];text_b=[""]'
 Signatures (every input
tf.string [N], a batch):

  classifier  serving_default(text_a, text_b) -> probabilities float32 [N, C], label string [N],
              label_id int32 [N]; an empty text_b is a single text. `single(text_a)` -> the
              same. `labels` (attribute) is the string [C] constant of label names.
  features    serving_default(text_a, text_b) -> input_ids, input_mask int32 [N, S] and layers
              float32 [N, S, len(--layers), H] (the chosen encoder layers, in --layers order).
  tagging     serving_default(text) -> tags string [N, W] (one tag per whitespace word, that of
              its first piece; "" for padding, for words cut by max_seq_length and for words
              without pieces), num_words int32 [N].
  squad       serving_default(question, context) -> answer string [N], score float32 [N] (start
              + end logit), start_logit, end_logit float32 [N]. See `SquadExport` for the
              windows and the one difference from run_squad.py's final text.

The export directory also holds `bert_tf_export.json` ({"task", "labels", "max_seq_length", ...})
for `bert_tf.predict`.
"""

import json
import os
import shutil

import tensorflow as tf
from absl import app, flags

from bert_tf import tokenization
from bert_tf.checkpoints import load_original_checkpoint, resolve_checkpoint_path
from bert_tf.config import BertConfig
from bert_tf.encoder import BertModel
from bert_tf.feature_extraction import parse_layer_indexes
from bert_tf.heads import ClassifierHead, SpanHead, TokenClassifierHead
from bert_tf.models import BertTaskModel
from bert_tf.serving_inputs import ServingInputs, _row_sums

TASKS = ("classifier", "features", "tagging", "squad")
EXPORT_INFO_FILE = "bert_tf_export.json"
# run_squad.py's word split: runs of characters other than space, tab, CR, LF and U+202F.
_SQUAD_SEPARATORS = "[ \\t\\r\\n\\x{202f}]+"
_STRING = tf.TensorSpec([None], tf.string)


class ExportError(ValueError):
    """A bad flag or file for the export (names the flag or file and what was expected)."""


def _first_argmax(values, axis=-1):
    """Index of the first largest value along `axis` (tf.argmax leaves ties unspecified)."""
    best = tf.reduce_max(values, axis=axis, keepdims=True)
    positions = tf.range(tf.shape(values, out_type=tf.int64)[axis])
    shape = [1] * values.shape.rank
    shape[axis] = -1
    big = tf.cast(tf.shape(values)[axis], tf.int64)
    return tf.reduce_min(tf.where(values == best, tf.reshape(positions, shape), big), axis=axis)


class ClassifierExport(tf.Module):
    """`serving_default` / `single`: texts -> class probabilities and label names."""

    def __init__(self, model, inputs, labels):
        super().__init__(name="classifier_export")
        self.model = model
        self.inputs = inputs
        self.labels = tf.constant(list(labels), tf.string)

    def _outputs(self, features):
        probabilities = self.model(features, training=False)["probabilities"]
        label_id = _first_argmax(probabilities)
        return {"probabilities": probabilities, "label": tf.gather(self.labels, label_id),
                "label_id": tf.cast(label_id, tf.int32)}

    @tf.function(input_signature=[_STRING, _STRING], autograph=False)
    def serve(self, text_a, text_b):
        """text_a, text_b: string [N] -> probabilities [N, C], label [N], label_id [N]."""
        return self._outputs(self.inputs.pairs(text_a, text_b))

    @tf.function(input_signature=[_STRING], autograph=False)
    def single(self, text_a):
        """text_a: string [N] -> as `serve`."""
        return self._outputs(self.inputs.single(text_a))

    def signatures(self):
        return {"serving_default": self.serve.get_concrete_function(),
                "single": self.single.get_concrete_function()}


class FeaturesExport(tf.Module):
    """`serving_default`: texts -> the chosen encoder layers' vectors per token."""

    def __init__(self, model, inputs, layer_indexes):
        super().__init__(name="features_export")
        self.model = model
        self.inputs = inputs
        self.layer_indexes = tf.constant(list(layer_indexes), tf.int32)
        self._layer_indexes = list(layer_indexes)

    @tf.function(input_signature=[_STRING, _STRING], autograph=False)
    def serve(self, text_a, text_b):
        """text_a, text_b: string [N] -> input_ids, input_mask int32 [N, S], layers float32
        [N, S, len(layers), H]."""
        features = self.inputs.pairs(text_a, text_b)
        layers = self.model(features, training=False)["all_encoder_layers"]
        chosen = [tf.cast(layers[i], tf.float32) for i in self._layer_indexes]
        return {"input_ids": features["input_ids"], "input_mask": features["input_mask"],
                "layers": tf.stack(chosen, axis=2)}

    def signatures(self):
        return {"serving_default": self.serve.get_concrete_function()}


class TaggingExport(tf.Module):
    """`serving_default`: texts -> one tag per whitespace word (the tag of its first piece)."""

    def __init__(self, model, inputs, labels):
        super().__init__(name="tagging_export")
        self.model = model
        self.inputs = inputs
        self.labels = tf.constant(list(labels), tf.string)

    @tf.function(input_signature=[_STRING], autograph=False)
    def serve(self, text):
        """text: string [N] -> tags string [N, W], num_words int32 [N]."""
        features = self.inputs.words(text)
        logits = self.model(features, training=False)["logits"]
        tag_ids = _first_argmax(logits)  # [N, S]
        # Scattered by word index, so a word without pieces keeps its place (tag "").
        firsts = tf.where(features["first_piece"] > 0)  # [M, 2]: example, position
        word = tf.cast(tf.gather_nd(features["word_ids"], firsts), tf.int64)
        num_words = features["num_words"]
        width = tf.reduce_max(tf.concat([num_words, [0]], 0))
        tags = tf.tensor_scatter_nd_update(
            tf.fill(tf.stack([tf.size(num_words), width]), ""),
            tf.stack([firsts[:, 0], word], axis=1),
            tf.gather(self.labels, tf.gather_nd(tag_ids, firsts)))
        return {"tags": tags, "num_words": num_words}

    def signatures(self):
        return {"serving_default": self.serve.get_concrete_function()}


class SquadExport(tf.Module):
    """`serving_default`: (question, context) -> the best answer span's text and score.

    As run_squad.py (version 1.1): the context is split into words at space, tab, CR, LF and
    U+202F, each word is tokenized, the question is cut to max_query_length pieces, and the
    document is cut into windows of max_seq_length - len(question) - 3 pieces advancing by
    doc_stride. In each window the n_best_size largest start and end logits (ties to the lower
    position) give the candidate spans, valid when both ends are in the window's document part,
    the start is in the window giving it the most context, end >= start and the span has at most
    max_answer_length pieces. The best is the largest start + end logit (in float64), ties to the
    first in the script's loop order (window, start rank, end rank). No valid span (e.g. an empty
    context): answer "empty", score 0, as the script.

    The answer is the context words from the start piece's word to the end piece's word joined
    by single spaces. run_squad.py's `get_final_text` further trims that span to the characters
    of the predicted pieces (e.g. word "(1990)," with the pieces "1990" gives "1990"); that step
    is not in the graph.
    """

    def __init__(self, model, inputs, max_query_length=64, doc_stride=128, n_best_size=20,
                 max_answer_length=30):
        super().__init__(name="squad_export")
        self.model = model
        self.inputs = inputs
        self.max_query_length = int(max_query_length)
        self.doc_stride = int(doc_stride)
        self.n_best_size = int(n_best_size)
        self.max_answer_length = int(max_answer_length)

    def _windows(self, question, context):
        """The script's features for every window, as dense tensors (see class docstring)."""
        seq_length = self.inputs.max_seq_length
        tokenizer = self.inputs.tokenizer
        query = tokenizer(question)[:, :self.max_query_length]  # ragged int64 [N, None]
        words = tf.strings.split(
            tf.strings.regex_replace(context, _SQUAD_SEPARATORS, " "), sep=" ")
        words = tf.ragged.boolean_mask(words, tf.strings.length(words) > 0)
        word_pieces = tokenizer(words.flat_values)
        pieces_per_word = word_pieces.row_lengths()
        doc = tf.RaggedTensor.from_row_lengths(
            word_pieces.flat_values, _row_sums(pieces_per_word, words.row_splits))
        word_of_piece = tf.repeat(
            tf.range(tf.size(pieces_per_word, out_type=tf.int64))
            - tf.gather(words.row_splits, words.value_rowids()), pieces_per_word)

        query_length = query.row_lengths()
        max_tokens = seq_length - query_length - 3  # >= 1, checked by the exporter
        num_tokens = doc.row_lengths()
        step = tf.minimum(max_tokens, self.doc_stride)
        extra = tf.maximum(num_tokens - max_tokens, 0)
        num_windows = tf.where(num_tokens > 0, 1 + (extra + step - 1) // step, 0)
        window_index = tf.ragged.range(num_windows)
        example = window_index.value_rowids()  # [W]
        start = window_index.flat_values * tf.gather(step, example)
        length = tf.minimum(tf.gather(num_tokens, example) - start, tf.gather(max_tokens, example))
        doc_positions = tf.ragged.range(start, start + length) + tf.gather(
            doc.row_splits[:-1], example)[:, None]
        window_query = tf.gather(query, example)
        ones = tf.ones_like(example)
        ids = tf.concat([
            tf.RaggedTensor.from_row_lengths(tf.fill([tf.size(example)], self._cls_id), ones),
            window_query,
            tf.RaggedTensor.from_row_lengths(tf.fill([tf.size(example)], self._sep_id), ones),
            tf.gather(doc.flat_values, doc_positions),
            tf.RaggedTensor.from_row_lengths(tf.fill([tf.size(example)], self._sep_id), ones),
        ], axis=1)
        offset = tf.gather(query_length, example) + 2  # model position of the first doc piece
        positions = tf.range(seq_length, dtype=tf.int64)[None, :]
        in_doc = (positions >= offset[:, None]) & (positions < (offset + length)[:, None])
        shape = [None, seq_length]
        features = {
            "input_ids": tf.cast(ids.to_tensor(0, shape=shape), tf.int32),
            "input_mask": tf.ones_like(ids, tf.int32).to_tensor(0, shape=shape),
            "segment_ids": tf.cast(in_doc | (positions == (offset + length)[:, None]), tf.int32),
        }

        # Max context: window k' scores doc piece t by min(t - start, end - t) + 0.01 * length;
        # the first window with the largest score wins (a later one must score strictly more).
        padded_start = window_index.with_flat_values(start).to_tensor(0)  # [N, K]
        padded_length = window_index.with_flat_values(length).to_tensor(0)
        other_start = tf.gather(padded_start, example)[:, None, :]  # [W, 1, K]
        other_length = tf.gather(padded_length, example)[:, None, :]
        piece = start[:, None, None] + positions[:, :, None] - offset[:, None, None]  # [W, S, 1]
        other_end = other_start + other_length - 1
        score = (tf.cast(tf.minimum(piece - other_start, other_end - piece), tf.float64)
                 + 0.01 * tf.cast(other_length, tf.float64))
        covered = (piece >= other_start) & (piece <= other_end) & (other_length > 0)
        score = tf.where(covered, score, tf.constant(-1e300, tf.float64))
        max_context = tf.equal(_first_argmax(score), window_index.flat_values[:, None])
        valid_start = in_doc & max_context
        doc_piece = tf.clip_by_value(start[:, None] + positions - offset[:, None], 0, tf.maximum(
            tf.gather(num_tokens, example)[:, None] - 1, 0))
        word_of_position = tf.gather(
            word_of_piece, tf.gather(doc.row_splits[:-1], example)[:, None] + doc_piece)
        return features, example, in_doc, valid_start, word_of_position, words

    def _answer(self, question, context):
        features, example, valid_end, valid_start, word_of_position, words = self._windows(
            question, context)
        outputs = self.model(features, training=False)
        start_logits = tf.cast(outputs["start_logits"], tf.float64)
        end_logits = tf.cast(outputs["end_logits"], tf.float64)
        k = min(self.n_best_size, self.inputs.max_seq_length)
        # top_k puts equal values in index order, like the script's stable sort.
        start_top, start_index = tf.math.top_k(start_logits, k)
        end_top, end_index = tf.math.top_k(end_logits, k)
        ok = (tf.gather(valid_start, start_index, batch_dims=1)[:, :, None]
              & tf.gather(valid_end, end_index, batch_dims=1)[:, None, :])
        span = end_index[:, None, :] - start_index[:, :, None]
        ok &= (span >= 0) & (span + 1 <= self.max_answer_length)
        total = start_top[:, :, None] + end_top[:, None, :]  # [W, k, k]

        n = tf.size(question)
        flat_ok = tf.reshape(ok, [-1])
        flat_total = tf.where(flat_ok, tf.reshape(total, [-1]), -float("inf"))
        candidate_example = tf.repeat(example, k * k)
        best = tf.math.unsorted_segment_max(flat_total, candidate_example, n)
        has_answer = tf.math.unsorted_segment_max(
            tf.cast(flat_ok, tf.int32), candidate_example, n) > 0
        order = tf.range(tf.size(flat_ok, out_type=tf.int64))
        winner = flat_ok & tf.equal(flat_total, tf.gather(best, candidate_example))
        chosen = tf.math.unsorted_segment_min(
            tf.where(winner, order, tf.int64.max), candidate_example, n)
        # An example without a valid span reads a padding row (there may be no window at all).
        num_windows = tf.size(example, out_type=tf.int64)
        window = tf.where(has_answer, chosen // (k * k), num_windows)
        start_rank, end_rank = (chosen // k) % k, chosen % k
        start_rank, end_rank = (tf.where(has_answer, r, 0) for r in (start_rank, end_rank))

        def pick(values, rank):
            padded = tf.pad(values, [[0, 1], [0, 0]])
            return tf.gather_nd(padded, tf.stack([window, rank], axis=1))

        start_position, end_position = pick(start_index, start_rank), pick(end_index, end_rank)
        first_word = pick(word_of_position, tf.cast(start_position, tf.int64))
        last_word = pick(word_of_position, tf.cast(end_position, tf.int64))
        first_word = tf.where(has_answer, first_word, 0)
        last_word = tf.where(has_answer, last_word, -1)
        chosen_words = tf.ragged.range(first_word, last_word + 1) + words.row_splits[:-1, None]
        text = tf.strings.reduce_join(tf.gather(words.flat_values, chosen_words), axis=1,
                                      separator=" ")
        start_logit = tf.where(has_answer, pick(start_top, start_rank), 0.0)
        end_logit = tf.where(has_answer, pick(end_top, end_rank), 0.0)
        return {"answer": tf.where(has_answer, text, "empty"),
                "score": tf.cast(start_logit + end_logit, tf.float32),
                "start_logit": tf.cast(start_logit, tf.float32),
                "end_logit": tf.cast(end_logit, tf.float32)}

    @tf.function(input_signature=[_STRING, _STRING], autograph=False)
    def serve(self, question, context):
        """question, context: string [N] -> answer string [N], score, start_logit, end_logit
        float32 [N]."""
        return self._answer(question, context)

    @property
    def _cls_id(self):
        return tf.constant(self.inputs._cls_id, tf.int64)

    @property
    def _sep_id(self):
        return tf.constant(self.inputs._sep_id, tf.int64)

    def signatures(self):
        return {"serving_default": self.serve.get_concrete_function()}


def read_labels(labels_flag, checkpoint):
    """Label names from `--labels` (comma-separated) or the checkpoint directory's task.json."""
    if labels_flag:
        labels = [x.strip() for x in labels_flag.split(",")]
        if any(not x for x in labels):
            raise ExportError(f"--labels={labels_flag!r} has an empty label name")
        return labels
    directory = checkpoint if tf.io.gfile.isdir(checkpoint) else os.path.dirname(checkpoint)
    path = os.path.join(directory or ".", "task.json")
    if not tf.io.gfile.exists(path):
        raise ExportError(f"no --labels given and no {path} beside the checkpoint: pass "
                          "--labels=name1,name2,...")
    try:
        with tf.io.gfile.GFile(path) as f:
            labels = json.load(f)["labels"]
    except (ValueError, KeyError, TypeError) as e:
        raise ExportError(f"{path}: expected a JSON object with a 'labels' list ({e})") from None
    if not isinstance(labels, list) or not labels:
        raise ExportError(f"{path}: 'labels' must be a non-empty list, got {labels!r}")
    return [str(x) for x in labels]


def build_export(task, config, checkpoint, vocab_file, do_lower_case=True, max_seq_length=128,
                 labels=None, layers="-1,-2,-3,-4", max_query_length=64, doc_stride=128,
                 n_best_size=20, max_answer_length=30, tokenizer=None):
    """The export module of `task` with the checkpoint's weights.

    Args:
      task: one of TASKS.
      config: a BertConfig.
      checkpoint: checkpoint prefix or directory (the original's names).
      vocab_file, do_lower_case: the tokenizer's.
      labels: list of label names (classifier, tagging).
      layers: "-1,-2" etc. (features).
      tokenizer: an existing `TokenizerModule` for the vocab (building one takes seconds).
    Returns:
      (module, info dict for bert_tf_export.json).
    """
    if task not in TASKS:
        raise ExportError(f"--task={task!r}: expected one of {', '.join(TASKS)}")
    if not 3 <= max_seq_length <= config.max_position_embeddings:
        raise ExportError(f"--max_seq_length={max_seq_length}: expected 3 to "
                          f"max_position_embeddings={config.max_position_embeddings}")
    if task == "squad":
        if max_seq_length <= max_query_length + 3:
            raise ExportError(f"--max_seq_length={max_seq_length} must be greater than "
                              f"--max_query_length={max_query_length} + 3")
        for name, value in (("doc_stride", doc_stride), ("n_best_size", n_best_size),
                            ("max_answer_length", max_answer_length)):
            if value <= 0:
                raise ExportError(f"--{name}={value}: expected a positive number")
    if task in ("classifier", "tagging") and not labels:
        raise ExportError(f"--task={task} needs label names (--labels)")
    if not tf.io.gfile.exists(vocab_file):
        raise ExportError(f"--vocab_file={vocab_file}: no such file")
    vocab = tokenization.load_vocab(vocab_file)
    try:
        inputs = ServingInputs(vocab, do_lower_case, max_seq_length, tokenizer=tokenizer)
    except ValueError as e:
        raise ExportError(f"--vocab_file={vocab_file}: {e}") from None
    hidden = config.hidden_size
    if task == "features":
        model = BertModel(config, name="bert")  # any checkpoint's encoder, whatever its head
    else:
        head = {"classifier": lambda: ClassifierHead(len(labels), hidden),
                "tagging": lambda: TokenClassifierHead(len(labels), hidden),
                "squad": lambda: SpanHead(hidden)}[task]()
        model = BertTaskModel(config, head)
    load_original_checkpoint(model, checkpoint)
    info = {"task": task, "max_seq_length": max_seq_length, "do_lower_case": do_lower_case}
    if task == "classifier":
        module = ClassifierExport(model, inputs, labels)
        info["labels"] = list(labels)
    elif task == "tagging":
        module = TaggingExport(model, inputs, labels)
        info["labels"] = list(labels)
    elif task == "features":
        try:
            indexes = parse_layer_indexes(layers, config.num_hidden_layers)
        except ValueError as e:
            raise ExportError(str(e)) from None
        module = FeaturesExport(model, inputs, indexes)
        info["layers"] = [int(x) for x in layers.split(",")]
    else:
        module = SquadExport(model, inputs, max_query_length, doc_stride, n_best_size,
                             max_answer_length)
        info.update(max_query_length=max_query_length, doc_stride=doc_stride,
                    n_best_size=n_best_size, max_answer_length=max_answer_length)
    return module, info


def save_export(module, info, output_dir):
    """Writes the SavedModel and bert_tf_export.json to `output_dir`, through a temporary
    directory renamed when complete (an existing export there is replaced)."""
    output_dir = os.fspath(output_dir)
    tmp = f"{output_dir.rstrip('/')}.tmp-{os.getpid()}"
    if tf.io.gfile.exists(tmp):
        tf.io.gfile.rmtree(tmp)
    # Keras 3 variables wrap tf.Variables; tracking those directly puts them in the SavedModel's
    # TF1 view (its saver), which `saved_model_cli run` restores from.
    module.tf_variables = [v.value for v in module.model.weights]
    tf.saved_model.save(module, tmp, signatures=module.signatures())
    with tf.io.gfile.GFile(os.path.join(tmp, EXPORT_INFO_FILE), "w") as f:
        f.write(json.dumps(info, indent=2) + "\n")
    if tf.io.gfile.exists(output_dir):
        shutil.rmtree(output_dir)
    os.replace(tmp, output_dir)
    return output_dir


def _define_flags():
    flags.DEFINE_enum("task", None, list(TASKS), "What the SavedModel answers.")
    flags.DEFINE_string("checkpoint", None, "Fine-tuned checkpoint (prefix or directory).")
    flags.DEFINE_string("bert_config_file", None, "bert_config.json of the model.")
    flags.DEFINE_string("vocab_file", None, "vocab.txt of the model.")
    flags.DEFINE_bool("do_lower_case", True, "False for cased models.")
    flags.DEFINE_string("output_dir", None, "Directory to write the SavedModel to.")
    flags.DEFINE_integer("max_seq_length", 128, "Word pieces per example ([CLS]/[SEP] included).")
    flags.DEFINE_string("labels", None, "Comma-separated label names (classifier, tagging); "
                        "default: the checkpoint directory's task.json.")
    flags.DEFINE_string("layers", "-1,-2,-3,-4", "Encoder layers to return (features).")
    flags.DEFINE_integer("doc_stride", 128, "SQuAD: window stride in pieces.")
    flags.DEFINE_integer("max_query_length", 64, "SQuAD: question pieces kept.")
    flags.DEFINE_integer("max_answer_length", 30, "SQuAD: longest answer in pieces.")
    flags.DEFINE_integer("n_best_size", 20, "SQuAD: start/end candidates per window.")
    for name in ("task", "checkpoint", "bert_config_file", "vocab_file", "output_dir"):
        flags.mark_flag_as_required(name)
    return flags.FLAGS


def main(argv):
    del argv
    FLAGS = flags.FLAGS  # noqa: N806 (absl's name)
    try:
        if not tf.io.gfile.exists(FLAGS.bert_config_file):
            raise ExportError(f"--bert_config_file={FLAGS.bert_config_file}: no such file")
        config = BertConfig.from_json_file(FLAGS.bert_config_file)
        resolve_checkpoint_path(FLAGS.checkpoint)
        labels = None
        if FLAGS.task in ("classifier", "tagging"):
            labels = read_labels(FLAGS.labels, FLAGS.checkpoint)
        module, info = build_export(
            FLAGS.task, config, FLAGS.checkpoint, FLAGS.vocab_file, FLAGS.do_lower_case,
            FLAGS.max_seq_length, labels, FLAGS.layers, FLAGS.max_query_length,
            FLAGS.doc_stride, FLAGS.n_best_size, FLAGS.max_answer_length)
        save_export(module, info, FLAGS.output_dir)
    except ValueError as e:
        raise SystemExit(f"bert_tf.export: {e}") from None
    print(f"wrote {FLAGS.task} SavedModel to {FLAGS.output_dir}")


if __name__ == "__main__":
    _define_flags()
    app.run(main)
