"""Imports modules of a copy of google-research/bert, for comparing bert_tf with the original.

The original is TF1 code (`import tensorflow as tf`, then `tf.gfile`, `tf.layers.dense`,
`tf.contrib.layers.layer_norm`, ...). Its modules run on TensorFlow 2 when, while they are
imported, `tensorflow` resolves to `tf.compat.v1` completed with the two TF1 functions that
Keras 3 and the removal of `tf.contrib` took away (`tf.layers.dense`, `tf.contrib.layers.layer_norm`),
written here with the TF1 variable names and arithmetic. Its files are not modified.
"""

import importlib.util
import os
import sys
import types


def _tf1_module():
    import tensorflow as tf  # pylint: disable=g-import-not-at-top

    v1 = tf.compat.v1

    def dense(inputs, units, activation=None, name=None, kernel_initializer=None):
        with v1.variable_scope(name, default_name="dense"):
            kernel = v1.get_variable("kernel", [inputs.shape[-1], units], initializer=kernel_initializer)
            bias = v1.get_variable("bias", [units], initializer=v1.zeros_initializer())
            outputs = tf.matmul(inputs, kernel) + bias
            return activation(outputs) if activation is not None else outputs

    def layer_norm(inputs, begin_norm_axis=-1, begin_params_axis=-1, scope=None):
        with v1.variable_scope(scope, default_name="LayerNorm"):
            depth = inputs.shape[-1]
            beta = v1.get_variable("beta", [depth], initializer=v1.zeros_initializer())
            gamma = v1.get_variable("gamma", [depth], initializer=v1.ones_initializer())
            mean, variance = tf.nn.moments(inputs, [-1], keepdims=True)
            return tf.nn.batch_normalization(inputs, mean, variance, beta, gamma, 1e-12)

    module = types.ModuleType("tensorflow")
    module.__dict__.update(v1.__dict__)
    module.layers = types.SimpleNamespace(dense=dense)
    module.contrib = types.SimpleNamespace(layers=types.SimpleNamespace(layer_norm=layer_norm))
    return module


def load_original_module(repo, name):
    """Imports `<repo>/<name>.py` (e.g. "tokenization", "modeling", "run_pretraining").

    The module is registered as `original_bert_<name>`; the original modules it imports by their
    bare names (`modeling`, `optimization`) are loaded the same way. Raises FileNotFoundError
    naming the path when the copy has no such module.
    """
    repo = os.fspath(repo)
    path = os.path.join(repo, f"{name}.py")
    if not os.path.isfile(path):
        raise FileNotFoundError(f"{path} not found: expected a copy of google-research/bert")
    spec = importlib.util.spec_from_file_location(f"original_bert_{name}", path)
    module = importlib.util.module_from_spec(spec)
    tf1 = _tf1_module()  # imports the real tensorflow first, so there is one to put back
    saved_tf = sys.modules["tensorflow"]
    saved_path = list(sys.path)
    sys.modules["tensorflow"] = tf1
    sys.path.insert(0, repo)
    try:
        spec.loader.exec_module(module)
    finally:
        sys.modules["tensorflow"] = saved_tf
        sys.path[:] = saved_path
    return module
