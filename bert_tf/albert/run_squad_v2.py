"""Fine-tunes ALBERT on SQuAD 2.0 and predicts: google-research/albert's run_squad_v2.py.

Its flags, names, defaults and meaning (`--spm_model_file`, `--albert_config_file` and
`--output_dir` required; the XLNet-style head's `--start_n_top`, `--end_n_top`,
`--dropout_prob`; the feature caches `--train_feature_file`, `--predict_feature_file`,
`--predict_feature_left_file`), plus bert_tf's trainer flags (--strategy, --mixed_precision,
--use_xla, --dynamic_padding, --shuffle_buffer_size, --seed, ...). --do_predict scores every
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

FLAGS = flags.FLAGS

# The original's flags.
flags.DEFINE_string("albert_config_file", None,
                    "The config json file corresponding to the pre-trained ALBERT model. This "
                    "specifies the model architecture.")
flags.DEFINE_string("vocab_file", None,
                    "The vocabulary file that the ALBERT model was trained on (unread with "
                    "--spm_model_file, as in the original).")
flags.DEFINE_string("spm_model_file", None, "The model file for sentence piece tokenization.")
flags.DEFINE_string("output_dir", None,
                    "The output directory where the model checkpoints will be written.")
flags.DEFINE_string("train_file", None, "SQuAD json for training. E.g., train-v1.1.json")
flags.DEFINE_string("predict_file", None,
                    "SQuAD json for predictions. E.g., dev-v1.1.json or test-v1.1.json")
flags.DEFINE_string("train_feature_file", None,
                    "training feature file (written when absent, else reused; default "
                    "<output_dir>/train.tf_record).")
flags.DEFINE_string("predict_feature_file", None,
                    "Location of predict features. If it doesn't exist, it will be written. If "
                    "it does exist, it will be read.")
flags.DEFINE_string("predict_feature_left_file", None,
                    "Location of predict features not passed to TPU. If it doesn't exist, it "
                    "will be written. If it does exist, it will be read (the original's pickle "
                    "of its features, ours or the original's).")
flags.DEFINE_string("init_checkpoint", None,
                    "Initial checkpoint (usually from a pre-trained BERT model).")
flags.DEFINE_string("albert_hub_module_handle", None,
                    "If set, the ALBERT hub module to use (not supported: refused).")
flags.DEFINE_bool("do_lower_case", True,
                  "Whether to lower case the input text. Should be True for uncased models and "
                  "False for cased models.")
flags.DEFINE_integer("max_seq_length", 384,
                     "The maximum total input sequence length after WordPiece tokenization. "
                     "Sequences longer than this will be truncated, and sequences shorter than "
                     "this will be padded.")
flags.DEFINE_integer("doc_stride", 128,
                     "When splitting up a long document into chunks, how much stride to take "
                     "between chunks.")
flags.DEFINE_integer("max_query_length", 64,
                     "The maximum number of tokens for the question. Questions longer than this "
                     "will be truncated to this length.")
flags.DEFINE_bool("do_train", False, "Whether to run training.")
flags.DEFINE_bool("do_predict", False, "Whether to run eval on the dev set.")
flags.DEFINE_integer("train_batch_size", 32, "Total batch size for training.")
flags.DEFINE_integer("predict_batch_size", 8, "Total batch size for predictions.")
flags.DEFINE_float("learning_rate", 5e-5, "The initial learning rate for Adam.")
flags.DEFINE_float("num_train_epochs", 3.0, "Total number of training epochs to perform.")
flags.DEFINE_float("warmup_proportion", 0.1,
                   "Proportion of training to perform linear learning rate warmup for. E.g., "
                   "0.1 = 10% of training.")
flags.DEFINE_integer("save_checkpoints_steps", 1000, "How often to save the model checkpoint.")
flags.DEFINE_integer("iterations_per_loop", 1000,
                     "How many steps to make in each estimator call.")
flags.DEFINE_integer("n_best_size", 20,
                     "The total number of n-best predictions to generate in the "
                     "nbest_predictions.json output file.")
flags.DEFINE_integer("max_answer_length", 30,
                     "The maximum length of an answer that can be generated. This is needed "
                     "because the start and end predictions are not conditioned on one "
                     "another.")
shared_flags.define_tpu_flags()
flags.DEFINE_integer("start_n_top", 5, "beam size for the start positions.")
flags.DEFINE_integer("end_n_top", 5, "beam size for the end positions.")
flags.DEFINE_float("dropout_prob", 0.1, "dropout probability.")

# Added flags (docs/scale.md).
shared_flags.define_trainer_flags()
# The original's RunConfig keeps every checkpoint; its prediction loop removes the old ones.
FLAGS.set_default("keep_checkpoint_max", 0)
flags.declare_key_flag("keep_checkpoint_max")


def main(argv):
    del argv
    from bert_tf.albert.config import AlbertConfig
    from bert_tf.albert.squad_v2_task import SquadV2Error, SquadV2Options, run

    if FLAGS.albert_hub_module_handle:
        print("run_squad_v2.py: error: --albert_hub_module_handle: TF-Hub modules are not "
              "supported; give --albert_config_file and --init_checkpoint (a Google release "
              "or a checkpoint exported with bert_tf.albert.export_checkpoints)",
              file=sys.stderr)
        return 1
    return shared_flags.run_fine_tuning(
        "run_squad_v2.py", SquadV2Options, run, task_errors=(SquadV2Error,),
        read_config=lambda: AlbertConfig.from_json_file(FLAGS.albert_config_file),
        **{name: FLAGS[name].value for name in (
            "spm_model_file", "vocab_file", "do_lower_case", "train_file", "predict_file",
            "train_feature_file", "predict_feature_file", "predict_feature_left_file",
            "max_seq_length", "doc_stride", "max_query_length", "predict_batch_size",
            "num_train_epochs", "warmup_proportion", "n_best_size", "max_answer_length",
            "start_n_top", "end_n_top", "dropout_prob")})


def run_main():
    """`python -m bert_tf.albert.run_squad_v2`."""
    shared_flags.run_command(main, __name__, __doc__,
                             required=("spm_model_file", "albert_config_file", "output_dir"))


if __name__ == "__main__":
    run_main()
