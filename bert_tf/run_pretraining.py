"""Pretrains BERT (masked LM + next sentence) from create_pretraining_data.py's TFRecords.

The original run_pretraining.py's flags, names, defaults and meaning, plus --strategy,
--shuffle_buffer_size, --keep_checkpoint_max and --seed. Restarting with the same
--output_dir resumes from its latest checkpoint.
"""

import os

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

from absl import flags  # noqa: E402

from bert_tf import flags as shared_flags  # noqa: E402

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
shared_flags.define_tpu_flags()

# Added flags (docs/scale.md).
shared_flags.define_trainer_flags()
flags.DEFINE_bool("init_optimizer_state", False,
                  "With --init_checkpoint (a training checkpoint): also continue its optimizer "
                  "moments, global_step (so the learning-rate schedule) and loss scale.")


def main(argv):
    del argv
    from bert_tf.bert.config import BertConfig
    from bert_tf.bert.pretraining_task import PretrainingOptions, run

    return shared_flags.run_pretraining(
        "run_pretraining.py", lambda: BertConfig.from_json_file(FLAGS.bert_config_file),
        PretrainingOptions, run)


def run():
    """`python -m bert_tf.run_pretraining` and the root run_pretraining.py."""
    shared_flags.run_command(main, __name__, __doc__,
                             required=("input_file", "bert_config_file", "output_dir"))


if __name__ == "__main__":
    run()
