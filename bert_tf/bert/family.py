"""BERT as the registry (`bert_tf.families`) sees it."""

from bert_tf import families, tokenization
from bert_tf.bert.config import BertConfig
from bert_tf.bert.model import BertModel

# WordPiece's special tokens; a piece continuing a word starts with "##".
SPECIAL_TOKENS = families.SpecialTokens(
    cls="[CLS]", sep="[SEP]", mask="[MASK]", pad="[PAD]", unk="[UNK]", continuation_prefix="##")

FAMILY = families.Family(
    name="bert",
    config=BertConfig,
    encoder=BertModel,
    tokenizer=tokenization.FullTokenizer,
    special_tokens=SPECIAL_TOKENS,
)
