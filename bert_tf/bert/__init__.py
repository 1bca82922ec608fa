"""BERT (google-research/bert): the family every other one is built beside.

`family` (its `Family`: encoder, tokenizer, special tokens, for the registry in
`bert_tf.families`).
"""
