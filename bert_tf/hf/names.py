"""What the Hub bridge shares across families: Transformers' activation names, old tensor
names, shapes from a row's letters, the export tasks. A family's own table of Hub tensor names
and original names is its `hub_names` module (BERT's: `bert_tf.bert.hub_names`).

Rows are (Hub name, original name, transposed, Hub shape letters): V vocab_size, H hidden_size,
I intermediate_size, P max_position_embeddings, T type_vocab_size, C the number of labels.
`HubTable` is how the bridge reads a family's table. This module is pure Python (no TensorFlow,
no NumPy).
"""

import re

from bert_tf import families
from bert_tf.heads import FINE_TUNING_HEADS
from bert_tf.text import load_vocab

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


def dense_rows(hub, original, out_letters, in_letters):
    """The rows of a Hub `Linear` [out, in] that is the original's Dense [in, out]."""
    return ((f"{hub}.weight", f"{original}/kernel", True, out_letters + in_letters),
            (f"{hub}.bias", f"{original}/bias", False, out_letters))


def layer_norm_rows(hub, original, letters="H"):
    """The rows of a Hub LayerNorm (weight, bias) that is the original's (gamma, beta)."""
    return ((f"{hub}.weight", f"{original}/gamma", False, letters),
            (f"{hub}.bias", f"{original}/beta", False, letters))


def sizes_of(config, num_labels=None):
    """The shape letters' sizes for a config object (E = embedding_size, H where a family
    has none) and `num_labels` (C)."""
    return {"V": config.vocab_size, "H": config.hidden_size,
            "E": getattr(config, "embedding_size", config.hidden_size),
            "I": config.intermediate_size, "P": config.max_position_embeddings,
            "T": config.type_vocab_size, "C": num_labels}


# What a family's table may leave out, with the values BERT's table means by its absence.
_TABLE_DEFAULTS = {
    # Transformers' hidden_act when config.json has none (its config class's default).
    "DEFAULT_HIDDEN_ACT": "gelu",
    # The Google-release folder: its config file and checkpoint name.
    "CONFIG_FILE": "bert_config.json",
    "CHECKPOINT_NAME": "bert_model.ckpt",
    # The head groups of the pretraining classes (masked LM first).
    "PRETRAINING_HEADS": ("mlm", "nsp"),
    # The tokenizer files: "wordpiece" (vocab.txt / tokenizer.json), "sentencepiece"
    # (spiece.model) or "bpe" (vocab.json + merges.txt), see bert_tf.hf.tokenizer_files.
    "TOKENIZER_FILES": "wordpiece",
    # config.json keys an export writes beside CONFIG_KEYS.
    "HUB_CONFIG": {"position_embedding_type": "absolute"},
    # The vocabulary file an import writes, the ones an export looks for beside a checkpoint,
    # and how it is read ({token: id}).
    "VOCAB_FILE": "vocab.txt",
    "VOCAB_FILES_BESIDE": ("vocab.txt",),
    "read_vocab": load_vocab,
    # Byte-level BPE: a snapshot's tokenizer.json -> (vocab, merges, settings), for snapshots
    # without vocab.json and merges.txt (bert_tf.hf.tokenizer_files.snapshot_bpe).
    "read_tokenizer_json": None,
}


class HubTable:
    """A family's table of Hub names (its `hub_names` module) as the bridge uses it.

    The module's attributes are read through (`ARCHITECTURES`, `HEADS`, `POOLER`,
    `ENCODER_PREFIX`, `LEFT_OUT`, `CONFIG_KEYS`, ...; see `bert_tf.bert.hub_names`); the ones a
    table may leave out take BERT's values (`_TABLE_DEFAULTS`). Rows come per config:

    - `encoder_rows(config, pooler)`: the module's `encoder_rows_for_config(config, pooler)`
      where it has one (ALBERT: rows per group and inner block, the mapping only where E != H),
      else its `encoder_rows(config.num_hidden_layers, pooler)` (BERT: rows per layer).
    - `implied_rows(config)`: tensors the Transformers class has and the original's model has
      not, each (Hub name without prefix, shape letters, "identity" or "zeros", checked, why):
      checked ones must hold that value on import (else the snapshot is refused); on export
      they are written with it. None in BERT.
    - `config_problem(config)`: why the original and Transformers compute different models
      for this config (a message), or None.
    """

    def __init__(self, module):
        self.module = module

    def __getattr__(self, name):
        try:
            return getattr(self.module, name)
        except AttributeError:
            if name in _TABLE_DEFAULTS:
                return _TABLE_DEFAULTS[name]
            raise

    def encoder_rows(self, config, pooler=True):
        by_config = getattr(self.module, "encoder_rows_for_config", None)
        if by_config is not None:
            return list(by_config(config, pooler))
        return list(self.module.encoder_rows(config.num_hidden_layers, pooler))

    def rows_for(self, architecture, config, pooler=None):
        """Every row of `architecture` with full Hub names (the encoder prefixed as the class
        does); `pooler` None = as the class has one. An encoder weight that a head's rows name
        (RoBERTa's classifier.dense is the pooler) has the head's Hub name only."""
        prefix, heads, has_pooler = self.ARCHITECTURES[architecture]
        head_rows = [row for head in heads for row in self.HEADS[head]]
        in_heads = {original for _, original, _, _ in head_rows}
        rows = [(prefix + hub, original, t, letters) for hub, original, t, letters
                in self.encoder_rows(config, has_pooler if pooler is None else pooler)
                if original not in in_heads]
        return rows + head_rows

    def implied_rows(self, config):
        implied = getattr(self.module, "implied_rows", None)
        return list(implied(config)) if implied is not None else []

    def config_problem(self, config):
        check = getattr(self.module, "config_problem", None)
        return check(config) if check is not None else None

    def mlm_bias_hub_name(self):
        """The Hub name of the masked-LM output bias (the one the decoder's bias repeats)."""
        return next(hub for hub, original, _, _ in self.HEADS["mlm"]
                    if original == self.MLM_OUTPUT_BIAS)


def hub_table(model_type):
    """The `HubTable` of family `model_type`, or None where it has no Hub names."""
    module = families.hub_names(model_type)
    return None if module is None else HubTable(module)


def bridged_families():
    """The model_types whose families have Hub names, in the registry's order."""
    return [name for name in families.NAMES if families.hub_names(name) is not None]


def config_file_names():
    """The config file names of the Google-release folders of the bridged families
    (bert_config.json, albert_config.json, ...)."""
    return list(dict.fromkeys(hub_table(name).CONFIG_FILE for name in bridged_families()))
