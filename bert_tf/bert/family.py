"""BERT as the registry (`bert_tf.families`) sees it."""

from bert_tf import families, tokenization
from bert_tf.encoder import BertModel

# WordPiece's special tokens; a piece continuing a word starts with "##".
SPECIAL_TOKENS = families.SpecialTokens(
    cls="[CLS]", sep="[SEP]", mask="[MASK]", pad="[PAD]", unk="[UNK]", continuation_prefix="##")

FAMILY = families.Family(
    name="bert",
    encoder=BertModel,
    tokenizer=tokenization.FullTokenizer,
    special_tokens=SPECIAL_TOKENS,
)
