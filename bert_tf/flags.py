"""absl flags the commands share: the original's TPU flags, bert_tf's trainer flags, and the
entry point.

Each command (bert_tf/run_classifier.py, ...) defines its own flags (the original's names,
defaults and help) and calls `define_fine_tuning_flags()` (the fine-tuning commands),
`define_tpu_flags()` and `define_trainer_flags()` for the shared ones; `trainer_kwargs(FLAGS)`
and `strategy_from_flags(FLAGS)` turn them into `TrainerOptions` fields and a strategy;
`hold_output_dir(FLAGS, strategy)` keeps a second run out of --output_dir;
`options_from_flags(cls, FLAGS)` fills a command's options dataclass from its same-named
flags; `run_command` is each command's entry point, for `python -m bert_tf.<command>` and the
root script of its name.
"""

import dataclasses
import os
import sys

from absl import app, flags


# The tokenizer file flags every command with --vocab_file takes (`define_tokenizer_file_flags`),
# name -> help: the union of the families' `tokenizer_file_flags` (bert_tf.families.Family),
# each passed to the tokenizers of the families that name it and ignored by the others.
TOKENIZER_FILE_FLAGS = {
    "merges_file": "Byte-level BPE models (RoBERTa): the merges.txt beside --vocab_file's "
                   "vocab.json (default: merges.txt in --vocab_file's directory). Unused by "
                   "other families.",
}


class FlagError(ValueError):
    """Flags that cannot be used together with the model's config (one line naming them)."""


def define_tokenizer_file_flags():
    """The flags of `TOKENIZER_FILE_FLAGS` (once per process, whichever command asks)."""
    for name, help_text in TOKENIZER_FILE_FLAGS.items():
        if name not in flags.FLAGS:
            flags.DEFINE_string(name, None, help_text)


def tokenizer_settings(FLAGS, config):  # noqa: N803 (absl's name)
    """(do_lower_case, tokenizer_files) for the tokenizer of `config`'s family, from the flags.

    --do_lower_case keeps the original's default (true) and meaning for a family that
    lower-cases; for a `cased` family (RoBERTa) it defaults to false, and an explicit true is
    refused (`FlagError`) rather than ignored. tokenizer_files: {flag: value} of the tokenizer
    file flags the command defines (None where not given)."""
    from bert_tf import families

    given = FLAGS.do_lower_case if FLAGS["do_lower_case"].present else None
    if given is None and not families.of(config).cased:
        given = FLAGS.do_lower_case  # the command's own default, unchanged
    try:
        do_lower_case = families.lower_case_setting(config, given)
    except ValueError as e:
        raise FlagError(str(e)) from None
    files = {name: FLAGS[name].value for name in TOKENIZER_FILE_FLAGS if name in FLAGS}
    return do_lower_case, files


PREDICT_PRECISION_HELP = (
    "Precision of the model that predicts (--do_predict; extract_features.py's model pass); "
    "training and eval are unchanged: float32 (the original's numbers), bfloat16 (the encoder's Dense weights "
    "rounded to bfloat16 and multiplied in bfloat16, the embedding tables rounded to bfloat16, "
    "the rest float32, as `python -m "
    "bert_tf.export --precision=bfloat16`; outputs within bfloat16 rounding of float32's, "
    "docs/serving.md) or auto (bfloat16 where the CPU's flags show AVX512_BF16 or AMX-BF16, "
    "else float32; the log says which).")


def define_predict_precision_flag():
    """--predict_precision (`PREDICT_PRECISION_HELP`), checked where it is used (one line
    naming the flag for an unknown value)."""
    from bert_tf.training.precision import ACCURACY_CHECKED

    flags.DEFINE_string("predict_precision", "float32", PREDICT_PRECISION_HELP + (
        f" bfloat16 checked on real data against float32: {ACCURACY_CHECKED['bfloat16']} "
        "(docs/serving.md)."))


def define_tpu_flags():
    """use_tpu, tpu_name, tpu_zone, gcp_project, master, num_tpu_cores (the original's)."""
    flags.DEFINE_bool("use_tpu", False, "Whether to use a TPU (implies --strategy=tpu).")
    flags.DEFINE_string("tpu_name", None, "The Cloud TPU to use (name or grpc://ip:8470 url).")
    flags.DEFINE_string("tpu_zone", None, "[Optional] GCE zone of the Cloud TPU.")
    flags.DEFINE_string("gcp_project", None, "[Optional] GCP project of the Cloud TPU.")
    flags.DEFINE_string("master", None, "[Optional] TensorFlow master URL.")
    flags.DEFINE_integer("num_tpu_cores", 8, "Only used with a TPU: total number of TPU cores.")


def define_fine_tuning_flags():
    """The original fine-tuning scripts' common flags: the model files, casing, the optimizer
    schedule and the checkpoint interval (names, defaults and help of run_classifier.py)."""
    flags.DEFINE_string("bert_config_file", None,
                        "The config json file corresponding to the pre-trained BERT model.")
    flags.DEFINE_string("vocab_file", None,
                        "The vocabulary file that the BERT model was trained on.")
    flags.DEFINE_string("output_dir", None,
                        "The output directory where the model checkpoints will be written.")
    flags.DEFINE_string("init_checkpoint", None,
                        "Initial checkpoint (usually from a pre-trained BERT model).")
    flags.DEFINE_bool("do_lower_case", True,
                      "Whether to lower case the input text. Should be True for uncased models "
                      "and False for cased models. A RoBERTa model (cased byte-level BPE) "
                      "defaults to False and refuses True.")
    define_tokenizer_file_flags()
    define_predict_precision_flag()
    flags.DEFINE_float("learning_rate", 5e-5, "The initial learning rate for Adam.")
    flags.DEFINE_float("num_train_epochs", 3.0, "Total number of training epochs to perform.")
    flags.DEFINE_float("warmup_proportion", 0.1,
                       "Proportion of training to perform linear learning rate warmup for. "
                       "E.g., 0.1 = 10% of training.")
    flags.DEFINE_integer("save_checkpoints_steps", 1000,
                         "How often to save the model checkpoint.")
    flags.DEFINE_integer("iterations_per_loop", 1000,
                         "Steps run inside one tf.function call between host-side work.")
    flags.DEFINE_float("layerwise_lr_decay", 1.0,
                       "ELECTRA's layer-wise learning-rate decay (its run_finetuning.py): with "
                       "L layers, the embeddings train at lr * decay^(L+2), layer i at "
                       "lr * decay^(L+1-i), the pooler and task head at lr. 1.0 = off; ELECTRA "
                       "fine-tunes with 0.8 (0.9 for Large).")


def define_trainer_flags(shuffle_buffer_size=100):
    """The flags bert_tf adds to every training script (README: "scale")."""
    flags.DEFINE_enum("strategy", "default",
                      ["default", "one_device", "mirrored", "multi_worker_mirrored", "tpu"],
                      "tf.distribute strategy (mirrored: every GPU, else every logical CPU; "
                      "multi_worker_mirrored: the cluster of TF_CONFIG).")
    flags.DEFINE_integer("shuffle_buffer_size", shuffle_buffer_size,
                         "Records in the training shuffle buffer; 0 reads the files in order; "
                         "-1 holds every training record in memory and takes them in a fresh "
                         "permutation each epoch (seeded by --seed).")
    flags.DEFINE_integer("keep_checkpoint_max", 5,
                         "Checkpoints kept in output_dir (0 keeps all).")
    flags.DEFINE_integer("seed", 12345,
                         "Seed of the weight initialisation, dropout and shuffles.")
    flags.DEFINE_enum("mixed_precision", "none", ["none", "bf16", "fp16", "auto"],
                      "Compute dtype of the model (variables, LayerNorm, softmax, losses and "
                      "the update stay float32); fp16 uses dynamic loss scaling. auto: bf16 "
                      "where the hardware computes it natively, fp16 on GPUs of compute "
                      "capability 7.x, else none. On a CPU without AVX512_BF16/AMX, bf16 is "
                      "slower than none (a warning says so).")
    flags.DEFINE_bool("use_xla", False, "Compile the training and eval passes with XLA "
                      "(jit_compile), the optimizer update included.")
    flags.DEFINE_bool("fused_optimizer", False,
                      "Compile only the optimizer update with XLA, one kernel per variable "
                      "(implied by --use_xla): faster on CPU, equal to the op-by-op update up "
                      "to float32 rounding.")
    flags.DEFINE_enum("optimizer", "adamw", ["adamw", "lamb"],
                      "adamw: the original AdamWeightDecay; lamb: LAMB (You et al., 2019).")
    flags.DEFINE_integer("gradient_accumulation_steps", 1,
                         "Micro-batches per optimizer step; --train_batch_size stays the "
                         "global batch of one step.")
    flags.DEFINE_bool("dynamic_padding", True,
                      "Cut each batch to its longest sequence (input_mask), rounded up to a "
                      "multiple of --padding_width, instead of computing max_seq_length "
                      "positions; eval and predict run the records in length order and write "
                      "their outputs in input order. The same results (within float rounding); "
                      "false pads every batch to max_seq_length as the original. Not on TPU. "
                      "Where the original's arithmetic reads padded positions, batches keep "
                      "max_seq_length: SQuAD training (its loss) and SQuAD prediction (its "
                      "n-best; --predict_dynamic_padding cuts it).")
    flags.DEFINE_integer("padding_width", 16,
                         "With --dynamic_padding: batch lengths are multiples of this, so at "
                         "most max_seq_length / padding_width shapes are traced or compiled.")
    flags.DEFINE_bool("group_by_length", False,
                      "Training batches of similar lengths: windows of 50 steps of the "
                      "shuffled stream sorted by length, the batches in random order. The "
                      "same records as without it, but not in the original's batches (another "
                      "trajectory); fewer padded positions with --dynamic_padding.")
    flags.DEFINE_float("initial_loss_scale", 2.0 ** 15,
                       "fp16 only: the first dynamic loss scale (halved on each overflow, "
                       "doubled after 2000 finite steps; restored from checkpoints).")


def define_predict_padding_flag():
    """--predict_dynamic_padding, for the SQuAD scripts whose n-best (the original's) reads
    the logits of padded positions (run_squad.py, ALBERT's run_squad_v1.py)."""
    flags.DEFINE_bool("predict_dynamic_padding", False,
                      "Cut prediction batches too, as --dynamic_padding cuts other tasks' "
                      "(needs it; faster). Not the original's n-best: the original takes each "
                      "window's --n_best_size best start and end logits over all "
                      "max_seq_length positions, padding included, then drops those outside "
                      "the document; a cut batch has no logit at padding, so where a padded "
                      "position would rank among the n best a real one takes its slot and the "
                      "answer can differ (as in the SQuAD export). false: prediction batches "
                      "at max_seq_length, the original's answers for any head.")


def strategy_from_flags(FLAGS):  # noqa: N803 (absl's name)
    """The tf.distribute strategy of --strategy / --use_tpu and the TPU flags."""
    from bert_tf.training.strategy import create_strategy, resolve_strategy_name

    name = resolve_strategy_name(FLAGS.strategy, FLAGS.use_tpu)
    return create_strategy(
        name, tpu_name=FLAGS.tpu_name, tpu_zone=FLAGS.tpu_zone, gcp_project=FLAGS.gcp_project,
        master=FLAGS.master, num_tpu_cores=FLAGS.num_tpu_cores,
    )


def trainer_kwargs(FLAGS, strategy):  # noqa: N803
    """`TrainerOptions` fields from the shared flags (and the original's common ones);
    --mixed_precision=auto resolved for this machine and `strategy`."""
    from bert_tf.training import precision

    return dict(
        output_dir=FLAGS.output_dir,
        init_checkpoint=FLAGS.init_checkpoint,
        train_batch_size=FLAGS.train_batch_size,
        learning_rate=FLAGS.learning_rate,
        save_checkpoints_steps=FLAGS.save_checkpoints_steps,
        iterations_per_loop=FLAGS.iterations_per_loop,
        shuffle_buffer_size=FLAGS.shuffle_buffer_size,
        keep_checkpoint_max=FLAGS.keep_checkpoint_max,
        seed=FLAGS.seed,
        mixed_precision=precision.resolve_mixed_precision(FLAGS.mixed_precision, strategy),
        use_xla=FLAGS.use_xla,
        fused_optimizer=FLAGS.fused_optimizer,
        optimizer=FLAGS.optimizer,
        gradient_accumulation_steps=FLAGS.gradient_accumulation_steps,
        initial_loss_scale=FLAGS.initial_loss_scale,
        dynamic_padding=FLAGS.dynamic_padding,
        padding_width=FLAGS.padding_width,
        group_by_length=FLAGS.group_by_length,
        # a fine-tuning flag (define_fine_tuning_flags); other scripts keep the default
        **({"layerwise_lr_decay": FLAGS.layerwise_lr_decay} if "layerwise_lr_decay" in FLAGS else {}),
        **({"predict_precision": FLAGS.predict_precision} if "predict_precision" in FLAGS else {}),
    )


def options_from_flags(cls, flag_values, **overrides):
    """`cls(...)` for the dataclass `cls`: every field named like a flag defined in
    `flag_values` (parsed) takes that flag's value, then `overrides` (field=value) apply;
    other fields keep their defaults."""
    values = {field.name: getattr(flag_values, field.name) for field in dataclasses.fields(cls)
              if field.name in flag_values}
    values.update(overrides)
    return cls(**values)


def hold_output_dir(FLAGS, strategy):  # noqa: N803
    """Context manager: --output_dir locked against a second training run while a --do_train
    run runs (by the chief only; bert_tf/training/output_lock.py). Raises OutputDirInUseError
    naming the process that holds it. Eval/predict-only runs write no checkpoints and take no
    lock: an eval beside a running training works, as with the original."""
    from bert_tf.training import output_lock
    from bert_tf.training.strategy import worker_info

    return output_lock.hold_output_dir(
        FLAGS.output_dir, is_chief=bool(FLAGS.do_train) and worker_info(strategy)[2])


def run_fine_tuning(script, options_class, run, task_errors=(), read_config=None, **fields):
    """The body of run_classifier.py / run_squad.py / run_tagging.py: the bert config (or
    `read_config()`'s, for a command whose flag is another, e.g. --albert_config_file) and the
    strategy from the flags, `options_class(**fields, **trainer flags)`, then
    `run(config, options, strategy, do_train=..., ...)` (only the do_* flags the script
    defines). Errors a user can fix (these and `task_errors`) print as one line
    `<script>: error: ...`. Returns the exit code."""
    from absl import logging

    from bert_tf import families
    from bert_tf.checkpoints import CheckpointError
    from bert_tf.files import OutputError
    from bert_tf.text import VocabError
    from bert_tf.training.input_pipeline import InputError
    from bert_tf.training.output_lock import OutputDirInUseError
    from bert_tf.training.strategy import StrategyError
    from bert_tf.training.trainer import TrainingError

    FLAGS = flags.FLAGS  # noqa: N806 (absl's name)
    logging.set_verbosity(logging.INFO)
    do = {name: FLAGS[name].value for name in ("do_train", "do_eval", "do_predict")
          if name in FLAGS}
    try:
        config = (read_config() if read_config is not None
                  else families.read_config(FLAGS.bert_config_file))
        if "do_lower_case" in fields:
            fields = dict(fields)
            fields["do_lower_case"], tokenizer_files = tokenizer_settings(FLAGS, config)
            if any(f.name == "tokenizer_files" for f in dataclasses.fields(options_class)):
                fields["tokenizer_files"] = tokenizer_files
        strategy = strategy_from_flags(FLAGS)
        with hold_output_dir(FLAGS, strategy):
            options = options_class(**fields, **trainer_kwargs(FLAGS, strategy))
            out = run(config, options, strategy, **do)
    except (TrainingError, families.ConfigError, CheckpointError, StrategyError, InputError,
            VocabError, FloatingPointError, OutputError, OutputDirInUseError, FlagError) + tuple(
                task_errors) as e:
        print(f"{script}: error: {e}", file=sys.stderr)
        return 1
    if out.get("checkpoint"):
        logging.info("Latest checkpoint: %s", out["checkpoint"])
    return 0


def run_pretraining(script, read_config, options_class, run, **fields):
    """The body of a pretraining command (run_pretraining.py, ALBERT's): the config
    (`read_config()`), the input files, the strategy, `options_class` from the original's
    pretraining flags, `fields` and the trainer flags, then `run(config, options, strategy,
    do_train, do_eval)`. Errors a user can fix print as one line `<script>: error: ...`.
    Returns the exit code."""
    from absl import logging

    from bert_tf import families
    from bert_tf.checkpoints import CheckpointError
    from bert_tf.files import OutputError
    from bert_tf.training import input_pipeline
    from bert_tf.training.output_lock import OutputDirInUseError
    from bert_tf.training.strategy import StrategyError
    from bert_tf.training.trainer import TrainingError

    FLAGS = flags.FLAGS  # noqa: N806 (absl's name)
    logging.set_verbosity(logging.INFO)
    try:
        if not FLAGS.do_train and not FLAGS.do_eval:
            raise TrainingError("at least one of --do_train or --do_eval must be set")
        config = read_config()
        input_files = input_pipeline.expand_input_patterns(FLAGS.input_file)
        logging.info("*** Input files ***\n  %s", "\n  ".join(input_files))
        strategy = strategy_from_flags(FLAGS)
        with hold_output_dir(FLAGS, strategy):
            options = options_class(
                input_files=input_files,
                max_seq_length=FLAGS.max_seq_length,
                max_predictions_per_seq=FLAGS.max_predictions_per_seq,
                eval_batch_size=FLAGS.eval_batch_size,
                num_train_steps=FLAGS.num_train_steps,
                num_warmup_steps=FLAGS.num_warmup_steps,
                max_eval_steps=FLAGS.max_eval_steps,
                init_optimizer_state=FLAGS.init_optimizer_state,
                **fields,
                **trainer_kwargs(FLAGS, strategy),
            )
            checkpoint, results = run(config, options, strategy, FLAGS.do_train, FLAGS.do_eval)
    except (TrainingError, families.ConfigError, CheckpointError, StrategyError,
            input_pipeline.InputError, FloatingPointError, OutputError,
            OutputDirInUseError) as e:
        print(f"{script}: error: {e}", file=sys.stderr)
        return 1
    if checkpoint:
        logging.info("Latest checkpoint: %s", checkpoint)
    if results:
        logging.info("Eval results: %s", os.path.join(FLAGS.output_dir, "eval_results.txt"))
    return 0


def run_command(main, module_name, doc, required=()):
    """absl's `app.run(main)` for the command module `module_name` (its `__name__`) whose
    docstring is `doc`, with the flags `required` marked as required.

    Run as `python -m bert_tf.<command>`, the module is `__main__`, whose flags absl lists
    first under the script's path (--help shows them and the docstring). Run by a root script
    (`python run_classifier.py`, which imports the module), absl would file them under
    `bert_tf.run_classifier` and show the script's own docstring and no flags: so they are
    filed under the script (absl's own dicts, which its `register_*` methods fill) and the
    docstring lent to it, and --help and --helpfull read as when the script held them."""
    FLAGS = flags.FLAGS  # noqa: N806 (absl's name)
    for name in required:
        flags.mark_flag_as_required(name)
    if module_name != "__main__":
        sys.modules["__main__"].__doc__ = doc
        for flag in FLAGS.flags_by_module_dict().pop(module_name, []):
            FLAGS.register_flag_by_module(sys.argv[0], flag)
        for flag in FLAGS.key_flags_by_module_dict().pop(module_name, []):
            FLAGS.register_key_flag_for_module(sys.argv[0], flag)
    app.run(main)
