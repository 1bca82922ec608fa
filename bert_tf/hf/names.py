"""What the Hub bridge shares across families: Transformers' activation names, old tensor
names, shapes from a row's letters, the export tasks. A family's own table of Hub tensor names
and original names is its `hub_names` module (BERT's: `bert_tf.bert.hub_names`).

Rows are (Hub name, original name, transposed, Hub shape letters): V vocab_size, H hidden_size,
I intermediate_size, P max_position_embeddings, T type_vocab_size, C the number of labels.
This module is pure Python (no TensorFlow, no NumPy).
"""

import re

from bert_tf.heads import FINE_TUNING_HEADS

# `python -m bert_tf.hf export --task=...`: which heads to export ("encoder" = the bare encoder).
EXPORT_TASKS = ("pretraining", *FINE_TUNING_HEADS, "encoder")

# Transformers' hidden_act -> ours. "gelu" there is the exact erf GELU, our "gelu_exact"; its
# tanh approximations are what the original (and our config) call "gelu".
ACTIVATION_FROM_HUB = {
    "gelu": "gelu_exact",
    "gelu_new": "gelu",
    "gelu_pytorch_tanh": "gelu",
    "gelu_fast": "gelu",
    "relu": "relu",
    "tanh": "tanh",
    "linear": "linear",
}
# Ours -> Transformers'. "gelu_new" is Google's tanh formula term for term, and every
# Transformers version knows it ("gelu_pytorch_tanh", the same function, needs a newer one).
ACTIVATION_TO_HUB = {
    "gelu": "gelu_new",
    "gelu_exact": "gelu",
    "relu": "relu",
    "tanh": "tanh",
    "linear": "linear",
}

_OLD_LAYER_NORM = re.compile(r"(LayerNorm)\.(gamma|beta)$")


def normalize_name(name):
    """Today's Hub name of `name`: older snapshots call the LayerNorm parameters gamma/beta."""
    return _OLD_LAYER_NORM.sub(lambda m: f"{m.group(1)}.{'weight' if m.group(2) == 'gamma' else 'bias'}",
                               name)


def hub_shape(letters, sizes):
    """The shape of a row's letters, e.g. ("VH", {"V": 30522, "H": 768}) -> (30522, 768)."""
    return tuple(int(c) if c.isdigit() else sizes[c] for c in letters)
