"""The `[CLS] a [SEP] b [SEP]` layout of the fine-tuning scripts, on word-piece strings.

The classifier's features (`bert_tf.data.classifier`) and extract_features lay out one or two
sequences the same way (REFERENCE.md §11, FINETUNING.md §1.3): with a non-empty b, the pair is
truncated to max_seq_length - 3 pieces (`bert_tf.data.classifier.truncate_lengths`: the longer
loses its last piece, ties trim b); without b (None, or a text that tokenizes to nothing) a is
cut to max_seq_length - 2. `[CLS] a [SEP]` get segment 0 and `b [SEP]` segment 1, the second
`[SEP]` only if b still has pieces after truncation (as in the original, where truncation can
empty b when max_seq_length is 3 or 4).

Importing this module does not import TensorFlow.
"""

from bert_tf import families
from bert_tf.data.classifier import truncate_lengths


def pair_tokens(tokens_a, tokens_b, max_seq_length, special_tokens=None):
    """The laid-out tokens of one example (inputs are not modified).

    Args:
      tokens_a: list of word pieces; tokens_b: list or None (empty = no b).
      max_seq_length: int >= 3.
      special_tokens: the tokenizer's `SpecialTokens` (`families.special_tokens_of`): its
        `cls` and `sep` stand for [CLS] and [SEP], its pair layout (`pair_budget`, `lay_out`)
        for the one above; None: the default family's (WordPiece's).
    Returns:
      (tokens, segment_ids): lists of the same length <= max_seq_length, unpadded.
    """
    special = special_tokens or families.default_special_tokens()
    if tokens_b:
        len_a, len_b = truncate_lengths(len(tokens_a), len(tokens_b),
                                        special.pair_budget(max_seq_length))
        tokens_a, tokens_b = tokens_a[:len_a], tokens_b[:len_b]
    else:
        tokens_a, tokens_b = tokens_a[:max_seq_length - 2], []
    tokens, num_first = special.lay_out(tokens_a, tokens_b, special.cls, special.sep)
    return tokens, [0] * num_first + [1] * (len(tokens) - num_first)


def pad_to(values, length, value=0):
    """`values` (list of int) followed by `value` (zeros; input_ids: the family's pad id,
    `SpecialTokens.pad_id`) up to `length`."""
    return list(values) + [value] * (length - len(values))
