"""Training throughput of BERT through the real training step (forward, backward, all-reduce,
global-norm clipping, AdamWeightDecay, global_step), with the model FLOP utilisation against a
matmul peak measured in the same run (best of 1024^3, 2048^3 and 4096^3 matmuls, just before
and after each row).

    python benchmarks/pretrain_step.py                 # BERT-Base, seq 128, batch 8 and 32
    python benchmarks/pretrain_step.py --batch_sizes=8 --steps=5 --layers=2   # quick look

Each row: seconds per step (median and fastest of --steps single-step calls), sequences/s,
achieved model GFLOP/s of the fastest step (analytic matmul FLOPs of a training step, 3x the
forward pass) and its fraction of the best matmul peak around the row (MFU). With
--original_repo=PATH (a copy of google-research/bert) the original's own float32 training step
(its model, heads and AdamWeightDecay, through tf.compat.v1, see tools.original) is timed in
the same run on the same batch, and each row shows our speed-up over it:

    python benchmarks/pretrain_step.py --batch_sizes=8 --original_repo=/tmp/orig_bert

Precisions, XLA and sequence lengths (docs/scale.md):

    python benchmarks/pretrain_step.py --dtype=float32,bfloat16 --xla=off,on \
        --seq_batch=128:8,512:2 --steps=5

Each row's MFU is against the matmul peak of ITS compute dtype (float32 or bfloat16),
measured in the same run around the row; both peaks are printed per row.
"""

import argparse
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from common import (  # noqa: E402
    BERT_BASE, SyntheticStream, matmul_peak_gflops, pretraining_batch, pretraining_step_flops,
    print_machine_header, print_table,
)

import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402

from bert_tf.bert.config import BertConfig  # noqa: E402
from bert_tf.bert.pretraining_task import Pretrainer, PretrainingOptions  # noqa: E402
from tools.original import load_original_module  # noqa: E402


MIXED_PRECISION = {"float32": "none", "bfloat16": "bf16", "float16": "fp16"}


def measure(config, batch_size, seq_length, max_predictions, steps, warmup_steps,
            fused_optimizer=False, dtype="float32", use_xla=False):
    options = PretrainingOptions(
        fused_optimizer=fused_optimizer, mixed_precision=MIXED_PRECISION[dtype], use_xla=use_xla,
        input_files=[], output_dir="/nonexistent", max_seq_length=seq_length,
        max_predictions_per_seq=max_predictions, train_batch_size=batch_size,
        num_train_steps=10**6, num_warmup_steps=100, learning_rate=1e-4,
    )
    trainer = Pretrainer(config, options)
    stream = SyntheticStream(pretraining_batch(batch_size, seq_length, max_predictions,
                                               config.vocab_size))
    train = trainer.make_train_function(stream)
    train(tf.constant(warmup_steps, tf.int32))["total_loss"].numpy()  # trace + warm up
    # One step per call, so the fastest step can be told from steps slowed down by other
    # work on the shared cores.
    times = []
    for _ in range(steps):
        start = time.perf_counter()
        losses = train(tf.constant(1, tf.int32))["total_loss"].numpy()
        times.append(time.perf_counter() - start)
        assert np.all(np.isfinite(losses))
    return float(np.median(times)), min(times)


def measure_original(repo, config_dict, batch_size, seq_length, max_predictions, steps,
                     warmup_steps):
    """The original run_pretraining.py's float32 training step (its model_fn's graph: model,
    both heads, create_optimizer's AdamWeightDecay) on the same synthetic batch, through a
    tf.compat.v1 session. Returns (median, fastest) seconds per step."""
    modeling = load_original_module(repo, "modeling")
    optimization = load_original_module(repo, "optimization")
    run_pretraining = load_original_module(repo, "run_pretraining")
    batch = pretraining_batch(batch_size, seq_length, max_predictions, config_dict["vocab_size"])
    graph = tf.Graph()
    with graph.as_default():
        features = {k: tf.constant(v) for k, v in batch.items()}
        config = modeling.BertConfig.from_dict(config_dict)
        model = modeling.BertModel(
            config=config, is_training=True, input_ids=features["input_ids"],
            input_mask=features["input_mask"], token_type_ids=features["segment_ids"],
            use_one_hot_embeddings=False)
        mlm_loss, _, _ = run_pretraining.get_masked_lm_output(
            config, model.get_sequence_output(), model.get_embedding_table(),
            features["masked_lm_positions"], features["masked_lm_ids"],
            features["masked_lm_weights"])
        nsp_loss, _, _ = run_pretraining.get_next_sentence_output(
            config, model.get_pooled_output(), features["next_sentence_labels"])
        loss = mlm_loss + nsp_loss
        train_op = optimization.create_optimizer(loss, 1e-4, 10**6, 100, False)
        init = tf.compat.v1.global_variables_initializer()
    with tf.compat.v1.Session(graph=graph) as session:
        session.run(init)
        for _ in range(warmup_steps):
            session.run(train_op)
        times = []
        for _ in range(steps):
            start = time.perf_counter()
            _, value = session.run([train_op, loss])
            times.append(time.perf_counter() - start)
            assert np.isfinite(value)
    return float(np.median(times)), min(times)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--batch_sizes", default="8,32")
    parser.add_argument("--seq_length", type=int, default=128)
    parser.add_argument("--max_predictions_per_seq", type=int, default=20)
    parser.add_argument("--steps", type=int, default=10, help="timed steps per row")
    parser.add_argument("--warmup_steps", type=int, default=2)
    parser.add_argument("--layers", type=int, default=BERT_BASE["num_hidden_layers"])
    parser.add_argument("--dtype", default="float32",
                        help="comma list of compute dtypes: float32, bfloat16, float16")
    parser.add_argument("--xla", default="off", help="comma list of off/on (--use_xla)")
    parser.add_argument("--seq_batch", default=None,
                        help="comma list of seq_length:batch_size pairs (overrides "
                             "--seq_length and --batch_sizes), e.g. 128:8,512:2")
    parser.add_argument("--optimizer", default="exact",
                        help="comma list of optimizer updates to measure: exact (op by op, as "
                             "the original) and/or fused (XLA-fused per variable)")
    parser.add_argument("--original_repo", default=None,
                        help="a copy of google-research/bert: also time its float32 training "
                             "step on the same batch, in this run, as the baseline")
    args = parser.parse_args()

    config_dict = dict(BERT_BASE, num_hidden_layers=args.layers)
    config = BertConfig.from_dict(config_dict)
    print_machine_header()
    print(f"BERT L={config.num_hidden_layers}"
          f" H={config.hidden_size} A={config.num_attention_heads} I={config.intermediate_size}"
          f" V={config.vocab_size}, {args.max_predictions_per_seq} "
          f"predictions/seq, dropout 0.1")
    if args.seq_batch:
        shapes = [tuple(int(x) for x in pair.split(":")) for pair in args.seq_batch.split(",")]
    else:
        shapes = [(args.seq_length, int(b)) for b in args.batch_sizes.split(",")]
    dtypes = args.dtype.split(",")
    for dtype in dtypes:
        if dtype not in MIXED_PRECISION:
            parser.error(f"--dtype: {dtype!r} is not one of {', '.join(MIXED_PRECISION)}")

    rows, originals = [], {}
    runs = [(seq, b, o, d, x) for seq, b in shapes for o in args.optimizer.split(",")
            for x in args.xla.split(",") for d in dtypes]
    for seq_length, batch_size, optimizer, dtype, xla in runs:
        flops_per_seq = pretraining_step_flops(config_dict, seq_length,
                                               args.max_predictions_per_seq)
        # The machine's speed drifts (shared cores): each row gets its own peaks, the best of
        # one measurement just before and one just after it.
        peaks = {d: matmul_peak_gflops(d, seconds=2.0) for d in ("float32", "bfloat16")}
        seconds, best = measure(config, batch_size, seq_length,
                                args.max_predictions_per_seq, args.steps, args.warmup_steps,
                                fused_optimizer=optimizer == "fused", dtype=dtype,
                                use_xla=xla == "on")
        peaks = {d: max(p, matmul_peak_gflops(d, seconds=2.0)) for d, p in peaks.items()}
        peak = peaks["bfloat16" if dtype == "bfloat16" else "float32"]
        seqs = batch_size / seconds
        # Utilisation from the fastest step against the best matmul: both least disturbed.
        gflops = batch_size / best * flops_per_seq / 1e9
        original = None
        if args.original_repo and (seq_length, batch_size) not in originals:
            originals[seq_length, batch_size] = measure_original(
                args.original_repo, config_dict, batch_size, seq_length,
                args.max_predictions_per_seq, args.steps, args.warmup_steps)
        if args.original_repo:
            original = originals[seq_length, batch_size]
        rows.append([
            dtype, xla, optimizer, seq_length, batch_size, f"{seconds:.3f}", f"{best:.3f}",
            f"{seqs:.2f}",
            f"{gflops:.0f}", f"{peaks['float32']:.0f}", f"{peaks['bfloat16']:.0f}",
            f"{gflops / peak:.0%}",
            f"{original[0]:.3f} / {original[1]:.3f} ({original[0] / seconds:.2f}x / "
            f"{original[1] / best:.2f}x)" if original else "-",
        ])
        print(" | ".join(str(c) for c in rows[-1]), flush=True)
    print()
    print_table(["dtype", "xla", "optimizer", "seq", "batch", "s/step (median)", "s/step (best)",
                 "seq/s (median)", "model GFLOP/s (best)", "fp32 peak", "bf16 peak",
                 "MFU (own dtype's peak)",
                 "original float32 s/step median / best (our speed-up)"], rows)


if __name__ == "__main__":
    main()
