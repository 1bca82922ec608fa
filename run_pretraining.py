"""Pretrains BERT (masked LM + next sentence) from create_pretraining_data.py's TFRecords.

The original run_pretraining.py's flags, names, defaults and meaning, plus --strategy,
--shuffle_buffer_size, --keep_checkpoint_max and --seed. Restarting with the same
--output_dir resumes from its latest checkpoint.
"""

import os
import sys

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

from absl import app, flags, logging  # noqa: E402

FLAGS = flags.FLAGS

# The original's flags.
flags.DEFINE_string("bert_config_file", None,
                    "The config json file of the BERT model (its architecture).")
flags.DEFINE_string("input_file", None,
                    "Input TFRecord files of create_pretraining_data.py (glob or comma list).")
flags.DEFINE_string("output_dir", None, "Where checkpoints and eval results are written.")
flags.DEFINE_string("init_checkpoint", None,
                    "Initial checkpoint (usually a released BERT model); weights only.")
flags.DEFINE_integer("max_seq_length", 128,
                     "Maximum sequence length; must match the data generation.")
flags.DEFINE_integer("max_predictions_per_seq", 20,
                     "Maximum masked LM predictions per sequence; must match the data generation.")
flags.DEFINE_bool("do_train", False, "Whether to run training.")
flags.DEFINE_bool("do_eval", False, "Whether to run eval.")
flags.DEFINE_integer("train_batch_size", 32, "Total (global) batch size for training.")
flags.DEFINE_integer("eval_batch_size", 8, "Total (global) batch size for eval.")
flags.DEFINE_float("learning_rate", 5e-5, "The initial learning rate for Adam.")
flags.DEFINE_integer("num_train_steps", 100000, "Number of training steps.")
flags.DEFINE_integer("num_warmup_steps", 10000, "Number of warmup steps.")
flags.DEFINE_integer("save_checkpoints_steps", 1000, "How often to save a checkpoint.")
flags.DEFINE_integer("iterations_per_loop", 1000,
                     "Steps run inside one tf.function call between host-side work.")
flags.DEFINE_integer("max_eval_steps", 100, "Maximum number of eval batches.")
flags.DEFINE_bool("use_tpu", False, "Whether to use a TPU (implies --strategy=tpu).")
flags.DEFINE_string("tpu_name", None, "The Cloud TPU to use (name or grpc://ip:8470 url).")
flags.DEFINE_string("tpu_zone", None, "[Optional] GCE zone of the Cloud TPU.")
flags.DEFINE_string("gcp_project", None, "[Optional] GCP project of the Cloud TPU.")
flags.DEFINE_string("master", None, "[Optional] TensorFlow master URL.")
flags.DEFINE_integer("num_tpu_cores", 8, "Only used with a TPU: total number of TPU cores.")

# Added flags.
flags.DEFINE_enum("strategy", "default",
                  ["default", "one_device", "mirrored", "multi_worker_mirrored", "tpu"],
                  "tf.distribute strategy (mirrored: every GPU, else every logical CPU; "
                  "multi_worker_mirrored: the cluster of TF_CONFIG).")
flags.DEFINE_integer("shuffle_buffer_size", 100,
                     "Records in the training shuffle buffer; 0 reads the files in order.")
flags.DEFINE_integer("keep_checkpoint_max", 5, "Checkpoints kept in output_dir (0 keeps all).")
flags.DEFINE_integer("seed", 12345, "Seed of the weight initialisation, dropout and shuffles.")
# Pretraining at scale (docs/scale.md).
flags.DEFINE_enum("mixed_precision", "none", ["none", "bf16", "fp16", "auto"],
                  "Compute dtype of the model (variables, LayerNorm, softmax, losses and the "
                  "update stay float32); fp16 uses dynamic loss scaling. auto: bf16 where the "
                  "hardware computes it natively, fp16 on GPUs of compute capability 7.x, else "
                  "none. On a CPU without AVX512_BF16/AMX, bf16 is slower than none (a warning "
                  "says so).")
flags.DEFINE_bool("use_xla", False, "Compile the training and eval passes with XLA (jit_compile), "
                  "the optimizer update included.")
flags.DEFINE_bool("fused_optimizer", False,
                  "Compile only the optimizer update with XLA, one kernel per variable (implied "
                  "by --use_xla): faster on CPU, equal to the op-by-op update up to float32 "
                  "rounding.")
flags.DEFINE_enum("optimizer", "adamw", ["adamw", "lamb"],
                  "adamw: the original AdamWeightDecay; lamb: LAMB (You et al., 2019).")
flags.DEFINE_integer("gradient_accumulation_steps", 1,
                     "Micro-batches per optimizer step; --train_batch_size stays the global batch "
                     "of one step.")
flags.DEFINE_float("initial_loss_scale", 2.0 ** 15,
                   "fp16 only: the first dynamic loss scale (halved on each overflow, doubled "
                   "after 2000 finite steps; restored from checkpoints).")
flags.DEFINE_bool("init_optimizer_state", False,
                  "With --init_checkpoint (a training checkpoint): also continue its optimizer "
                  "moments, global_step (so the learning-rate schedule) and loss scale.")


def main(argv):
    del argv
    logging.set_verbosity(logging.INFO)
    from bert_tf.checkpoints import CheckpointError
    from bert_tf.config import BertConfig, BertConfigError
    from bert_tf.training import input_pipeline
    from bert_tf.training.loop import PretrainingError, PretrainingOptions, run
    from bert_tf.training.strategy import StrategyError, create_strategy, resolve_strategy_name

    try:
        if not FLAGS.do_train and not FLAGS.do_eval:
            raise PretrainingError("at least one of --do_train or --do_eval must be set")
        config = BertConfig.from_json_file(FLAGS.bert_config_file)
        input_files = input_pipeline.expand_input_patterns(FLAGS.input_file)
        logging.info("*** Input files ***\n  %s", "\n  ".join(input_files))
        name = resolve_strategy_name(FLAGS.strategy, FLAGS.use_tpu)
        strategy = create_strategy(
            name, tpu_name=FLAGS.tpu_name, tpu_zone=FLAGS.tpu_zone,
            gcp_project=FLAGS.gcp_project, master=FLAGS.master, num_tpu_cores=FLAGS.num_tpu_cores,
        )
        options = PretrainingOptions(
            input_files=input_files,
            output_dir=FLAGS.output_dir,
            init_checkpoint=FLAGS.init_checkpoint,
            max_seq_length=FLAGS.max_seq_length,
            max_predictions_per_seq=FLAGS.max_predictions_per_seq,
            train_batch_size=FLAGS.train_batch_size,
            eval_batch_size=FLAGS.eval_batch_size,
            learning_rate=FLAGS.learning_rate,
            num_train_steps=FLAGS.num_train_steps,
            num_warmup_steps=FLAGS.num_warmup_steps,
            save_checkpoints_steps=FLAGS.save_checkpoints_steps,
            iterations_per_loop=FLAGS.iterations_per_loop,
            max_eval_steps=FLAGS.max_eval_steps,
            shuffle_buffer_size=FLAGS.shuffle_buffer_size,
            keep_checkpoint_max=FLAGS.keep_checkpoint_max,
            seed=FLAGS.seed,
            mixed_precision=precision.resolve_mixed_precision(FLAGS.mixed_precision, strategy),
            use_xla=FLAGS.use_xla,
            fused_optimizer=FLAGS.fused_optimizer,
            optimizer=FLAGS.optimizer,
            gradient_accumulation_steps=FLAGS.gradient_accumulation_steps,
            init_optimizer_state=FLAGS.init_optimizer_state,
            initial_loss_scale=FLAGS.initial_loss_scale,
        )
        checkpoint, results = run(config, options, strategy, FLAGS.do_train, FLAGS.do_eval)
    except (PretrainingError, BertConfigError, CheckpointError, StrategyError,
            input_pipeline.InputError, FloatingPointError) as e:
        print(f"run_pretraining.py: error: {e}", file=sys.stderr)
        return 1
    if checkpoint:
        logging.info("Latest checkpoint: %s", checkpoint)
    if results:
        logging.info("Eval results: %s", os.path.join(FLAGS.output_dir, "eval_results.txt"))
    return 0


if __name__ == "__main__":
    flags.mark_flag_as_required("input_file")
    flags.mark_flag_as_required("bert_config_file")
    flags.mark_flag_as_required("output_dir")
    app.run(main)
