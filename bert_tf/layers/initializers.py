"""Weight initialisation of the original: truncated normal with stddev initializer_range."""

import keras


def truncated_normal(initializer_range):
    # Keras' TruncatedNormal re-draws beyond two standard deviations, as TF1's did.
    return keras.initializers.TruncatedNormal(stddev=initializer_range)
