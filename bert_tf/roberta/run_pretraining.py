"""Pretrains RoBERTa (masked LM only, masks drawn anew every epoch) from the TFRecords of
`python -m bert_tf.roberta.create_pretraining_data`.

    python -m bert_tf.roberta.run_pretraining --input_file=roberta_*.tfrecord \\
        --bert_config_file=roberta/bert_config.json --vocab_file=roberta/vocab.json \\
        --output_dir=run/ --do_train

The original BERT run_pretraining.py's flags where they mean the same, with fairseq's RoBERTa
recipe as defaults (examples/roberta/config/pretraining/base.yaml: 512 tokens, a batch of
2048, peak learning rate 5e-4, 10k warmup updates of 125k, Adam betas (0.9, 0.98), epsilon
1e-6, weight decay 0.01, no gradient clipping; its masked_lm task's 15% masking, 80/10/10),
plus bert_tf's trainer flags (--strategy, --mixed_precision, --use_xla,
--gradient_accumulation_steps (fairseq's --update-freq), --dynamic_padding, --seed, ...).
Restarting with the same --output_dir resumes from its latest checkpoint, exactly (the same
masks too). The output_dir gets bert_config.json, vocab.json and merges.txt beside the
checkpoints: `python -m bert_tf.hf export --checkpoint=<output_dir>` writes a Transformers
RobertaForMaskedLM folder.
"""

import os

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

from absl import flags  # noqa: E402

from bert_tf import flags as shared_flags  # noqa: E402

FLAGS = flags.FLAGS

# The original BERT's flags (fairseq's RoBERTa values as defaults).
flags.DEFINE_string("bert_config_file", None,
                    "The config json file of the RoBERTa model (model_type roberta; written by "
                    "`python -m bert_tf.hf import`).")
flags.DEFINE_string("input_file", None,
                    "Input TFRecord files of bert_tf.roberta.create_pretraining_data (glob or "
                    "comma list).")
flags.DEFINE_string("output_dir", None, "Where checkpoints and eval results are written.")
flags.DEFINE_string("init_checkpoint", None,
                    "Initial checkpoint (e.g. an imported roberta-base); weights only.")
flags.DEFINE_integer("max_seq_length", 512,
                     "Tokens per record; must match the data generation (fairseq's "
                     "--tokens-per-sample).")
flags.DEFINE_integer("max_predictions_per_seq", None,
                     "Size of the masked-LM label features; default floor(mask_prob * "
                     "max_seq_length) + 1, the largest count the masking draws (77 for 512).")
flags.DEFINE_bool("do_train", False, "Whether to run training.")
flags.DEFINE_bool("do_eval", False, "Whether to run eval (the records masked as in epoch 0).")
flags.DEFINE_integer("train_batch_size", 2048,
                     "Total (global) batch size for training (fairseq's batch_size x GPUs x "
                     "update_freq: 16 x 8 x 16).")
flags.DEFINE_integer("eval_batch_size", 8, "Total (global) batch size for eval.")
flags.DEFINE_float("learning_rate", 5e-4, "The peak learning rate for Adam.")
flags.DEFINE_integer("num_train_steps", 125000, "Number of training steps (updates).")
flags.DEFINE_integer("num_warmup_steps", 10000, "Number of warmup steps (updates).")
flags.DEFINE_integer("save_checkpoints_steps", 1000, "How often to save a checkpoint.")
flags.DEFINE_integer("iterations_per_loop", 1000,
                     "Steps run inside one tf.function call between host-side work.")
flags.DEFINE_integer("max_eval_steps", 100, "Maximum number of eval batches.")
shared_flags.define_tpu_flags()

# RoBERTa's vocabulary (the masks' <mask> and random tokens; copied into --output_dir).
flags.DEFINE_string("vocab_file", None, "RoBERTa's vocab.json (token -> id).")
flags.DEFINE_string("merges_file", None,
                    "RoBERTa's merges.txt (default: merges.txt beside --vocab_file).")
# fairseq's masking and optimizer settings, its names and RoBERTa's values.
flags.DEFINE_float("mask_prob", 0.15, "Probability of masking a token (fairseq's --mask-prob).")
flags.DEFINE_float("leave_unmasked_prob", 0.1,
                   "Probability that a masked token is left unchanged.")
flags.DEFINE_float("random_token_prob", 0.1,
                   "Probability that a masked token becomes a random (non-special) token.")
flags.DEFINE_string("adam_betas", "(0.9, 0.98)", "Adam's beta_1, beta_2 (fairseq's "
                    "--adam-betas).")
flags.DEFINE_float("adam_eps", 1e-6, "Adam's epsilon (fairseq's --adam-eps).")
flags.DEFINE_float("weight_decay", 0.01,
                   "Decoupled weight decay, on every parameter (fairseq's --weight-decay).")
flags.DEFINE_float("clip_norm", 0.0,
                   "Clip gradients to this global norm; 0 clips nothing (fairseq's "
                   "--clip-norm, 0 in RoBERTa's recipe).")

# Added flags (docs/scale.md).
shared_flags.define_trainer_flags()
FLAGS["optimizer"].help = "adamw: Adam with decoupled weight decay and bias correction (fairseq's)."
flags.DEFINE_bool("init_optimizer_state", False,
                  "With --init_checkpoint (a training checkpoint): also continue its optimizer "
                  "moments, global_step (so the learning-rate schedule) and loss scale.")


def parse_betas(text):
    """--adam_betas "(0.9, 0.98)" (fairseq's form), "0.9,0.98" or "[0.9, 0.98]" -> two floats;
    None if it is not two numbers."""
    parts = text.strip().strip("()[]").split(",")
    try:
        betas = tuple(float(p) for p in parts)
    except ValueError:
        return None
    return betas if len(betas) == 2 else None


def read_config():
    from bert_tf import families
    from bert_tf.training.trainer import TrainingError

    config = families.read_config(FLAGS.bert_config_file)
    if config.model_type != "roberta":
        raise TrainingError(f"--bert_config_file={FLAGS.bert_config_file}: model_type "
                            f"{config.model_type!r}, not 'roberta' (RoBERTa pretraining needs "
                            "a roberta config)")
    return config


def main(argv):
    del argv
    import sys

    from bert_tf.roberta.pretraining_task import RobertaPretrainingOptions, run

    betas = parse_betas(FLAGS.adam_betas)
    if betas is None:
        print(f"run_pretraining: error: --adam_betas={FLAGS.adam_betas!r}: expected two "
              "numbers, e.g. (0.9, 0.98)", file=sys.stderr)
        return 1
    return shared_flags.run_pretraining(
        "run_pretraining", read_config, RobertaPretrainingOptions, run,
        vocab_file=FLAGS.vocab_file, merges_file=FLAGS.merges_file,
        mask_prob=FLAGS.mask_prob, leave_unmasked_prob=FLAGS.leave_unmasked_prob,
        random_token_prob=FLAGS.random_token_prob, adam_beta1=betas[0], adam_beta2=betas[1],
        adam_epsilon=FLAGS.adam_eps, weight_decay_rate=FLAGS.weight_decay,
        clip_norm=FLAGS.clip_norm)


def run_main():
    """`python -m bert_tf.roberta.run_pretraining`."""
    shared_flags.run_command(main, __name__, __doc__,
                             required=("input_file", "bert_config_file", "output_dir",
                                       "vocab_file"))


if __name__ == "__main__":
    run_main()
