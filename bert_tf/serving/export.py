"""The export modules of `python -m bert_tf.export` (bert_tf/export.py, whose docstring gives
every signature): a fine-tuned BERT as a `tf.Module` that takes raw strings.

  ClassifierExport, FeaturesExport, TaggingExport   one per task (SQuAD's is
      `bert_tf.serving.squad_export.SquadExport`), each on a `bert_tf.serving.inputs.ServingInputs`
      (tokenization in the graph, core TensorFlow ops only);
  build_export   the flags' checks and the module of a task with the checkpoint's weights;
  save_export    the SavedModel and `bert_tf_export.json` (what `bert_tf.serving.predict`
      reads), written whole.
"""

import json
import os

import tensorflow as tf

from bert_tf import families, files
from bert_tf.checkpoints import load_original_checkpoint, original_variable_map
from bert_tf.data.conll import OUTSIDE
from bert_tf.feature_extraction import parse_layer_indexes
from bert_tf.layers.activations import without_xla
from bert_tf.layers.heads import ClassifierHead, SpanHead, TokenClassifierHead
from bert_tf.models import BertTaskModel
from bert_tf.serving.inputs import ServingInputs
from bert_tf.serving.squad_export import SquadExport
from bert_tf.training.precision import (ACCURACY_CHECKED, PRECISIONS, build_at_precision,
                                        resolve_precision)
from bert_tf.training.task_file import load_task_file, task_file_path

TASKS = ("classifier", "features", "tagging", "squad")
EXPORT_INFO_FILE = "bert_tf_export.json"
# The training scripts' --doc_stride defaults: an export windows texts as evaluation did.
DEFAULT_DOC_STRIDE = {"squad": 128, "tagging": 64}
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
        return {"serving_default": self.serve, "single": self.single}


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
        return {"serving_default": self.serve}


class TaggingExport(tf.Module):
    """`serving_default`: texts -> one tag per whitespace word, as run_tagging.py predicts.

    Every text is cut into windows (`ServingInputs.words`: bert_tf.data.conll's
    `sentence_windows`, max_seq_length - 2 pieces advancing by min(that, doc_stride)), the model
    runs on all windows of the batch, and each word gets the tag of its first piece in the
    window where that piece has the most context (ties to the earlier window), so no word is
    cut. A word without pieces (only characters the tokenizer removes) gets "O", as
    `bert_tf.data.conll.word_predictions`.
    """

    def __init__(self, model, inputs, labels):
        super().__init__(name="tagging_export")
        self.model = model
        self.inputs = inputs
        self.labels = tf.constant(list(labels), tf.string)

    @tf.function(input_signature=[_STRING], autograph=False)
    def serve(self, text):
        """text: string [N] -> tags string [N, W] (W = the most words of a text; "" past a
        text's words), num_words int32 [N]."""
        windows = self.inputs.words(text)
        features = {name: windows[name] for name in ("input_ids", "input_mask", "segment_ids")}
        logits = self.model(features, training=False)["logits"]  # [K, S, C]
        tag_ids = _first_argmax(logits)  # [K, S]
        tagged = tf.where(windows["tag_position"] > 0)  # [M, 2]: window, position
        text_index = tf.gather(windows["text_index"], tagged[:, 0])
        word = tf.gather_nd(windows["word_ids"], tagged)
        num_words = windows["num_words"]
        width = tf.reduce_max(tf.concat([num_words, [0]], 0))
        untagged = tf.where(tf.sequence_mask(num_words, width), OUTSIDE, "")
        tags = tf.tensor_scatter_nd_update(
            untagged, tf.cast(tf.stack([text_index, word], axis=1), tf.int64),
            tf.gather(self.labels, tf.gather_nd(tag_ids, tagged)))
        return {"tags": tags, "num_words": num_words}

    def signatures(self):
        return {"serving_default": self.serve}


def read_labels(labels_flag, checkpoint):
    """Label names from `--labels` (comma-separated) or the checkpoint directory's task.json."""
    if labels_flag:
        labels = [x.strip() for x in labels_flag.split(",")]
        if any(not x for x in labels):
            raise ExportError(f"--labels={labels_flag!r} has an empty label name")
        return labels
    directory = checkpoint if tf.io.gfile.isdir(checkpoint) else os.path.dirname(checkpoint)
    path = task_file_path(directory or ".")
    try:
        labels = load_task_file(directory or ".")["labels"]
    except FileNotFoundError:
        raise ExportError(f"no --labels given and no {path} beside the checkpoint: pass "
                          "--labels=name1,name2,...") from None
    except (ValueError, KeyError, TypeError) as e:
        raise ExportError(f"{path}: expected a JSON object with a 'labels' list ({e})") from None
    if not isinstance(labels, list) or not labels:
        raise ExportError(f"{path}: 'labels' must be a non-empty list, got {labels!r}")
    return [str(x) for x in labels]


def task_model(task, config, labels=None):
    """The model a `task` export runs (built under the current dtype policy, untrained): the
    family's encoder for "features" (it loads any checkpoint's encoder, whatever its head),
    else a `BertTaskModel` with the task's head (`labels`: the classifier's and tagging's
    label names)."""
    if task == "features":
        return families.build_encoder(config, name="bert")
    hidden = config.hidden_size
    head = {"classifier": lambda: ClassifierHead(len(labels), hidden),
            "tagging": lambda: TokenClassifierHead(len(labels), hidden),
            "squad": lambda: SpanHead(hidden)}[task]()
    return BertTaskModel(config, head)


def build_export(task, config, checkpoint, vocab_file, do_lower_case=True, max_seq_length=128,
                 labels=None, layers="-1,-2,-3,-4", max_query_length=64, doc_stride=None,
                 n_best_size=20, max_answer_length=30, tokenizer=None,
                 version_2_with_negative=False, null_score_diff_threshold=0.0,
                 dynamic_padding=True, tokenizer_files=None, precision="float32"):
    """The export module of `task` with the checkpoint's weights.

    Args:
      task: one of TASKS.
      config: the model config (a `BertConfig`, ...).
      checkpoint: checkpoint prefix or directory (the original's names).
      vocab_file, do_lower_case: the tokenizer's.
      labels: list of label names (classifier, tagging).
      layers: "-1,-2" etc. (features).
      doc_stride: pieces between window starts (squad, tagging); None: the script's default
        (run_squad.py 128, run_tagging.py 64).
      max_query_length, n_best_size, max_answer_length, version_2_with_negative,
        null_score_diff_threshold: SQuAD, run_squad.py's flags.
      tokenizer: an existing graph tokenizer for the vocab (the family's `graph_tokenizer`;
        building one takes seconds); for squad and tagging, built with the family's
        `word_tokenizer_kwargs` (RoBERTa's prefix space per word), as done when None.
      dynamic_padding: run a batch at its longest sequence rounded up, not max_seq_length.
      tokenizer_files: the tokenizer file flags beside vocab_file ({"merges_file": ...};
        `families.make_tokenizer`).
      precision: a key of PRECISIONS: "bfloat16" stores the encoder's Dense weights and
        embedding tables in bfloat16 (the checkpoint's float32 values rounded to nearest even)
        and runs the Dense matmuls in bfloat16; "int8" stores the encoder's Dense kernels as
        int8 with a float32 scale per output column and quantizes their inputs per row at run time
        (bert_tf.training.int8);
        or "auto" (`resolve_precision`: what this CPU runs natively), recorded as the
        precision it chose.
    Returns:
      (module, info dict for bert_tf_export.json).
    """
    if task not in TASKS:
        raise ExportError(f"--task={task!r}: expected one of {', '.join(TASKS)}")
    precision = resolve_precision(precision)
    if precision not in PRECISIONS:
        raise ExportError(f"--precision={precision!r}: expected one of "
                          f"{', '.join(PRECISIONS)} or auto")
    usable = config.max_sequence_length  # RoBERTa's: fewer than its position rows
    if not 3 <= max_seq_length <= usable:
        raise ExportError(
            f"--max_seq_length={max_seq_length}: expected 3 to "
            + (f"max_position_embeddings={usable}" if usable == config.max_position_embeddings
               else f"{usable} (max_position_embeddings {config.max_position_embeddings} - "
                    f"pad_token_id {config.pad_token_id} - 1 of the {config.model_type} "
                    "config)"))
    if doc_stride is None:
        doc_stride = DEFAULT_DOC_STRIDE.get(task, 128)
    if task in ("squad", "tagging") and doc_stride <= 0:
        raise ExportError(f"--doc_stride={doc_stride}: expected a positive number")
    if task == "squad":
        special = families.of(config).tokenizer.special_tokens
        reserved = max_seq_length - special.pair_budget(max_seq_length)  # BERT: 3
        if max_seq_length <= max_query_length + reserved:
            raise ExportError(f"--max_seq_length={max_seq_length} must be greater than "
                              f"--max_query_length={max_query_length} + {reserved}")
        for name, value in (("n_best_size", n_best_size),
                            ("max_answer_length", max_answer_length)):
            if value <= 0:
                raise ExportError(f"--{name}={value}: expected a positive number")
    if task in ("classifier", "tagging") and not labels:
        raise ExportError(f"--task={task} needs label names (--labels)")
    if not tf.io.gfile.exists(vocab_file):
        raise ExportError(f"--vocab_file={vocab_file}: no such file")
    family = families.of(config)
    try:
        # The family's host tokenizer reads --vocab_file (ALBERT's: a SentencePiece .model).
        vocab = families.make_tokenizer(family, vocab_file, do_lower_case, tokenizer_files).vocab
        if tokenizer is None and task in ("squad", "tagging") and family.word_tokenizer_kwargs:
            # Text split into words, each tokenized alone, as run_squad.py / run_tagging.py
            # tokenize it (RoBERTa: a prefix space per word; the question too).
            tokenizer = family.graph_tokenizer(vocab, do_lower_case=do_lower_case,
                                               **family.word_tokenizer_kwargs)
        inputs = ServingInputs(vocab, do_lower_case, max_seq_length, doc_stride,
                               tokenizer=tokenizer, dynamic_padding=dynamic_padding,
                               family=families.of(config).name)
    except ValueError as e:
        raise ExportError(f"--vocab_file={vocab_file}: {e}") from None
    if task == "squad" and not (hasattr(inputs.tokenizer, "tokenize_with_offsets")
                                or hasattr(inputs.tokenizer, "normalize")):
        # SquadExport maps answers back to the context with the pieces' offsets in the text
        # (`tokenize_with_offsets`: SentencePiece's, byte-level BPE's) or with WordPiece's
        # BasicTokenizer character mapping (`normalize`, for get_final_text).
        raise ExportError(
            f"--task=squad: the {families.of(config).name} graph tokenizer cannot map predicted "
            "pieces back to the context's characters (it has neither tokenize_with_offsets nor "
            "normalize), so a SQuAD export is not available for it; predict with "
            "run_squad.py (--do_predict), or export another task")
    # The variables take the policy's dtype when created; load_original_checkpoint then
    # assigns the checkpoint's float32 values, which TensorFlow rounds to nearest even.
    # Without XLA functions (GELU's), so that TensorFlow Serving runs the export as it is
    # (bert_tf/layers/activations.py); an int8 export's Dense calls still are (int8.py).
    with without_xla():
        model = build_at_precision(lambda: task_model(task, config, labels), precision,
                                   lambda m: load_original_checkpoint(m, checkpoint))
    info = {"task": task, "max_seq_length": max_seq_length, "do_lower_case": do_lower_case,
            "dynamic_padding": bool(dynamic_padding), "precision": precision,
            # False: load the SavedModel after `import tensorflow_text` (ALBERT).
            "core_ops": bool(getattr(inputs.tokenizer, "core_ops", True))}
    if precision in ACCURACY_CHECKED:
        info["precision_checked"] = ACCURACY_CHECKED[precision]
    if task == "classifier":
        module = ClassifierExport(model, inputs, labels)
        info["labels"] = list(labels)
    elif task == "tagging":
        module = TaggingExport(model, inputs, labels)
        info.update(labels=list(labels), doc_stride=doc_stride)
    elif task == "features":
        try:
            indexes = parse_layer_indexes(layers, config.num_hidden_layers)
        except ValueError as e:
            raise ExportError(str(e)) from None
        module = FeaturesExport(model, inputs, indexes)
        info["layers"] = [int(x) for x in layers.split(",")]
    else:
        module = SquadExport(model, inputs, vocab, max_query_length, doc_stride, n_best_size,
                             max_answer_length, version_2_with_negative,
                             null_score_diff_threshold)
        info.update(max_query_length=max_query_length, doc_stride=doc_stride,
                    n_best_size=n_best_size, max_answer_length=max_answer_length,
                    version_2_with_negative=bool(version_2_with_negative),
                    null_score_diff_threshold=float(null_score_diff_threshold))
    return module, info


def saved_weights(model):
    """The model's `tf.Variable`s nested by their original checkpoint names (the SavedModel's
    `weights`): {"bert": {"embeddings": {"word_embeddings": tf.Variable}, ...}, ...}, so that
    the export's checkpoint keys read `weights/bert/embeddings/word_embeddings/...` (an int8
    export's quantized kernels: `.../kernel/int8` and `.../kernel/scale`).

    Each Keras 3 variable wraps one `tf.Variable` (`.value`); the export tracks that, not the
    Keras model, whose variables would serialize the same values a second time.
    """
    nested = {}
    for name, variable in original_variable_map(model).items():
        *scopes, leaf = name.split("/")
        node = nested
        for scope in scopes:
            node = node.setdefault(scope, {})
            if not isinstance(node, dict):
                raise ValueError(f"checkpoint name {name!r}: {scope!r} is also a variable")
        if leaf in node:
            raise ValueError(f"checkpoint name {name!r}: also a scope of other variables")
        node[leaf] = variable.value
    return nested


def graph_state(module):
    """The resources and variables a `tf.Module` holds (the graph tokenizer's lookup tables,
    SentencePiece model, ...), without the module and its tf.functions (a SavedModel traces
    every tf.function of the objects it holds, called by its signatures or not)."""
    return [x for x in tf.train.TrackableView(module).descendants()
            if isinstance(x, (tf.saved_model.experimental.TrackableResource, tf.Variable))]


def saved_root(module):
    """The object a SavedModel of `module` holds (see `save_export`): its signature functions,
    the model's weights once (`saved_weights`) and the graph tokenizer's tables
    (`graph_state`), nothing else. Returns (root, signatures: name -> the root's tf.function)."""
    root = tf.Module(name=module.name)
    root.weights = saved_weights(module.model)
    root.tokenizer_state = graph_state(module.inputs.tokenizer)
    signatures = {}
    for signature, function in module.signatures().items():
        setattr(root, function.__name__, function)
        signatures[signature] = getattr(root, function.__name__)
    return root, signatures


def server_requirements(info):
    """What a server must know to run the export of `info` (its bert_tf_export.json), one line
    each: an int8 export's Dense calls are XLA functions (bert_tf/training/int8.py), which
    TensorFlow Serving runs on CPU only when told to, and which compile once per new row count;
    other precisions need nothing."""
    if info.get("precision") != "int8":
        return []
    return ["int8: each Dense call is an XLA function (jit_compile): TensorFlow Serving runs it "
            "on CPU only with --xla_cpu_compilation_enabled=true, and the first request of each "
            "new batch x length compiles it once (docs/serving.md, Precision)"]


def save_export(module, info, output_dir):
    """Writes the SavedModel and bert_tf_export.json to `output_dir`, through a temporary
    directory renamed when complete (an existing export there is replaced; a full disk leaves
    it as it was and raises `files.OutputError`).

    The SavedModel's object graph is `saved_root(module)`'s: the export module's tf.functions
    (serve, single) as attributes and signatures, each weight once, under its original name,
    and the tokenizer's tables. The Keras model, the `ServingInputs` and the tokenizer module
    stay out of it: tracking the model stored every weight twice (a Keras 3 variable
    serializes the `tf.Variable` it wraps as a copy of its own), tracking the modules traced
    every tf.function of theirs at save."""
    output_dir = os.fspath(output_dir).rstrip("/")
    root, signatures = saved_root(module)
    needed = sum(v.shape.num_elements() * v.dtype.size for v in tf.nest.flatten(root.weights))
    with files.atomic_path(output_dir, needed=needed) as tmp:
        # The tf.functions, not concrete functions: save traces each once, in its own context
        # (a concrete function traced before it would be traced again there).
        tf.saved_model.save(root, tmp, signatures=signatures)
        with files.open_for_write(os.path.join(tmp, EXPORT_INFO_FILE)) as f:
            f.write(json.dumps(info, indent=2) + "\n")
    return output_dir
