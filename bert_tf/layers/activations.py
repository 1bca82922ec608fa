"""The activations a `bert_config.json` may name in `hidden_act`.

Training runs GELU as XLA-compiled functions (`gelu`, `gelu_exact`: one fused kernel each
way). A model built inside `without_xla()` gets the same float32 arithmetic as plain
TensorFlow ops instead: what the exports do (bert_tf/serving/export.py), since TensorFlow
Serving runs an XLA function on CPU only when started with `--xla_cpu_compilation_enabled`.
"""

import contextlib
import math

import tensorflow as tf

_SQRT_2_OVER_PI = math.sqrt(2.0 / math.pi)
_SQRT_HALF = math.sqrt(0.5)


def gelu_reference(x):
    """GELU in the tanh approximation the original BERT uses (not the exact erf form), op by op
    exactly as the original writes it.

    Args:
      x: float tensor of any shape.
    Returns:
      A tensor of the same shape and dtype.
    """
    cdf = 0.5 * (1.0 + tf.tanh(_SQRT_2_OVER_PI * (x + 0.044715 * tf.pow(x, 3))))
    return x * cdf


# The activation is applied to the largest activations of the model ([B, S, intermediate_size]);
# op by op, its forward and backward passes make about twenty passes over them. Compiled with
# XLA into one kernel each way, with the derivative written out, the BERT-Base training step
# gets faster (docs/performance.md); the arithmetic runs in float32 whatever the input
# dtype (free inside the kernel), so values agree with `gelu_reference` to float32 rounding.
def gelu_float32(x):
    """`gelu`'s forward arithmetic (float32 whatever the input dtype) as plain ops: the
    activation of a model built `without_xla()`.

    Args:
      x: float tensor of any shape.
    Returns:
      A tensor of the same shape and dtype.
    """
    x32 = tf.cast(x, tf.float32)
    tanh = tf.tanh(_SQRT_2_OVER_PI * (x32 + 0.044715 * (x32 * x32 * x32)))
    return tf.cast(x32 * (0.5 * (1.0 + tanh)), x.dtype)


_gelu_forward = tf.function(gelu_float32, jit_compile=True, autograph=False)


@tf.function(jit_compile=True, autograph=False)
def _gelu_backward(dy, x):
    # d/dx [x (1 + tanh(u)) / 2] with u = c (x + 0.044715 x^3); tanh is recomputed rather than
    # kept from the forward pass, which saves memory and costs nothing measurable.
    x32 = tf.cast(x, tf.float32)
    tanh = tf.tanh(_SQRT_2_OVER_PI * (x32 + 0.044715 * (x32 * x32 * x32)))
    du = _SQRT_2_OVER_PI * (1.0 + 3.0 * 0.044715 * x32 * x32)
    grad = tf.cast(dy, tf.float32) * (0.5 * (1.0 + tanh) + 0.5 * x32 * (1.0 - tanh * tanh) * du)
    return tf.cast(grad, dy.dtype)


@tf.autograph.experimental.do_not_convert  # autograph cannot convert a custom_gradient
@tf.custom_gradient
def gelu(x):
    """GELU in the tanh approximation the original BERT uses (not the exact erf form):
    `x * 0.5 * (1 + tanh(sqrt(2/pi) * (x + 0.044715 x^3)))`, fused (see above).

    Args:
      x: float tensor of any shape.
    Returns:
      A tensor of the same shape and dtype.
    """

    def gradient(dy):
        return _gelu_backward(dy, x)

    return _gelu_forward(x), gradient


def gelu_exact_reference(x):
    """The exact GELU op by op, as ELECTRA writes it (`x * 0.5 * (1 + erf(x / sqrt(2)))`), in
    float32.

    Args:
      x: float tensor of any shape.
    Returns:
      A tensor of the same shape and dtype.
    """
    x32 = tf.cast(x, tf.float32)
    return tf.cast(x32 * (0.5 * (1.0 + tf.math.erf(x32 * _SQRT_HALF))), x.dtype)


# Fused with XLA for the reason given for `gelu` above; the derivative written out is
# Phi(x) + x * phi(x), phi the standard normal density.
_gelu_exact_forward = tf.function(gelu_exact_reference, jit_compile=True, autograph=False)
_INV_SQRT_2PI = 1.0 / math.sqrt(2.0 * math.pi)


@tf.function(jit_compile=True, autograph=False)
def _gelu_exact_backward(dy, x):
    x32 = tf.cast(x, tf.float32)
    cdf = 0.5 * (1.0 + tf.math.erf(x32 * _SQRT_HALF))
    pdf = tf.exp(-0.5 * x32 * x32) * _INV_SQRT_2PI
    return tf.cast(tf.cast(dy, tf.float32) * (cdf + x32 * pdf), dy.dtype)


@tf.autograph.experimental.do_not_convert
@tf.custom_gradient
def gelu_exact(x):
    """The exact GELU `x * Phi(x) = x * 0.5 * (1 + erf(x / sqrt(2)))`: `"gelu_exact"` in our
    configs, `"gelu"` in Hugging Face's and in ELECTRA's code. Computed in float32, fused (see
    above); equal to `gelu_exact_reference` up to float32 rounding.

    Args:
      x: float tensor of any shape.
    Returns:
      A tensor of the same shape and dtype.
    """

    def gradient(dy):
        return _gelu_exact_backward(dy, x)

    return _gelu_exact_forward(x), gradient


def linear(x):
    return x


_ACTIVATIONS = {"gelu": gelu, "gelu_exact": gelu_exact, "relu": tf.nn.relu, "tanh": tf.tanh,
                "linear": linear}


# What `without_xla()` puts in place of the XLA-compiled activations: the same arithmetic.
_WITHOUT_XLA = {"gelu": gelu_float32, "gelu_exact": gelu_exact_reference}
_xla = [True]  # False inside `without_xla()`


@contextlib.contextmanager
def without_xla():
    """Inside it, `get_activation` returns activations of plain TensorFlow ops (no XLA
    function: see the module docstring), for the layers a model creates while it is built."""
    _xla.append(False)
    try:
        yield
    finally:
        _xla.pop()


def get_activation(name):
    """Maps a `hidden_act` string ("gelu" = tanh form, "gelu_exact", "relu", "tanh", "linear")
    to a function (inside `without_xla()`, one without XLA)."""
    try:
        if not _xla[-1] and name in _WITHOUT_XLA:
            return _WITHOUT_XLA[name]
        return _ACTIVATIONS[name]
    except (KeyError, TypeError):
        raise ValueError(
            f"hidden_act must be one of {', '.join(_ACTIVATIONS)}, got {name!r}"
        ) from None
