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

FLAGS = flags.FLAGS
SCRIPT = "run_classifier.py"

# The original's flags.
flags.DEFINE_string("data_dir", None,
                    "The input data dir (the GLUE root: <data_dir>/MRPC/train.tsv, ...).")
flags.DEFINE_string("albert_config_file", None,
                    "The config json file corresponding to the pre-trained ALBERT model. This "
                    "specifies the model architecture.")
flags.DEFINE_string("task_name", None, "The name of the task to train: cola, mnli, mismnli, "
                    "mrpc, rte, sst-2, sts-b, qqp, qnli or wnli.")
flags.DEFINE_string("vocab_file", None,
                    "The vocabulary file that the ALBERT model was trained on (unused with "
                    "--spm_model_file, as in the original).")
flags.DEFINE_string("spm_model_file", None, "The model file for sentence piece tokenization.")
flags.DEFINE_string("output_dir", None,
                    "The output directory where the model checkpoints will be written.")
flags.DEFINE_string("cached_dir", None,
                    "Path to cached training and dev tfrecord file. The file will be generated "
                    "if not exist (default: --output_dir).")
flags.DEFINE_string("init_checkpoint", None,
                    "Initial checkpoint (usually from a pre-trained ALBERT model).")
flags.DEFINE_string("albert_hub_module_handle", None,
                    "If set, the ALBERT hub module to use (not supported here: give "
                    "--albert_config_file and --init_checkpoint).")
flags.DEFINE_bool("do_lower_case", True,
                  "Whether to lower case the input text. Should be True for uncased models and "
                  "False for cased models.")
flags.DEFINE_integer("max_seq_length", 512,
                     "The maximum total input sequence length after SentencePiece tokenization. "
                     "Longer sequences are truncated, shorter ones padded.")
flags.DEFINE_bool("do_train", False, "Whether to run training.")
flags.DEFINE_bool("do_eval", False, "Whether to run eval on the dev set.")
flags.DEFINE_bool("do_predict", False,
                  "Whether to run the model in inference mode on the test set.")
flags.DEFINE_integer("train_batch_size", 32, "Total batch size for training.")
flags.DEFINE_integer("eval_batch_size", 8, "Total batch size for eval.")
flags.DEFINE_integer("predict_batch_size", 8, "Total batch size for predict.")
flags.DEFINE_float("learning_rate", 5e-5, "The initial learning rate for Adam.")
flags.DEFINE_integer("train_step", 1000, "Total number of training steps to perform.")
flags.DEFINE_integer("warmup_step", 0,
                     "number of steps to perform linear learning rate warmup for.")
flags.DEFINE_integer("save_checkpoints_steps", 1000, "How often to save the model checkpoint.")
flags.DEFINE_integer("iterations_per_loop", 1000,
                     "Steps run inside one tf.function call between host-side work.")
flags.DEFINE_string("export_dir", None,
                    "The directory where the exported SavedModel will be stored (not supported "
                    "here: export model.ckpt-best with python -m bert_tf.export).")
flags.DEFINE_float("threshold_to_export", float("nan"),
                   "The threshold value that should be used with the exported classifier (with "
                   "--export_dir only).")
shared_flags.define_tpu_flags()

# Added flags (docs/scale.md), among them the original's --optimizer and --keep_checkpoint_max.
shared_flags.define_trainer_flags()
FLAGS["optimizer"].help = ("Optimizer to use: adamw, BERT's AdamWeightDecay (the original's "
                           "default); lamb, ALBERT's LAMB (no bias correction).")
FLAGS["keep_checkpoint_max"].help = (
    "How many checkpoints to keep: unused, as in the original (training keeps every "
    "checkpoint; --do_eval scores them all and removes those that are neither the best nor "
    "one of the two newest).")
flags.declare_key_flag("optimizer")
flags.declare_key_flag("keep_checkpoint_max")
flags.DEFINE_float("classifier_dropout", 0.1,
                   "Dropout on the pooled output in training (the original fixes it at 0.1).")


def _refusal():
    """The message refusing flags this command does not run, or None."""
    if FLAGS.albert_hub_module_handle:
        return ("--albert_hub_module_handle: TF-Hub modules are not supported; give the "
                "release's --albert_config_file and --init_checkpoint (a Hub snapshot converts "
                "with python -m bert_tf.hf import)")
    if FLAGS.export_dir:
        return ("--export_dir: not supported here; export model.ckpt-best of --output_dir with "
                "python -m bert_tf.export --task=classifier")
    if not FLAGS.albert_config_file:
        return "--albert_config_file must be set"
    return None


def main(argv):
    del argv
    problem = _refusal()
    if problem:
        print(f"{SCRIPT}: error: {problem}", file=sys.stderr)
        return 1
    from bert_tf.albert.classifier_task import AlbertClassifierOptions, run
    from bert_tf.albert.config import AlbertConfig
    from bert_tf.data.classifier import ClassifierDataError

    return shared_flags.run_fine_tuning(
        SCRIPT, AlbertClassifierOptions, run, task_errors=(ClassifierDataError,),
        read_config=lambda: AlbertConfig.from_json_file(FLAGS.albert_config_file),
        data_dir=FLAGS.data_dir,
        task_name=FLAGS.task_name,
        spm_model_file=FLAGS.spm_model_file,
        vocab_file=FLAGS.vocab_file,
        cached_dir=FLAGS.cached_dir,
        do_lower_case=FLAGS.do_lower_case,
        max_seq_length=FLAGS.max_seq_length,
        eval_batch_size=FLAGS.eval_batch_size,
        predict_batch_size=FLAGS.predict_batch_size,
        num_train_steps=FLAGS.train_step,
        num_warmup_steps=FLAGS.warmup_step,
        classifier_dropout=FLAGS.classifier_dropout,
    )


def run_main():
    """`python -m bert_tf.albert.run_classifier`."""
    shared_flags.run_command(main, __name__, __doc__,
                             required=("data_dir", "task_name", "spm_model_file", "output_dir"))


if __name__ == "__main__":
    run_main()
