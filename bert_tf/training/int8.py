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

import weakref

import keras
import numpy as np
import tensorflow as tf

from bert_tf.checkpoints import original_variable_map

INT8_MAX = 127
# model -> its {original name: tf/Keras variable} after `quantize_encoder` (the Keras model
# keeps tracking the replaced float32 layers, so `original_variable_map` no longer applies).
_QUANTIZED_TABLES = weakref.WeakKeyDictionary()


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
    """x [..., in] float @ the dequantized kernel, x quantized per row: (x8 @ W8) x_scale scale,
    [..., out] float32. The integer products are summed exactly in int32 by XLA (module
    docstring: TensorFlow's own int8 kernels are slower here than float32)."""
    x = tf.cast(x, tf.float32)
    rows = tf.reshape(x, [-1, tf.shape(x)[-1]])
    # The variables read here: a tf.function takes tensors, not Keras variables.
    y = _int8_rows_matmul(rows, tf.convert_to_tensor(kernel_int8),
                          tf.convert_to_tensor(kernel_scale))
    return tf.reshape(y, tf.concat([tf.shape(x)[:-1], [kernel_int8.shape[-1]]], 0))


@tf.function(jit_compile=True, reduce_retracing=True)
def _int8_rows_matmul(rows, kernel_int8, kernel_scale):
    """rows [n, in] float32 -> [n, out] float32: `int8_matmul` on a matrix, compiled by XLA
    (its int8 x int8 -> int32 dot is the fast one; module docstring)."""
    x8, x_scale = quantize_rows(rows)
    products = tf.matmul(tf.cast(x8, tf.int8), kernel_int8, output_type=tf.int32)
    return tf.cast(products, tf.float32) * x_scale * kernel_scale


class Int8Dense(keras.layers.Layer):
    """A Dense layer with an int8 kernel and per-output-column scales (module docstring).

    Args:
      units: output width.
      activation: as keras.layers.Dense's (a name or callable; None: linear).
    Call: x [..., in] float -> [..., units] float32.
    """

    def __init__(self, units, activation=None, **kwargs):
        super().__init__(**kwargs)
        self.units = int(units)
        self.activation = keras.activations.get(activation)

    def build(self, input_shape):
        fan_in = int(input_shape[-1])
        self.kernel_int8 = self.add_weight(name="kernel_int8", shape=(fan_in, self.units),
                                           dtype="int8", initializer="zeros", trainable=False)
        self.kernel_scale = self.add_weight(name="kernel_scale", shape=(self.units,),
                                            dtype="float32", initializer="zeros",
                                            trainable=False)
        self.bias = self.add_weight(name="bias", shape=(self.units,), dtype="float32",
                                    initializer="zeros", trainable=False)
        self.built = True

    def call(self, inputs):
        return self.activation(
            int8_matmul(inputs, self.kernel_int8, self.kernel_scale) + self.bias)

    def get_config(self):
        return {**super().get_config(), "units": self.units,
                "activation": keras.activations.serialize(self.activation)}

    @classmethod
    def from_dense(cls, dense):
        """An Int8Dense with `dense`'s (a built keras.layers.Dense with a bias) quantized
        kernel and its bias."""
        layer = cls(dense.units, dense.activation, name=dense.name)
        layer.build((None, dense.kernel.shape[0]))
        quantized, scale = quantize_kernel(keras.ops.convert_to_numpy(dense.kernel))
        layer.kernel_int8.assign(quantized)
        layer.kernel_scale.assign(scale)
        layer.bias.assign(keras.ops.convert_to_numpy(dense.bias).astype(np.float32))
        return layer


def _holders(value):
    """(container, key, keras Layer) for the layers in `value`, a Layer attribute's value:
    itself (container None), or the items of lists, tuples and dicts (ALBERT's groups:
    {group: [layers]}), nested."""
    if isinstance(value, keras.layers.Layer):
        yield None, None, value
    elif isinstance(value, (list, tuple, dict)):
        for key, item in (value.items() if isinstance(value, dict) else enumerate(value)):
            if isinstance(item, keras.layers.Layer):
                yield value, key, item
            else:
                yield from _holders(item)


def _dense_holders(layer, seen):
    """(replace function, Dense) for every keras.layers.Dense held by `layer` or its sublayers
    in a public attribute (directly, or in lists and dicts), each place once."""
    if id(layer) in seen:
        return
    seen.add(id(layer))
    for attribute, value in list(vars(layer).items()):
        if attribute.startswith("_"):
            continue
        for container, key, item in _holders(value):
            if isinstance(item, keras.layers.Dense):
                if container is None:
                    # Past Keras' tracking, which refuses new sublayers in a built layer: the
                    # export saves the name table, and calls reach the layer by the attribute.
                    yield (lambda new, p=layer, a=attribute: object.__setattr__(p, a, new)), item
                elif isinstance(container, tuple):
                    raise ValueError(f"{layer.name}.{attribute}: a Dense layer in a tuple")
                else:
                    yield (lambda new, c=container, k=key: _set_item(c, k, new)), item
            else:
                yield from _dense_holders(item, seen)


def _set_item(container, key, value):
    # Keras' tracked lists and dicts refuse new layers once built, like the layers themselves.
    (dict if isinstance(container, dict) else list).__setitem__(container, key, value)


def quantize_encoder(model, encoder):
    """Replaces every Dense layer of `encoder` (a sublayer of `model`, or `model` itself) by
    its `Int8Dense`, after the checkpoint is loaded. A Dense shared by several parents (ALBERT's
    one layer) becomes one Int8Dense. Returns the {original name: variable} table of `model`
    for the export (`variable_map`): the quantized kernels as `<kernel name>/int8` and
    `<kernel name>/scale`, every other variable under its own name."""
    table = original_variable_map(model)
    name_of = {id(v): name for name, v in table.items()}
    replaced = {}
    for replace, dense in list(_dense_holders(encoder, set())):
        if id(dense) not in replaced:
            kernel_name = name_of[id(dense.kernel)]
            layer = Int8Dense.from_dense(dense)
            del table[kernel_name]
            table[f"{kernel_name}/int8"] = layer.kernel_int8
            table[f"{kernel_name}/scale"] = layer.kernel_scale
            table[name_of[id(dense.bias)]] = layer.bias
            replaced[id(dense)] = layer
        replace(replaced[id(dense)])
    # Every 2-D kernel of the encoder must have been reached (a Dense held some other way
    # would stay float32 silently).
    missed = [v.path for v in encoder.weights if v.path.endswith("kernel")
              and f"{name_of[id(v)]}/int8" not in table]
    if missed or not replaced:
        raise ValueError(f"{encoder.name}: Dense kernels not quantized: {missed}")
    _QUANTIZED_TABLES[model] = table
    return table


def variable_map(model):
    """The {original name: variable} table to save for `model`: `quantize_encoder`'s when it
    was quantized, else `original_variable_map(model)`."""
    try:
        table = _QUANTIZED_TABLES.get(model)
    except TypeError:  # not weakly referenceable, so never quantized (quantize_encoder keeps it)
        table = None
    return table if table is not None else original_variable_map(model)
