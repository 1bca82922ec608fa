"""ALBERT as the registry (`bert_tf.families`) sees it."""

from bert_tf import families
from bert_tf.albert.config import AlbertConfig
from bert_tf.albert.model import AlbertModel
from bert_tf.bert import fast_tokenization, tokenization

FAMILY = families.Family(
    name="albert",
    config=AlbertConfig,
    encoder=AlbertModel,
    tokenizer=tokenization.FullTokenizer,
    graph_tokenizer=fast_tokenization.TokenizerModule,
)
