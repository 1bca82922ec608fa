"""Fine-tunes BERT for token classification (NER, chunking) on CoNLL files; not in the
original (issue 12).

--data_dir holds train.txt, dev.txt and test.txt in CoNLL format (one word per line, the tag
in the last column, blank lines between sentences, -DOCSTART- lines skipped; BIO or IOB1).
Outputs in --output_dir: train.tf_record, eval.tf_record, predict.tf_record, model.ckpt-N,
eval_results.txt (entity precision, recall and F1 as conlleval, token accuracy, losses),
eval_predictions.txt and test_predictions.txt (the input lines with the predicted tag
appended). The flags are run_classifier.py's (plus --doc_stride and --tagging_dropout) and the
trainer flags of run_pretraining.py. Training takes the windows in a fresh random permutation
each epoch (seeded by --seed; --shuffle_buffer_size=N > 0 uses a shuffle buffer of N records
instead, 0 the file order). Restarting with the same --output_dir resumes from its latest
checkpoint, at the same place in the epoch's permutation.
"""

import os

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

from absl import flags  # noqa: E402

from bert_tf import flags as shared_flags  # noqa: E402

FLAGS = flags.FLAGS

# run_classifier.py's flags.
flags.DEFINE_string("data_dir", None,
                    "The input data dir, holding train.txt, dev.txt and test.txt (CoNLL).")
flags.DEFINE_integer("max_seq_length", 128,
                     "Word pieces per record, [CLS] and [SEP] included. Longer sentences are "
                     "split into overlapping windows, shorter ones padded.")
flags.DEFINE_bool("do_train", False, "Whether to run training on train.txt.")
flags.DEFINE_bool("do_eval", False, "Whether to run eval on dev.txt.")
flags.DEFINE_bool("do_predict", False, "Whether to tag test.txt.")
flags.DEFINE_integer("train_batch_size", 32, "Total batch size (windows) for training.")
flags.DEFINE_integer("eval_batch_size", 8, "Total batch size for eval.")
flags.DEFINE_integer("predict_batch_size", 8, "Total batch size for predict.")
shared_flags.define_fine_tuning_flags()
flags.declare_key_flag("predict_precision")  # shown by --help (a prediction flag)
shared_flags.define_tpu_flags()

# Added flags.
# -1 (input_pipeline.PERMUTE_EACH_EPOCH, not imported here: it would load TensorFlow for
# --help): a fresh permutation of the training windows each epoch, not the classifier's buffer
# of 100, because CoNLL files hold one story after another, which a 100-record window barely
# mixes.
shared_flags.define_trainer_flags(shuffle_buffer_size=-1)
flags.DEFINE_integer("doc_stride", 64,
                     "Word pieces between the starts of consecutive windows of a sentence "
                     "longer than max_seq_length - 2 (as run_squad.py's doc_stride).")
flags.DEFINE_float("tagging_dropout", 0.1, "Dropout on the sequence output in training.")


def main(argv):
    del argv
    from bert_tf.data.conll import ConllError
    from bert_tf.tasks.tagging import TaggingOptions, run

    return shared_flags.run_fine_tuning(
        "run_tagging.py", TaggingOptions, run, task_errors=(ConllError,),
        data_dir=FLAGS.data_dir,
        vocab_file=FLAGS.vocab_file,
        do_lower_case=FLAGS.do_lower_case,
        max_seq_length=FLAGS.max_seq_length,
        doc_stride=FLAGS.doc_stride,
        eval_batch_size=FLAGS.eval_batch_size,
        predict_batch_size=FLAGS.predict_batch_size,
        num_train_epochs=FLAGS.num_train_epochs,
        warmup_proportion=FLAGS.warmup_proportion,
        tagging_dropout=FLAGS.tagging_dropout,
    )


def run():
    """`python -m bert_tf.run_tagging` and the root run_tagging.py."""
    shared_flags.run_command(main, __name__, __doc__,
                             required=("data_dir", "vocab_file", "bert_config_file", "output_dir"))


if __name__ == "__main__":
    run()
