"""A BERT-Base-shaped classifier export in float32, bfloat16 and int8 (`--precision`): the bytes
of its variables and the latency of a 12-piece request at batch 1.

  python3 benchmarks/export_precision.py [--rounds 200] [--sizes_only]

Random weights (a classifier head of 2 labels) saved as a checkpoint, the real 30,522-entry
uncased vocab from ../shared/data; both exports are built from the same checkpoint, loaded in
this process, and called in turns (`common.timings_interleaved`: one call of each per round, so
that the load of the shared cores falls on both alike) with the same string, whose pieces with
[CLS] and [SEP] are 12 (the export runs it at 16 positions). Also timed in the same turns, as
`request_floor.py` does: the encoder's 72 dense matmuls alone at 16 rows, with kernels of each
dtype (the floor of the request in TensorFlow's matmul kernels); for int8 the export's own
arithmetic (`bert_tf.layers.dense.int8_matmul`: rows quantized, XLA's int8 x int8 -> int32 dot,
rescaled) and, for comparison, TensorFlow's own int8 x int8 -> int32 matmul (`tf.matmul(...,
output_type=tf.int32)`, what Keras 3's `Dense.quantize("int8")` runs) on the same quantized
rows (every int8 path: benchmarks/int8_matmul.py). Also printed: the largest |difference| of each
export's probabilities from float32's on that request. `--sizes_only`: the exports' sizes and
differences, nothing timed.
"""

import argparse
import os
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from common import (  # noqa: E402
    BERT_BASE, REPO, print_machine_header, print_table, timings_interleaved,
)
from request_floor import dense_kernels, dense_matmuls  # noqa: E402

import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402

from bert_tf.bert.config import BertConfig  # noqa: E402
from bert_tf.bert.tokenization import FullTokenizer  # noqa: E402
from bert_tf.checkpoints import save_original_checkpoint  # noqa: E402
from bert_tf.layers.heads import ClassifierHead  # noqa: E402
from bert_tf.models import BertTaskModel  # noqa: E402
from bert_tf.serving import export  # noqa: E402
from bert_tf.layers.dense import int8_matmul, quantize_kernel, quantize_rows  # noqa: E402
from bert_tf.training.precision import PRECISIONS, keras_policy  # noqa: E402

VOCAB_FILE = os.path.join(os.path.dirname(REPO), "shared", "data", "uncased_vocab.txt")
REQUEST = "the quick brown fox jumps over the lazy dog today"  # 10 pieces + 2


def _variables_bytes(path):
    folder = os.path.join(path, "variables")
    return sum(os.path.getsize(os.path.join(folder, f)) for f in os.listdir(folder))


def int32_matmul(h, kernel):
    """h [n, in] float32 quantized per row, times an (int8 kernel, scale) pair in TensorFlow's
    int8 x int8 -> int32 matmul, rescaled to float32."""
    kernel_int8, scale = kernel
    h8, h_scale = quantize_rows(h)
    products = tf.matmul(tf.cast(h8, tf.int8), kernel_int8, output_type=tf.int32)
    return tf.cast(products, tf.float32) * h_scale * scale


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=200, help="timed calls of each export")
    parser.add_argument("--sizes_only", action="store_true",
                        help="print the variables' sizes and the probabilities' differences "
                             "only (no timing)")
    args = parser.parse_args()
    if not os.path.exists(VOCAB_FILE):
        raise SystemExit(f"{VOCAB_FILE} is absent (../shared/data comes with the project)")
    pieces = len(FullTokenizer(VOCAB_FILE, do_lower_case=True).tokenize(REQUEST)) + 2
    assert pieces == 12, pieces
    print_machine_header()

    config = BertConfig.from_dict(BERT_BASE)
    tf.keras.utils.set_random_seed(0)
    model = BertTaskModel(config, ClassifierHead(2, config.hidden_size))
    with tempfile.TemporaryDirectory() as tmp:
        prefix = save_original_checkpoint(model, os.path.join(tmp, "ckpt", "model.ckpt"))
        del model
        serves, sizes = {}, {}
        for precision in PRECISIONS:
            module, info = export.build_export("classifier", config, prefix, VOCAB_FILE, True,
                                               128, ["neg", "pos"], precision=precision)
            path = export.save_export(module, info, os.path.join(tmp, precision))
            del module
            sizes[precision] = _variables_bytes(path)
            serves[precision] = tf.saved_model.load(path).signatures["serving_default"]
        text_a, text_b = tf.constant([REQUEST]), tf.constant([""])
        outputs = {p: s(text_a=text_a, text_b=text_b)["probabilities"].numpy()
                   for p, s in serves.items()}
        if args.sizes_only:
            differences = ", ".join(
                f"{p} {np.abs(outputs[p] - outputs['float32']).max():.2g}"
                for p in PRECISIONS if p != "float32")
            print(f"BERT-Base-shaped classifier, a {pieces}-piece request at batch 1; largest "
                  f"|probability - float32's|: {differences}")
            print_table(["precision", "variables bytes", "variables MB"],
                        [[p, f"{sizes[p]:,}", f"{sizes[p] / 1e6:.1f}"] for p in PRECISIONS])
            return
        calls = {p: (lambda s=s: s(text_a=text_a, text_b=text_b)["probabilities"].numpy())
                 for p, s in serves.items()}
        for precision, policy in PRECISIONS.items():
            with keras_policy(policy):
                encoder = BertTaskModel(config, ClassifierHead(2, config.hidden_size)).bert
            kernels = [k.value for k in dense_kernels(encoder)]
            h = tf.random.normal([16, config.hidden_size], stddev=0.1, dtype=kernels[0].dtype)
            if precision == "int8":
                kernels = [tuple(tf.constant(a) for a in quantize_kernel(k.numpy()))
                           for k in kernels]
                calls["matmuls int8 x int8 -> int32 (tf.matmul)"] = (
                    lambda f=dense_matmuls(kernels, int32_matmul), h=h: f(h).numpy())
                matmuls = dense_matmuls(kernels, lambda x, k: int8_matmul(x, *k))
            else:
                matmuls = dense_matmuls(kernels)
            calls[f"matmuls {precision}"] = lambda f=matmuls, h=h: f(h).numpy()
        timings = timings_interleaved(calls, args.rounds, warmup_steps=5)
    differences = ", ".join(
        f"{p} {np.abs(outputs[p] - outputs['float32']).max():.2g}"
        for p in PRECISIONS if p != "float32")
    print(f"BERT-Base-shaped classifier, a {pieces}-piece request at batch 1, "
          f"{args.rounds} calls of each in turns; largest |probability - float32's|: "
          f"{differences}")
    print()
    rows = []
    for precision in PRECISIONS:
        t, floor = timings[precision], timings[f"matmuls {precision}"]
        rows.append([precision, f"{sizes[precision] / 1e6:.1f}",
                     f"{t['median'] * 1e3:.1f}", f"{t['fastest'] * 1e3:.1f}",
                     f"{t['cpu_median'] * 1e3:.1f}",
                     f"{timings['float32']['median'] / t['median']:.2f}",
                     f"{floor['median'] * 1e3:.1f} / {floor['fastest'] * 1e3:.1f}"])
    t = timings["matmuls int8 x int8 -> int32 (tf.matmul)"]
    rows.append(["(int8 x int8 -> int32 tf.matmul)", "", "", "", "", "",
                 f"{t['median'] * 1e3:.1f} / {t['fastest'] * 1e3:.1f}"])
    print_table(["precision", "variables MB", "median ms", "fastest ms", "CPU ms (median)",
                 "speed vs float32", "72 matmuls alone ms (median / fastest)"], rows)


if __name__ == "__main__":
    main()
