"""ALBERT (google-research/albert): a family beside BERT and ELECTRA.

Its rooms:
  config.py             the ALBERT config (albert_config.json: embedding_size, num_hidden_groups,
                        inner_group_num, ...)
  model.py              the encoder: factorized embeddings, groups of shared layers
                        (`bert/encoder/transformer/group_G/inner_group_K/...`)
  pretraining.py        masked LM + sentence-order prediction and the loss
  family.py             `FAMILY`, what the registry (`bert_tf.families`) hands the rest of bert_tf
  tokenization.py       SentencePiece (or BERT's WordPiece): `FullTokenizer` and the original
                        module's surface; `AlbertTokenizer`, the family's tokenizer
  fast_tokenization.py  the same ids in TensorFlow ops (the family's graph tokenizer)
  instances.py          sentence-order pairs, n-gram masking, token_boundary
                        (create_pretraining_data's algorithm)
  pretraining_data.py   create_pretraining_data's run: checks, tokenizer, writing
Its commands: `python -m bert_tf.albert.create_pretraining_data`, ...
"""
