"""XLM-RoBERTa (Conneau et al. 2020; fairseq's `xlmr` and Transformers' checkpoints) on bert_tf,
a family beside RoBERTa: RoBERTa's encoder (`bert_tf.roberta`, scope `roberta/`) with a
SentencePiece vocabulary shifted by fairseq's dictionary offset (docs/xlm-roberta.md).

Its rooms (as its siblings'; pretraining is RoBERTa's recipe and not wired here):
  config.py            `XLMRobertaConfig`: RoBERTa's config, `model_type` "xlm-roberta"
  model.py             `XLMRobertaModel`: RoBERTa's encoder unchanged (scope `roberta/`)
  tokenization.py      SentencePiece + fairseq's ids (<s> 0, <pad> 1, </s> 2, <unk> 3, piece
                       i -> i + 1, <mask> last), Transformers' XLMRobertaTokenizer's ids;
                       `<s> A </s></s> B </s>`, segment 0 (`SPECIAL_TOKENS`)
  fast_tokenization.py the same ids in TensorFlow ops (tensorflow-text's SentencePiece), for
                       exports
  hub_names.py         the Hugging Face Hub table of the five Transformers classes (RoBERTa's
                       rows, XLMRoberta* class names, sentencepiece.bpe.model)
  family.py            the registry entry
"""
