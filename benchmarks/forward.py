"""Inference throughput of a BERT-Base-shaped encoder: float32/bfloat16, with and without XLA.

  python3 benchmarks/forward.py [--batch_size 8] [--seq_length 128] [--seconds 20]

Prints sequences/s and the achieved matmul FLOP/s as a fraction of the matmul peak of the same
dtype, measured in the same run (the best of 1024^3, 2048^3 and 4096^3 matmuls through
TensorFlow).
"""

import argparse
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from common import (  # noqa: E402
    BERT_BASE, encoder_forward_flops, matmul_peak_gflops, print_machine_header, print_table,
)

import keras  # noqa: E402
import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402

from bert_tf import BertConfig, BertModel  # noqa: E402


def _throughput(policy, jit_compile, batch_size, seq_length, seconds):
    keras.mixed_precision.set_global_policy(policy)
    try:
        model = BertModel(BertConfig.from_dict(BERT_BASE))
    finally:
        keras.mixed_precision.set_global_policy("float32")
    rng = np.random.RandomState(0)
    features = {
        "input_ids": tf.constant(rng.randint(0, BERT_BASE["vocab_size"], [batch_size, seq_length]), tf.int32),
        "input_mask": tf.ones([batch_size, seq_length], tf.int32),
        "segment_ids": tf.zeros([batch_size, seq_length], tf.int32),
    }
    forward = tf.function(lambda x: model(x, training=False)["pooled_output"], jit_compile=jit_compile)
    forward(features).numpy()  # trace and compile
    forward(features).numpy()
    steps, start = 0, time.perf_counter()
    while time.perf_counter() - start < seconds or steps < 3:
        forward(features).numpy()
        steps += 1
    return steps * batch_size / (time.perf_counter() - start)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--batch_size", type=int, default=8)
    parser.add_argument("--seq_length", type=int, default=128)
    parser.add_argument("--seconds", type=float, default=20.0, help="timed seconds per configuration")
    args = parser.parse_args()
    print_machine_header()

    peaks = {dtype: matmul_peak_gflops(dtype) for dtype in ("float32", "bfloat16")}
    flops = encoder_forward_flops(BERT_BASE, args.seq_length)
    print(f"BERT-Base encoder forward, batch {args.batch_size}, seq {args.seq_length}: "
          f"{flops / 1e9:.1f} GFLOP/sequence; matmul peak float32 {peaks['float32']:.0f} GFLOP/s, "
          f"bfloat16 {peaks['bfloat16']:.0f} GFLOP/s\n")
    rows, baseline = [], None
    for policy, dtype in (("float32", "float32"), ("mixed_bfloat16", "bfloat16")):
        for jit in (False, True):
            seqs = _throughput(policy, jit, args.batch_size, args.seq_length, args.seconds)
            baseline = baseline or seqs
            achieved = seqs * flops / 1e9
            rows.append([dtype, "on" if jit else "off", f"{seqs:.1f}", f"{seqs / baseline:.2f}x",
                         f"{achieved:.0f}", f"{100 * achieved / peaks[dtype]:.0f}%"])
    print_table(["dtype", "XLA", "sequences/s", "vs float32", "GFLOP/s", "of matmul peak"], rows)


if __name__ == "__main__":
    main()
