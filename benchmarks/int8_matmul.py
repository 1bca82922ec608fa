"""Every int8 matmul path TensorFlow offers on this CPU, against float32 and bfloat16, at the
shapes of a batch-1 BERT-Base request: the feed-forward pair [16, 768] x [768, 3072] then
[16, 3072] x [3072, 768].

  python3 benchmarks/int8_matmul.py [--rounds 30] [--pairs 36]

`--pairs` distinct (up, down) kernel pairs (36 pairs: 72 matmuls, 340 MB of float32 kernels, far
beyond the caches, as a request reads them: benchmarks/request_floor.py) are chained in one
tf.function, h -> h @ up -> @ down -> the next pair; the kernels are tf.Variables (read as the
export reads them, so no cast of a kernel is folded away). Between matmuls the activations are
float32, and every int8 path quantizes them per row (`bert_tf.layers.dense.quantize_rows`) and
rescales its products to float32, as an int8 `Dense` must (bert_tf/layers/dense.py). The paths,
called in turns (`common.timings_interleaved`):

  float32, bfloat16       tf.matmul of float32 / bfloat16 kernels (bfloat16: the activations cast)
  int8 -> float32         the int8 kernel and rows cast to float32, one float32 matmul (the
                          export's arithmetic before this benchmark)
  int8 x int8 -> int32    tf.matmul(int8, int8, output_type=tf.int32) (Keras 3's
                          Dense.quantize("int8") under the TF backend)
  oneDNN QuantizedMatMulWithBiasAndDequantize   quint8 rows (x8 + 128, MIN_FIRST: oneDNN
                          subtracts 128 * column sums of W8) x qint8 kernel -> float32
  oneDNN QuantizedMatMulWithBias   the same -> qint32, cast to float32
  oneDNN ... (kernel a graph constant)   the first with tf.constant kernels (oneDNN caches
                          their reordered layout; not how an export holds its weights)
  UniformQuantizedDotHybrid   float32 rows x qint8 kernel with per-column scales
  weight-only int8 -> bf16    the int8 kernel cast to bfloat16 (exact: 8 significant bits),
                          rows cast to bfloat16, one bfloat16 matmul, times the column scale
  ... (XLA)               the whole chain with jit_compile=True
  ... (XLA per matmul)    each matmul with its quantization a jit_compile function, called
                          from a graph that is not compiled (what a layer can carry)

Also printed per path: the largest error of one pair's output against a float64 emulation of
the same quantized arithmetic (exact integer products), relative to the largest |output|.
"""

import argparse
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from common import print_machine_header, print_table, timings_interleaved  # noqa: E402

import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402

from bert_tf.layers.dense import INT8_MAX, quantize_kernel, quantize_rows  # noqa: E402

HIDDEN, INTERMEDIATE, ROWS = 768, 3072, 16


def _rows_int8(h):
    """h [n, in] float32 -> (x8 as int8 [n, in], row scale [n, 1])."""
    x8, scale = quantize_rows(h)
    return tf.cast(x8, tf.int8), scale


def _rows_quint8(h):
    """h -> (x8 + 128 as quint8 [n, in], row scale [n, 1]): oneDNN's quantized matmuls take
    unsigned activations; with min -128, max 127 (MIN_FIRST) the quint8 q stands for q - 128."""
    x8, scale = quantize_rows(h)
    shifted = tf.cast(tf.cast(x8, tf.int32) + 128, tf.uint8)
    return tf.bitcast(shifted, tf.quint8), scale


def _onednn_ranges():
    # a = q - 128 exactly, W = q8 exactly (scale 1): the op returns the integer sums.
    return dict(min_a=tf.constant(-128.0), max_a=tf.constant(127.0),
                min_b=tf.constant(-float(INT8_MAX)), max_b=tf.constant(float(INT8_MAX)))


def float_matmul(h, k):
    return tf.matmul(h, k["float32"])


def bf16_matmul(h, k):
    return tf.cast(tf.matmul(tf.cast(h, tf.bfloat16), k["bfloat16"]), tf.float32)


def int8_as_float32(h, k):
    x8, s = quantize_rows(h)
    return tf.matmul(x8, tf.cast(k["int8"], tf.float32)) * s * k["scale"]


def int8_int32(h, k):
    x8, s = _rows_int8(h)
    products = tf.matmul(x8, k["int8"], output_type=tf.int32)
    return tf.cast(products, tf.float32) * s * k["scale"]


def onednn_dequantize(h, k):
    xq, s = _rows_quint8(h)
    units = k["int8"].shape[1]
    products = tf.raw_ops.QuantizedMatMulWithBiasAndDequantize(
        a=xq, b=tf.bitcast(k["int8"], tf.qint8), bias=tf.zeros([units]),
        min_freezed_output=tf.constant(0.0), max_freezed_output=tf.constant(0.0),
        Toutput=tf.float32, input_quant_mode="MIN_FIRST", **_onednn_ranges())
    return products * s * k["scale"]


def onednn_dequantize_constant(h, k):
    """As `onednn_dequantize` with the kernel a constant of the graph (not a variable): oneDNN
    then reorders it to its own layout once and keeps it (not the export's format: its weights
    are variables)."""
    return onednn_dequantize(h, {**k, "int8": tf.constant(k["int8_numpy"])})


def onednn_qint32(h, k):
    xq, s = _rows_quint8(h)
    units = k["int8"].shape[1]
    products, _, _ = tf.raw_ops.QuantizedMatMulWithBias(
        a=xq, b=tf.bitcast(k["int8"], tf.qint8), bias=tf.zeros([units]),
        Toutput=tf.qint32, input_quant_mode="MIN_FIRST", **_onednn_ranges())
    return tf.cast(tf.bitcast(products, tf.int32), tf.float32) * s * k["scale"]


def uniform_hybrid(h, k):
    units = k["int8"].shape[1]
    return tf.raw_ops.UniformQuantizedDotHybrid(
        lhs=h, rhs=tf.bitcast(k["int8"], tf.qint8), rhs_scales=k["scale"],
        rhs_zero_points=tf.zeros([units], tf.int32), Tout=tf.float32,
        rhs_quantization_axis=1, rhs_quantization_min_val=-INT8_MAX,
        rhs_quantization_max_val=INT8_MAX)


@tf.function(jit_compile=True)
def _int8_int32_compiled(h, kernel_int8, scale):
    x8, s = _rows_int8(h)
    products = tf.matmul(x8, kernel_int8, output_type=tf.int32)
    return tf.cast(products, tf.float32) * s * scale


def int8_int32_per_matmul_xla(h, k):
    """Each matmul (with its row quantization and rescale) a jit_compile function of its own,
    called from a graph that is not compiled: what a Keras layer can carry."""
    return _int8_int32_compiled(h, k["int8"], k["scale"])


def weight_only_bf16(h, k):
    products = tf.matmul(tf.cast(h, tf.bfloat16), tf.cast(k["int8"], tf.bfloat16))
    return tf.cast(products, tf.float32) * k["scale"]


PATHS = {
    "float32": (float_matmul, False),
    "bfloat16": (bf16_matmul, False),
    "int8 -> float32 (export before)": (int8_as_float32, False),
    "int8 x int8 -> int32 tf.matmul": (int8_int32, False),
    "oneDNN QuantizedMatMulWithBiasAndDequantize": (onednn_dequantize, False),
    "oneDNN QuantizedMatMulWithBias (qint32)": (onednn_qint32, False),
    "oneDNN ...AndDequantize (kernel a graph constant)": (onednn_dequantize_constant, False),
    "UniformQuantizedDotHybrid": (uniform_hybrid, False),
    "weight-only int8 -> bfloat16": (weight_only_bf16, False),
    "int8 x int8 -> int32 (XLA per matmul)": (int8_int32_per_matmul_xla, False),
    "float32 (XLA)": (float_matmul, True),
    "bfloat16 (XLA)": (bf16_matmul, True),
    "int8 -> float32 (XLA)": (int8_as_float32, True),
    "int8 x int8 -> int32 (XLA)": (int8_int32, True),
    "weight-only int8 -> bfloat16 (XLA)": (weight_only_bf16, True),
}


# A reference kernel: 72 ms per matmul in a 4-pair run (45x float32); timed only when named.
SLOW = {"UniformQuantizedDotHybrid"}


def make_kernels(pairs, seed=0):
    """[(up, down)] of dicts {"float32", "bfloat16", "int8", "scale"} of tf.Variables: float32
    kernels N(0, 0.02) as BERT's initializer, their bfloat16 casts and int8 quantizations."""
    rng = np.random.RandomState(seed)
    kernels = []
    for _ in range(pairs):
        pair = []
        for shape in [(HIDDEN, INTERMEDIATE), (INTERMEDIATE, HIDDEN)]:
            w = (rng.standard_normal(shape) * 0.02).astype(np.float32)
            w8, scale = quantize_kernel(w)
            pair.append({"float32": tf.Variable(w), "bfloat16": tf.Variable(w, dtype=tf.bfloat16),
                         "int8": tf.Variable(w8), "scale": tf.Variable(scale), "int8_numpy": w8})
        kernels.append(tuple(pair))
    return kernels


def chain(matmul, kernels, jit):
    """tf.function h [16, 768] -> h after every pair: h = matmul(matmul(h, up), down)."""
    @tf.function(jit_compile=jit)
    def run(h):
        for up, down in kernels:
            h = matmul(matmul(h, up), down)
        return h
    return run


def _one_matmul(matmul, k, jit):
    return tf.function(lambda x: matmul(x, k), jit_compile=jit)


def emulated(h, k):
    """float64 emulation of the per-row / per-column int8 arithmetic: h [n, in] float32."""
    h = h.astype(np.float64)
    scale = np.abs(h).max(axis=1, keepdims=True) / INT8_MAX
    x8 = np.clip(np.round(h / np.where(scale > 0, scale, 1)), -INT8_MAX, INT8_MAX)
    w8 = k["int8"].numpy().astype(np.float64)
    return (x8 @ w8) * scale * k["scale"].numpy().astype(np.float64)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=30, help="timed calls of each path")
    parser.add_argument("--pairs", type=int, default=36, help="distinct (up, down) kernel pairs")
    parser.add_argument("--paths", default="",
                        help="comma list of path names (default: all but " + ", ".join(SLOW) + ")")
    args = parser.parse_args()
    print_machine_header()
    kernels = make_kernels(args.pairs)
    h = tf.constant(np.random.RandomState(1).standard_normal([ROWS, HIDDEN]).astype(np.float32))
    names = [p for p in args.paths.split(",") if p] or [p for p in PATHS if p not in SLOW]

    calls, errors = {}, {}
    up, down = kernels[0]
    for name in names:
        matmul, jit = PATHS[name]
        run = chain(matmul, kernels, jit)
        try:
            run(h).numpy()
        except (tf.errors.OpError, ValueError, TypeError) as e:
            print(f"{name}: fails: {str(e).splitlines()[0][:200]}")
            continue
        calls[name] = lambda run=run: run(h).numpy()
        # One pair, against the float64 emulation of the int8 arithmetic (float paths: the
        # float64 product of the float32 kernels), each matmul from the same float32 input.
        worst = 0.0
        for x, k in [(h, up), (tf.nn.gelu(tf.matmul(h, up["float32"])), down)]:
            # k closed over, not an argument: its NumPy kernel stays a constant of the graph.
            pair = _one_matmul(matmul, k, jit)
            got = pair(x).numpy().astype(np.float64)
            if "int8" in name or "Quantized" in name or "Uniform" in name:
                want = emulated(x.numpy(), k)
            else:
                want = x.numpy().astype(np.float64) @ k["float32"].numpy().astype(np.float64)
            worst = max(worst, float(np.abs(got - want).max() / np.abs(want).max()))
        errors[name] = worst
    timings = timings_interleaved(calls, args.rounds, warmup_steps=3)
    base = timings["float32"]["median"] if "float32" in timings else None
    matmuls = 2 * args.pairs
    print(f"{matmuls} matmuls ({args.pairs} pairs [16, 768] x [768, 3072], [16, 3072] x "
          f"[3072, 768]) in one tf.function, {args.rounds} calls of each in turns")
    print()
    rows = []
    for name in calls:
        t = timings[name]
        rows.append([name, f"{t['median'] * 1e3:.1f}", f"{t['fastest'] * 1e3:.1f}",
                     f"{t['median'] / matmuls * 1e3:.3f}",
                     f"{base / t['median']:.2f}" if base else "",
                     f"{errors[name]:.1e}"])
    print_table(["path", "median ms", "fastest ms", "ms per matmul (median)",
                 "speed vs float32", "max error / max |output| (one pair)"], rows)


if __name__ == "__main__":
    main()
