"""The LayerNorm BERT uses everywhere, pinned to float32 under mixed precision."""

import keras

# The original's tf.contrib.layers.layer_norm uses this epsilon.
LAYER_NORM_EPSILON = 1e-12


def layer_norm(name):
    """LayerNorm over the last axis with weights `gamma` [H], `beta` [H].

    Runs in float32 whatever the global policy: its variance of bfloat16/float16 activations
    would lose too much precision.
    """
    return keras.layers.LayerNormalization(
        axis=-1, epsilon=LAYER_NORM_EPSILON, dtype="float32", name=name
    )
