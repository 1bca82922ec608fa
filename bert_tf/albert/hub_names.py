"""ALBERT's Hub names: the Hugging Face Hub tensor names of Transformers' ALBERT classes beside
the original's TF1 names (google-research/albert's `modeling.py`); the Hub bridge
(`bert_tf.hf`) finds this table through ALBERT's family (`bert_tf.families.hub_names`).

Rows are (Hub name, original name, transposed, Hub shape letters), as in BERT's table
(`bert_tf.bert.hub_names`; the generic parts are `bert_tf.hf.names`). Letters: V vocab_size,
E embedding_size, H hidden_size, I intermediate_size, P max_position_embeddings,
T type_vocab_size, C the number of labels.

Where Transformers and the original lay ALBERT out differently:

- Blocks: the original names the `inner_group_num` blocks of each group
  `bert/encoder/transformer/group_G/inner_group_K/...`, Transformers
  `encoder.albert_layer_groups.G.albert_layers.K...`: rows per group and inner block, for the
  groups some layer runs (`encoder_rows_for_config`).
- Layer l runs group `int(l / L * G)` in the original and `int(l / (L / G))` in Transformers.
  The two float expressions agree for every released layout but not for all (L=18, G=14:
  layer 9 runs group 7 there, 6 here; L=G=22: layer 15 runs group 14 there, 15 here):
  such a config is refused both ways (`config_problem`).
- Transformers always has `encoder.embedding_hidden_mapping_in` [H, E]; the original has it
  only where E != H. With E == H the Hub's must be the identity with a zero bias (what the
  original computes without it): checked on import, written on export (`implied_rows`).
- Transformers creates every group; the original only those some layer runs (all of them when
  G <= L). The groups no layer runs compute nothing: left out on import, written as zeros on
  export (`implied_rows`).
- The masked-LM head maps H -> E (`predictions.dense`) and its decoder is tied to the word
  embeddings [V, E]; the sentence-order head `sop_classifier.classifier` [2, H] is the
  original's `cls/seq_relationship` (no ALBERT class has a next-sentence head alone).

This module is pure Python (no TensorFlow, no NumPy).
"""

from bert_tf.albert.config import DEFAULTS as ORIGINAL_DEFAULTS
from bert_tf.albert.config import AlbertConfig
from bert_tf.albert.tokenization import SENTENCEPIECE_SPECIAL_TOKENS, load_sentencepiece
from bert_tf.bert.config import DEFAULT_LAYER_NORM_EPS
from bert_tf.heads import FINE_TUNING_HEADS
from bert_tf.hf.names import dense_rows, layer_norm_rows

CONFIG = AlbertConfig
DEFAULT_EPS = DEFAULT_LAYER_NORM_EPS
MODEL_TYPE = "albert"
# Transformers' AlbertConfig default: the tanh GELU, the original's "gelu".
DEFAULT_HIDDEN_ACT = "gelu_new"
ENCODER_PREFIX = "albert."
# The Google-release folder an import writes, named as albert_base_v2.tar.gz's files (the
# SentencePiece model keeps the snapshot's name, spiece.model).
CONFIG_FILE = "albert_config.json"
CHECKPOINT_NAME = "model.ckpt-best"
# The tokenizer: a SentencePiece model (spiece.model on the Hub; 30k-clean.model in Google's
# releases), Transformers' AlbertTokenizer with the original's special tokens.
TOKENIZER_FILES = "sentencepiece"
TOKENIZER_CLASS = "AlbertTokenizer"
SPECIAL_TOKENS = SENTENCEPIECE_SPECIAL_TOKENS
VOCAB_FILE = "spiece.model"
VOCAB_FILES_BESIDE = ("spiece.model", "30k-clean.model")
HUB_CONFIG = {}

WORD_EMBEDDINGS = "bert/embeddings/word_embeddings"
MLM_OUTPUT_BIAS = "cls/predictions/output_bias"
POOLER_KERNEL, POOLER_BIAS = "bert/pooler/dense/kernel", "bert/pooler/dense/bias"


def read_vocab(path):
    """{piece: id} of a SentencePiece model file (VocabError naming it otherwise)."""
    model = load_sentencepiece(path, flag="vocab file")
    return {model.IdToPiece(i): i for i in range(model.GetPieceSize())}


_EMBEDDINGS = (
    ("embeddings.word_embeddings.weight", "bert/embeddings/word_embeddings", False, "VE"),
    ("embeddings.position_embeddings.weight", "bert/embeddings/position_embeddings", False, "PE"),
    ("embeddings.token_type_embeddings.weight", "bert/embeddings/token_type_embeddings", False,
     "TE"),
    *layer_norm_rows("embeddings.LayerNorm", "bert/embeddings/LayerNorm", "E"),
)
_MAPPING = dense_rows("encoder.embedding_hidden_mapping_in",
                      "bert/encoder/embedding_hidden_mapping_in", "H", "E")
_HUB_BLOCK = "encoder.albert_layer_groups.{g}.albert_layers.{k}"
_ORIGINAL_BLOCK = "bert/encoder/transformer/group_{g}/inner_group_{k}"
_BLOCK = (
    *dense_rows(f"{_HUB_BLOCK}.attention.query", f"{_ORIGINAL_BLOCK}/attention_1/self/query",
                "H", "H"),
    *dense_rows(f"{_HUB_BLOCK}.attention.key", f"{_ORIGINAL_BLOCK}/attention_1/self/key", "H", "H"),
    *dense_rows(f"{_HUB_BLOCK}.attention.value", f"{_ORIGINAL_BLOCK}/attention_1/self/value",
                "H", "H"),
    *dense_rows(f"{_HUB_BLOCK}.attention.dense", f"{_ORIGINAL_BLOCK}/attention_1/output/dense",
                "H", "H"),
    *layer_norm_rows(f"{_HUB_BLOCK}.attention.LayerNorm", f"{_ORIGINAL_BLOCK}/LayerNorm"),
    *dense_rows(f"{_HUB_BLOCK}.ffn", f"{_ORIGINAL_BLOCK}/ffn_1/intermediate/dense", "I", "H"),
    *dense_rows(f"{_HUB_BLOCK}.ffn_output", f"{_ORIGINAL_BLOCK}/ffn_1/intermediate/output/dense",
                "H", "I"),
    *layer_norm_rows(f"{_HUB_BLOCK}.full_layer_layer_norm", f"{_ORIGINAL_BLOCK}/LayerNorm_1"),
)
# Transformers' AlbertModel pools with a bare Linear `pooler` (BERT's is `pooler.dense`).
POOLER = dense_rows("pooler", "bert/pooler/dense", "H", "H")

HEADS = {
    "mlm": (
        *dense_rows("predictions.dense", "cls/predictions/transform/dense", "E", "H"),
        *layer_norm_rows("predictions.LayerNorm", "cls/predictions/transform/LayerNorm", "E"),
        ("predictions.bias", "cls/predictions/output_bias", False, "V"),
    ),
    "sop": (
        ("sop_classifier.classifier.weight", "cls/seq_relationship/output_weights", False, "2H"),
        ("sop_classifier.classifier.bias", "cls/seq_relationship/output_bias", False, "2"),
    ),
    **{kind: tuple((hub, head.scope + name, transposed, letters)
                   for hub, name, transposed, letters in head.hub_rows)
       for kind, head in FINE_TUNING_HEADS.items()},
}
PRETRAINING_HEADS = ("mlm", "sop")

# Transformers' ALBERT classes: the encoder's prefix, the heads, whether the class has a pooler.
ARCHITECTURES = {
    "AlbertModel": ("", (), True),
    "AlbertForPreTraining": (ENCODER_PREFIX, ("mlm", "sop"), True),
    "AlbertForMaskedLM": (ENCODER_PREFIX, ("mlm",), False),
    **{f"Albert{head.hub_class_suffix}": (ENCODER_PREFIX, (kind,), head.hub_has_pooler)
       for kind, head in FINE_TUNING_HEADS.items()},
}

TIED_DECODER = "predictions.decoder.weight"
DECODER_BIAS = "predictions.decoder.bias"
LEFT_OUT = {
    "embeddings.position_ids": "a buffer of the position indices 0..P-1, not a weight",
    "embeddings.token_type_ids": "a buffer of zeros (default segment ids), not a weight",
    TIED_DECODER: "tied to the word embeddings (checked equal), as the original's masked-LM "
                  "output layer",
    DECODER_BIAS: "the same vector as predictions.bias (checked equal)",
}

# config.json keys that are albert_config.json keys of the same meaning, with Transformers'
# AlbertConfig defaults for a config.json that leaves one out: the original's (albert-xxlarge's
# sizes, no dropout), and a vocabulary of 30000.
CONFIG_KEYS = {
    "vocab_size": 30000,
    **{key: ORIGINAL_DEFAULTS[key] for key in (
        "embedding_size", "hidden_size", "num_hidden_layers", "num_hidden_groups",
        "num_attention_heads", "intermediate_size", "inner_group_num", "hidden_dropout_prob",
        "attention_probs_dropout_prob", "max_position_embeddings", "type_vocab_size",
        "initializer_range")},
}


def transformers_group_of_layer(layer_index, num_hidden_layers, num_hidden_groups):
    """The group Transformers' AlbertTransformer runs at layer `layer_index`: its float
    expression `int(l / (L / G))` (the original's is `int(l / L * G)`,
    `AlbertConfig.group_of_layer`)."""
    return int(layer_index / (num_hidden_layers / num_hidden_groups))


def config_problem(config):
    """A message when the original and Transformers run different groups at some layer of
    `config` (an `AlbertConfig`), else None."""
    layers, groups = config.num_hidden_layers, config.num_hidden_groups
    for layer in range(layers):
        ours = config.group_of_layer(layer)
        theirs = transformers_group_of_layer(layer, layers, groups)
        if ours != theirs:
            return (f"num_hidden_layers={layers}, num_hidden_groups={groups}: layer {layer} runs "
                    f"group {ours} in the original (int(l / L * G)) and group {theirs} in "
                    "Transformers (int(l / (L / G))), so the two compute different models; no "
                    "conversion keeps this model's outputs")
    return None


def _block_rows(groups, inner_group_num):
    return [(hub.format(g=g, k=k), original.format(g=g, k=k), t, letters)
            for g in groups for k in range(inner_group_num)
            for hub, original, t, letters in _BLOCK]


def encoder_rows_for_config(config, pooler=True):
    """The encoder's rows (names without prefix): embeddings, the mapping (where E != H), the
    blocks of the groups some layer runs (group by group, inner block by inner block), pooler."""
    rows = list(_EMBEDDINGS)
    if config.embedding_size != config.hidden_size:
        rows += list(_MAPPING)
    rows += _block_rows(config.groups, config.inner_group_num)
    if pooler:
        rows += list(POOLER)
    return rows


def implied_rows(config):
    """Tensors of Transformers' classes that the original's model has not (see the module
    docstring): (Hub name without prefix, letters, "identity" | "zeros", checked, why)."""
    rows = []
    if config.embedding_size == config.hidden_size:
        why = ("embedding_size == hidden_size: the original has no embedding_hidden_mapping_in "
               "and feeds the embeddings on as they are, which this tensor does only as the "
               "{value}")
        weight, bias = _MAPPING
        rows.append((weight[0], weight[3], "identity", True, why.format(value="identity")))
        rows.append((bias[0], bias[3], "zeros", True, why.format(value="zero bias")))
    unused = [g for g in range(config.num_hidden_groups) if g not in set(config.groups)]
    for hub, _, _, letters in _block_rows(unused, config.inner_group_num):
        rows.append((hub, letters, "zeros", False,
                     f"num_hidden_groups={config.num_hidden_groups} > num_hidden_layers="
                     f"{config.num_hidden_layers}: a group no layer runs (the original has none; "
                     "Transformers creates it and computes nothing with it)"))
    return rows
