"""The tasks of the trainer: pretraining, classification, SQuAD, tagging (one module each)."""
