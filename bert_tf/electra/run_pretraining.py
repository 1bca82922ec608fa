"""Pre-trains an ELECTRA model: google-research/electra's run_pretraining.py on bert_tf's trainer.

    python -m bert_tf.electra.run_pretraining --data-dir D --model-name M --hparams JSON-or-file

The original's command line and layout: records D/pretrain_tfrecords/pretrain_data.tfrecord*,
vocab D/vocab.txt, checkpoints in D/models/M (resumed from the latest there, the original's
included), every hparam of its configure_pretraining.py (an unknown one is refused). With
"do_eval": true (and "do_train": false) it evaluates and prints the original's `  key = value`
lines, also written to D/models/M/eval_results.txt. The discriminator's bert_config.json is
written into D/models/M for fine-tuning. Added options: the trainer's strategy, precision,
XLA, accumulation, dynamic padding and seed.
"""

import argparse
import os
import sys

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")


def parse_args(argv=None):
    parser = argparse.ArgumentParser(prog="python -m bert_tf.electra.run_pretraining",
                                     description=__doc__.splitlines()[0])
    parser.add_argument("--data-dir", required=True,
                        help="Location of data files (model weights, etc).")
    parser.add_argument("--model-name", required=True,
                        help="The name of the model being pre-trained.")
    parser.add_argument("--hparams", default="{}",
                        help="JSON dict of model hyperparameters, or a .json file holding one.")
    # bert_tf's trainer (docs/scale.md); not in the original.
    parser.add_argument("--strategy", default="default",
                        choices=["default", "one_device", "mirrored", "multi_worker_mirrored",
                                 "tpu"],
                        help="tf.distribute strategy (the hparam use_tpu implies tpu).")
    parser.add_argument("--mixed-precision", default="none",
                        choices=["none", "bf16", "fp16", "auto"],
                        help="Compute dtype of the model (weights and update stay float32).")
    parser.add_argument("--use-xla", action="store_true",
                        help="Compile the training and eval passes with XLA.")
    parser.add_argument("--fused-optimizer", action="store_true",
                        help="Compile each variable's optimizer update with XLA.")
    parser.add_argument("--gradient-accumulation-steps", type=int, default=1,
                        help="Micro-batches per optimizer step (train_batch_size stays the "
                             "global batch).")
    parser.add_argument("--shuffle-buffer-size", type=int, default=100,
                        help="Records in the training shuffle buffer (the original's 100).")
    parser.add_argument("--no-dynamic-padding", dest="dynamic_padding", action="store_false",
                        help="Keep every batch at max_seq_length (by default each batch is cut "
                             "to its longest sequence, as the trainer's --dynamic_padding).")
    parser.add_argument("--seed", type=int, default=12345,
                        help="Seed of the initialisation, masking, sampling, dropout and "
                             "shuffles (the original seeds nothing).")
    return parser.parse_args(argv)


def main(argv=None):
    args = parse_args(argv)
    from absl import logging

    from bert_tf.checkpoints import CheckpointError
    from bert_tf.bert.config import BertConfigError
    from bert_tf.electra.hparams import HparamsError, PretrainingHparams
    from bert_tf.electra.pretraining import ElectraError
    from bert_tf.files import OutputError
    from bert_tf.electra.pretraining_task import run
    from bert_tf.training import output_lock, precision
    from bert_tf.training.input_pipeline import InputError
    from bert_tf.training.strategy import (
        StrategyError, create_strategy, resolve_strategy_name, worker_info,
    )
    from bert_tf.training.trainer import TrainingError

    logging.set_verbosity(logging.INFO)
    try:
        hp = PretrainingHparams.from_args(args.data_dir, args.model_name, args.hparams)
        for line in hp.log_lines():
            logging.info("%s", line)
        strategy = create_strategy(
            resolve_strategy_name(args.strategy, hp.use_tpu), tpu_name=hp.tpu_name,
            tpu_zone=hp.tpu_zone, gcp_project=hp.gcp_project, num_tpu_cores=hp.num_tpu_cores)
        # One training run per model dir, as the BERT scripts (output_lock.py); the chief only.
        is_chief = bool(hp.do_train) and worker_info(strategy)[2]
        with output_lock.hold_output_dir(hp.model_dir, is_chief=is_chief):
            _, results = run(
                hp, strategy,
                mixed_precision=precision.resolve_mixed_precision(
                    args.mixed_precision, strategy, flag="--mixed-precision"),
                use_xla=args.use_xla, fused_optimizer=args.fused_optimizer,
                gradient_accumulation_steps=args.gradient_accumulation_steps,
                shuffle_buffer_size=args.shuffle_buffer_size, seed=args.seed,
                dynamic_padding=args.dynamic_padding)
    except (HparamsError, TrainingError, BertConfigError, CheckpointError, StrategyError,
            InputError, ElectraError, FloatingPointError, OutputError,
            output_lock.OutputDirInUseError) as e:
        print(f"run_pretraining: error: {e}", file=sys.stderr)
        return 1
    if results is not None:
        for key in sorted(results):
            print(f"  {key} = {str(results[key])}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
