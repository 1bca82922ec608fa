"""The fine-tuning tasks of the trainer, one module each: classification, SQuAD, tagging, and
what they share (`finetuning`). Each takes its encoder, tokenizer and special tokens from the
config's family (`bert_tf.families`); a family's pretraining task lives in its own package
(`bert_tf.bert.pretraining_task`, `bert_tf.electra.pretraining_task`)."""
