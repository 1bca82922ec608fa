"""The LayerNorm BERT uses everywhere, pinned to float32 under mixed precision."""

import keras

# The original's tf.contrib.layers.layer_norm uses this epsilon.
LAYER_NORM_EPSILON = 1e-12


def layer_norm(name, epsilon=LAYER_NORM_EPSILON):
    """LayerNorm over the last axis with weights `gamma` [H], `beta` [H].

    `epsilon` is the config's `layer_norm_eps` (the original's 1e-12 unless a config says
    otherwise, as Hugging Face configs may).

    Runs in float32 whatever the global policy: its variance of bfloat16/float16 activations
    would lose too much precision.
    """
    return keras.layers.LayerNormalization(
        axis=-1, epsilon=epsilon, dtype="float32", name=name
    )
