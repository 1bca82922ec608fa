"""Weight initialisation of the original: truncated normal with stddev initializer_range."""

import keras


def truncated_normal(initializer_range):
    """A new initializer: call once per weight.

    A Keras 3 initializer built without a seed fixes one at construction and draws the same
    values at every call, so a shared instance would give weights of one layer the same values
    (query = key = value; one embedding table the prefix of another), where the original draws
    each weight independently.
    """
    # Keras' TruncatedNormal re-draws beyond two standard deviations, as TF1's did.
    return keras.initializers.TruncatedNormal(stddev=initializer_range)
