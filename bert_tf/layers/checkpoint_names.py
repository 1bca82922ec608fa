"""The original TF1 names of the weights of Keras' own layers, for the layers and models that
name their variables (`checkpoint_variables`): a Dense is `<scope>/kernel`, `<scope>/bias`; a
LayerNorm `<scope>/gamma`, `<scope>/beta`, as tf.layers.dense and tf.contrib's layer_norm
named them."""


def dense_variables(scope, dense):
    """{`scope/kernel`: [in, out], `scope/bias`: [out]} of a keras Dense; of a bert_tf Dense
    quantized to int8 (bert_tf/layers/dense.py), {`scope/kernel/int8`: [in, out] int8,
    `scope/kernel/scale`: [out], `scope/bias`: [out]}."""
    if getattr(dense, "quantized", False):
        return {f"{scope}/kernel/int8": dense.kernel_int8,
                f"{scope}/kernel/scale": dense.kernel_scale, f"{scope}/bias": dense.bias}
    return {f"{scope}/kernel": dense.kernel, f"{scope}/bias": dense.bias}


def layer_norm_variables(scope, layer_norm):
    """{`scope/gamma`: [H], `scope/beta`: [H]} of a keras LayerNormalization."""
    return {f"{scope}/gamma": layer_norm.gamma, f"{scope}/beta": layer_norm.beta}
