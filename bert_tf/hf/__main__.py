"""`python -m bert_tf.hf import|export`: Hub snapshots in and out (see docs/hub.md).

    python -m bert_tf.hf import --hf_dir=SNAPSHOT --output_dir=GOOGLE_FOLDER
    python -m bert_tf.hf export --checkpoint=CKPT --bert_config_file=bert_config.json \\
        --vocab_file=vocab.txt [--do_lower_case=true] --output_dir=HUB_FOLDER \\
        [--task=pretraining|classifier|squad|tagging|encoder]
        (RoBERTa: --vocab_file=vocab.json --merges_file=merges.txt)

Prints what was mapped, left out (and why) and written; an error is one line on stderr and
exit code 1, with nothing written.
"""

import os
import sys

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

from absl import app, flags  # noqa: E402

from bert_tf.hf.names import EXPORT_TASKS  # noqa: E402 (pure Python: no TensorFlow yet)

_VERBS = ("import", "export")
_FLAGS_OF = {
    "import": ("hf_dir", "output_dir"),
    "export": ("checkpoint", "bert_config_file", "vocab_file", "merges_file", "do_lower_case",
               "output_dir", "task"),
}


def _define_flags():
    flags.DEFINE_string("hf_dir", None, "import: the Hub snapshot folder (config.json, "
                        "model.safetensors or pytorch_model.bin, vocab.txt or tokenizer.json).")
    flags.DEFINE_string("output_dir", None, "The folder to write; must not exist or be empty.")
    flags.DEFINE_string("checkpoint", None, "export: a checkpoint prefix or its folder.")
    flags.DEFINE_string("bert_config_file", None,
                        "export: the bert_config.json or albert_config.json (default: the one "
                        "beside the checkpoint).")
    flags.DEFINE_string("vocab_file", None,
                        "export: the vocab.txt, ALBERT's SentencePiece model or RoBERTa's "
                        "vocab.json (default: "
                        "vocab.txt, spiece.model or 30k-clean.model beside the checkpoint; "
                        "RoBERTa's vocab.json).")
    flags.DEFINE_string("merges_file", None,
                        "export: RoBERTa's merges.txt (default: the one beside --vocab_file, "
                        "else beside the checkpoint).")
    flags.DEFINE_bool("do_lower_case", None,
                      "export: the tokenizer's casing (default: the tokenizer_config.json beside "
                      "the checkpoint or vocab, else a released model's folder name, else True).")
    flags.DEFINE_enum("task", None, list(EXPORT_TASKS),
                      "export: which heads to export (default: the checkpoint's fine-tuning "
                      "head, else its pretraining heads, else the bare encoder).")


def main(argv):
    FLAGS = flags.FLAGS  # noqa: N806 (absl's name)
    if len(argv) != 2 or argv[1] not in _VERBS:
        print("usage: python -m bert_tf.hf import|export --flags (see --help)", file=sys.stderr)
        return 2
    verb = argv[1]
    given = [name for name in ("hf_dir", "checkpoint", "bert_config_file", "vocab_file",
                               "merges_file", "do_lower_case", "task") if FLAGS[name].present]
    wrong = [name for name in given if name not in _FLAGS_OF[verb]]
    missing = [name for name in ("hf_dir", "output_dir") if verb == "import"
               and not FLAGS[name].value]
    missing += [name for name in ("checkpoint", "output_dir") if verb == "export"
                and not FLAGS[name].value]
    if wrong or missing:
        what = (f"--{', --'.join(wrong)} {'does' if len(wrong) == 1 else 'do'} not apply to "
                f"{verb}" if wrong else f"{verb} needs --{', --'.join(missing)}")
        print(f"bert_tf.hf: error: {what}", file=sys.stderr)
        return 1

    from bert_tf.checkpoints import CheckpointError
    from bert_tf.families import ConfigError
    from bert_tf.hf import HubError
    from bert_tf.hf.convert import export_checkpoint, import_snapshot
    from bert_tf.text import VocabError

    try:
        if verb == "import":
            result = import_snapshot(FLAGS.hf_dir, FLAGS.output_dir)
        else:
            result = export_checkpoint(
                FLAGS.checkpoint,
                FLAGS.bert_config_file, FLAGS.vocab_file,
                FLAGS.output_dir, do_lower_case=FLAGS.do_lower_case, task=FLAGS.task,
                merges_file=FLAGS.merges_file)
    except (HubError, CheckpointError, ConfigError, VocabError) as e:
        print(f"bert_tf.hf {verb}: error: {e}", file=sys.stderr)
        return 1
    print("\n".join(result.report))
    return 0


if __name__ == "__main__":
    _define_flags()
    app.run(main)
