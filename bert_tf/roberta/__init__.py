"""RoBERTa (Liu et al. 2019; fairseq's and Transformers' checkpoints) on bert_tf, a family
beside BERT, ELECTRA and ALBERT: BERT's encoder with a byte-level BPE vocabulary, positions
counted from `pad_token_id + 1`, and its own pretraining recipe.

Its rooms (as its siblings'; those not listed are being built):
  config.py            `RobertaConfig`: a BertConfig with `pad_token_id`, epsilon 1e-5, the
                       exact GELU; `model_type` "roberta"
  model.py             `RobertaModel`: BERT's encoder under the scope `roberta/`, positions
                       cumsum(mask) * mask + pad_token_id
  hub_names.py         the Hugging Face Hub table of the five Transformers classes
  family.py            the registry entry
  tokenization.py      GPT-2's byte-level BPE with the ids of Transformers' RobertaTokenizer
                       (slow and fast): `RobertaTokenizer` (vocab.json + merges.txt),
                       `SPECIAL_TOKENS` (`<s> A </s></s> B </s>`, segment 0, "Ġ" word starts),
                       the readers and writers of vocab.json and merges.txt
  character_classes.py the letter / number / whitespace classes of GPT-2's regex, recorded
                       from Transformers' fast tokenizer (generated; do not edit)
  fast_tokenization.py the same ids in core TensorFlow ops (`TokenizerModule`), for exports
  pretraining_data.py  FULL-SENTENCES pretraining records as fairseq packs them (`complete`
                       / `complete_doc` blocks of line + </s> sentences, <s> first)
  create_pretraining_data.py  its command (`python -m bert_tf.roberta.create_pretraining_data`)
  masking.py           dynamic masking as fairseq's MaskTokensDataset (int(0.15 n + U)
                       positions, 80/10/10), drawn statelessly from (seed, epoch, index)
  pretraining.py       `RobertaPretrainingModel` (encoder + BERT's masked-LM head, tied, no
                       next-sentence head) and `mlm_loss`
  pretraining_task.py  RoBERTa pretraining on the trainer: records masked in the input
                       pipeline from (seed, epoch, index), fairseq's Adam (bias correction,
                       betas (0.9, 0.98), decay 0.01) and polynomial_decay schedule
  run_pretraining.py   its command (`python -m bert_tf.roberta.run_pretraining`)
"""
