"""ELECTRA (google-research/electra) on bert_tf: its data builder, hparams, model configs, model
and pretraining.

`build_pretraining_dataset` (raw text to the original's records), `hparams` (every pretraining
hparam of `configure_pretraining.py`), `config` (the bert_tf configs of its discriminator and
generator), `masking` (dynamic masking and Gumbel-max sampling in the graph), `model`
(`ElectraPretrainingModel`: generator, sampling, discriminator, the loss), `run_pretraining` (the
command line; the task on the trainer is `bert_tf.tasks.electra_pretraining`).
"""
