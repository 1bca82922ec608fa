"""ELECTRA (google-research/electra) on bert_tf, a family beside BERT.

The rooms every family has:
  config.py            the BertConfigs (model_type "electra") of its discriminator and generator
  model.py             `ElectraModel`: its encoder (`electra/...`, embeddings projected, no
                       pooler)
  pretraining.py       `ElectraPretrainingModel` (masking, generator, Gumbel-max sampling,
                       discriminator) and `electra_loss`
  pretraining_task.py  pretraining as a task of the trainer; `run` is run_pretraining's body
  family.py            `FAMILY` for the registry (`bert_tf.families`): BERT's WordPiece tokenizer
and its own: `hparams` (every hparam of `configure_pretraining.py`), `masking` (dynamic masking
and sampling in the graph), `build_pretraining_dataset` (raw text to the original's records) and
`run_pretraining` (the commands, `python -m bert_tf.electra.<command>`).
"""
