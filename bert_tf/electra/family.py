"""ELECTRA as the registry (`bert_tf.families`) sees it: its own encoder, BERT's WordPiece
tokenizer and special tokens (google-research/electra tokenizes with BERT's code)."""

from bert_tf import families
from bert_tf.bert import fast_tokenization, tokenization
from bert_tf.bert.config import BertConfig
from bert_tf.electra.model import ElectraModel

FAMILY = families.Family(
    name="electra",
    config=BertConfig,
    encoder=ElectraModel,
    tokenizer=tokenization.FullTokenizer,
    graph_tokenizer=fast_tokenization.TokenizerModule,
)
