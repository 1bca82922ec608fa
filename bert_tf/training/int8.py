"""`--precision=int8` of `python -m bert_tf.export`: the encoder's Dense layers with int8 weights.

Every `keras.layers.Dense` of the encoder (attention query/key/value/output, intermediate,
output, pooler; ALBERT's embedding projection) is replaced by an `Int8Dense` after the
checkpoint is loaded: its kernel [in, out] becomes
  scale[j] = max_i |W[i, j]| / 127            (float32, one per output column)
  W8[i, j] = clip(round(W[i, j] / scale[j]), -127, 127)   (int8; |W - W8 scale| <= scale / 2)
stored once under the kernel's original checkpoint name + `/int8` and `/scale` (no float32 copy);
the bias stays float32 under its own name. At run time each row (token) of the activations is
quantized symmetrically with its own scale, x_scale = max_k |x[k]| / 127, x8 = round(x / x_scale),
and y = (x8 @ W8) x_scale scale + bias.

Embeddings, LayerNorm, softmax, residual sums and the fine-tuning heads stay float32.

Why the matmul is not int8 x int8 -> int32 here: on TF 2.21's CPU kernels (an AMD EPYC with
AVX512_VNNI, [16, 768] x [768, 3072]) `tf.matmul(int8, int8, output_type=int32)` (what Keras 3's
`Dense.quantize("int8")` runs under the TF backend) took 3.7-4.3 ms, `QuantizedMatMul` (only
quint8 x quint8 is registered, gemmlowp) 2.7 ms, against 1.3-1.9 ms for float32 and 0.9-1.4 ms
for bfloat16 (docs/serving.md "Precision"). So the integer products are computed in float32:
x8 and W8 cast to float32 (integers of at most 7 bits, exact), one float32 matmul, whose sums
are exact while below 2**24 (always for 768 inputs: 768 * 127**2 < 2**24; for 3072 inputs only
when the products do not all align, and then off by float32 rounding). This saves memory (a
quarter of float32's bytes for those kernels), not time.
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
