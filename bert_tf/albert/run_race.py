"""Fine-tunes ALBERT on RACE (4-option reading comprehension): google-research/albert's
run_race.py.

Its flags, names, defaults and meaning (`--data_dir` holds RACE/{train,dev,test}/{middle,high}/
all.txt; `--spm_model_file`, `--albert_config_file`, `--output_dir` required; `--train_step`,
`--warmup_step`, `--max_qa_length`, `--dropout_prob`, `--high_only`, `--middle_only`; the record
caches `--train_file`, `--eval_file`), plus bert_tf's trainer flags (--strategy,
--mixed_precision, --use_xla, --optimizer, --dynamic_padding, --shuffle_buffer_size, --seed,
...). --do_train (default true) trains and keeps a checkpoint every --save_checkpoints_steps;
--do_eval (default true) scores every checkpoint of --output_dir on the dev set, keeps the best
as model.ckpt-best and writes eval_results.txt; --do_predict scores model.ckpt-best on the test
set into predict_results.txt.

Where the original fails, this one works and says what it did (the original's --do_predict
fails on CPU; without a checkpoint its eval waits forever): see bert_tf/albert/race_task.py.
--num_keep_checkpoint is read and unused, as in the original. TF-Hub modules
(--albert_hub_module_handle) are refused: give the checkpoint and config.
"""

import os
import sys

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

from absl import flags  # noqa: E402

from bert_tf import flags as shared_flags  # noqa: E402
from bert_tf.albert import command_flags  # noqa: E402

FLAGS = flags.FLAGS

# The original's flags (the common ones: command_flags, with run_race.py's help and defaults),
# and bert_tf's trainer flags (docs/scale.md).
command_flags.define_albert_flags(
    vocab_file=("The vocabulary file that the ALBERT model was trained on (unread with "
                "--spm_model_file, as in the original)."),
    albert_hub_module_handle="If set, the ALBERT hub module to use (not supported: refused).",
    iterations_per_loop="How many steps to make in each estimator call.")
FLAGS.set_default("do_train", True)
FLAGS.set_default("learning_rate", 1e-5)
FLAGS.set_default("save_checkpoints_steps", 100)
flags.DEFINE_string("data_dir", None,
                    "The input data dir: RACE/{train,dev,test}/{middle,high}/all.txt under it "
                    "(one JSON document per line; else the release's one-document .txt files).")
flags.DEFINE_string("task_name", "race", "The name of the task to train.")
flags.DEFINE_string("train_file", None,
                    "path to preprocessed tfrecord file. The file will be generated if not "
                    "exist (default <output_dir>/train.tf_record).")
flags.DEFINE_string("eval_file", None,
                    "path to preprocessed tfrecord file. The file will be generated if not "
                    "exist (default <output_dir>/eval.tf_record).")
flags.DEFINE_string("predict_file", None,
                    "path to preprocessed tfrecord file. The file will be generated if not "
                    "exist (default <output_dir>/predict.tf_record; the original ignores this "
                    "flag and always writes that one).")
flags.DEFINE_float("dropout_prob", 0.1, "dropout probability.")
flags.DEFINE_integer("max_seq_length", 512,
                     "The maximum total input sequence length (of each article + question + "
                     "option) after SentencePiece tokenization. Longer articles are truncated, "
                     "shorter sequences padded.")
flags.DEFINE_integer("max_qa_length", 128,
                     "The maximum length of the question + option, in pieces: longer ones keep "
                     "their last max_qa_length pieces.")
flags.DEFINE_integer("num_keep_checkpoint", 5,
                     "maximum number of keep checkpoints (unused, as in the original: its eval "
                     "loop removes the scored checkpoints).")
flags.DEFINE_bool("high_only", False, "Whether to only run the model on the high school set.")
flags.DEFINE_bool("middle_only", False,
                  "Whether to only run the model on the middle school set.")
flags.DEFINE_bool("do_eval", True, "Whether to run eval on the dev set.")
flags.DEFINE_bool("do_predict", False,
                  "Whether to run the model in inference mode on the test set.")
flags.DEFINE_integer("eval_batch_size", 8, "Total batch size for eval.")
flags.DEFINE_integer("predict_batch_size", 8, "Total batch size for predict.")
flags.DEFINE_integer("train_step", 12000, "Total number of training steps to perform.")
flags.DEFINE_integer("warmup_step", 1000,
                     "number of steps to perform linear learning rate warmup for.")
# The original's RunConfig keeps every checkpoint; its eval loop removes the scored ones.
FLAGS.set_default("keep_checkpoint_max", 0)
flags.declare_key_flag("keep_checkpoint_max")

def main(argv):
    del argv
    from bert_tf.albert.race_data import RaceDataError
    from bert_tf.albert.race_task import RaceOptions, run

    if FLAGS.albert_hub_module_handle:
        print("run_race.py: error: --albert_hub_module_handle: TF-Hub modules are not "
              "supported; give --albert_config_file and --init_checkpoint (a Google release "
              "or a checkpoint exported with bert_tf.albert.export_checkpoints)",
              file=sys.stderr)
        return 1
    return command_flags.run_fine_tuning(
        "run_race.py", RaceOptions, run, task_errors=(RaceDataError,),
        fields=("data_dir", "spm_model_file", "vocab_file", "task_name", "train_file",
                "eval_file", "predict_file", "do_lower_case", "dropout_prob", "max_seq_length",
                "max_qa_length", "high_only", "middle_only", "eval_batch_size",
                "predict_batch_size"),
        num_train_steps=FLAGS.train_step, num_warmup_steps=FLAGS.warmup_step)


def run_main():
    """`python -m bert_tf.albert.run_race`."""
    shared_flags.run_command(main, __name__, __doc__,
                             required=("data_dir", "spm_model_file", "albert_config_file",
                                       "output_dir"))


if __name__ == "__main__":
    run_main()
