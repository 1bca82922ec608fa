"""Fine-tunes ALBERT on a GLUE task: google-research/albert's run_classifier.py.

Its flags, names, defaults and meaning: --data_dir is the GLUE root (<data_dir>/MRPC/train.tsv),
--task_name one of cola, mnli, mismnli, mrpc, rte, sst-2, sts-b, qqp, qnli, wnli, texts through
preprocess_text and --spm_model_file's SentencePiece, --train_step and --warmup_step,
--optimizer adamw or lamb (ALBERT's), records cached as <cached_dir>/<task>_train.tf_record and
<task>_eval.tf_record. --do_eval scores every checkpoint of --output_dir (eval_results.txt,
best_trial.txt) and copies the best to model.ckpt-best; --do_predict predicts with it
(test_results.tsv, submit_results.tsv). Plus bert_tf's trainer flags (--strategy,
--mixed_precision, --use_xla, --dynamic_padding, --shuffle_buffer_size, --seed, ...).
Restarting with the same --output_dir resumes from its latest checkpoint.
"""

import os
import sys

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

from absl import flags  # noqa: E402

from bert_tf import flags as shared_flags  # noqa: E402
from bert_tf.albert import command_flags  # noqa: E402

FLAGS = flags.FLAGS
SCRIPT = "run_classifier.py"

# The original's flags (the common ones: command_flags), and bert_tf's trainer flags
# (docs/scale.md), among them the original's --optimizer and --keep_checkpoint_max.
command_flags.define_albert_flags(
    optimizer=("Optimizer to use: adamw, BERT's AdamWeightDecay (the original's default); "
               "lamb, ALBERT's LAMB (no bias correction)."),
    keep_checkpoint_max=(
        "How many checkpoints to keep: unused, as in the original (training keeps every "
        "checkpoint; --do_eval scores them all and removes those that are neither the best nor "
        "one of the two newest)."))
flags.declare_key_flag("optimizer")
flags.declare_key_flag("keep_checkpoint_max")
command_flags.define_predict_precision_flag()
flags.DEFINE_string("data_dir", None,
                    "The input data dir (the GLUE root: <data_dir>/MRPC/train.tsv, ...).")
flags.DEFINE_string("task_name", None, "The name of the task to train: cola, mnli, mismnli, "
                    "mrpc, rte, sst-2, sts-b, qqp, qnli or wnli.")
flags.DEFINE_string("cached_dir", None,
                    "Path to cached training and dev tfrecord file. The file will be generated "
                    "if not exist (default: --output_dir).")
flags.DEFINE_integer("max_seq_length", 512,
                     "The maximum total input sequence length after SentencePiece tokenization. "
                     "Longer sequences are truncated, shorter ones padded.")
flags.DEFINE_bool("do_eval", False, "Whether to run eval on the dev set.")
flags.DEFINE_bool("do_predict", False,
                  "Whether to run the model in inference mode on the test set.")
flags.DEFINE_integer("eval_batch_size", 8, "Total batch size for eval.")
flags.DEFINE_integer("predict_batch_size", 8, "Total batch size for predict.")
flags.DEFINE_integer("train_step", 1000, "Total number of training steps to perform.")
flags.DEFINE_integer("warmup_step", 0,
                     "number of steps to perform linear learning rate warmup for.")
flags.DEFINE_string("export_dir", None,
                    "The directory where the exported SavedModel will be stored (not supported "
                    "here: export model.ckpt-best with python -m bert_tf.export).")
flags.DEFINE_float("threshold_to_export", float("nan"),
                   "The threshold value that should be used with the exported classifier (with "
                   "--export_dir only).")
# Added.
flags.DEFINE_float("classifier_dropout", 0.1,
                   "Dropout on the pooled output in training (the original fixes it at 0.1).")


def main(argv):
    del argv
    problem = command_flags.unsupported_flag("classifier")
    if not problem and not FLAGS.albert_config_file:
        problem = "--albert_config_file must be set"
    if problem:
        print(f"{SCRIPT}: error: {problem}", file=sys.stderr)
        return 1
    from bert_tf.albert.classifier_task import AlbertClassifierOptions, run
    from bert_tf.data.classifier import ClassifierDataError

    return command_flags.run_fine_tuning(
        SCRIPT, AlbertClassifierOptions, run, task_errors=(ClassifierDataError,),
        fields=("data_dir", "task_name", "spm_model_file", "vocab_file", "cached_dir",
                "do_lower_case", "max_seq_length", "eval_batch_size", "predict_batch_size",
                "classifier_dropout"),
        num_train_steps=FLAGS.train_step,
        num_warmup_steps=FLAGS.warmup_step,
    )


def run_main():
    """`python -m bert_tf.albert.run_classifier`."""
    shared_flags.run_command(main, __name__, __doc__,
                             required=("data_dir", "task_name", "spm_model_file", "output_dir"))


if __name__ == "__main__":
    run_main()
