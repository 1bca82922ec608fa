"""BERT (google-research/bert): the family every other one is built beside.

The rooms every family has:
  config.py            `BertConfig`: bert_config.json (ELECTRA's configs are BertConfigs too)
  model.py             `BertModel`: the encoder on `bert_tf.layers`, naming its checkpoint
                       variables (`bert/...`)
  pretraining.py       `BertPretrainingModel` (masked LM + next sentence) and the loss
  pretraining_task.py  pretraining as a task of the trainer; `run` is run_pretraining.py's body
  family.py            `FAMILY`, what the registry (`bert_tf.families`) hands the rest of bert_tf
  hub_names.py         its Hugging Face Hub names beside the original's (the Hub bridge's table)
  tokenization.py      WordPiece: `FullTokenizer` and the original module's surface (ELECTRA's
                       tokenizer too), on the shared `bert_tf.text`
  fast_tokenization.py the same ids on tensorflow-text (`FastTokenizer`) and in core ops for
                       exports (`TokenizerModule`, the family's graph tokenizer); its tables in
                       fast_tokenization_tables.py
  instances.py         masked-LM / next-sentence instances (create_pretraining_data's algorithm)
  pretraining_data.py  create_pretraining_data's run: checks, shards, tokenizers, writing
Its commands are the root commands of bert_tf (`python -m bert_tf.create_pretraining_data`,
...).
"""
