"""Keras layers of the BERT encoder."""

from bert_tf.layers.activations import gelu, get_activation
from bert_tf.layers.attention import SelfAttention, attention_mask_adder
from bert_tf.layers.embeddings import BertEmbeddings
from bert_tf.layers.pooler import Pooler
from bert_tf.layers.transformer import TransformerBlock
from bert_tf.layers.transformer_encoder import TransformerEncoder

__all__ = [
    "BertEmbeddings",
    "Pooler",
    "SelfAttention",
    "TransformerBlock",
    "TransformerEncoder",
    "attention_mask_adder",
    "gelu",
    "get_activation",
]
