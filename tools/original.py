"""Imports modules of a copy of google-research/bert (or /electra, /albert), for comparing
bert_tf with the original.

The original is TF1 code (`import tensorflow as tf`, then `tf.gfile`, `tf.layers.dense`,
`tf.contrib.layers.layer_norm`, ...). Its modules run on TensorFlow 2 when, while they are
imported, `tensorflow` resolves to `tf.compat.v1` completed with the TF1 functions that
Keras 3 and the removal of `tf.contrib` took away (`tf.layers.dense`, `tf.layers.dropout`,
`tf.contrib.layers.layer_norm`), written here with the TF1 variable names and arithmetic.
Its files are not modified.
"""

import contextlib
import importlib.util
import os
import sys
import types


def _tf1_module():
    import tensorflow as tf  # pylint: disable=g-import-not-at-top

    v1 = tf.compat.v1

    def dense(inputs, units, activation=None, name=None, kernel_initializer=None, use_bias=True):
        with v1.variable_scope(name, default_name="dense"):
            kernel = v1.get_variable("kernel", [inputs.shape[-1], units], initializer=kernel_initializer)
            if inputs.shape.rank > 2:  # as TF1's Dense: a tensordot over the last axis
                outputs = tf.tensordot(inputs, kernel, [[inputs.shape.rank - 1], [0]])
            else:
                outputs = tf.matmul(inputs, kernel)
            if use_bias:
                outputs += v1.get_variable("bias", [units], initializer=v1.zeros_initializer())
            return activation(outputs) if activation is not None else outputs

    def dropout(inputs, rate=0.5, training=False):
        return v1.nn.dropout(inputs, rate=rate) if training and rate else inputs

    def layer_norm(inputs, begin_norm_axis=-1, begin_params_axis=-1, scope=None):
        with v1.variable_scope(scope, default_name="LayerNorm"):
            depth = inputs.shape[-1]
            beta = v1.get_variable("beta", [depth], initializer=v1.zeros_initializer())
            gamma = v1.get_variable("gamma", [depth], initializer=v1.ones_initializer())
            mean, variance = tf.nn.moments(inputs, [-1], keepdims=True)
            return tf.nn.batch_normalization(inputs, mean, variance, beta, gamma, 1e-12)

    module = types.ModuleType("tensorflow")
    module.__dict__.update(v1.__dict__)
    module.layers = types.SimpleNamespace(dense=dense, dropout=dropout)
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


# The top-level modules and packages of google-research/electra its files import by bare name.
_ELECTRA_PACKAGES = ("configure_pretraining", "configure_finetuning", "model", "pretrain",
                     "util", "finetune")


def load_electra_module(repo, name="run_pretraining"):
    """Imports `<repo>/<name>.py` of a copy of google-research/electra (default its
    run_pretraining.py, whose attributes reach the modules it uses: `configure_pretraining`,
    `modeling`, `optimization`, `pretrain_data`, `pretrain_helpers`, `training_utils`, `utils`).

    ELECTRA's files `import tensorflow.compat.v1 as tf` and `from tensorflow.contrib import
    layers`; while they are imported both resolve to the TF1 module above (plus the Estimator's
    SessionRunHook base class, which its training_utils subclasses at import). The modules it
    imports by bare name (`model.modeling`, `util.utils`, ...) are registered only while it loads,
    so that nothing else in the process sees them. Raises FileNotFoundError naming the path when
    the copy has no such module.
    """
    repo = os.fspath(repo)
    path = os.path.join(repo, f"{name}.py")
    if not os.path.isfile(path):
        raise FileNotFoundError(f"{path} not found: expected a copy of google-research/electra")
    tf1 = _tf1_module()
    tf1.estimator = types.SimpleNamespace(
        SessionRunHook=object, SessionRunArgs=lambda fetches: fetches,
        ModeKeys=types.SimpleNamespace(TRAIN="train", EVAL="eval", PREDICT="infer"))
    contrib = types.ModuleType("tensorflow.contrib")
    contrib.layers = tf1.contrib.layers
    top = types.ModuleType("tensorflow")
    top.compat = types.SimpleNamespace(v1=tf1)
    top.contrib = contrib
    fake = {"tensorflow": top, "tensorflow.compat": top.compat, "tensorflow.compat.v1": tf1,
            "tensorflow.contrib": contrib}
    saved = {key: sys.modules.get(key) for key in fake}
    before = set(sys.modules)
    saved_path = list(sys.path)
    spec = importlib.util.spec_from_file_location(f"original_electra_{name}", path)
    module = importlib.util.module_from_spec(spec)
    sys.modules.update(fake)
    sys.path.insert(0, repo)
    try:
        spec.loader.exec_module(module)
    finally:
        for key, value in saved.items():
            if value is None:
                sys.modules.pop(key, None)
            else:
                sys.modules[key] = value
        for key in set(sys.modules) - before:
            if key.split(".")[0] in _ELECTRA_PACKAGES:
                del sys.modules[key]
        sys.path[:] = saved_path
    return module


def load_albert_module(repo, name):
    """Imports `<repo>/<name>.py` of a copy of google-research/albert (e.g. "tokenization",
    "create_pretraining_data", "modeling", "run_pretraining", "optimization").

    ALBERT's files import each other as the package `albert` (`from albert import modeling`),
    `import tensorflow.compat.v1 as tf`, `from tensorflow.contrib import layers / tpu /
    cluster_resolver / metrics`, `from tensorflow.compat.v1 import estimator` and
    `tensorflow_hub`. While it loads, `albert` is the copy (a package on `repo`), TensorFlow
    resolves to the TF1 module above, and the TPU, cluster, Estimator and Hub modules are empty
    stand-ins (their names resolve at call time, in code paths the comparisons do not run). The
    modules of the `albert` package stay registered under `original_albert.<name>` only. Raises
    FileNotFoundError naming the path when the copy has no such module.

    Its scripts define absl flags when imported, so one process loads one script (with the
    modules it imports: `run_pretraining` brings `modeling`, `optimization`, `lamb_optimizer`).
    """
    repo = os.fspath(repo)
    path = os.path.join(repo, f"{name}.py")
    if not os.path.isfile(path):
        raise FileNotFoundError(f"{path} not found: expected a copy of google-research/albert")
    tf1 = _tf1_module()
    estimator = types.ModuleType("tensorflow.compat.v1.estimator")
    estimator.ModeKeys = types.SimpleNamespace(TRAIN="train", EVAL="eval", PREDICT="infer")
    tf1.estimator = estimator
    contrib = types.ModuleType("tensorflow.contrib")
    contrib.layers = tf1.contrib.layers
    for stand_in in ("tpu", "cluster_resolver", "metrics"):
        setattr(contrib, stand_in, types.ModuleType(f"tensorflow.contrib.{stand_in}"))
    top = types.ModuleType("tensorflow")
    top.compat = types.SimpleNamespace(v1=tf1)
    top.contrib = contrib
    package = types.ModuleType("albert")
    package.__path__ = [repo]
    fake = {"tensorflow": top, "tensorflow.compat": top.compat, "tensorflow.compat.v1": tf1,
            "tensorflow.compat.v1.estimator": estimator, "tensorflow.contrib": contrib,
            "tensorflow_hub": types.ModuleType("tensorflow_hub"), "albert": package}
    fake.update({f"tensorflow.contrib.{k}": getattr(contrib, k)
                 for k in ("layers", "tpu", "cluster_resolver", "metrics")})
    saved = {key: sys.modules.get(key) for key in fake}
    before = set(sys.modules)
    sys.modules.update(fake)
    try:
        module = importlib.import_module(f"albert.{name}")
    finally:
        loaded = {key: sys.modules[key] for key in set(sys.modules) - before
                  if key.startswith("albert.")}
        for key, value in saved.items():
            if value is None:
                sys.modules.pop(key, None)
            else:
                sys.modules[key] = value
        for key, value in loaded.items():
            del sys.modules[key]
            sys.modules[f"original_{key.replace('.', '_', 1)}"] = value
    return module


# -- stand-ins the recording scripts (tests/data/*/make_expected.py) share -----------------
@contextlib.contextmanager
def patched(obj, name, value):
    """`obj.name` is `value` inside the `with` block, restored after it."""
    saved = getattr(obj, name)
    setattr(obj, name, value)
    try:
        yield
    finally:
        setattr(obj, name, saved)


class RunConfig:
    """tf.contrib.tpu.RunConfig as the original fine-tuning scripts use it: the checkpoint
    directory and schedule (the TPU settings are ignored)."""

    def __init__(self, model_dir, save_checkpoints_steps, keep_checkpoint_max, **kwargs):
        del kwargs
        self.model_dir = model_dir
        self.save_checkpoints_steps = save_checkpoints_steps
        self.keep_checkpoint_max = keep_checkpoint_max
