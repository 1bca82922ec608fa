"""The activations a `bert_config.json` may name in `hidden_act`."""

import math

import tensorflow as tf

_SQRT_2_OVER_PI = math.sqrt(2.0 / math.pi)


def gelu(x):
    """GELU in the tanh approximation the original BERT uses (not the exact erf form).

    Args:
      x: float tensor of any shape.
    Returns:
      A tensor of the same shape and dtype.
    """
    cdf = 0.5 * (1.0 + tf.tanh(_SQRT_2_OVER_PI * (x + 0.044715 * tf.pow(x, 3))))
    return x * cdf


def linear(x):
    return x


_ACTIVATIONS = {"gelu": gelu, "relu": tf.nn.relu, "tanh": tf.tanh, "linear": linear}


def get_activation(name):
    """Maps a `hidden_act` string ("gelu", "relu", "tanh", "linear") to a function."""
    try:
        return _ACTIVATIONS[name]
    except (KeyError, TypeError):
        raise ValueError(
            f"hidden_act must be one of {', '.join(_ACTIVATIONS)}, got {name!r}"
        ) from None
