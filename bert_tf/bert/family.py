"""BERT as the registry (`bert_tf.families`) sees it."""

from bert_tf import families, tokenization
from bert_tf.encoder import BertModel

FAMILY = families.Family(
    name="bert",
    encoder=BertModel,
    tokenizer=tokenization.FullTokenizer,
    special_tokens=tokenization.FullTokenizer.special_tokens,
)
