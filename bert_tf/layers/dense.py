"""The encoder's Dense layer: keras.layers.Dense that can be quantized in place to int8.

`Dense.quantize("int8")` (Keras' own quantization hook, also reached by
`keras.Model.quantize("int8", filters=...)`; bert_tf/training/int8.py calls it for an int8 export
after the checkpoint is loaded) replaces the layer's float kernel [in, out] by
  scale[j] = max_i |W[i, j]| / 127            (float32, one per output column: `kernel_scale`)
  W8[i, j] = clip(round(W[i, j] / scale[j]), -127, 127)   (int8: `kernel_int8`;
                                                            |W - W8 scale| <= scale / 2)
and keeps the bias in float32. From then on each call quantizes every row (token) of its input
with the row's own scale, s = max_k |x[k]| / 127, x8 = round(x / s), and computes
  y = activation((x8 @ W8) s scale + bias)
with the integer products summed exactly in int32 by XLA (`int8_matmul`; why XLA: the module
docstring of bert_tf/training/int8.py). The checkpoint names of a quantized layer are
`<scope>/kernel/int8`, `<scope>/kernel/scale` and `<scope>/bias`
(bert_tf/layers/checkpoint_names.py). Not quantized, the layer is keras.layers.Dense.
"""

import keras
import numpy as np
import tensorflow as tf

INT8_MAX = 127


def quantize_kernel(kernel):
    """Per-output-column symmetric int8 quantization of a float kernel [in, out].

    Returns (int8 [in, out], float32 scale [out]) with scale = max|kernel[:, j]| / 127 (a
    column of zeros gets scale 0 and zeros) and int8 = clip(round(kernel / scale), -127, 127),
    rounded half to even, computed in float64 from the float32 values and scale.
    """
    kernel = np.asarray(kernel, np.float32)
    scale = (np.abs(kernel).max(axis=0) / np.float32(INT8_MAX)).astype(np.float32)
    safe = np.where(scale > 0, scale, 1).astype(np.float64)
    quantized = np.clip(np.round(kernel.astype(np.float64) / safe), -INT8_MAX, INT8_MAX)
    return quantized.astype(np.int8), scale


def quantize_rows(x):
    """Dynamic per-row symmetric quantization: x [..., in] float32 -> (integer values as float32
    [..., in], row scale [..., 1]) with scale = max|row| / 127 and values = round(x / scale)
    (a zero row: scale 0, values 0)."""
    scale = tf.reduce_max(tf.abs(x), axis=-1, keepdims=True) / INT8_MAX
    safe = tf.where(scale > 0, scale, tf.ones_like(scale))
    return tf.clip_by_value(tf.round(x / safe), -INT8_MAX, INT8_MAX), scale


def int8_matmul(x, kernel_int8, kernel_scale):
    """x [..., in] float @ the dequantized kernel (int8 [in, out], float32 scale [out]), x
    quantized per row: (x8 @ W8) x_scale scale, [..., out] float32."""
    x = tf.cast(x, tf.float32)
    rows = tf.reshape(x, [-1, tf.shape(x)[-1]])
    # The variables are read here: a tf.function takes tensors, not Keras variables.
    y = _int8_rows_matmul(rows, tf.convert_to_tensor(kernel_int8),
                          tf.convert_to_tensor(kernel_scale))
    return tf.reshape(y, tf.concat([tf.shape(x)[:-1], [kernel_int8.shape[-1]]], 0))


@tf.function(jit_compile=True, reduce_retracing=True)
def _int8_rows_matmul(rows, kernel_int8, kernel_scale):
    """rows [n, in] float32 -> [n, out] float32: `int8_matmul` on a matrix, compiled by XLA,
    whose int8 x int8 -> int32 dot is faster than TensorFlow's own int8 kernels and than its
    float32 matmul at these shapes (bert_tf/training/int8.py). The int32 sums are exact
    (|sum| <= in * 127**2 < 2**31 for in < 133,000); what rounds is the cast of the sum to
    float32 and the two products by the scales."""
    x8, x_scale = quantize_rows(rows)
    products = tf.matmul(tf.cast(x8, tf.int8), kernel_int8, output_type=tf.int32)
    return tf.cast(products, tf.float32) * x_scale * kernel_scale


class Dense(keras.layers.Dense):
    """keras.layers.Dense with an in-place int8 mode (module docstring).

    Args and call: keras.layers.Dense's, x [..., in] -> [..., units]; once quantized
    (`quantize("int8")`), the output is float32. Attributes after quantization: `kernel_int8`
    [in, units] int8 and `kernel_scale` [units] float32, non-trainable; `kernel` is None.
    """

    def __init__(self, units, **kwargs):
        super().__init__(units, **kwargs)
        self.kernel_int8 = None
        self.kernel_scale = None

    @property
    def quantized(self):
        return self.kernel_int8 is not None

    def quantize(self, mode=None, type_check=True, config=None):
        """Replaces the float kernel by `kernel_int8` and `kernel_scale` (module docstring).
        Keras' Layer wraps this method so that new weights may be added to the built layer,
        as its own Dense.quantize does; `mode` must be "int8" (`type_check`, `config`: Keras'
        arguments, unused: the quantization is this layer's own)."""
        if mode != "int8":
            raise ValueError(f"{self.name}: quantize mode {mode!r}: only 'int8' is supported")
        if self.quantized:
            raise ValueError(f"{self.name}: already quantized")
        if self.bias is None or self.lora_enabled:
            raise ValueError(f"{self.name}: int8 needs a bias and no LoRA")
        quantized, scale = quantize_kernel(keras.ops.convert_to_numpy(self.kernel))
        # The float kernel goes, as in keras.layers.Dense.quantize: Layer.__delattr__ untracks
        # it, so the model no longer holds or lists it.
        del self._kernel
        self.kernel_int8 = self.add_weight(name="kernel_int8", shape=quantized.shape,
                                           dtype="int8", initializer="zeros", trainable=False)
        self.kernel_scale = self.add_weight(name="kernel_scale", shape=scale.shape,
                                            dtype="float32", initializer="zeros",
                                            trainable=False)
        self.kernel_int8.assign(quantized)
        self.kernel_scale.assign(scale)

    def call(self, inputs, training=None):
        if not self.quantized:
            return super().call(inputs, training=training)
        y = int8_matmul(inputs, self.kernel_int8, self.kernel_scale) + tf.cast(self.bias,
                                                                                tf.float32)
        return self.activation(y) if self.activation is not None else y
