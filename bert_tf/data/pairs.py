"""The `[CLS] a [SEP] b [SEP]` input of the fine-tuning scripts, from word pieces.

The original's classifier, extract_features and (for the query part) SQuAD lay out one or two
token sequences the same way (REFERENCE.md §11, FINETUNING.md §1.3):

* with a non-empty b: while `len(a) + len(b) > max_seq_length - 3`, the longer of the two loses
  its last token (a tie trims b);
* without b (None, or a text that tokenizes to nothing): a is cut to `max_seq_length - 2`;
* tokens `[CLS] a [SEP]` get segment 0, `b [SEP]` segment 1; ids, mask and segments are padded
  with 0 to max_seq_length.

Importing this module does not import TensorFlow.
"""

CLS_TOKEN = "[CLS]"
SEP_TOKEN = "[SEP]"


def truncate_seq_pair(tokens_a, tokens_b, max_length):
    """Pops the last token of the longer list (b on a tie) until both fit in `max_length`.

    Modifies both lists in place; `max_length` must be >= 0.
    """
    while len(tokens_a) + len(tokens_b) > max_length:
        if len(tokens_a) > len(tokens_b):
            tokens_a.pop()
        else:
            tokens_b.pop()


def pair_tokens(tokens_a, tokens_b, max_seq_length):
    """The laid-out tokens of one example (inputs are not modified).

    Args:
      tokens_a: list of word pieces; tokens_b: list or None (empty = no b).
      max_seq_length: int >= 3.
    Returns:
      (tokens, segment_ids): lists of the same length <= max_seq_length, unpadded.
    """
    tokens_a = list(tokens_a)
    if tokens_b:
        tokens_b = list(tokens_b)
        truncate_seq_pair(tokens_a, tokens_b, max_seq_length - 3)
    else:
        tokens_b = []
        tokens_a = tokens_a[:max_seq_length - 2]
    tokens = [CLS_TOKEN, *tokens_a, SEP_TOKEN]
    segment_ids = [0] * len(tokens)
    if tokens_b:
        tokens += [*tokens_b, SEP_TOKEN]
        segment_ids += [1] * (len(tokens_b) + 1)
    return tokens, segment_ids


def pad_to(values, length):
    """`values` (list of int) followed by zeros up to `length`."""
    return list(values) + [0] * (length - len(values))
