"""Pretrains ALBERT (masked LM + sentence order) from its create_pretraining_data.py's TFRecords.

google-research/albert's run_pretraining.py on bert_tf's trainer: its flags, names, defaults and
meaning (--optimizer=lamb is its LAMB: no bias correction), plus bert_tf's trainer flags
(--strategy, --mixed_precision, --use_xla, --gradient_accumulation_steps, --dynamic_padding,
--shuffle_buffer_size, --seed, ...). Restarting with the same --output_dir resumes from its
latest checkpoint, exactly. --do_eval evaluates the latest checkpoint once (the original waits
for newer ones until global_step reaches --num_train_steps) and copies it to model.ckpt-best.*.
"""

import os

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

from absl import flags  # noqa: E402

from bert_tf import flags as shared_flags  # noqa: E402

FLAGS = flags.FLAGS

# The original's flags.
flags.DEFINE_string("albert_config_file", None,
                    "The config json file corresponding to the pre-trained ALBERT model. This "
                    "specifies the model architecture.")
flags.DEFINE_string("input_file", None,
                    "Input TF example files (can be a glob or comma separated).")
flags.DEFINE_string("output_dir", None,
                    "The output directory where the model checkpoints will be written.")
flags.DEFINE_string("init_checkpoint", None,
                    "Initial checkpoint (usually from a pre-trained ALBERT model).")
flags.DEFINE_integer("max_seq_length", 512,
                     "The maximum total input sequence length; must match data generation.")
flags.DEFINE_integer("max_predictions_per_seq", 20,
                     "Maximum number of masked LM predictions per sequence; must match data "
                     "generation.")
flags.DEFINE_bool("do_train", True, "Whether to run training.")
flags.DEFINE_bool("do_eval", False, "Whether to run eval on the dev set.")
flags.DEFINE_integer("train_batch_size", 4096, "Total batch size for training.")
flags.DEFINE_integer("eval_batch_size", 64, "Total batch size for eval.")
flags.DEFINE_float("learning_rate", 0.00176, "The initial learning rate.")
flags.DEFINE_float("poly_power", 1.0, "The power of poly decay.")
flags.DEFINE_integer("num_train_steps", 125000, "Number of training steps.")
flags.DEFINE_integer("num_warmup_steps", 3125, "Number of warmup steps.")
flags.DEFINE_integer("start_warmup_step", 0, "The starting step of warmup.")
flags.DEFINE_integer("save_checkpoints_steps", 5000, "How often to save the model checkpoint.")
flags.DEFINE_integer("iterations_per_loop", 1000,
                     "Steps run inside one tf.function call between host-side work.")
flags.DEFINE_integer("max_eval_steps", 100, "Maximum number of eval steps.")
flags.DEFINE_bool("init_from_group0", False,
                  "Whether to initialize parameters of other groups from group 0 (of "
                  "--init_checkpoint, for the groups it lacks).")
flags.DEFINE_float("masked_lm_budget", 0,
                   "If >0, the ratio of masked ngrams to unmasked ngrams. Default 0, for "
                   "offline masking (the only one the original runs: > 0 is refused).")
shared_flags.define_tpu_flags()

# Added flags (docs/scale.md), among them the original's --optimizer and --keep_checkpoint_max.
shared_flags.define_trainer_flags()
FLAGS.set_default("optimizer", "lamb")
FLAGS["optimizer"].help = ("The optimizer for training: lamb, ALBERT's LAMB (no bias "
                           "correction); adamw, BERT's AdamWeightDecay.")
# The original's flags among the trainer's: listed by --help with this command's own.
flags.declare_key_flag("optimizer")
flags.declare_key_flag("keep_checkpoint_max")
flags.DEFINE_bool("init_optimizer_state", False,
                  "With --init_checkpoint (a training checkpoint): also continue its optimizer "
                  "moments, global_step (so the learning-rate schedule) and loss scale.")


def main(argv):
    del argv
    from bert_tf.albert.config import AlbertConfig
    from bert_tf.albert.pretraining_task import AlbertPretrainingOptions, run

    return shared_flags.run_pretraining(
        "run_pretraining.py", lambda: AlbertConfig.from_json_file(FLAGS.albert_config_file),
        AlbertPretrainingOptions, run,
        poly_power=FLAGS.poly_power,
        start_warmup_step=FLAGS.start_warmup_step,
        init_from_group0=FLAGS.init_from_group0,
        masked_lm_budget=FLAGS.masked_lm_budget)


def run_main():
    """`python -m bert_tf.albert.run_pretraining`."""
    shared_flags.run_command(main, __name__, __doc__,
                             required=("input_file", "albert_config_file", "output_dir"))


if __name__ == "__main__":
    run_main()
