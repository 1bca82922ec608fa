"""BERT (google-research/bert): the family every other one is built beside.

The rooms every family has:
  config.py            `BertConfig`: bert_config.json (ELECTRA's configs are BertConfigs too)
  model.py             `BertModel`: the encoder on `bert_tf.layers`, naming its checkpoint
                       variables (`bert/...`)
  pretraining.py       `BertPretrainingModel` (masked LM + next sentence) and the loss
  pretraining_task.py  pretraining as a task of the trainer; `run` is run_pretraining.py's body
  family.py            `FAMILY`, what the registry (`bert_tf.families`) hands the rest of bert_tf
  hub_names.py         its Hugging Face Hub names beside the original's (the Hub bridge's table)
Its tokenizer is WordPiece (`bert_tf.tokenization`, `bert_tf.fast_tokenization`, shared with
ELECTRA); its pretraining-data builder is `bert_tf.data` (documents, instances, pipeline) behind
`python -m bert_tf.create_pretraining_data`; its commands are the root commands of bert_tf.
"""
