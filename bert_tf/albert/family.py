"""ALBERT as the registry (`bert_tf.families`) sees it."""

from bert_tf import families
from bert_tf.albert import fast_tokenization
from bert_tf.albert.config import AlbertConfig
from bert_tf.albert.model import AlbertModel
from bert_tf.albert.tokenization import AlbertTokenizer

FAMILY = families.Family(
    name="albert",
    config=AlbertConfig,
    encoder=AlbertModel,
    tokenizer=AlbertTokenizer,
    graph_tokenizer=fast_tokenization.TokenizerModule,
)
