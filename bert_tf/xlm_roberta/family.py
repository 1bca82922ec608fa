"""XLM-RoBERTa as the registry (`bert_tf.families`) sees it."""

from bert_tf import families
from bert_tf.xlm_roberta import fast_tokenization
from bert_tf.xlm_roberta.config import XLMRobertaConfig
from bert_tf.xlm_roberta.model import XLMRobertaModel
from bert_tf.xlm_roberta.tokenization import XLMRobertaTokenizer

FAMILY = families.Family(
    name="xlm-roberta",
    config=XLMRobertaConfig,
    encoder=XLMRobertaModel,
    tokenizer=XLMRobertaTokenizer,
    graph_tokenizer=fast_tokenization.TokenizerModule,
    # No word_tokenizer_kwargs: SentencePiece puts "▁" before every chunk it is given, so a
    # word tokenized alone has the pieces it has after a space in running text (Transformers'
    # is_split_into_words gives those ids too).
    cased=True,
)
