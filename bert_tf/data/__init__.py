"""Training data as TFRecords.

Pretraining (create_pretraining_data.py): text -> documents -> instances -> TFRecords.
  documents.py  input files -> `Corpus` (token ids, sentence and document boundaries)
  instances.py  the original's instance building and masking -> `InstanceStore`
  features.py   the TFRecord features: `FEATURE_NAMES`, `feature_spec`, Example encoders
  writer.py     TFRecord framing and CRC32-C without TensorFlow, temp-then-rename output
  pipeline.py   the flags, their checks, the identical and sharded modes

Fine-tuning (run_classifier.py, run_squad.py, run_tagging.py):
  classifier_tasks.py  the classifier tasks' files -> `InputExample`s (`get_processor`)
  classifier.py `InputExample`s -> features -> TFRecords
  records.py    the records' metadata sidecar (are they stale?), the original's step count
  pairs.py      a text pair's ids in the original's layout, truncated to the length
  squad.py      SQuAD files -> windows -> TFRecords
  conll.py      CoNLL files -> word-aligned windows -> TFRecords
"""
