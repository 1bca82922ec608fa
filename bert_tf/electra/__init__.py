"""ELECTRA (google-research/electra) on bert_tf: its data builder, hparams and model configs.

`build_pretraining_dataset` (raw text to the original's records), `hparams` (every pretraining
hparam of `configure_pretraining.py`), `config` (the bert_tf configs of its discriminator and
generator).
"""
