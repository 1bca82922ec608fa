"""RoBERTa as the registry (`bert_tf.families`) sees it."""

from bert_tf import families
from bert_tf.roberta import fast_tokenization
from bert_tf.roberta.config import RobertaConfig
from bert_tf.roberta.model import RobertaModel
from bert_tf.roberta.tokenization import RobertaTokenizer

FAMILY = families.Family(
    name="roberta",
    config=RobertaConfig,
    encoder=RobertaModel,
    tokenizer=RobertaTokenizer,
    graph_tokenizer=fast_tokenization.TokenizerModule,
    tokenizer_file_flags=("merges_file",),
    # Transformers' is_split_into_words: each word "Ġword", as after a space in running text.
    word_tokenizer_kwargs={"add_prefix_space": True},
    cased=True,
)
