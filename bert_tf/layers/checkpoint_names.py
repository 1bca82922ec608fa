"""The original TF1 names of the weights of Keras' own layers, for the layers and models that
name their variables (`checkpoint_variables`): a Dense is `<scope>/kernel`, `<scope>/bias`; a
LayerNorm `<scope>/gamma`, `<scope>/beta`, as tf.layers.dense and tf.contrib's layer_norm
named them."""


def dense_variables(scope, dense):
    """{`scope/kernel`: [in, out], `scope/bias`: [out]} of a keras Dense."""
    return {f"{scope}/kernel": dense.kernel, f"{scope}/bias": dense.bias}


def layer_norm_variables(scope, layer_norm):
    """{`scope/gamma`: [H], `scope/beta`: [H]} of a keras LayerNormalization."""
    return {f"{scope}/gamma": layer_norm.gamma, f"{scope}/beta": layer_norm.beta}
