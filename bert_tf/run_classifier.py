"""Fine-tunes BERT for sentence (pair) classification: the original run_classifier.py.

The original's flags, names, defaults and meaning (REFERENCE.md §11), its tasks (XNLI, MNLI,
MRPC, CoLA) plus SST-2, QNLI, QQP, RTE, WNLI, STS-B and a task for your own TSV/CSV files, its
output files (train.tf_record, eval.tf_record, predict.tf_record, model.ckpt-N,
eval_results.txt, test_results.tsv), plus the trainer flags of run_pretraining.py.
Restarting with the same --output_dir resumes from its latest checkpoint.
"""

import os

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

from absl import flags  # noqa: E402

from bert_tf import flags as shared_flags  # noqa: E402

FLAGS = flags.FLAGS

# The original's flags.
flags.DEFINE_string("data_dir", None,
                    "The input data dir. Should contain the .tsv files (or other data files) "
                    "for the task.")
flags.DEFINE_string("task_name", None, "The name of the task to train.")
flags.DEFINE_integer("max_seq_length", 128,
                     "The maximum total input sequence length after WordPiece tokenization. "
                     "Longer sequences are truncated, shorter ones padded.")
flags.DEFINE_bool("do_train", False, "Whether to run training.")
flags.DEFINE_bool("do_eval", False, "Whether to run eval on the dev set.")
flags.DEFINE_bool("do_predict", False, "Whether to run the model in inference mode on the "
                  "test set.")
flags.DEFINE_integer("train_batch_size", 32, "Total batch size for training.")
flags.DEFINE_integer("eval_batch_size", 8, "Total batch size for eval.")
flags.DEFINE_integer("predict_batch_size", 8, "Total batch size for predict.")
shared_flags.define_fine_tuning_flags()
flags.declare_key_flag("predict_precision")  # shown by --help (a prediction flag)
shared_flags.define_tpu_flags()

# Added flags.
shared_flags.define_trainer_flags()
flags.DEFINE_float("classifier_dropout", 0.1,
                   "Dropout on the pooled output in training (the original fixes it at 0.1).")
flags.DEFINE_string("labels", None,
                    "Task `custom` only: the label list, comma-separated (default: the "
                    "list in task.json beside --init_checkpoint, else the sorted labels of the "
                    "training file).")


def main(argv):
    del argv
    from bert_tf.data.classifier import ClassifierDataError
    from bert_tf.tasks.classification import ClassifierOptions, run

    return shared_flags.run_fine_tuning(
        "run_classifier.py", ClassifierOptions, run, task_errors=(ClassifierDataError,),
        data_dir=FLAGS.data_dir,
        task_name=FLAGS.task_name,
        vocab_file=FLAGS.vocab_file,
        do_lower_case=FLAGS.do_lower_case,
        max_seq_length=FLAGS.max_seq_length,
        eval_batch_size=FLAGS.eval_batch_size,
        predict_batch_size=FLAGS.predict_batch_size,
        num_train_epochs=FLAGS.num_train_epochs,
        warmup_proportion=FLAGS.warmup_proportion,
        classifier_dropout=FLAGS.classifier_dropout,
        labels=FLAGS.labels,
    )


def run():
    """`python -m bert_tf.run_classifier` and the root run_classifier.py."""
    shared_flags.run_command(main, __name__, __doc__,
                             required=("data_dir", "task_name", "vocab_file", "bert_config_file",
                                       "output_dir"))


if __name__ == "__main__":
    run()
