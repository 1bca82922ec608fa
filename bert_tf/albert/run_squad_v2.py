"""Fine-tunes ALBERT on SQuAD 2.0 and predicts: google-research/albert's run_squad_v2.py.

Its flags, names, defaults and meaning (`--spm_model_file`, `--albert_config_file` and
`--output_dir` required; the XLNet-style head's `--start_n_top`, `--end_n_top`,
`--dropout_prob`; the feature caches `--train_feature_file`, `--predict_feature_file`,
`--predict_feature_left_file`), plus bert_tf's trainer flags (--strategy, --mixed_precision,
--use_xla, --dynamic_padding, --shuffle_buffer_size, --seed, ...). Training saves
model.ckpt-0 (the starting weights), then a checkpoint every --save_checkpoints_steps and at
the end, each with its .meta, all kept, as the original's Estimator. --do_predict scores every
checkpoint of --output_dir on --predict_file (null threshold chosen on its answers), copies the
best by F1 to model.ckpt-best, writes eval_results.txt, and leaves predictions.json,
nbest_predictions.json and null_odds.json of model.ckpt-best.

Where the original fails, this one works and says what it did: --do_predict without
--train_file (the original always reads it, for the last step its loop waits for) scores the
checkpoints present; no --train_feature_file writes the training records to
<output_dir>/train.tf_record; no checkpoint in --output_dir predicts with --init_checkpoint
(its SQuAD 2.0 head must be there; the original waits forever). It does not wait for
checkpoints a training elsewhere has yet to write. TF-Hub modules
(--albert_hub_module_handle) are refused: give the checkpoint and config.
"""

import os
import sys

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

from absl import flags  # noqa: E402

from bert_tf import flags as shared_flags  # noqa: E402
from bert_tf.albert import command_flags  # noqa: E402

FLAGS = flags.FLAGS

# The original's flags (those of both SQuAD commands: command_flags), and bert_tf's trainer
# flags (docs/scale.md).
command_flags.define_squad_flags(
    vocab_file=("The vocabulary file that the ALBERT model was trained on (unread with "
                "--spm_model_file, as in the original)."),
    train_feature_file=("training feature file (written when absent, else reused; default "
                        "<output_dir>/train.tf_record)."),
    predict_feature_left_file=(
        "Location of predict features not passed to TPU. If it doesn't exist, it will be "
        "written. If it does exist, it will be read (the original's pickle of its features, "
        "ours or the original's)."),
    init_checkpoint="Initial checkpoint (usually from a pre-trained BERT model).",
    albert_hub_module_handle="If set, the ALBERT hub module to use (not supported: refused).",
    max_seq_length=("The maximum total input sequence length after WordPiece tokenization. "
                    "Sequences longer than this will be truncated, and sequences shorter than "
                    "this will be padded."),
    iterations_per_loop="How many steps to make in each estimator call.")
flags.DEFINE_integer("start_n_top", 5, "beam size for the start positions.")
flags.DEFINE_integer("end_n_top", 5, "beam size for the end positions.")
flags.DEFINE_float("dropout_prob", 0.1, "dropout probability.")


def main(argv):
    del argv
    from bert_tf.albert.squad_v2_task import SquadV2Error, SquadV2Options, run

    if FLAGS.albert_hub_module_handle:
        print("run_squad_v2.py: error: --albert_hub_module_handle: TF-Hub modules are not "
              "supported; give --albert_config_file and --init_checkpoint (a Google release "
              "or a checkpoint exported with bert_tf.albert.export_checkpoints)",
              file=sys.stderr)
        return 1
    return command_flags.run_fine_tuning(
        "run_squad_v2.py", SquadV2Options, run, task_errors=(SquadV2Error,),
        fields=command_flags.SQUAD_FIELDS + ("start_n_top", "end_n_top", "dropout_prob"))


def run_main():
    """`python -m bert_tf.albert.run_squad_v2`."""
    shared_flags.run_command(main, __name__, __doc__,
                             required=("spm_model_file", "albert_config_file", "output_dir"))


if __name__ == "__main__":
    run_main()
