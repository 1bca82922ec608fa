"""What the ALBERT fine-tuning commands (run_classifier, run_squad_v1, run_squad_v2) share:
the original's common flags, the SQuAD commands' flags, the refusal of the flags they do not
run, and their body around `bert_tf.flags.run_fine_tuning`.

The flags defined here are filed under the command that calls (absl's disclaim_key_flags), so
its --help and --helpfull list them as the command's own, as when it defined them itself.
A command whose help text of a flag differs passes it by the flag's name (`**help_texts`).
"""

from absl import flags

from bert_tf import flags as shared_flags

flags.disclaim_key_flags()

# The SQuAD fields of AlbertSquadOptions and SquadV2Options, named as their flags.
SQUAD_FIELDS = (
    "spm_model_file", "vocab_file", "do_lower_case", "train_file", "predict_file",
    "train_feature_file", "predict_feature_file", "predict_feature_left_file", "max_seq_length",
    "doc_stride", "max_query_length", "predict_batch_size", "num_train_epochs",
    "warmup_proportion", "n_best_size", "max_answer_length")


def _set_help(help_texts):
    for name, text in help_texts.items():
        flags.FLAGS[name].help = text


def define_albert_flags(**help_texts):
    """The original fine-tuning scripts' common flags (albert_config_file, vocab_file,
    spm_model_file, output_dir, init_checkpoint, albert_hub_module_handle, do_lower_case,
    do_train, train_batch_size, learning_rate, save_checkpoints_steps, iterations_per_loop),
    the TPU flags, and bert_tf's trainer flags; `help_texts` (flag name: help) replace the
    help of those named."""
    flags.DEFINE_string("albert_config_file", None,
                        "The config json file corresponding to the pre-trained ALBERT model. "
                        "This specifies the model architecture.")
    flags.DEFINE_string("vocab_file", None,
                        "The vocabulary file that the ALBERT model was trained on (unused with "
                        "--spm_model_file, as in the original).")
    flags.DEFINE_string("spm_model_file", None,
                        "The model file for sentence piece tokenization.")
    flags.DEFINE_string("output_dir", None,
                        "The output directory where the model checkpoints will be written.")
    flags.DEFINE_string("init_checkpoint", None,
                        "Initial checkpoint (usually from a pre-trained ALBERT model).")
    flags.DEFINE_string("albert_hub_module_handle", None,
                        "If set, the ALBERT hub module to use (not supported here: give "
                        "--albert_config_file and --init_checkpoint).")
    flags.DEFINE_bool("do_lower_case", True,
                      "Whether to lower case the input text. Should be True for uncased models "
                      "and False for cased models.")
    flags.DEFINE_bool("do_train", False, "Whether to run training.")
    flags.DEFINE_integer("train_batch_size", 32, "Total batch size for training.")
    flags.DEFINE_float("learning_rate", 5e-5, "The initial learning rate for Adam.")
    flags.DEFINE_integer("save_checkpoints_steps", 1000,
                         "How often to save the model checkpoint.")
    flags.DEFINE_integer("iterations_per_loop", 1000,
                         "Steps run inside one tf.function call between host-side work.")
    shared_flags.define_tpu_flags()
    # Added flags (docs/scale.md).
    shared_flags.define_trainer_flags()
    _set_help(help_texts)


def define_predict_precision_flag():
    """--predict_precision (bert_tf.flags'), for the commands whose --do_predict runs the
    trainer's prediction (run_classifier, run_squad_v1, run_squad_v2; run_race's --do_predict
    is an evaluation of the test set, at the trained model's precision, and has no such flag)."""
    shared_flags.define_predict_precision_flag()
    flags.declare_key_flag("predict_precision")


def define_squad_flags(**help_texts):
    """`define_albert_flags()`'s and the flags run_squad_v1.py and run_squad_v2.py both define
    (the SQuAD files and feature files, lengths, do_predict, the schedule in epochs, n-best);
    --keep_checkpoint_max defaults to 0 (the original's RunConfig keeps every checkpoint; its
    prediction loop removes the old ones). `help_texts` as define_albert_flags'."""
    define_albert_flags()
    flags.DEFINE_string("train_file", None, "SQuAD json for training. E.g., train-v1.1.json")
    flags.DEFINE_string("predict_file", None,
                        "SQuAD json for predictions. E.g., dev-v1.1.json or test-v1.1.json")
    flags.DEFINE_string("train_feature_file", None,
                        "training feature file (default here: <output_dir>/train.tf_record; the "
                        "original needs it). Reused when it exists.")
    flags.DEFINE_string("predict_feature_file", None,
                        "Location of predict features. If it doesn't exist, it will be written. "
                        "If it does exist, it will be read.")
    flags.DEFINE_string("predict_feature_left_file", None,
                        "Location of predict features not passed to TPU. If it doesn't exist, "
                        "it will be written. If it does exist, it will be read.")
    flags.DEFINE_integer("max_seq_length", 384,
                         "The maximum total input sequence length after SentencePiece "
                         "tokenization. Sequences longer than this will be truncated, and "
                         "sequences shorter than this will be padded.")
    flags.DEFINE_integer("doc_stride", 128,
                         "When splitting up a long document into chunks, how much stride to "
                         "take between chunks.")
    flags.DEFINE_integer("max_query_length", 64,
                         "The maximum number of tokens for the question. Questions longer than "
                         "this will be truncated to this length.")
    flags.DEFINE_bool("do_predict", False, "Whether to run eval on the dev set.")
    flags.DEFINE_integer("predict_batch_size", 8, "Total batch size for predictions.")
    flags.DEFINE_float("num_train_epochs", 3.0, "Total number of training epochs to perform.")
    flags.DEFINE_float("warmup_proportion", 0.1,
                       "Proportion of training to perform linear learning rate warmup for. "
                       "E.g., 0.1 = 10% of training.")
    flags.DEFINE_integer("n_best_size", 20,
                         "The total number of n-best predictions to generate in the "
                         "nbest_predictions.json output file.")
    flags.DEFINE_integer("max_answer_length", 30,
                         "The maximum length of an answer that can be generated. This is "
                         "needed because the start and end predictions are not conditioned on "
                         "one another.")
    flags.FLAGS.set_default("keep_checkpoint_max", 0)
    flags.declare_key_flag("keep_checkpoint_max")
    define_predict_precision_flag()
    _set_help(help_texts)


def unsupported_flag(export_task):
    """The message refusing --albert_hub_module_handle or --export_dir (whose export is
    `python -m bert_tf.export --task=<export_task>`) when set, else None."""
    FLAGS = flags.FLAGS  # noqa: N806 (absl's name)
    if FLAGS.albert_hub_module_handle:
        return ("--albert_hub_module_handle: TF-Hub modules are not supported; give the "
                "release's --albert_config_file and --init_checkpoint (a Hub snapshot converts "
                "with python -m bert_tf.hf import)")
    if FLAGS.export_dir:
        return ("--export_dir: not supported here; export model.ckpt-best of --output_dir with "
                f"python -m bert_tf.export --task={export_task}")
    return None


def run_fine_tuning(script, options_class, run, task_errors=(), fields=(), **values):
    """`bert_tf.flags.run_fine_tuning` with the config of --albert_config_file, the flags
    named in `fields` as the options' same-named fields, and `values`. Returns the exit code."""
    from bert_tf.albert.config import AlbertConfig

    FLAGS = flags.FLAGS  # noqa: N806 (absl's name)
    return shared_flags.run_fine_tuning(
        script, options_class, run, task_errors=task_errors,
        read_config=lambda: AlbertConfig.from_json_file(FLAGS.albert_config_file),
        **{name: FLAGS[name].value for name in fields}, **values)
