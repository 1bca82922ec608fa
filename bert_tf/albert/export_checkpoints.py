"""Exports the weights of an ALBERT checkpoint: google-research/albert's export_checkpoints.py.

    python -m bert_tf.albert.export_checkpoints --albert_directory=DIR --export_path=OUT

Reads DIR/albert_config.json and the checkpoint DIR/--checkpoint_name (model.ckpt-best), and
writes OUT.index / OUT.data-00000-of-00001 (and the `checkpoint` state file beside them): the
weights of the encoder and of the masked-LM and sentence-order heads under the original's
names, and global_step 0; no optimizer slots. Heads missing from the checkpoint (a fine-tuned
one) are written with their random initial values, as the original does. Unlike the original,
no OUT.meta graph (its placeholders input_ids, ...) is written, and bert_config.json is
written beside the files.
"""

import os
import sys

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

from absl import flags, logging  # noqa: E402

from bert_tf import flags as shared_flags  # noqa: E402

FLAGS = flags.FLAGS

flags.DEFINE_string("albert_directory", None,
                    "The directory of the ALBERT model: albert_config.json and the checkpoint.")
flags.DEFINE_string("checkpoint_name", "model.ckpt-best",
                    "Name of the checkpoint under albert_directory to be exported.")
flags.DEFINE_bool("do_lower_case", True,
                  "Whether to lower case the input text (unused, as in the original).")
flags.DEFINE_string("export_path", None, "Path to the output module.")


def export(albert_directory, checkpoint_name, export_path):
    """Writes the export (see the module docstring); returns its prefix."""
    from bert_tf import checkpoints
    from bert_tf.albert.config import AlbertConfig
    from bert_tf.albert.pretraining import AlbertPretrainingModel

    config = AlbertConfig.from_json_file(os.path.join(albert_directory, "albert_config.json"))
    model = AlbertPretrainingModel(config)
    report = checkpoints.load_original_checkpoint(
        model, os.path.join(albert_directory, checkpoint_name))
    if report.not_in_checkpoint:
        logging.warning("%s lacks %s: exported with their random initial values",
                        report.prefix, ", ".join(report.not_in_checkpoint))
    return checkpoints.save_original_checkpoint(model, export_path, global_step=0)


def main(argv):
    del argv
    logging.set_verbosity(logging.INFO)
    from bert_tf import families
    from bert_tf.checkpoints import CheckpointError
    from bert_tf.files import OutputError

    try:
        prefix = export(FLAGS.albert_directory, FLAGS.checkpoint_name, FLAGS.export_path)
    except (families.ConfigError, CheckpointError, OutputError) as e:
        print(f"export_checkpoints.py: error: {e}", file=sys.stderr)
        return 1
    logging.info("Exported %s", prefix)
    return 0


def run_main():
    """`python -m bert_tf.albert.export_checkpoints`."""
    shared_flags.run_command(main, __name__, __doc__,
                             required=("albert_directory", "export_path"))


if __name__ == "__main__":
    run_main()
