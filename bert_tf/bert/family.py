"""BERT as the registry (`bert_tf.families`) sees it."""

from bert_tf import families
from bert_tf.bert import fast_tokenization, tokenization
from bert_tf.bert.config import BertConfig
from bert_tf.bert.model import BertModel

FAMILY = families.Family(
    name="bert",
    config=BertConfig,
    encoder=BertModel,
    tokenizer=tokenization.FullTokenizer,
    graph_tokenizer=fast_tokenization.TokenizerModule,
)
