"""The encoder's 72 dense matmuls at a request's row count, by kernel layout: does a kernel
stored transposed, [out, in], multiply faster than the checkpoint's [in, out]?

  python3 benchmarks/matmul_layout.py [--rows 16,128,512] [--rounds 20]

Each row is `request_floor.dense_matmuls` (the 72 matmuls of a BERT-Base forward pass, with its
dependencies, 36 distinct [768, 3072]/[3072, 768] kernel pairs plus the attention's [768, 768]
ones, far beyond the caches) on [n, 768] random activations, in bfloat16 and float32, with:
  plain           tf.matmul(x, W), W [in, out] as the checkpoint holds it (what the exports run);
  output^T        the output dense's W [3072, 768] stored as W^T [768, 3072], its product
                  computed as (W^T x^T)^T = tf.transpose(tf.matmul(W^T, x, transpose_b=True));
                  the other kernels plain;
  all^T           every kernel so.
Timed in turns (common.timings_interleaved); ms per chain of 72, median (fastest).
Why it can differ: oneDNN's bfloat16 brgemm reads its first operand as it lies but copies the
second into its own blocked layout on every call when it is a variable (ONEDNN_VERBOSE shows
`wei:bf16::blocked:ab` on each call).
"""

import argparse
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from common import print_machine_header, print_table, timings_interleaved  # noqa: E402
from request_floor import dense_matmuls  # noqa: E402

import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402

HIDDEN, INTERMEDIATE, LAYERS = 768, 3072, 12


def kernels(dtype, transposed, rng):
    """72 (kernel variable, stored transposed?) in forward order; `transposed(i)` says which
    (i: the index within a layer's six: query, key, value, attention output, intermediate,
    output)."""
    shapes = [(HIDDEN, HIDDEN)] * 4 + [(HIDDEN, INTERMEDIATE), (INTERMEDIATE, HIDDEN)]
    out = []
    for _ in range(LAYERS):
        for i, shape in enumerate(shapes):
            # Unit gain (std 1/sqrt(in)): 72 products in a row neither vanish into denormals
            # (slow arithmetic) nor overflow.
            w = (rng.standard_normal(shape) / np.sqrt(shape[0])).astype(np.float32)
            t = transposed(i)
            out.append((tf.Variable(tf.cast(w.T.copy() if t else w, dtype)), t))
    return out


def product(x, kernel):
    variable, transposed = kernel
    if transposed:
        return tf.transpose(tf.matmul(variable, x, transpose_b=True))
    return tf.matmul(x, variable)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", default="16,128,512", help="comma list of row counts")
    parser.add_argument("--rounds", type=int, default=20, help="timed rounds")
    args = parser.parse_args()
    print_machine_header()
    rng = np.random.default_rng(0)
    layouts = {"plain": lambda i: False, "output^T": lambda i: i == 5, "all^T": lambda i: True}
    rows = []
    for dtype in (tf.bfloat16, tf.float32):
        chains = {name: dense_matmuls(kernels(dtype, which, rng), product)
                  for name, which in layouts.items()}
        for n in (int(x) for x in args.rows.split(",")):
            x = tf.constant(rng.standard_normal((n, HIDDEN)), dtype)
            calls = {name: (lambda f=f: f(x).numpy()) for name, f in chains.items()}
            timing = timings_interleaved(calls, args.rounds, warmup_steps=2)
            base = timing["plain"]["median"]
            rows.append([dtype.name, n] + [
                f"{t['median'] * 1e3:.2f} ({t['fastest'] * 1e3:.2f}) {base / t['median']:.2f}x"
                for t in timing.values()])
            print(rows[-1], flush=True)
    print()
    print_table(["dtype", "rows"] + [f"{name} ms (fastest) speed-up" for name in layouts],
                rows)
    print(f"load average at the end: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")


if __name__ == "__main__":
    main()
