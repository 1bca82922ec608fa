"""bert_tf: Google's BERT on TensorFlow 2 / Keras 3, compatible with the original release.

The public names below are imported on first use, so `import bert_tf.bert.tokenization` (pure
Python) does not pay for importing TensorFlow.
"""

import importlib

__version__ = "0.1.0"

_EXPORTS = {
    "BertConfig": "bert_tf.bert.config",
    "BertConfigError": "bert_tf.bert.config",
    "BertModel": "bert_tf.bert.model",
    "BertPretrainingModel": "bert_tf.bert.pretraining",
    "pretraining_loss": "bert_tf.bert.pretraining",
    "BertTaskModel": "bert_tf.models",
    "load_original_checkpoint": "bert_tf.checkpoints",
    "save_original_checkpoint": "bert_tf.checkpoints",
    "CheckpointError": "bert_tf.checkpoints",
    "FullTokenizer": "bert_tf.bert.tokenization",
    "FastTokenizer": "bert_tf.bert.fast_tokenization",
}

__all__ = sorted(_EXPORTS)


def __getattr__(name):
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'bert_tf' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__():
    return sorted(set(globals()) | set(_EXPORTS))
