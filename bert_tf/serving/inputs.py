"""Raw text to model inputs inside the TensorFlow graph, for SavedModels that take strings.

`ServingInputs(vocab, do_lower_case, max_seq_length)` is a `tf.Module` whose functions give the
same input_ids / input_mask / segment_ids as the Python path (FullTokenizer, then
`bert_tf.data.pairs`: the longer of a/b loses its last token until both fit in
max_seq_length - 3, ties trim b; an empty or untokenizable b gives the single layout, a cut to
max_seq_length - 2). Word pieces come from the family's `graph_tokenizer` (BERT's and
ELECTRA's: `bert_tf.bert.fast_tokenization.TokenizerModule`) in its core-op mode
(`core_ops=True`: normalization tables and WordPiece by hash-table lookups, no tensorflow-text
op), whose ids equal FullTokenizer's. The module holds every table as a
constant, so a SavedModel that contains it needs only `tensorflow` to run (plain
`saved_model_cli run` works).

Functions (all tf.function with fixed signatures, so they export as SavedModel signatures):
  pairs(text_a [N], text_b [N])   -> dict of int32 [N, S]: input_ids, input_mask, segment_ids;
  single(text_a [N])              -> the same for single texts;
  words(text_a [N])               -> the windows of every text, for token classification
                                     (one tag per whitespace word), K windows in all, in text
                                     order: input_ids, input_mask, segment_ids, word_ids (index
                                     within its text of the word each piece comes from, -1 for
                                     [CLS], [SEP] and padding) and tag_position (1 where the
                                     window's prediction is the tag of that word) int32
                                     [K, S]; text_index int32 [K] (the text of each window);
                                     num_words int32 [N].
S, the padded length, is max_seq_length with `dynamic_padding=False`; by default it is the
batch's longest sequence rounded up to a multiple of `bert_tf.training.padding.DEFAULT_WIDTH`
(`padded_length`), so that a short request costs a short forward pass (the layout of every
sequence, truncation included, is max_seq_length's either way).
Words are the original BasicTokenizer's whitespace-separated words: control and format
characters (which its cleaning drops) are removed first, then the text is split at its
whitespace (`str.isspace` or category Zs), so tokenizing word by word gives exactly the pieces of
the whole text; for ordinary text these are the words of `str.split()`. The windows are
`bert_tf.data.conll.sentence_windows`' (run_tagging.py's): `[CLS] pieces [SEP]`, segment 0,
max_seq_length - 2 pieces advancing by min(that, doc_stride) (`bert_tf.serving.windows`), one
empty window for a text without pieces; a word's tag position is its first piece in the window
where that piece has the most context. A word without pieces has no tag position.
"""

import tensorflow as tf

from bert_tf import families
from bert_tf.serving.windows import (max_context, split_words, window_pieces, window_spans,
                                     word_pieces)
from bert_tf.text import is_control, is_whitespace
from bert_tf.training.padding import padded_length


def truncated_lengths(len_a, len_b, max_length):
    """Lengths the pair truncation leaves (the closed form of popping from the longer, b on a
    tie, until len_a + len_b <= max_length): the graph twin of
    `bert_tf.data.classifier.truncate_lengths`.

    While b is the shorter and fits in half of max_length only a is cut (and vice versa, b
    being cut on ties); otherwise both meet at max_length / 2, a keeping the odd token.
    Args: int tensors of one shape. Returns (new_len_a, new_len_b).
    """
    fits = len_a + len_b <= max_length
    half_down = max_length // 2
    half_up = max_length - half_down
    a_longer = len_a > len_b
    only_a_cut = a_longer & (2 * len_b <= max_length)
    only_b_cut = ~a_longer & (2 * len_a <= max_length)
    new_a = tf.where(fits | only_b_cut, len_a,
                     tf.where(only_a_cut, max_length - len_b, half_up))
    new_b = tf.where(fits | only_a_cut, len_b,
                     tf.where(only_b_cut, max_length - len_a, half_down))
    return new_a, new_b


def _character_class(predicate):
    """An RE2 character class (with ranges) of the code points satisfying `predicate`."""
    ranges, start, prev = [], None, None
    for cp in range(0x110000):
        if 0xD800 <= cp <= 0xDFFF or not predicate(cp):
            continue
        if start is not None and cp == prev + 1:
            prev = cp
            continue
        if start is not None:
            ranges.append((start, prev))
        start = prev = cp
    ranges.append((start, prev))
    return "[" + "".join("\\x{%x}" % a if a == b else "\\x{%x}-\\x{%x}" % (a, b)
                         for a, b in ranges) + "]"


def _removed(cp):
    """Characters the original's cleaning drops (NUL, U+FFFD, control and format characters)."""
    return cp == 0 or cp == 0xFFFD or is_control(chr(cp))


def _separator(cp):
    """Characters that separate words once the text is cleaned."""
    char = chr(cp)
    return not _removed(cp) and (is_whitespace(char) or char.isspace())


def _prefix(ragged, lengths):
    """The first `lengths[i]` values of each row of `ragged` [N, None] (all of a shorter row)."""
    # A gather of each row's kept positions: a few ops, where a boolean mask of ragged
    # positions traces ragged broadcasting (most of the time spent saving an export).
    starts = ragged.row_starts()
    kept = tf.minimum(tf.cast(lengths, starts.dtype), ragged.row_lengths())
    return tf.gather(ragged.flat_values, tf.ragged.range(starts, starts + kept))


def _filled(row_lengths, value, dtype):
    """A ragged [N, None] whose row i holds `row_lengths[i]` copies of `value`."""
    row_lengths = tf.cast(row_lengths, tf.int64)
    values = tf.fill([tf.reduce_sum(row_lengths)], tf.cast(value, dtype))
    # Valid by construction (non-negative lengths summing to len(values)): no runtime checks.
    return tf.RaggedTensor.from_row_lengths(values, row_lengths, validate=False)


class ServingInputs(tf.Module):
    """In-graph `[CLS] a [SEP] (b [SEP])` inputs from raw strings (see module docstring).

    Args:
      vocab: the family's host tokenizer's `vocab`, a dict token -> id (e.g.
        `bert_tf.text.load_vocab(path)` for BERT; ALBERT's also carries its SentencePiece
        model); it must hold the family's [CLS], [SEP] and [UNK].
      do_lower_case: as for FullTokenizer.
      max_seq_length: positions per example (>= 3).
      doc_stride: pieces between the starts of a text's windows in `words` (>= 1).
      tokenizer: an existing graph tokenizer for `vocab` (building one takes seconds); BERT's
        built with `core_ops=True` (its default) keeps the SavedModel free of tensorflow-text
        ops; ALBERT's has no such mode.
      dynamic_padding: pad a batch to its longest sequence rounded up (see module docstring)
        rather than to max_seq_length.
      family: the `model_type` whose graph tokenizer, special tokens and pair layout to use
        (default: the default family's).
    """

    def __init__(self, vocab, do_lower_case=True, max_seq_length=128, doc_stride=128,
                 tokenizer=None, dynamic_padding=True, family=families.DEFAULT,
                 name="serving_inputs"):
        super().__init__(name=name)
        family = families.get(family)
        special = family.tokenizer.special_tokens
        missing = [t for t in (special.cls, special.sep) if t not in vocab]
        if missing:
            raise ValueError(f"ServingInputs: the vocab has no {' or '.join(missing)} entry")
        if max_seq_length < 3:
            raise ValueError(f"ServingInputs: max_seq_length={max_seq_length}, must be >= 3")
        if doc_stride < 1:
            raise ValueError(f"ServingInputs: doc_stride={doc_stride}, must be >= 1")
        self.max_seq_length = int(max_seq_length)
        self.doc_stride = int(doc_stride)
        self.dynamic_padding = bool(dynamic_padding)
        # The family's default mode is its most portable: core TensorFlow ops only where it
        # can (BERT: a SavedModel holding this module needs nothing but `tensorflow`); ALBERT's
        # SentencePiece needs tensorflow-text (`self.tokenizer.core_ops` is False).
        self.tokenizer = tokenizer or family.graph_tokenizer(vocab, do_lower_case=do_lower_case)
        self.special_tokens = special
        self.cls_id = int(vocab[special.cls])
        self.sep_id = int(vocab[special.sep])
        # What padded positions of input_ids hold: 0 (BERT's), RoBERTa's <pad> (1), as the
        # records of the fine-tuning commands (`SpecialTokens.pad_id`).
        self.pad_id = special.pad_id(vocab)
        self._removed = _character_class(_removed)
        self._separators = _character_class(_separator) + "+"

    def padded_length(self, rows):
        """The length S the sequences `rows` (ragged [N, None], at most max_seq_length each)
        are padded to: int32 scalar tensor, or max_seq_length without dynamic padding."""
        if not self.dynamic_padding:
            return self.max_seq_length
        lengths = tf.cast(rows.row_lengths(), tf.int32)
        return padded_length(tf.reduce_max(tf.concat([lengths, [0]], 0)), self.max_seq_length)

    @staticmethod
    def padded(rows, value, length):
        """ragged [N, None] -> dense [N, length], `value` after each row (`length`: an int,
        kept in the static shape, or an int32 scalar tensor)."""
        if isinstance(length, int):
            return rows.to_tensor(value, shape=[None, length])
        return rows.to_tensor(value, shape=tf.stack([tf.cast(rows.nrows(), tf.int32), length]))

    def _layout(self, ids_a, ids_b):
        """ids_a, ids_b: ragged int64 [N, None] (b rows may be empty) -> the feature dict."""
        special = self.special_tokens  # `SpecialTokens.lay_out`, in graph ops
        len_a, len_b = ids_a.row_lengths(), ids_b.row_lengths()
        pair_a, pair_b = truncated_lengths(len_a, len_b,
                                           special.pair_budget(self.max_seq_length))
        has_b = pair_b > 0  # as the original, b's layout needs pieces left after truncation
        keep_a = tf.where(len_b > 0, pair_a, tf.minimum(len_a, self.max_seq_length - 2))
        keep_b = tf.where(len_b > 0, pair_b, tf.zeros_like(pair_b))
        n = tf.shape(len_a, out_type=tf.int64)[0]
        ones = tf.ones([n], tf.int64)
        sep_b = tf.cast(has_b, tf.int64)
        separators = ones + sep_b * (special.pair_separators - 1)
        ids = tf.concat([
            _filled(ones, self.cls_id, tf.int64), _prefix(ids_a, keep_a),
            _filled(separators, self.sep_id, tf.int64), _prefix(ids_b, keep_b),
            _filled(sep_b, self.sep_id, tf.int64)], axis=1)
        segments = tf.concat([_filled(keep_a + 1 + separators, 0, tf.int32),
                              _filled(keep_b + sep_b, int(special.pair_segments), tf.int32)],
                             axis=1)
        length = self.padded_length(ids)
        return {
            "input_ids": tf.cast(self.padded(ids, self.pad_id, length), tf.int32),
            "input_mask": self.padded(tf.ones_like(ids, tf.int32), 0, length),
            "segment_ids": self.padded(segments, 0, length),
        }

    @tf.function(input_signature=[tf.TensorSpec([None], tf.string),
                                  tf.TensorSpec([None], tf.string)], autograph=False)
    def pairs(self, text_a, text_b):
        """text_a, text_b: tf.string [N] -> dict of int32 [N, S]."""
        return self._layout(self.tokenizer(text_a), self.tokenizer(text_b))

    @tf.function(input_signature=[tf.TensorSpec([None], tf.string)], autograph=False)
    def single(self, text_a):
        """text_a: tf.string [N] -> dict of int32 [N, S]."""
        ids = self.tokenizer(text_a)
        return self._layout(ids, _empty_rows(ids.nrows()))

    @tf.function(input_signature=[tf.TensorSpec([None], tf.string)], autograph=False)
    def words(self, text_a):
        """text_a: tf.string [N] -> dict: input_ids, input_mask, segment_ids, word_ids,
        tag_position int32 [K, S], text_index int32 [K], num_words int32 [N]
        (K windows in all; see module docstring)."""
        # The words of the original's whitespace split: cleaning drops control characters
        # (so they join their neighbours) and its whitespace separates words.
        words = split_words(tf.strings.regex_replace(text_a, self._removed, ""),
                            self._separators)
        pieces, word_of_piece, is_first = word_pieces(self.tokenizer, words)
        seq_length = self.max_seq_length
        example, _, start, length = window_spans(
            pieces.row_lengths(), seq_length - 2, self.doc_stride, empty_window=True)
        held = window_pieces(pieces, example, start, length)  # [K, None]
        ones = tf.ones_like(example)

        def framed(inner, first, last):
            """[first] inner [last] in every row."""
            dtype = inner.dtype
            return tf.concat([_filled(ones, first, dtype), inner, _filled(ones, last, dtype)],
                             axis=1)

        ids = framed(tf.gather(pieces.flat_values, held), self.cls_id, self.sep_id)
        word_ids = framed(tf.cast(tf.gather(word_of_piece, held), tf.int32), -1, -1)
        firsts = framed(tf.gather(is_first, held), False, False)
        padded = self.padded_length(ids)
        position = tf.range(padded, dtype=tf.int64)[None, :]
        # Position p of a window holds its piece start + p - 1 ([CLS] comes first).
        chosen = max_context(example, start, length, start[:, None] + position - 1)
        input_ids = tf.cast(self.padded(ids, self.pad_id, padded), tf.int32)
        return {
            "input_ids": input_ids,
            "input_mask": self.padded(tf.ones_like(ids, tf.int32), 0, padded),
            "segment_ids": tf.zeros_like(input_ids),
            "word_ids": self.padded(word_ids, -1, padded),
            "tag_position": tf.cast(self.padded(firsts, False, padded) & chosen, tf.int32),
            "text_index": tf.cast(example, tf.int32),
            "num_words": tf.cast(words.row_lengths(), tf.int32),
        }


def _empty_rows(n):
    """A ragged int64 [n, None] with empty rows (no text b)."""
    return tf.RaggedTensor.from_row_lengths(tf.zeros([0], tf.int64), tf.zeros([n], tf.int64))

