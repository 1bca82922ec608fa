"""`--precision=int8` of `python -m bert_tf.export`: the encoder's Dense layers with int8 weights.

After the checkpoint is loaded, every Dense layer of the encoder (attention query/key/value/
output, intermediate, output, pooler; ALBERT's and ELECTRA's embedding projection) is quantized
in place (`quantize_encoder`: Keras' `Model.quantize("int8")` restricted to bert_tf's own Dense,
bert_tf/layers/dense.py, whose `quantize` does the work through Keras' quantization hook): its
kernel [in, out] becomes
  scale[j] = max_i |W[i, j]| / 127            (float32, one per output column)
  W8[i, j] = clip(round(W[i, j] / scale[j]), -127, 127)   (int8; |W - W8 scale| <= scale / 2)
stored once under the kernel's original checkpoint name + `/int8` and `/scale` (no float32 copy);
the bias stays float32 under its own name. At run time each row (token) of the activations is
quantized symmetrically with its own scale, x_scale = max_k |x[k]| / 127, x8 = round(x / x_scale),
and y = (x8 @ W8) x_scale scale + bias. Embeddings, LayerNorm, softmax, residual sums and the
fine-tuning heads stay float32.

The integer products: XLA's int8 x int8 -> int32 dot. Each Dense call runs one small
`jit_compile` function (row quantization, int8 dot, rescale; `bert_tf.layers.dense.int8_matmul`)
inside the otherwise uncompiled graph. `python3 benchmarks/int8_matmul.py` timed every int8 path
TensorFlow 2.21 offers on the CPU it was written on (a shared 2-core AMD EPYC, Zen 4: AVX512_VNNI,
AVX512_BF16, no AMX; oneDNN on) against float32 and bfloat16, at a batch-1 request's shapes
(72 matmuls, 36 distinct [16, 768] x [768, 3072] then [16, 3072] x [3072, 768] pairs in one
tf.function, 340 MB of float32 kernels, far beyond the caches), in turns; ms per matmul, median
(docs/serving.md "Precision" has the table and the load it was measured at):
  float32 tf.matmul 1.47-2.73; bfloat16 0.98-1.84 (1.48-1.51x float32);
  XLA int8 x int8 -> int32, one jit function per matmul 1.17-2.00 (1.26-1.37x float32; the whole
    chain compiled at once 1.16-1.44x);
  the int8 kernel cast to float32, one float32 matmul (what this export did before) 0.71-0.74x;
  tf.matmul(int8, int8, output_type=int32) (Keras 3's own Dense.quantize("int8") under the TF
    backend) 0.36-0.39x;
  oneDNN's QuantizedMatMulWithBias[AndDequantize] (quint8 rows x + 128, MIN_FIRST, qint8
    kernel) 0.40-0.46x: the weights are reordered to oneDNN's layout on every call when they are
    variables (as graph constants, cached once, 0.72 ms against float32's 2.32 ms in an 8-pair
    run, but 1.6e-2 of the output's range off the exact integer products, and the weights in
    the graph, not the export's variables);
  UniformQuantizedDotHybrid (float rows x qint8 kernel) 72 ms (a reference kernel);
  the int8 kernel cast to bfloat16 in the graph and a bfloat16 matmul (weight-only int8)
    0.98-0.99x, and rows rounded to bfloat16 (an error of 1.4e-2 of the output's range); with
    XLA 0.46-0.71x;
  everything under XLA but the int8 dot is slower than without (float32 0.58-0.94x).
So XLA's int8 dot is the only int8 path faster than float32 here; it is not faster than
bfloat16 (`--precision=auto` never picks int8: bert_tf/training/precision.py).

Exactness: the int32 sums are exact (|x8 @ W8| <= in * 127**2 = 49.5 million for 3072 inputs,
< 2**31), their cast to float32 rounds once when above 2**24, and the two products by the scales
and the bias addition once each: y is within 3 float32 roundings (2**-24 relative each) of
(x8 @ W8) x_scale scale + bias computed exactly (tests/test_export_precision.py compares with a
float64 emulation). (The float32 matmul this replaced summed the products in float32, exact only
while the partial sums stayed below 2**24.)

What XLA costs: the export is still a plain SavedModel (`saved_model_cli run` answers from it),
but its Dense calls are functions that must be compiled by XLA, which TensorFlow Serving does on
CPU only with `--xla_cpu_compilation_enabled=true`; and each new number of rows (batch x padded
length) compiles the three or four Dense shapes once (about half a second for BERT-Base's
encoder, measured under load: docs/serving.md), cached for later requests of that size.
"""

from bert_tf.layers.dense import Dense


def quantize_encoder(encoder):
    """Quantizes every Dense layer of `encoder` (a keras.Model: `BertModel` or a family's) to
    int8 in place, after the checkpoint is loaded, through Keras' `Model.quantize` restricted to
    bert_tf's `Dense` (`bert_tf.layers.dense`): each layer once, so ALBERT's shared layers once.
    The model stays a tracked Keras model; its `checkpoint_variables()` then name the quantized
    kernels `<kernel name>/int8` and `<kernel name>/scale`."""
    encoder.quantize("int8", filters=lambda layer: isinstance(layer, Dense))
    # Every 2-D float kernel of the encoder must have gone (a Dense of another class would stay
    # float32 silently).
    missed = [v.path for v in encoder.weights if v.path.endswith("kernel")]
    if missed or not any(v.path.endswith("kernel_int8") for v in encoder.weights):
        raise ValueError(f"{encoder.name}: Dense kernels not quantized: {missed}")
