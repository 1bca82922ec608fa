"""The in-graph windows equal bert_tf.data.conll's Python windows (pure ops, no model)."""

import itertools

import numpy as np
import tensorflow as tf

from bert_tf.data.conll import _max_context_window, _window_spans
from bert_tf.serving.windows import (max_context, split_words, window_pieces, window_spans,
                                     word_pieces)

# (num_pieces, max_pieces, doc_stride): strides below, at and above the window size.
GRID = list(itertools.product(range(21), range(1, 7), range(1, 8)))
# Long windows, where the last window's smaller length term (0.01 per piece) can exceed 1.
LONG_GRID = list(itertools.product([250, 301], [120, 150], [7, 64, 119, 200]))


def _spans(empty_window, grid=GRID):
    num_pieces, max_pieces, stride = (np.array(x, np.int64) for x in zip(*grid))
    return [t.numpy() for t in window_spans(num_pieces, max_pieces, stride, empty_window)]


def test_window_spans_equal_conll_window_spans():
    for empty_window in (False, True):
        example, window, start, length = _spans(empty_window)
        for i, (num_pieces, max_pieces, stride) in enumerate(GRID):
            expected = _window_spans(num_pieces, max_pieces, stride)
            if empty_window and not expected:
                expected = [(0, 0)]  # sentence_windows' window of a sentence without pieces
            mine = example == i
            assert window[mine].tolist() == list(range(len(expected))), GRID[i]
            assert list(zip(start[mine].tolist(), length[mine].tolist())) == expected, GRID[i]


def test_max_context_equals_conll_max_context_window():
    one_text = [(5, 4, 1)]  # its last window has no next (the first, tying with it on piece 2)
    small = list(itertools.product(range(6), range(1, 4), range(1, 4)))
    for grid, empty_window in ((GRID, False), (small, True), (LONG_GRID, False),
                               (one_text, False)):
        example, window, start, length = _spans(empty_window, grid)
        # Every piece of the text, and one before and after it (never in a window).
        most = max(num_pieces for num_pieces, _, _ in grid)
        piece = np.arange(-1, most + 1, dtype=np.int64)[None, :].repeat(len(example), axis=0)
        got = max_context(example, start, length, piece).numpy()
        for k, i in enumerate(example):
            spans = _window_spans(*grid[i])
            expected = [0 <= p < grid[i][0] and _max_context_window(spans, p) == window[k]
                        for p in piece[k]]
            assert got[k].tolist() == expected, (grid[i], window[k])


def test_max_context_of_no_window_is_empty():
    empty = tf.zeros([0], tf.int64)
    assert max_context(empty, empty, empty, tf.zeros([0, 5], tf.int64)).shape == [0, 5]


def _char_pieces(words):
    """A stand-in tokenizer: one piece per character (its code point), "x" removed."""
    kept = tf.strings.regex_replace(words, "x", "")
    return tf.cast(tf.strings.unicode_decode(kept, "UTF-8"), tf.int64)


def test_word_pieces_map_every_piece_to_its_word():
    words = split_words(tf.constant(["ab  c\tx de", "", "xx", "f"]), "[ \\t]+")
    assert words.to_list() == [[b"ab", b"c", b"x", b"de"], [], [b"xx"], [b"f"]]
    pieces, word_of_piece, is_first = word_pieces(_char_pieces, words)
    assert pieces.to_list() == [[97, 98, 99, 100, 101], [], [], [102]]
    assert word_of_piece.numpy().tolist() == [0, 0, 1, 3, 3, 0]
    assert is_first.numpy().tolist() == [True, False, True, True, False, True]
    example = tf.constant([0, 0, 3], tf.int64)
    held = window_pieces(pieces, example, tf.constant([0, 2, 0], tf.int64),
                         tf.constant([3, 3, 1], tf.int64))
    assert held.to_list() == [[0, 1, 2], [2, 3, 4], [5]]


def test_split_words_with_offsets_gives_split_words_and_where_each_starts():
    """The SQuAD split (space, tab, CR, LF, U+202F) of texts of multi-byte characters, runs of
    separators, other spaces kept inside words, empty texts; bytes that are not UTF-8 stay in
    their word."""
    from bert_tf.serving.windows import split_words_with_offsets

    separators = [0x20, 0x09, 0x0D, 0x0A, 0x202F]
    texts = ["  Caf\u00e9 \t na\u00efve\u202f\u202fx\u00a0y\n\u6771\u4eac ", "", " \t ",
             "one", "a\u3000b  \U0001f600\r\nz"]
    raw = [t.encode("utf-8") for t in texts] + [b"a\xff b\xc3 \xe2\x82", b"\xff"]
    words, starts = split_words_with_offsets(tf.constant(raw), separators)
    expected = split_words(tf.constant(raw[:len(texts)]), "[ \\t\\r\\n\\x{202f}]+")
    assert words.to_list()[:len(texts)] == expected.to_list()
    assert words.to_list()[len(texts):] == [[b"a\xff", b"b\xc3", b"\xe2\x82"], [b"\xff"]]
    for text, row, row_starts in zip(raw, words.to_list(), starts.to_list()):
        assert [text[s:s + len(w)] for w, s in zip(row, row_starts)] == row
        assert len(row_starts) == len(set(row_starts)) and row_starts == sorted(row_starts)
