"""Fine-tuning step of BERT-Base as a sentence-pair classifier: ours against the original.

Ours is the real training step of `Trainer` with `ClassificationTask` (forward, backward,
global-norm clipping, AdamWeightDecay, global_step; dropout 0.1 in the encoder and on the pooled
output), on a randomly initialised BERT-Base, one fixed synthetic batch, no checkpoint writes.
The original is run_classifier.py's model_fn graph in training mode (create_model with
is_training=True, then create_optimizer with use_tpu=False), through tf.compat.v1 (see
tools.original), float32, in the same run on the same batch:

    python benchmarks/finetune_step.py --original_repo=/tmp/orig_bert
    python benchmarks/finetune_step.py --batch_sizes=8 --dtype=float32 --steps=5 \
        --original_repo=/tmp/orig_bert      # the quick row

Each row: seconds per step (median and fastest of --steps single-step calls after
--warmup_steps), sequences/s from the median, and the original's float32 step with our speed-up
over it (original seconds / ours; a bfloat16 row is compared with the original's float32 step,
the only precision it has). The steps of all the rows of a batch size and the original's are
timed in turns, so a change of load on a shared machine falls on them alike.
"""

import argparse
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from common import (  # noqa: E402
    BERT_BASE, machine_header, original_step, print_table, time_interleaved, trainer_step,
)

import numpy as np  # noqa: E402

from bert_tf.bert.config import BertConfig  # noqa: E402
from bert_tf.tasks.classification import ClassificationTask  # noqa: E402
from tools.original import load_original_module  # noqa: E402

MIXED_PRECISION = {"float32": "none", "bfloat16": "bf16"}
LABELS = ["0", "1"]
LEARNING_RATE = 5e-5


def synthetic_batch(batch_size, seq_length, vocab_size, seed=0):
    """One random sentence-pair batch in the classifier's record layout (int32)."""
    rng = np.random.RandomState(seed)
    return {
        "input_ids": rng.randint(0, vocab_size, (batch_size, seq_length)).astype(np.int32),
        "input_mask": np.ones((batch_size, seq_length), np.int32),
        "segment_ids": np.repeat((np.arange(seq_length) >= seq_length // 2)[None].astype(
            np.int32), batch_size, 0),
        "label_ids": rng.randint(0, len(LABELS), batch_size).astype(np.int32),
        "is_real_example": np.ones(batch_size, np.int32),
    }


def our_step(config, batch, dtype):
    """A callable running one training step of ours on `batch` (Trainer's train function)."""
    seq_length = batch["input_ids"].shape[1]
    return trainer_step(config, ClassificationTask("bench", LABELS, seq_length), batch,
                        MIXED_PRECISION[dtype], LEARNING_RATE)


def classifier_original_step(repo, config_dict, batch):
    """A callable running one float32 training step of run_classifier.py's graph
    (create_model in training mode, with its dropout, + create_optimizer) on `batch`."""
    run_classifier = load_original_module(repo, "run_classifier")

    def build_train_op(features):
        config = run_classifier.modeling.BertConfig.from_dict(config_dict)
        loss, _, _, _ = run_classifier.create_model(
            config, True, features["input_ids"], features["input_mask"],
            features["segment_ids"], features["label_ids"], len(LABELS), False)
        return loss, run_classifier.optimization.create_optimizer(
            loss, LEARNING_RATE, 10**6, 100, False)

    return original_step(build_train_op, batch)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--batch_sizes", default="8,32")
    parser.add_argument("--seq_length", type=int, default=128)
    parser.add_argument("--dtype", default="float32,bfloat16",
                        help="comma list of our compute dtypes: float32, bfloat16")
    parser.add_argument("--steps", type=int, default=10, help="timed steps per row")
    parser.add_argument("--warmup_steps", type=int, default=2)
    parser.add_argument("--layers", type=int, default=BERT_BASE["num_hidden_layers"])
    parser.add_argument("--original_repo", default=None,
                        help="a copy of google-research/bert: also time its float32 step on "
                             "the same batch, in this run, as the baseline")
    args = parser.parse_args()
    dtypes = args.dtype.split(",")
    for dtype in dtypes:
        if dtype not in MIXED_PRECISION:
            parser.error(f"--dtype: {dtype!r} is not one of {', '.join(MIXED_PRECISION)}")
    batch_sizes = [int(b) for b in args.batch_sizes.split(",")]

    config_dict = dict(BERT_BASE, num_hidden_layers=args.layers)
    config = BertConfig.from_dict(config_dict)
    print(machine_header())
    print(f"BERT L={config.num_hidden_layers} H={config.hidden_size} "
          f"A={config.num_attention_heads} I={config.intermediate_size} V={config.vocab_size}, "
          f"classifier with {len(LABELS)} labels, seq {args.seq_length}, dropout 0.1, "
          f"{args.steps} timed steps after {args.warmup_steps}", flush=True)

    rows = []
    for batch_size in batch_sizes:
        batch = synthetic_batch(batch_size, args.seq_length, config.vocab_size)
        step_fns = {dtype: our_step(config, batch, dtype) for dtype in dtypes}
        if args.original_repo:
            step_fns["original"] = classifier_original_step(args.original_repo, config_dict,
                                                            batch)
        timings = time_interleaved(step_fns, args.steps, args.warmup_steps)
        original = timings.get("original")
        for dtype in dtypes:
            seconds, best = timings[dtype]
            rows.append([
                dtype, args.seq_length, batch_size, f"{seconds:.3f}", f"{best:.3f}",
                f"{batch_size / seconds:.2f}",
                f"{original[0]:.3f} / {original[1]:.3f}" if original else "-",
                f"{original[0] / seconds:.2f}x / {original[1] / best:.2f}x" if original else "-",
            ])
            print(" | ".join(str(c) for c in rows[-1]), flush=True)
    print()
    print_table(["dtype", "seq", "batch", "ours s/step (median)", "ours s/step (best)",
                 "ours seq/s (median)", "original float32 s/step median / best",
                 "speed-up median / best"], rows)


if __name__ == "__main__":
    main()
