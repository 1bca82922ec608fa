"""The floor of a served request at batch 1: the BERT-Base encoder's forward pass against its
dense matmuls alone, by request length.

  python3 benchmarks/request_floor.py [--pieces 1,12,16,128] [--seconds 5]

A request of n word pieces multiplies an [n, H] activation by each of the encoder's 72 dense
kernels (query, key, value, attention output, intermediate, output of 12 layers: 340 MB in
float32). The second column times exactly those 72 matmuls, with the model's own kernels, in one
tf.function, with the forward pass's dependencies (a layer's query, key and value products
independent, then summed: one addition of [n, H] per layer, the only other op), and nothing
else: no bias, attention, LayerNorm or activation. A float32 forward pass through TensorFlow's
matmul kernels on the same machine cannot take less, so the column bounds the latency an export
can reach there (docs/performance.md, "Dynamic padding on real lengths").
Medians over at least `--seconds` of calls, in float32.
"""

import argparse
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from common import BERT_BASE, call_timings, print_machine_header, print_table  # noqa: E402

import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402

from bert_tf import BertConfig, BertModel  # noqa: E402


def dense_kernels(model):
    """The 72 dense kernels of the encoder, in the order of a forward pass."""
    kernels = []
    for block in model.encoder.blocks:
        kernels.extend([block.self_attention.query.kernel, block.self_attention.key.kernel,
                        block.self_attention.value.kernel, block.attention_output.kernel,
                        block.intermediate.kernel, block.output_dense.kernel])
    return kernels


def dense_matmuls(kernels, matmul=tf.matmul):
    """A tf.function of the 72 dense matmuls of a forward pass (`dense_kernels`, any dtype),
    [n, H] -> [n, H], with the forward pass's dependencies: a layer's query, key and value
    products are independent (free to run side by side), the next three products a chain.
    `matmul(h, kernel)`: how each product is computed (int8: a kernel is (int8, scale))."""
    @tf.function
    def matmuls(h):
        for layer in range(0, len(kernels), 6):
            query, key, value, attention_output, intermediate, output = kernels[layer:layer + 6]
            context = tf.add_n([matmul(h, query), matmul(h, key), matmul(h, value)])
            h = matmul(matmul(matmul(context, attention_output), intermediate), output)
        return h
    return matmuls


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pieces", default="1,12,16,128",
                        help="comma list of request lengths (word pieces, [CLS]/[SEP] included)")
    parser.add_argument("--seconds", type=float, default=5.0, help="timed seconds per cell")
    args = parser.parse_args()
    print_machine_header()

    model = BertModel(BertConfig.from_dict(BERT_BASE))
    kernels = dense_kernels(model)
    hidden = BERT_BASE["hidden_size"]
    assert len(kernels) == 6 * BERT_BASE["num_hidden_layers"]

    forward = tf.function(lambda x: model(x, training=False)["sequence_output"])
    matmuls = dense_matmuls(kernels)

    rows = []
    rng = np.random.RandomState(0)
    for pieces in [int(p) for p in args.pieces.split(",")]:
        features = {
            "input_ids": tf.constant(rng.randint(1000, 2000, [1, pieces]), tf.int32),
            "input_mask": tf.ones([1, pieces], tf.int32),
            "segment_ids": tf.zeros([1, pieces], tf.int32),
        }
        h = tf.constant(rng.normal(size=[pieces, hidden]).astype(np.float32) * 0.1)
        full = np.median(call_timings(lambda: forward(features).numpy(), args.seconds))
        alone = np.median(call_timings(lambda: matmuls(h).numpy(), args.seconds))
        rows.append([pieces, f"{full * 1e3:.1f} ms", f"{alone * 1e3:.1f} ms",
                     f"{alone / full:.0%}"])
    print("BERT-Base encoder, batch 1, float32 (medians per call)")
    print_table(["pieces", "forward pass", "its 72 dense matmuls alone", "share"], rows)


if __name__ == "__main__":
    main()
