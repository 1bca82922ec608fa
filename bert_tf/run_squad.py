"""Fine-tunes BERT for SQuAD 1.1 / 2.0 question answering: the original run_squad.py.

The original's flags, names, defaults and meaning (REFERENCE.md §12), its records
(train.tf_record, eval.tf_record), checkpoints and prediction files (predictions.json,
nbest_predictions.json, null_odds.json), plus the official evaluation (eval_results.json)
when the predict file has answers, and the trainer flags of run_pretraining.py. Prediction
batches keep max_seq_length (the original's n-best ranks the padded positions' logits too);
--predict_dynamic_padding cuts them, faster but not the original's answers.
Restarting with the same --output_dir resumes from its latest checkpoint.
"""

import os

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

from absl import flags  # noqa: E402

from bert_tf import flags as shared_flags  # noqa: E402

FLAGS = flags.FLAGS

# The original's flags.
flags.DEFINE_string("train_file", None, "SQuAD json for training. E.g., train-v1.1.json")
flags.DEFINE_string("predict_file", None,
                    "SQuAD json for predictions. E.g., dev-v1.1.json or test-v1.1.json")
flags.DEFINE_integer("max_seq_length", 384,
                     "The maximum total input sequence length after WordPiece tokenization.")
flags.DEFINE_integer("doc_stride", 128,
                     "When splitting up a long document into chunks, how much stride to take "
                     "between chunks.")
flags.DEFINE_integer("max_query_length", 64,
                     "The maximum number of tokens for the question. Questions longer than "
                     "this will be truncated to this length.")
flags.DEFINE_bool("do_train", False, "Whether to run training.")
flags.DEFINE_bool("do_predict", False, "Whether to run eval on the dev set.")
flags.DEFINE_integer("train_batch_size", 32, "Total batch size for training.")
flags.DEFINE_integer("predict_batch_size", 8, "Total batch size for predictions.")
flags.DEFINE_integer("n_best_size", 20,
                     "The total number of n-best predictions to generate in the "
                     "nbest_predictions.json output file.")
flags.DEFINE_integer("max_answer_length", 30,
                     "The maximum length of an answer that can be generated.")
flags.DEFINE_bool("verbose_logging", False,
                  "If true, all of the warnings related to data processing will be printed.")
flags.DEFINE_bool("version_2_with_negative", False,
                  "If true, the SQuAD examples contain some that do not have an answer.")
flags.DEFINE_float("null_score_diff_threshold", 0.0,
                   "If null_score - best_non_null is greater than the threshold predict null.")
shared_flags.define_fine_tuning_flags()
flags.declare_key_flag("predict_precision")  # shown by --help (a prediction flag)
shared_flags.define_tpu_flags()

# Added flags.
shared_flags.define_trainer_flags()
shared_flags.define_predict_padding_flag()
flags.declare_key_flag("predict_dynamic_padding")  # in --help: not the original's


def main(argv):
    del argv
    from bert_tf.tasks.squad import SquadOptions, run

    return shared_flags.run_fine_tuning(
        "run_squad.py", SquadOptions, run, task_errors=(),
        vocab_file=FLAGS.vocab_file,
        train_file=FLAGS.train_file,
        predict_file=FLAGS.predict_file,
        do_lower_case=FLAGS.do_lower_case,
        max_seq_length=FLAGS.max_seq_length,
        doc_stride=FLAGS.doc_stride,
        max_query_length=FLAGS.max_query_length,
        predict_batch_size=FLAGS.predict_batch_size,
        num_train_epochs=FLAGS.num_train_epochs,
        warmup_proportion=FLAGS.warmup_proportion,
        n_best_size=FLAGS.n_best_size,
        max_answer_length=FLAGS.max_answer_length,
        verbose_logging=FLAGS.verbose_logging,
        version_2_with_negative=FLAGS.version_2_with_negative,
        null_score_diff_threshold=FLAGS.null_score_diff_threshold,
        predict_dynamic_padding=FLAGS.predict_dynamic_padding,
    )


def run():
    """`python -m bert_tf.run_squad` and the root run_squad.py."""
    shared_flags.run_command(main, __name__, __doc__,
                             required=("vocab_file", "bert_config_file", "output_dir"))


if __name__ == "__main__":
    run()
