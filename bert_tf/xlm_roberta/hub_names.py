"""XLM-RoBERTa's Hub names: Transformers' XLMRoberta* classes are its Roberta* classes under
other class names (`XLMRobertaModel`, `XLMRobertaForMaskedLM`,
`XLMRobertaForSequenceClassification`, `...ForTokenClassification`,
`...ForQuestionAnswering`), with the same tensor names (`roberta.` prefix, `lm_head.*`,
`classifier.dense` + `classifier.out_proj`): RoBERTa's table (`bert_tf.roberta.hub_names`),
whose rows, heads and left-out tensors this one takes as they are.

What differs: `model_type` "xlm-roberta", Transformers' XLMRobertaConfig defaults for missing
keys (BertConfig's sizes, pad_token_id 1), and the tokenizer: the SentencePiece model
`sentencepiece.bpe.model` with fairseq's ids (`bert_tf.xlm_roberta.tokenization`), the file an
import copies and an export writes (kind "fairseq_sentencepiece" of
`bert_tf.hf.tokenizer_files`; a folder with tokenizer.json alone, as Transformers 5 saves one,
gets the model rebuilt from it: `tokenization.read_tokenizer_json`).

This module is pure Python (no TensorFlow, no NumPy).
"""

from bert_tf.bert import hub_names as bert_hub_names
from bert_tf.roberta import hub_names as roberta_hub_names
from bert_tf.xlm_roberta import tokenization
from bert_tf.xlm_roberta.config import XLMRobertaConfig

CONFIG = XLMRobertaConfig
# Transformers' XLMRobertaConfig default epsilon (every released XLM-R writes 1e-5).
DEFAULT_EPS = roberta_hub_names.DEFAULT_EPS
MODEL_TYPE = "xlm-roberta"
ENCODER_PREFIX = roberta_hub_names.ENCODER_PREFIX
TOKENIZER_FILES = "fairseq_sentencepiece"
TOKENIZER_CLASS = "XLMRobertaTokenizer"
SPECIAL_TOKENS = tokenization.SPECIAL_TOKENS
VOCAB_FILE = tokenization.VOCAB_FILE
VOCAB_FILES_BESIDE = (tokenization.VOCAB_FILE,)
read_vocab = tokenization.read_vocab
# A snapshot with tokenizer.json and no sentencepiece.bpe.model: the model rebuilt from it.
read_tokenizer_json = tokenization.read_tokenizer_json
HUB_CONFIG = {}
PRETRAINING_HEADS = roberta_hub_names.PRETRAINING_HEADS

WORD_EMBEDDINGS = roberta_hub_names.WORD_EMBEDDINGS
MLM_OUTPUT_BIAS = roberta_hub_names.MLM_OUTPUT_BIAS
POOLER_KERNEL, POOLER_BIAS = roberta_hub_names.POOLER_KERNEL, roberta_hub_names.POOLER_BIAS
POOLER = roberta_hub_names.POOLER
HEADS = roberta_hub_names.HEADS
# The Roberta* classes' layouts under the XLMRoberta* names.
ARCHITECTURES = {"XLMRoberta" + name.removeprefix("Roberta"): layout
                 for name, layout in roberta_hub_names.ARCHITECTURES.items()}
TIED_DECODER = roberta_hub_names.TIED_DECODER
DECODER_BIAS = roberta_hub_names.DECODER_BIAS
LEFT_OUT = roberta_hub_names.LEFT_OUT

# Transformers' XLMRobertaConfig defaults (its BertConfig's, and pad_token_id 1), not
# xlm-roberta-base's (250002 tokens, 514 positions, one token type, epsilon 1e-5).
CONFIG_KEYS = {**bert_hub_names.CONFIG_KEYS, "pad_token_id": 1}

encoder_rows = roberta_hub_names.encoder_rows
