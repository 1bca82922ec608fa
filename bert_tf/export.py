"""Export a fine-tuned BERT as a SavedModel that takes raw strings (`python -m bert_tf.export`).

    python -m bert_tf.export --task=classifier|squad|tagging|features \\
        --checkpoint=DIR_OR_PREFIX --bert_config_file=bert_config.json --vocab_file=vocab.txt \\
        --do_lower_case=true --output_dir=EXPORT_DIR [--max_seq_length=128] [--labels=a,b,c]
        [--dynamic_padding=true] [--precision=float32|bfloat16|int8|auto]
        [SQuAD: --doc_stride --max_query_length --max_answer_length --n_best_size
         --version_2_with_negative --null_score_diff_threshold]

Tokenization runs in the graph (`bert_tf.serving.inputs.ServingInputs`, ids equal to
FullTokenizer's) in core TensorFlow ops only, so the SavedModel loads and answers in a process
that imports only `tensorflow`, and plain `saved_model_cli run` works (see docs/serving.md):
    saved_model_cli run --dir EXPORT_DIR --tag_set serve --signature_def serving_default \\
        --input_exprs 'text_a=["a text"];text_b=[""]'
A RoBERTa checkpoint (a `python -m bert_tf.hf import` folder) takes --vocab_file=<folder>/vocab.json
(--merges_file: the merges.txt beside it by default; --do_lower_case: false by default, true
refused) and tokenizes with byte-level BPE in core ops (docs/roberta.md).
An ALBERT checkpoint (its SentencePiece .model as --vocab_file) tokenizes with tensorflow-text's
SentencePiece ops instead: load it after `import tensorflow_text` (`"core_ops": false` in
bert_tf_export.json; `python -m bert_tf.predict` does it). Signatures (every input
tf.string [N], a batch):

  classifier  serving_default(text_a, text_b) -> probabilities float32 [N, C], label string [N],
              label_id int32 [N]; an empty text_b is a single text. `single(text_a)` -> the
              same. The label names are bert_tf_export.json's `labels`.
  features    serving_default(text_a, text_b) -> input_ids, input_mask int32 [N, S] and layers
              float32 [N, S, len(--layers), H] (the chosen encoder layers, in --layers order;
              S = the batch's longest input rounded up to 16, or max_seq_length with
              --dynamic_padding=false).
  tagging     serving_default(text) -> tags string [N, W] (one tag per whitespace word, as
              run_tagging.py: that of its first piece in the window of max_seq_length giving
              it the most context, windows advancing by --doc_stride; "O" for a word without
              pieces, "" for padding), num_words int32 [N].
  squad       serving_default(question, context) -> answer string [N] (run_squad.py's
              prediction, final text included: get_final_text for WordPiece, the context's
              characters of the predicted pieces for SentencePiece and byte-level BPE),
              score float32 [N]
              (start + end logit), start_logit, end_logit float32 [N]; with
              --version_2_with_negative also null_score_diff float64 [N] (its null_odds.json
              value; the answer is "" above --null_score_diff_threshold). See
              `bert_tf.serving.squad_export.SquadExport`.

A batch runs at its longest sequence (window) rounded up to a multiple of 16 positions, not at
max_seq_length (`--dynamic_padding=false` keeps max_seq_length and static shapes, e.g. for
XLA or TPU serving); answers do not depend on the other requests of a batch.

`--precision=bfloat16` stores the encoder's Dense kernels and biases and the embedding tables
in bfloat16 (the checkpoint's float32 rounded to nearest even) and runs those matmuls in
bfloat16; the embeddings' sum (of rows widened to float32), LayerNorm, softmax and the heads
stay float32, and so do the outputs and the signatures
(docs/serving.md, "Precision"). `auto` picks the fastest precision this CPU runs natively
(bfloat16 where its flags show AVX512_BF16 or AMX-BF16, else float32), says so in the log
and records the choice in bert_tf_export.json. `--precision=int8` stores the encoder's Dense kernels as int8
with a float32 scale per output column (`.../kernel/int8`, `.../kernel/scale`) and quantizes
their inputs per row (token) at run time; the integer products are XLA's int8 dot (the only
int8 path faster than float32 on the CPU measured, bert_tf/training/int8.py; not faster than
bfloat16), so a TensorFlow Serving server needs `--xla_cpu_compilation_enabled=true` for it.

The export directory also holds `bert_tf_export.json` ({"task", "labels", "max_seq_length",
"precision", ...}) for `bert_tf.predict`.
"""

import tensorflow as tf
from absl import app, flags, logging

from bert_tf import families
from bert_tf import flags as shared_flags
from bert_tf.checkpoints import resolve_checkpoint_path
from bert_tf.serving.export import (TASKS, ExportError, build_export, read_labels, save_export,
                                    server_requirements)
from bert_tf.training.precision import ACCURACY_CHECKED, AUTO, PRECISIONS


def _define_flags():
    flags.DEFINE_enum("task", None, list(TASKS), "What the SavedModel answers.")
    flags.DEFINE_string("checkpoint", None, "Fine-tuned checkpoint (prefix or directory).")
    flags.DEFINE_string("bert_config_file", None, "bert_config.json of the model.")
    flags.DEFINE_string("vocab_file", None, "vocab.txt of the model (RoBERTa: vocab.json).")
    flags.DEFINE_bool("do_lower_case", True, "False for cased models. A RoBERTa model (cased "
                      "byte-level BPE) defaults to False and refuses True.")
    shared_flags.define_tokenizer_file_flags()
    flags.DEFINE_string("output_dir", None, "Directory to write the SavedModel to.")
    flags.DEFINE_integer("max_seq_length", 128, "Word pieces per example ([CLS]/[SEP] included).")
    flags.DEFINE_bool("dynamic_padding", True, "Run a batch at its longest sequence rounded "
                      "up to 16 positions; false: always at max_seq_length (static shapes).")
    flags.DEFINE_enum("precision", "float32", [*PRECISIONS, AUTO],
                      "Weights and matmuls of the encoder: float32 (the original's numbers), "
                      "bfloat16 (the encoder's Dense kernels/biases stored and multiplied in "
                      "bfloat16, the embedding tables stored in bfloat16; the embeddings' sum, "
                      "LayerNorm, softmax and the outputs float32; BERT-Base's variables 438 "
                      "-> 219 MB; outputs within bfloat16 rounding of "
                      "float32's: docs/serving.md) or int8 (the encoder's Dense kernels stored as "
                      "int8 with a float32 scale per output column, their inputs quantized per "
                      "token at run time, the products in XLA's int8 dot; BERT-Base's "
                      "variables 438 -> 182 MB; at batch 1 faster than float32, not than "
                      "bfloat16; TF Serving needs --xla_cpu_compilation_enabled=true: "
                      "docs/serving.md). auto: the "
                      "fastest this CPU runs natively, bfloat16 with AVX512_BF16 or AMX-BF16 in "
                      "its flags, else float32 (the log names the flags; bert_tf_export.json "
                      "records the choice). Checked on real data against float32 (recorded in "
                      "bert_tf_export.json as precision_checked; docs/serving.md): "
                      + "; ".join(f"{p}: {line}" for p, line in ACCURACY_CHECKED.items()) + ".")
    flags.DEFINE_string("labels", None, "Comma-separated label names (classifier, tagging); "
                        "default: the checkpoint directory's task.json.")
    flags.DEFINE_string("layers", "-1,-2,-3,-4", "Encoder layers to return (features).")
    flags.DEFINE_integer("doc_stride", None, "SQuAD and tagging: pieces between the starts of "
                         "a text's windows; default: run_squad.py's 128, run_tagging.py's 64.")
    flags.DEFINE_integer("max_query_length", 64, "SQuAD: question pieces kept.")
    flags.DEFINE_integer("max_answer_length", 30, "SQuAD: longest answer in pieces.")
    flags.DEFINE_integer("n_best_size", 20, "SQuAD: start/end candidates per window, among its "
                         "real positions (padding masked, at any --dynamic_padding; the original "
                         "run_squad.py ranks padded positions too, so where one would rank among "
                         "the n best, the answers can differ: docs/serving.md).")
    flags.DEFINE_bool("version_2_with_negative", False,
                      "SQuAD 2.0: questions may have no answer (the empty string).")
    flags.DEFINE_float("null_score_diff_threshold", 0.0,
                       "SQuAD 2.0: answer \"\" when the null score minus the best span's score "
                       "is above this.")
    for name in ("task", "checkpoint", "bert_config_file", "vocab_file", "output_dir"):
        flags.mark_flag_as_required(name)
    return flags.FLAGS


def main(argv):
    del argv
    FLAGS = flags.FLAGS  # noqa: N806 (absl's name)
    logging.set_verbosity(logging.INFO)  # --precision=auto says what it chose
    try:
        if not tf.io.gfile.exists(FLAGS.bert_config_file):
            raise ExportError(f"--bert_config_file={FLAGS.bert_config_file}: no such file")
        config = families.read_config(FLAGS.bert_config_file)
        resolve_checkpoint_path(FLAGS.checkpoint)
        labels = None
        if FLAGS.task in ("classifier", "tagging"):
            labels = read_labels(FLAGS.labels, FLAGS.checkpoint)
        do_lower_case, tokenizer_files = shared_flags.tokenizer_settings(FLAGS, config)
        module, info = build_export(
            FLAGS.task, config, FLAGS.checkpoint, FLAGS.vocab_file, do_lower_case,
            FLAGS.max_seq_length, labels, FLAGS.layers, FLAGS.max_query_length,
            FLAGS.doc_stride, FLAGS.n_best_size, FLAGS.max_answer_length,
            version_2_with_negative=FLAGS.version_2_with_negative,
            null_score_diff_threshold=FLAGS.null_score_diff_threshold,
            dynamic_padding=FLAGS.dynamic_padding, tokenizer_files=tokenizer_files,
            precision=FLAGS.precision)
        save_export(module, info, FLAGS.output_dir)
    except ValueError as e:
        raise SystemExit(f"bert_tf.export: {e}") from None
    print(f"wrote {FLAGS.task} SavedModel to {FLAGS.output_dir}")
    for line in server_requirements(info):
        print(line)


if __name__ == "__main__":
    _define_flags()
    app.run(main)
