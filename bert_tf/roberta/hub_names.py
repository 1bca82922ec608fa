"""RoBERTa's Hub names: the Hugging Face Hub tensor names of Transformers' RoBERTa classes
beside our TF1 checkpoint names (`roberta/...`, BERT's names under RoBERTa's scope); the Hub
bridge (`bert_tf.hf`) finds this table through RoBERTa's family (`bert_tf.families.hub_names`).

Rows are (Hub name, original name, transposed, Hub shape letters), as in BERT's table
(`bert_tf.bert.hub_names`, whose encoder rows these are with `roberta/` for `bert/`; the
generic parts are `bert_tf.hf.names`). Letters: V vocab_size, H hidden_size,
I intermediate_size, P max_position_embeddings (the whole table, pad_token_id's row and the
rows before it included), T type_vocab_size, C the number of labels.

Where Transformers' RoBERTa classes and BERT's differ:

- The masked-LM head `lm_head` is BERT's transform + tied output layer under other names:
  `lm_head.dense` (followed by the exact GELU whatever hidden_act: `RobertaConfig.mlm_hidden_act`),
  `lm_head.layer_norm` (the config's epsilon), `lm_head.bias`; `lm_head.decoder.weight` is the
  word embeddings and `lm_head.decoder.bias` the same vector as `lm_head.bias` (checked, left
  out, not written: Transformers ties them on load).
- `RobertaForSequenceClassification` has no pooler: its head `classifier.dense` (tanh) +
  `classifier.out_proj` on `<s>` is exactly the pooler + BERT's classifier, so
  `classifier.dense` is `roberta/pooler/dense` and `classifier.out_proj` the classifier's
  `output_weights` / `output_bias` (the head's rows name the pooler; `names.HubTable.rows_for`
  leaves it out of the encoder's rows). Only the dropout differs, in training: Transformers
  drops before the dense and after the tanh, BERT's classifier after the pooler.
- No class has a next-sentence head: the pretraining class is `RobertaForMaskedLM`.

This module is pure Python (no TensorFlow, no NumPy).
"""

from bert_tf.bert import hub_names as bert_hub_names
from bert_tf.heads import CLASSIFIER, FINE_TUNING_HEADS
from bert_tf.hf.names import dense_rows, layer_norm_rows
from bert_tf.roberta.config import RobertaConfig
from bert_tf.roberta import tokenization

CONFIG = RobertaConfig
# Transformers' RobertaConfig default epsilon (BERT's 1e-12; every released RoBERTa writes 1e-5).
DEFAULT_EPS = 1e-12
MODEL_TYPE = "roberta"
ENCODER_PREFIX = "roberta."
# The tokenizer: byte-level BPE, vocab.json + merges.txt (see bert_tf.hf.tokenizer_files).
TOKENIZER_FILES = "bpe"
TOKENIZER_CLASS = "RobertaTokenizer"
SPECIAL_TOKENS = tokenization.SPECIAL_TOKENS
VOCAB_FILE = tokenization.VOCAB_FILE
VOCAB_FILES_BESIDE = (tokenization.VOCAB_FILE,)
MERGES_FILE = tokenization.MERGES_FILE
read_tokenizer_json = tokenization.read_tokenizer_json
# Transformers' RobertaConfig has no position_embedding_type (always absolute).
HUB_CONFIG = {}
PRETRAINING_HEADS = ("mlm",)

WORD_EMBEDDINGS = "roberta/embeddings/word_embeddings"
MLM_OUTPUT_BIAS = "cls/predictions/output_bias"
POOLER_KERNEL, POOLER_BIAS = "roberta/pooler/dense/kernel", "roberta/pooler/dense/bias"


def read_vocab(vocab_file, merges_file=None):
    """{token: id} of vocab.json, checked with its merges (default: merges.txt beside it) as
    the tokenizer checks them (every byte symbol and merge an entry); VocabError naming the
    file otherwise."""
    return tokenization.ByteLevelBPEVocab.from_files(
        vocab_file, merges_file or tokenization.default_merges_file(vocab_file))


def _scoped(rows):
    """BERT's rows with RoBERTa's scope."""
    return tuple((hub, "roberta/" + original.removeprefix("bert/"), transposed, letters)
                 for hub, original, transposed, letters in rows)


POOLER = _scoped(bert_hub_names.POOLER)

HEADS = {
    "mlm": (
        *dense_rows("lm_head.dense", "cls/predictions/transform/dense", "H", "H"),
        *layer_norm_rows("lm_head.layer_norm", "cls/predictions/transform/LayerNorm"),
        ("lm_head.bias", MLM_OUTPUT_BIAS, False, "V"),
    ),
    **{kind: tuple((hub, head.scope + name, transposed, letters)
                   for hub, name, transposed, letters in head.hub_rows)
       for kind, head in FINE_TUNING_HEADS.items() if kind != "classifier"},
    # The labelled rows first (the bridge counts the labels on them), then the pooler's.
    "classifier": (
        ("classifier.out_proj.weight", CLASSIFIER.scope + "output_weights", False, "CH"),
        ("classifier.out_proj.bias", CLASSIFIER.scope + "output_bias", False, "C"),
        *dense_rows("classifier.dense", "roberta/pooler/dense", "H", "H"),
    ),
}

# Transformers' RoBERTa classes: the encoder's prefix, the heads, whether the class has the
# pooler (RobertaForSequenceClassification's is its classifier.dense).
ARCHITECTURES = {
    "RobertaModel": ("", (), True),
    "RobertaForMaskedLM": (ENCODER_PREFIX, ("mlm",), False),
    **{f"Roberta{head.hub_class_suffix}": (ENCODER_PREFIX, (kind,),
                                           kind == "classifier" or head.hub_has_pooler)
       for kind, head in FINE_TUNING_HEADS.items()},
}

TIED_DECODER = "lm_head.decoder.weight"
DECODER_BIAS = "lm_head.decoder.bias"
LEFT_OUT = {
    "embeddings.position_ids": "a buffer of the position indices 0..P-1, not a weight",
    "embeddings.token_type_ids": "a buffer of zeros (default segment ids), not a weight",
    TIED_DECODER: "tied to the word embeddings (checked equal), as BERT's masked-LM output layer",
    DECODER_BIAS: "the same vector as lm_head.bias (checked equal)",
}

# config.json keys that are bert_config.json keys of the same meaning, with Transformers'
# RobertaConfig defaults for a config.json that leaves one out: its BertConfig's but for the
# vocabulary and the padding id (not roberta-base's values: its config.json gives
# type_vocab_size 1, max_position_embeddings 514, layer_norm_eps 1e-5).
CONFIG_KEYS = {**bert_hub_names.CONFIG_KEYS, "vocab_size": 50265, "pad_token_id": 1}


def encoder_rows(num_hidden_layers, pooler=True):
    """The encoder's rows (names without prefix): BERT's under `roberta/`."""
    return list(_scoped(bert_hub_names.encoder_rows(num_hidden_layers, pooler)))
