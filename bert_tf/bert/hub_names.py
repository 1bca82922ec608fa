"""BERT's Hub names: the table of Hugging Face Hub tensor names (Transformers' BERT classes)
and the original's TF1 checkpoint names; the Hub bridge (`bert_tf.hf`) finds it through BERT's
family (`Family.hub_names`).

One row per tensor: (Hub name, original name, transposed, Hub shape). Hub `Linear` weights are
[out, in], the original's Dense kernels [in, out]: rows with `transposed` swap the two axes;
the heads the original keeps as `output_weights` [num_outputs, H] are already in the Hub's
layout. Shapes are written with the config's letters: V vocab_size, H hidden_size,
I intermediate_size, P max_position_embeddings, T type_vocab_size, C the number of labels.

Encoder names carry no prefix here; the task architectures put the encoder under `bert.`.
The fine-tuning heads' rows and classes are those they declare (`bert_tf.heads`). This module
is pure Python (no TensorFlow, no NumPy).
"""

from bert_tf.bert.config import DEFAULT_LAYER_NORM_EPS, BertConfig
from bert_tf.bert.tokenization import WORDPIECE_SPECIAL_TOKENS
from bert_tf.heads import FINE_TUNING_HEADS
from bert_tf.hf.names import dense_rows, layer_norm_rows

# The config class a snapshot's config.json becomes, and its default LayerNorm epsilon.
CONFIG = BertConfig
DEFAULT_EPS = DEFAULT_LAYER_NORM_EPS
# config.json's model_type of these snapshots; the prefix of the encoder in the task classes.
MODEL_TYPE = "bert"
# The tokenizer of BERT's snapshots: Transformers' class, and its special tokens (the
# tokenizer.json / special_tokens_map.json the bridge reads and writes).
TOKENIZER_CLASS = "BertTokenizer"
SPECIAL_TOKENS = WORDPIECE_SPECIAL_TOKENS
ENCODER_PREFIX = "bert."
# Original names the bridge checks or generates: the tied word embeddings, the masked-LM bias,
# the pooler (which classes without one get on import).
WORD_EMBEDDINGS = "bert/embeddings/word_embeddings"
MLM_OUTPUT_BIAS = "cls/predictions/output_bias"
POOLER_KERNEL, POOLER_BIAS = "bert/pooler/dense/kernel", "bert/pooler/dense/bias"

# Group name -> rows. Layer-wise encoder rows use `{i}` for the layer index.
_EMBEDDINGS = (
    ("embeddings.word_embeddings.weight", "bert/embeddings/word_embeddings", False, "VH"),
    ("embeddings.position_embeddings.weight", "bert/embeddings/position_embeddings", False, "PH"),
    ("embeddings.token_type_embeddings.weight", "bert/embeddings/token_type_embeddings", False,
     "TH"),
    ("embeddings.LayerNorm.weight", "bert/embeddings/LayerNorm/gamma", False, "H"),
    ("embeddings.LayerNorm.bias", "bert/embeddings/LayerNorm/beta", False, "H"),
)


_LAYER = (
    *dense_rows("encoder.layer.{i}.attention.self.query",
                "bert/encoder/layer_{i}/attention/self/query", "H", "H"),
    *dense_rows("encoder.layer.{i}.attention.self.key",
                "bert/encoder/layer_{i}/attention/self/key", "H", "H"),
    *dense_rows("encoder.layer.{i}.attention.self.value",
                "bert/encoder/layer_{i}/attention/self/value", "H", "H"),
    *dense_rows("encoder.layer.{i}.attention.output.dense",
                "bert/encoder/layer_{i}/attention/output/dense", "H", "H"),
    *layer_norm_rows("encoder.layer.{i}.attention.output.LayerNorm",
                     "bert/encoder/layer_{i}/attention/output/LayerNorm"),
    *dense_rows("encoder.layer.{i}.intermediate.dense",
                "bert/encoder/layer_{i}/intermediate/dense", "I", "H"),
    *dense_rows("encoder.layer.{i}.output.dense", "bert/encoder/layer_{i}/output/dense", "H", "I"),
    *layer_norm_rows("encoder.layer.{i}.output.LayerNorm",
                     "bert/encoder/layer_{i}/output/LayerNorm"),
)

POOLER = dense_rows("pooler.dense", "bert/pooler/dense", "H", "H")

# Heads: rows with full Hub names (outside the `bert.` prefix): the pretraining heads', then the
# fine-tuning heads' (under their checkpoint scopes).
HEADS = {
    "mlm": (
        *dense_rows("cls.predictions.transform.dense", "cls/predictions/transform/dense", "H", "H"),
        *layer_norm_rows("cls.predictions.transform.LayerNorm",
                         "cls/predictions/transform/LayerNorm"),
        ("cls.predictions.bias", "cls/predictions/output_bias", False, "V"),
    ),
    "nsp": (
        ("cls.seq_relationship.weight", "cls/seq_relationship/output_weights", False, "2H"),
        ("cls.seq_relationship.bias", "cls/seq_relationship/output_bias", False, "2"),
    ),
    **{kind: tuple((hub, head.scope + name, transposed, letters)
                   for hub, name, transposed, letters in head.hub_rows)
       for kind, head in FINE_TUNING_HEADS.items()},
}

# Transformers' BERT classes: the encoder's prefix, the heads, whether the class has a pooler.
ARCHITECTURES = {
    "BertModel": ("", (), True),
    "BertForPreTraining": ("bert.", ("mlm", "nsp"), True),
    "BertForMaskedLM": ("bert.", ("mlm",), False),
    "BertForNextSentencePrediction": ("bert.", ("nsp",), True),
    **{f"Bert{head.hub_class_suffix}": ("bert.", (kind,), head.hub_has_pooler)
       for kind, head in FINE_TUNING_HEADS.items()},
}

# Hub tensors that are not weights of the original's model, and why (checked where a value
# must agree with a weight that is kept).
TIED_DECODER = "cls.predictions.decoder.weight"
DECODER_BIAS = "cls.predictions.decoder.bias"
LEFT_OUT = {
    "embeddings.position_ids": "a buffer of the position indices 0..P-1, not a weight",
    "embeddings.token_type_ids": "a buffer of zeros (default segment ids), not a weight",
    TIED_DECODER: "tied to the word embeddings (checked equal), as the original's masked-LM "
                  "output layer",
    DECODER_BIAS: "the same vector as cls.predictions.bias (checked equal)",
}

# config.json keys that are bert_config.json keys of the same meaning, with Transformers'
# BertConfig defaults for a config.json that leaves one out.
CONFIG_KEYS = {
    "vocab_size": 30522,
    "hidden_size": 768,
    "num_hidden_layers": 12,
    "num_attention_heads": 12,
    "intermediate_size": 3072,
    "hidden_dropout_prob": 0.1,
    "attention_probs_dropout_prob": 0.1,
    "max_position_embeddings": 512,
    "type_vocab_size": 2,
    "initializer_range": 0.02,
}

def encoder_rows(num_hidden_layers, pooler=True):
    """The encoder's rows (names without prefix), embeddings, layers in order, pooler."""
    rows = list(_EMBEDDINGS)
    for i in range(num_hidden_layers):
        rows += [(hub.format(i=i), original.format(i=i), t, shape)
                 for hub, original, t, shape in _LAYER]
    if pooler:
        rows += list(POOLER)
    return rows

