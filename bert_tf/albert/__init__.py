"""ALBERT (google-research/albert) on bert_tf, a family beside BERT and ELECTRA.

The rooms every family has:
  config.py            `AlbertConfig`: albert_config.json (E, groups of shared blocks)
  model.py             `AlbertModel`: its encoder (`bert/...`: embeddings at width E,
                       `embedding_hidden_mapping_in` E -> H, `transformer/group_G/inner_group_K`)
  pretraining.py       `AlbertPretrainingModel` (masked LM H -> E tied + sentence order) and the
                       loss
  pretraining_task.py  pretraining as a task of the trainer; `run` is run_pretraining's body
  family.py            `FAMILY` for the registry (`bert_tf.families`)
  tokenization.py      SentencePiece with the original's `preprocess_text` (or BERT's WordPiece
                       with a vocab file alone), `FullTokenizer` and the original module's surface
  fast_tokenization.py the same ids in TensorFlow ops, for exports
  instances.py         sentence-order / n-gram-masked instances (create_pretraining_data's
                       algorithm)
  pretraining_data.py  create_pretraining_data's run: checks, tokenizers, writing
  squad_data.py        SQuAD v1/v2 features of its squad_utils.py (pieces aligned to the
                       paragraph's characters) and their records
  estimator.py         what the original's Estimator leaves beside checkpoints (.meta files,
                       model.ckpt-best copies) and its two optimizers, for both trainers
  finetuning.py        what the fine-tuning commands share: the trainer of their Estimator
                       (model.ckpt-0, .meta, adamw/lamb), the files of their loops over
                       checkpoints, run_squad_v1/v2's loop, the cached records' check
  squad_task.py        SQuAD v1 on the trainer (span head) and its feature files; `run_v1`
  classifier_data.py   the GLUE tasks of its classifier_utils.py (files under the GLUE root,
                       columns, guids, labels through `preprocess_text`) and their records
  classifier_task.py   run_classifier on the trainer: the eval of every
                       checkpoint (best_trial.txt, model.ckpt-best), its prediction files; `run`
  race_data.py         RACE as its race_utils.py reads it (RACE/<split>/<level>/all.txt, the
                       question+option texts, the truncation) and its records of 4 sequences
  race_task.py         run_race on the trainer: the 4-choice model (one-output head on each
                       choice), the eval of every checkpoint, predict_results.txt; `run`
  command_flags.py     the fine-tuning commands' common flags (filed under each command), the
                       refusal of the flags they do not run, their body around run_fine_tuning
and its commands, `python -m bert_tf.albert.<command>` for the original's `python -m albert.<command>`:
`create_pretraining_data`, `run_pretraining`, `export_checkpoints`, `run_squad_v1`,
`run_classifier`, `run_race`.
"""
