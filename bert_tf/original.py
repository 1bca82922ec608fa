"""Imports modules of a copy of google-research/bert, for comparing bert_tf with the original.

The original is TF1 code (`import tensorflow as tf`, then `tf.gfile`, `tf.logging`, ...); on
TensorFlow 2 its modules run when `tensorflow` resolves to `tf.compat.v1` while they are
imported. Its files are not modified.
"""

import importlib.util
import os
import sys


def load_original_module(repo, name):
    """Imports `<repo>/<name>.py` (e.g. name="tokenization") under the name `original_bert_<name>`.

    Raises FileNotFoundError naming the path when the copy has no such module.
    """
    path = os.path.join(os.fspath(repo), f"{name}.py")
    if not os.path.isfile(path):
        raise FileNotFoundError(f"{path} not found: expected a copy of google-research/bert")
    import tensorflow as tf  # pylint: disable=g-import-not-at-top

    spec = importlib.util.spec_from_file_location(f"original_bert_{name}", path)
    module = importlib.util.module_from_spec(spec)
    saved = sys.modules.get("tensorflow")
    sys.modules["tensorflow"] = tf.compat.v1
    try:
        spec.loader.exec_module(module)
    finally:
        sys.modules["tensorflow"] = saved
    return module
