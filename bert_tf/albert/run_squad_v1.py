"""Fine-tunes ALBERT on SQuAD 1.1: google-research/albert's run_squad_v1.py.

Its flags, names, defaults and meaning: --albert_config_file, --spm_model_file (SentencePiece
pieces aligned to the paragraph's characters), --train_file / --predict_file, the feature
files --train_feature_file, --predict_feature_file and --predict_feature_left_file (written,
or read back when they exist), --do_train, --do_predict. --do_predict scores every checkpoint
of --output_dir on the predict file (eval_results.txt: exact_match and f1), copies the best to
model.ckpt-best and writes its predictions.json and nbest_predictions.json. Without --do_train
(the original crashes there) it scores the checkpoints --output_dir has, or predicts with
--init_checkpoint's weights when it has none. Plus bert_tf's trainer flags (--strategy,
--mixed_precision, --use_xla, --dynamic_padding, --shuffle_buffer_size, --seed, ...).
Restarting with the same --output_dir resumes from its latest checkpoint.
"""

import os
import sys

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

from absl import flags  # noqa: E402

from bert_tf import flags as shared_flags  # noqa: E402

FLAGS = flags.FLAGS
SCRIPT = "run_squad_v1.py"

# The original's flags.
flags.DEFINE_string("albert_config_file", None,
                    "The config json file corresponding to the pre-trained ALBERT model. This "
                    "specifies the model architecture.")
flags.DEFINE_string("vocab_file", None,
                    "The vocabulary file that the ALBERT model was trained on (unused with "
                    "--spm_model_file, as in the original).")
flags.DEFINE_string("spm_model_file", None, "The model file for sentence piece tokenization.")
flags.DEFINE_string("output_dir", None,
                    "The output directory where the model checkpoints will be written.")
flags.DEFINE_string("train_file", None, "SQuAD json for training. E.g., train-v1.1.json")
flags.DEFINE_string("predict_file", None,
                    "SQuAD json for predictions. E.g., dev-v1.1.json or test-v1.1.json")
flags.DEFINE_string("train_feature_file", None,
                    "training feature file (default here: <output_dir>/train.tf_record; the "
                    "original needs it). Reused when it exists.")
flags.DEFINE_string("predict_feature_file", None,
                    "Location of predict features. If it doesn't exist, it will be written. If "
                    "it does exist, it will be read.")
flags.DEFINE_string("predict_feature_left_file", None,
                    "Location of predict features not passed to TPU. If it doesn't exist, it "
                    "will be written. If it does exist, it will be read.")
flags.DEFINE_string("init_checkpoint", None,
                    "Initial checkpoint (usually from a pre-trained ALBERT model).")
flags.DEFINE_string("albert_hub_module_handle", None,
                    "If set, the ALBERT hub module to use (not supported here: give "
                    "--albert_config_file and --init_checkpoint).")
flags.DEFINE_bool("do_lower_case", True,
                  "Whether to lower case the input text. Should be True for uncased models and "
                  "False for cased models.")
flags.DEFINE_integer("max_seq_length", 384,
                     "The maximum total input sequence length after SentencePiece tokenization. "
                     "Sequences longer than this will be truncated, and sequences shorter than "
                     "this will be padded.")
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
flags.DEFINE_float("learning_rate", 5e-5, "The initial learning rate for Adam.")
flags.DEFINE_float("num_train_epochs", 3.0, "Total number of training epochs to perform.")
flags.DEFINE_float("warmup_proportion", 0.1,
                   "Proportion of training to perform linear learning rate warmup for. "
                   "E.g., 0.1 = 10% of training.")
flags.DEFINE_integer("save_checkpoints_steps", 1000, "How often to save the model checkpoint.")
flags.DEFINE_integer("iterations_per_loop", 1000,
                     "Steps run inside one tf.function call between host-side work.")
flags.DEFINE_integer("n_best_size", 20,
                     "The total number of n-best predictions to generate in the "
                     "nbest_predictions.json output file.")
flags.DEFINE_integer("max_answer_length", 30,
                     "The maximum length of an answer that can be generated. This is needed "
                     "because the start and end predictions are not conditioned on one another.")
flags.DEFINE_bool("use_einsum", True,
                  "Whether to use tf.einsum or tf.reshape+tf.matmul for dense layers (the same "
                  "numbers either way; unused here).")
flags.DEFINE_string("export_dir", None,
                    "The directory where the exported SavedModel will be stored (not supported "
                    "here: export model.ckpt-best with python -m bert_tf.export --task=squad).")
shared_flags.define_tpu_flags()

# Added flags (docs/scale.md).
shared_flags.define_trainer_flags()
FLAGS.set_default("keep_checkpoint_max", 0)
FLAGS["keep_checkpoint_max"].help = (
    "Checkpoints kept in output_dir while training (0 keeps all, as the original's RunConfig; "
    "--do_predict scores them and prunes as the original).")
flags.declare_key_flag("keep_checkpoint_max")


def _refusal():
    """The message refusing flags this command does not run, or None."""
    if FLAGS.albert_hub_module_handle:
        return ("--albert_hub_module_handle: TF-Hub modules are not supported; give the "
                "release's --albert_config_file and --init_checkpoint (a Hub snapshot converts "
                "with python -m bert_tf.hf import)")
    if FLAGS.export_dir:
        return ("--export_dir: not supported here; export model.ckpt-best of --output_dir with "
                "python -m bert_tf.export --task=squad")
    return None


def main(argv):
    del argv
    problem = _refusal()
    if problem:
        print(f"{SCRIPT}: error: {problem}", file=sys.stderr)
        return 1
    from bert_tf.albert.config import AlbertConfig
    from bert_tf.albert.squad_data import SquadDataError
    from bert_tf.albert.squad_task import AlbertSquadOptions, run_v1
    from bert_tf.evaluation.squad_eval import SquadEvalError

    return shared_flags.run_fine_tuning(
        SCRIPT, AlbertSquadOptions, run_v1, task_errors=(SquadDataError, SquadEvalError),
        read_config=lambda: AlbertConfig.from_json_file(FLAGS.albert_config_file),
        vocab_file=FLAGS.vocab_file,
        spm_model_file=FLAGS.spm_model_file,
        train_file=FLAGS.train_file,
        predict_file=FLAGS.predict_file,
        train_feature_file=FLAGS.train_feature_file,
        predict_feature_file=FLAGS.predict_feature_file,
        predict_feature_left_file=FLAGS.predict_feature_left_file,
        do_lower_case=FLAGS.do_lower_case,
        max_seq_length=FLAGS.max_seq_length,
        doc_stride=FLAGS.doc_stride,
        max_query_length=FLAGS.max_query_length,
        predict_batch_size=FLAGS.predict_batch_size,
        num_train_epochs=FLAGS.num_train_epochs,
        warmup_proportion=FLAGS.warmup_proportion,
        n_best_size=FLAGS.n_best_size,
        max_answer_length=FLAGS.max_answer_length,
    )


def run_main():
    """`python -m bert_tf.albert.run_squad_v1`."""
    shared_flags.run_command(main, __name__, __doc__,
                             required=("spm_model_file", "albert_config_file", "output_dir"))


if __name__ == "__main__":
    run_main()
