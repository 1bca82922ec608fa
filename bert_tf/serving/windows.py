"""Windows of word pieces inside the TensorFlow graph, shared by the tagging and SQuAD exports.

The graph twins of `bert_tf.data.conll`'s `_window_spans` / `_max_context_window` (which follow
run_squad.py's document windows): a text's pieces are cut into windows of at most `max_pieces`
pieces, each window starting `min(max_pieces, doc_stride)` pieces after the previous one, the
last being the first that reaches the text's last piece. A piece held by several windows
belongs to the window where it has the most context, the largest
`min(pieces before it, pieces after it) + 0.01 * window length` (float64, as the Python
scores), ties going to the earlier window.

Every function works on a batch of N texts. Windows are flattened over the batch into K rows in
text order (so the model runs on all of them at once), `example` [K] naming each row's text.
Only core TensorFlow ops are used; `word_pieces` calls the given tokenizer.
"""

import tensorflow as tf


def _row_sums(values, row_splits):
    """Sum of `values` [M] within each row of `row_splits` [N + 1] -> [N]."""
    totals = tf.concat([[0], tf.cumsum(values)], 0)
    return tf.gather(totals, row_splits[1:]) - tf.gather(totals, row_splits[:-1])


def split_words(text, separators):
    """text: string [N] -> ragged string [N, None], the non-empty runs between matches of the
    RE2 pattern `separators`."""
    words = tf.strings.split(tf.strings.regex_replace(text, separators, " "), sep=" ")
    return tf.ragged.boolean_mask(words, tf.strings.length(words) > 0)


def split_words_with_offsets(text, separators):
    """The words of `split_words` with a separator class of code points, and where each starts.

    Args:
      text: string [N].
      separators: list of int, the code points that separate words.
    Returns:
      (words: ragged string [N, None], the non-empty runs of other characters (bytes that are
         not UTF-8 count as characters of their word);
       starts: ragged int64 [N, None], the byte of its text each word starts at).
    """
    code_points, starts = tf.strings.unicode_decode_with_offsets(text, "UTF-8",
                                                                 errors="replace")
    flat, row_splits = code_points.flat_values, code_points.row_splits
    size = tf.size(flat, out_type=tf.int64)
    row = code_points.value_rowids()
    # A character's end: the next one's start in its text, or the text's length.
    ends = tf.where(tf.equal(tf.concat([row[1:], [-1]], 0), row),
                    tf.concat([starts.flat_values[1:], [0]], 0),
                    tf.gather(tf.cast(tf.strings.length(text), tf.int64), row))
    inside = tf.reduce_all(tf.not_equal(flat[:, None], tf.constant(separators, tf.int32)),
                           axis=1)
    index = tf.range(size)
    first = tf.equal(index, tf.gather(row_splits, row))
    last = tf.equal(index + 1, tf.gather(row_splits, row + 1))
    previous = tf.concat([[False], inside[:-1]], 0) & ~first
    following = tf.concat([inside[1:], [False]], 0) & ~last
    begins = tf.where(inside & ~previous)[:, 0]
    word_ends = tf.gather(ends, tf.where(inside & ~following)[:, 0])
    word_starts = tf.gather(starts.flat_values, begins)
    word_rows = tf.gather(row, begins)
    words = tf.strings.substr(tf.gather(text, word_rows), word_starts, word_ends - word_starts)
    nrows = tf.shape(text, out_type=tf.int64)[0]
    return (tf.RaggedTensor.from_value_rowids(words, word_rows, nrows, validate=False),
            tf.RaggedTensor.from_value_rowids(word_starts, word_rows, nrows, validate=False))


def word_pieces(tokenizer, words):
    """Each text's pieces, tokenized word by word.

    Args:
      tokenizer: callable string [M] -> ragged int64 [M, None] piece ids (TokenizerModule).
      words: ragged string [N, None], the words of each text.
    Returns:
      (pieces: ragged int64 [N, None], the ids of each text's pieces in order;
       word_of_piece: int64 [P] (P = all pieces of the batch), index within its text of the
         word each entry of `pieces.flat_values` comes from;
       is_first: bool [P], true on each word's first piece).
    """
    return pieces_of_words(tokenizer(words.flat_values), words)


def pieces_of_words(per_word, words):
    """`word_pieces` of words already tokenized: per_word ragged int64 [total words, None],
    the pieces of each of `words.flat_values` (words: ragged string [N, None])."""
    pieces_per_word = per_word.row_lengths()
    pieces = tf.RaggedTensor.from_row_lengths(
        per_word.flat_values, _row_sums(pieces_per_word, words.row_splits))
    word_of_piece = tf.repeat(
        tf.range(tf.size(pieces_per_word, out_type=tf.int64))
        - tf.gather(words.row_splits, words.value_rowids()), pieces_per_word)
    word_start = tf.repeat(tf.cumsum(pieces_per_word, exclusive=True), pieces_per_word)
    is_first = tf.equal(tf.range(tf.size(word_start, out_type=tf.int64)), word_start)
    return pieces, word_of_piece, is_first


def window_spans(num_pieces, max_pieces, doc_stride, empty_window=False):
    """The windows of every text (see module docstring).

    Args:
      num_pieces: int [N], pieces of each text.
      max_pieces: int [N] or scalar (>= 1), pieces a window of that text holds.
      doc_stride: int [N] or scalar (>= 1).
      empty_window: give a text without pieces one empty window (`bert_tf.data.conll`'s
        sentences) instead of none (run_squad.py's documents).
    Returns:
      (example, window, start, length), int64 [K]: each window's text, its index among that
      text's windows, its first piece (within the text) and its number of pieces.
    """
    num_pieces = tf.cast(num_pieces, tf.int64)
    max_pieces = tf.broadcast_to(tf.cast(max_pieces, tf.int64), tf.shape(num_pieces))
    step = tf.minimum(max_pieces, tf.cast(doc_stride, tf.int64))
    extra = tf.maximum(num_pieces - max_pieces, 0)
    num_windows = 1 + (extra + step - 1) // step
    if not empty_window:
        num_windows = tf.where(num_pieces > 0, num_windows, 0)
    window = tf.ragged.range(num_windows)
    example = window.value_rowids()
    start = window.flat_values * tf.gather(step, example)
    length = tf.minimum(tf.gather(num_pieces, example) - start, tf.gather(max_pieces, example))
    return example, window.flat_values, start, length


def window_pieces(pieces, example, start, length):
    """Indexes into `pieces.flat_values` of each window's pieces: ragged int64 [K, None]."""
    first = start + tf.gather(pieces.row_splits[:-1], example)  # dense: no ragged broadcast
    return tf.ragged.range(first, first + length)


def max_context(example, start, length, piece):
    """Whether each window is where the given pieces of its text have the most context.

    Args:
      example, start, length: int64 [K], from `window_spans` (each text's windows next to
        each other, in start order).
      piece: int [K, J], piece indexes within the text of window k (any values; those outside
        window k give false).
    Returns:
      bool [K, J]: piece[k, j] is in window k and no window of the text gives it more context
      (nor as much, earlier).
    """
    piece = tf.cast(piece, tf.int64)

    def score(window_start, window_length):
        """[K] -> float64 [K, J]: the window's score of each piece, -1e300 where it is not in
        the window."""
        window_start, window_length = window_start[:, None], window_length[:, None]
        window_end = window_start + window_length - 1
        value = (tf.cast(tf.minimum(piece - window_start, window_end - piece), tf.float64)
                 + 0.01 * tf.cast(window_length, tf.float64))
        covered = (piece >= window_start) & (piece <= window_end)
        return tf.where(covered, value, tf.constant(-1e300, tf.float64))

    def neighbour(shift):
        """Scores of the previous (shift 1) or next (shift -1) window of the same text."""
        index = tf.range(tf.size(example))
        same_text = (tf.equal(tf.roll(example, shift, 0), example)
                     & tf.equal(tf.roll(index, shift, 0), index - shift))  # not wrapped around
        return score(tf.roll(start, shift, 0), tf.where(same_text, tf.roll(length, shift, 0), 0))

    # The windows holding one piece start and end further and further right (only the last one
    # is shorter, which lowers its length term), so their scores of it rise strictly, then fall
    # strictly (two may tie at the top): the first best window is the one scoring more than the
    # previous window and no less than the next.
    own = score(start, length)
    return (own > -1e300) & (own > neighbour(1)) & (own >= neighbour(-1))
