"""In-graph WordPiece tokenizers with exactly `FullTokenizer`'s ids: fast on tensorflow-text, or
in core TensorFlow ops only (for SavedModels).

`FastTokenizer(vocab_file, do_lower_case)` tokenizes batches in TensorFlow ops
(`tokenize_to_ids`), and `FastTokenizer.module` (a `tf.Module`, see `TokenizerModule`) holds the
same computation for a `tf.function` or a SavedModel: texts tf.string [N] -> tf.RaggedTensor of
int64 ids [N, None]. Both use tensorflow-text's WordPiece op (points 2 and 3 below), which is
not part of TensorFlow: a SavedModel holding it needs `import tensorflow_text` before loading,
and `saved_model_cli` cannot load it at all. `TokenizerModule(vocab, do_lower_case,
core_ops=True)` (the default of `TokenizerModule`; what `bert_tf.serving.inputs` and so every
export use) replaces points 2 and 3 by point 5: its graph holds only core TensorFlow ops, with
the same ids, slower (`benchmarks/tokenizer.py --in_graph`).

How equality with the original is ensured. tensorflow-text's own BERT normalization is not
used: its Unicode tables (ICU), its control/whitespace/punctuation/CJK definitions and its case
folding differ from Python's `str.lower` + `unicodedata`, which define the original. Instead:

1. General route. Everything the original does before WordPiece is, character by character, a
   fixed mapping (two exceptions below): cleaning (drop NUL, U+FFFD, Cc/Cf; whitespace -> space),
   spaces around its CJK ranges, with do_lower_case `str.lower` + NFD + dropping Mn, then spaces
   around punctuation. We evaluate that chain for every code point 0..U+10FFFF once, with the
   same helper functions `bert_tf.bert.tokenization` uses, into a gather table (code point -> output
   code points). In the graph: UTF-8 decode, gather, UTF-8 encode; the words of the result,
   split on spaces, are exactly the original's.
   Exceptions, both only with do_lower_case:
   * Greek capital sigma: `str.lower` gives final sigma U+03C2 or U+03C3 depending on the
     neighbouring cased / case-ignorable characters. The graph evaluates the same rule (previous
     and next character that is not case-ignorable, within the text, skipping characters that
     cleaning removes, whitespace and CJK as word boundaries); the classes are read off
     `str.lower` itself by probing it per code point.
   * NFD's canonical reordering can only change the output when two surviving (non-Mn)
     characters with a non-zero combining class meet (a handful of Mc code points: musical
     symbols, Hangul tone marks...). A text with two or more of them is flagged: `FastTokenizer`
     gives it to `FullTokenizer`; in the graph `TokenizerModule.__call__` raises
     (`tokenize_with_check` returns the flag instead).
2. WordPiece. Words go to `FastWordpieceTokenizer`, greedy longest-match-first with `##`
   continuations and the unknown token for a word it cannot cover, as the original. Its
   end-to-end mode (it splits words itself, faster) is used on a text only when that splitting
   provably equals a split on spaces: every code point is probed once on the installed
   tensorflow-text ("a" + c + "a" with a 3-entry vocab); a text with an output character it
   would split at but the original does not (other than characters that are a word on their
   own anyway) takes the split-on-spaces route with `no_pretokenization=True`. So does a text
   with a word over 200 code points; there such words are replaced by the unknown token
   (tensorflow-text's limit counts bytes, the original's code points).
   Vocab entries the original can never emit (empty, "##", anything with whitespace,
   punctuation or CJK inside a longer token, "[CLS]"-style entries...) are replaced by
   unmatchable placeholders (tensorflow-text would, for instance, match an entry "a b" across
   two words); the unknown token itself is kept.
3. Printable-ASCII lane. A text of printable ASCII, tab, newline and CR only needs none of the
   above: the original's steps reduce to ASCII lower-casing and splitting on whitespace and
   ASCII punctuation, which the probe confirms is exactly what the end-to-end tokenizer does on
   ASCII (checked at construction; if not, the lane is off). These texts are lower-cased with
   `tf.strings.lower` and tokenized end to end with a 200-byte word limit (= 200 characters).
4. Undecodable bytes: `FastTokenizer` decodes bytes in Python exactly as the original (UTF-8,
   errors ignored) before handing valid UTF-8 to TensorFlow; a `str` with lone surrogates (not
   encodable) goes to `FullTokenizer`. In the graph, TensorFlow's decoder with errors="ignore"
   drops the same bytes as Python's (checked by tests on fuzzed bytes).

5. Core-op mode (`core_ops=True`). Normalization as in 1 (printable-ASCII texts: ASCII
   lower-casing and spaces around ASCII punctuation by `tf.strings.regex_replace`, which is all
   the original does to them), then the words (split on spaces) go through WordPiece written
   in core ops, `TokenizerModule._wordpiece_core`: every word looks its first piece up in a
   `tf.lookup.StaticHashTable` of the vocab (the whole word first; if absent, each prefix of up
   to K code points, K = the longest entry the original can emit, the longest found wins), then
   a `tf.while_loop` does the same for the next piece ("##" entries) of the words not yet
   covered, until none is left. A word with a position where nothing matches, or longer than
   200 code points, gives the unknown token alone (its earlier pieces are dropped). Lookups are
   exact, of real substrings of words, so entries the original can never emit never match,
   with no placeholder. Pieces are put in order by scattering them to (start of their word +
   their position in it).

The tables (points 1, 2 and 5) are built by `bert_tf.bert.fast_tokenization_tables`; they depend on
the Python `unicodedata` version (`unicodedata.unidata_version`) of the process that builds
them; a SavedModel keeps the tables it was built with.
"""

import concurrent.futures
import functools
import os

import numpy as np

from bert_tf.bert import tokenization
from bert_tf.bert.fast_tokenization_tables import (CAPITAL_SIGMA, CASED, FINAL_SIGMA_INDEX,
                                                   MAX_CODE_POINT, ascii_lane_is_exact,
                                                   build_char_tables, char_flags,
                                                   core_wordpiece_tables, e2e_unsafe_table,
                                                   fast_wordpiece_vocab, import_tf,
                                                   import_tf_text, padded_table)

_BATCH_TEXTS = 2048


def _make_module_class():
    tf = import_tf()

    def _where(mask):
        """int64 positions of the True values of a bool vector (fewer graph ops than
        tf.where(mask)[:, 0] or tf.boolean_mask: they add up when tracing)."""
        return tf.squeeze(tf.where(mask), 1)

    def _string_table(mapping):
        # A table cannot be empty (a vocab without "##" pieces has no continuations): the
        # empty string maps to the default, so it changes no lookup.
        mapping = mapping or {"": -1}
        keys = list(mapping)
        return tf.lookup.StaticHashTable(
            tf.lookup.KeyValueTensorInitializer(
                tf.constant(keys, tf.string),
                tf.constant([mapping[k] for k in keys], tf.int64)),
            default_value=-1)

    class TokenizerModule(tf.Module):
        """In-graph tokenizer: tf.string [N] -> tf.RaggedTensor int64 ids [N, None].

        Holds its tables as constants, so a SavedModel of it (or of a model holding it) is
        self-contained. `__call__` raises InvalidArgumentError on a text it cannot tokenize
        exactly (see the module docstring: 2+ reorderable combining marks); use
        `tokenize_with_check` to get a per-text flag instead.

        With `core_ops=True` (the default) the graph holds only core TensorFlow ops (WordPiece
        by hash-table lookups, see `_wordpiece_core`): a SavedModel of it needs only
        `tensorflow`. With `core_ops=False` WordPiece is tensorflow-text's
        FastWordpieceTokenizer (faster; the SavedModel then needs `tensorflow_text` imported),
        as `FastTokenizer` uses it. Both give FullTokenizer's ids.
        """

        def __init__(self, vocab, do_lower_case=True, unk_token=tokenization.UNK_TOKEN,
                     max_input_chars_per_word=tokenization.MAX_INPUT_CHARS_PER_WORD,
                     ascii_lane=True, core_ops=True, name="bert_tokenizer"):
            super().__init__(name=name)
            if unk_token not in vocab:
                raise tokenization.VocabError(
                    f"TokenizerModule: the vocab has no {unk_token} entry; WordPiece needs it")
            tables = build_char_tables(bool(do_lower_case))
            self.do_lower_case = bool(do_lower_case)
            self.unk_token = unk_token
            self.max_input_chars_per_word = int(max_input_chars_per_word)
            self.core_ops = bool(core_ops)
            self.ascii_lane = bool(ascii_lane)
            self._out_padded = tf.constant(padded_table(tables))
            self._case_class = tf.constant(tables["case_class"])
            if self.core_ops:
                first, continuation, longest = core_wordpiece_tables(vocab)
                self._first_pieces = _string_table(first)
                self._continuation_pieces = _string_table(continuation)
                self._longest_piece = min(longest, self.max_input_chars_per_word)
                self._unk_id = int(vocab[unk_token])
                # Only the reordering bit: the words are split on spaces here.
                self._flags = tf.constant(
                    char_flags(tables, np.zeros(MAX_CODE_POINT + 2, np.int32)))
                self._ascii_end_to_end = None
                return
            _, tf_text = import_tf_text()
            if ascii_lane and ascii_lane_is_exact():
                self._ascii_end_to_end = tf_text.FastWordpieceTokenizer(
                    vocab=fast_wordpiece_vocab(vocab, unk_token), suffix_indicator="##",
                    max_bytes_per_word=self.max_input_chars_per_word,
                    token_out_type=tf.int64, unknown_token=unk_token, no_pretokenization=False)
            else:  # off, or a tensorflow-text that splits ASCII differently: general route only
                self._ascii_end_to_end = None
            self._flags = tf.constant(char_flags(tables, e2e_unsafe_table(self.do_lower_case)))
            self._wordpiece = tf_text.FastWordpieceTokenizer(
                vocab=fast_wordpiece_vocab(vocab, unk_token), suffix_indicator="##",
                max_bytes_per_word=4 * self.max_input_chars_per_word + 64,
                token_out_type=tf.int64, unknown_token=unk_token, no_pretokenization=True)
            # The same, splitting words itself (faster): used for texts where its splitting
            # provably equals a split on spaces (see `e2e_unsafe_table`).
            self._end_to_end = tf_text.FastWordpieceTokenizer(
                vocab=fast_wordpiece_vocab(vocab, unk_token), suffix_indicator="##",
                max_bytes_per_word=4 * self.max_input_chars_per_word + 64,
                token_out_type=tf.int64, unknown_token=unk_token, no_pretokenization=False)

        def _final_sigma(self, flat, row_splits):
            """Replaces U+03A3 by the final-sigma table index where str.lower gives U+03C2.

            flat: int32 code points of all texts [C]; row_splits: int64 [N + 1].
            """
            def row_of(positions):
                return tf.searchsorted(row_splits, positions, side="right") - 1

            def fix():
                sigma_pos = tf.where(tf.equal(flat, CAPITAL_SIGMA))[:, 0]
                cls = tf.gather(self._case_class, flat)
                stop = cls >= CASED  # characters the rule does not skip
                stop_pos = tf.where(stop)[:, 0]
                n_stops = tf.size(stop_pos, out_type=tf.int64)
                stops_upto = tf.cumsum(tf.cast(stop, tf.int64))  # inclusive count
                k = tf.gather(stops_upto, sigma_pos)  # the sigma itself is the k-th stop
                sigma_row = row_of(sigma_pos)
                prev_pos = tf.gather(stop_pos, tf.maximum(k - 2, 0))
                prev_cased = ((k >= 2) & tf.equal(row_of(prev_pos), sigma_row)
                              & tf.equal(tf.gather(cls, prev_pos), CASED))
                next_pos = tf.gather(stop_pos, tf.minimum(k, tf.maximum(n_stops - 1, 0)))
                next_cased = ((k < n_stops) & tf.equal(row_of(next_pos), sigma_row)
                              & tf.equal(tf.gather(cls, next_pos), CASED))
                final = prev_cased & tf.logical_not(next_cased)
                values = tf.where(final, FINAL_SIGMA_INDEX, CAPITAL_SIGMA)
                return tf.tensor_scatter_nd_update(flat, sigma_pos[:, None], values)

            return tf.cond(tf.reduce_any(tf.equal(flat, CAPITAL_SIGMA)), fix, lambda: flat)

        def normalize(self, texts):
            """texts [N] -> (normalized [N] tf.string whose space-separated words are the
            original's pieces, needs_split_path bool [N], inexact bool [N])."""
            texts = tf.convert_to_tensor(texts, tf.string)
            n = tf.shape(texts, out_type=tf.int64)[0]
            cps = tf.strings.unicode_decode(texts, "UTF-8", errors="ignore")
            flat = cps.flat_values
            row_splits = cps.row_splits
            if self.do_lower_case:
                flat = self._final_sigma(flat, row_splits)
            mapped = tf.gather(self._out_padded, flat)  # [C, width], -1 = nothing
            present = mapped >= 0
            out = tf.gather(tf.reshape(mapped, [-1]), tf.where(tf.reshape(present, [-1]))[:, 0])
            lens = tf.reduce_sum(tf.cast(present, tf.int64), axis=1)
            out_ends = tf.concat([[0], tf.cumsum(lens)], 0)
            out_rows = tf.RaggedTensor.from_row_splits(
                out, tf.gather(out_ends, row_splits), validate=False)
            normalized = tf.strings.unicode_encode(out_rows, "UTF-8")
            # Rare characters: bit 1, some output character tensorflow-text's own word
            # splitting treats differently; bit 2, NFD may reorder it (see module docstring).
            flags = tf.gather(self._flags, flat)
            flagged = tf.where(flags > 0)[:, 0]
            flagged_rows = tf.searchsorted(row_splits, flagged, side="right") - 1
            flagged_values = tf.gather(flags, flagged)
            e2e_unsafe = tf.math.unsorted_segment_max(
                tf.bitwise.bitwise_and(flagged_values, 1), flagged_rows, n) > 0
            inexact = tf.math.unsorted_segment_sum(
                tf.bitwise.right_shift(flagged_values, 1), flagged_rows, n) >= 2
            if self.core_ops:  # splits on spaces and limits word lengths itself
                return normalized, tf.zeros([n], tf.bool), inexact
            # Texts tensorflow-text's own word splitting would treat differently, or with a word
            # over the length limit, take the split-then-WordPiece path.
            # Longest run without a space over the concatenated texts bounds every word's length
            # (a run may span two texts); only when it exceeds the limit look per text.
            space_pos = tf.where(tf.equal(out, 32))[:, 0]
            bounds = tf.concat([[-1], space_pos, [tf.size(out, out_type=tf.int64)]], 0)
            longest_run = tf.reduce_max(bounds[1:] - bounds[:-1]) - 1
            long_word = tf.cond(
                longest_run > self.max_input_chars_per_word,
                lambda: tf.strings.regex_full_match(
                    normalized, "(?s).*[^ ]{%d}.*" % (self.max_input_chars_per_word + 1)),
                lambda: tf.zeros([n], tf.bool))
            return normalized, e2e_unsafe | long_word, inexact

        def _split_path(self, normalized):
            words = tf.strings.split(normalized)
            too_long = (tf.strings.length(words.flat_values, unit="UTF8_CHAR")
                        > self.max_input_chars_per_word)
            # The unk token is a vocab entry, so the word "[UNK]" tokenizes to exactly [unk id].
            word_values = tf.where(too_long, self.unk_token, words.flat_values)
            word_ids = self._wordpiece.tokenize(word_values)
            return tf.RaggedTensor.from_row_splits(
                word_ids.flat_values, tf.gather(word_ids.row_splits, words.row_splits))

        def _tokenize_general(self, texts):
            normalized, needs_split, inexact = self.normalize(texts)

            def mixed():
                fast_rows = tf.where(tf.logical_not(needs_split))[:, 0]
                split_rows = tf.where(needs_split)[:, 0]
                ids = tf.concat([
                    self._end_to_end.tokenize(tf.gather(normalized, fast_rows)),
                    self._split_path(tf.gather(normalized, split_rows)),
                ], axis=0)
                order = tf.math.invert_permutation(tf.concat([fast_rows, split_rows], 0))
                return tf.gather(ids, order)

            ids = tf.cond(tf.reduce_any(needs_split), mixed,
                          lambda: self._end_to_end.tokenize(normalized))
            return ids, inexact

        def _wordpiece_step(self, words, bounds, base, word, start, table, rest=None):
            """The longest piece of each word `word` [A] at code point `start` [A].

            words: tf.string [M]; bounds: int64 byte offset of every code point of every word
            plus each word's end, flat; base: int64 [M] index in `bounds` of each word's first
            code point; rest: the words from `start` on, tf.string [A], if at hand.
            Returns (length [A] int64, 0 if no piece matches; id [A] int64).
            """
            n_chars = tf.gather(base, word + 1) - tf.gather(base, word) - 1
            left = n_chars - start

            def piece(k, rows):
                """The pieces of length k [C] of rows [C] of the active words (bytes)."""
                at = tf.gather(base, tf.gather(word, rows)) + tf.gather(start, rows)
                begin = tf.gather(bounds, at)
                return tf.strings.substr(tf.gather(words, tf.gather(word, rows)), begin,
                                         tf.gather(bounds, at + k) - begin)

            # Most words (and rests of words) are a vocab entry: one lookup of the whole rest.
            if rest is None:
                rest = piece(left, tf.range(tf.size(word, out_type=tf.int64)))
            whole_id = table.lookup(rest)
            whole = (whole_id >= 0) & (left <= self._longest_piece)
            # The others: every length up to the longest vocab piece, the longest found wins.
            others = _where(tf.logical_not(whole))
            counts = tf.minimum(tf.gather(left, others) - 1, self._longest_piece)
            lengths = tf.ragged.range(1, counts + 1, dtype=tf.int64)
            k = lengths.flat_values
            cand_rows = tf.gather(others, lengths.value_rowids())
            cand_id = table.lookup(piece(k, cand_rows))
            best = tf.math.unsorted_segment_max(
                tf.where(cand_id >= 0, k, tf.zeros_like(k)), lengths.value_rowids(),
                tf.size(others))
            best = tf.maximum(best, 0)  # empty segments give the dtype's minimum
            # Lengths of a row are 1, 2, ... in order: the best one sits at row start + best - 1;
            # rows without a match read the -1 appended at the end.
            best_id = tf.gather(tf.concat([cand_id, [-1]], 0),
                                tf.where(best > 0, lengths.row_splits[:-1] + best - 1,
                                         tf.size(cand_id, out_type=tf.int64)))
            length = tf.tensor_scatter_nd_update(
                tf.where(whole, left, tf.zeros_like(left)), tf.expand_dims(others, 1), best)
            piece_id = tf.tensor_scatter_nd_update(whole_id, tf.expand_dims(others, 1), best_id)
            return length, piece_id

        def _wordpiece_core(self, normalized):
            """WordPiece in core TensorFlow ops: normalized [N] (words separated by spaces)
            -> ids RaggedTensor int64 [N, None], as the original: greedy longest match first,
            "##" before every piece but a word's first, a word it cannot cover entirely or of
            more than max_input_chars_per_word code points -> the unknown token alone.

            All words take their first piece at once; then a loop takes the next piece of the
            words not yet covered (most words are one piece, so the loop runs on few).
            """
            words = tf.strings.split(normalized)
            flat_words = words.flat_values
            m = tf.size(flat_words, out_type=tf.int64)
            _, offsets = tf.strings.unicode_decode_with_offsets(flat_words, "UTF-8")
            ends = tf.expand_dims(tf.cast(tf.strings.length(flat_words), tf.int64), 1)
            with_end = tf.concat([offsets, tf.RaggedTensor.from_tensor(ends)], axis=1)
            bounds, base = with_end.flat_values, with_end.row_splits
            n_chars = offsets.row_lengths()
            too_long = n_chars > self.max_input_chars_per_word

            # Pieces as (word, position in the word, id), in any order.
            word = _where(tf.logical_not(too_long))
            length, piece_id = self._wordpiece_step(
                flat_words, bounds, base, word, tf.zeros_like(word), self._first_pieces,
                rest=tf.gather(flat_words, word))
            found = _where(length > 0)
            first_words = tf.gather(word, found)
            first_ids = tf.gather(piece_id, found)
            first_failed = tf.gather(word, _where(tf.equal(length, 0)))
            more = _where((length > 0) & (length < tf.gather(n_chars, word)))
            word, start = tf.gather(word, more), tf.gather(length, more)

            def next_piece(position, word, start, all_words, all_positions, all_ids, failed):
                length, piece_id = self._wordpiece_step(
                    flat_words, bounds, base, word, start, self._continuation_pieces)
                found = _where(length > 0)
                new_words = tf.gather(word, found)
                all_words = tf.concat([all_words, new_words], 0)
                all_positions = tf.concat(
                    [all_positions, tf.fill(tf.shape(new_words), position)], 0)
                all_ids = tf.concat([all_ids, tf.gather(piece_id, found)], 0)
                failed = tf.concat([failed, tf.gather(word, _where(tf.equal(length, 0)))], 0)
                start = start + length
                more = _where((length > 0) & (start < tf.gather(n_chars, word)))
                return (position + 1, tf.gather(word, more), tf.gather(start, more),
                        all_words, all_positions, all_ids, failed)

            # The loop carries only the later pieces (few): its concatenations stay cheap.
            vector = tf.TensorShape([None])
            empty = tf.zeros([0], tf.int64)
            _, _, _, later_words, later_positions, later_ids, failed = tf.while_loop(
                lambda position, word, *_: tf.size(word) > 0, next_piece,
                (tf.constant(1, tf.int64), word, start, empty, empty, empty, first_failed),
                shape_invariants=(tf.TensorShape([]),) + (vector,) * 6)
            all_words = tf.concat([first_words, later_words], 0)
            all_positions = tf.concat([tf.zeros_like(first_words), later_positions], 0)
            all_ids = tf.concat([first_ids, later_ids], 0)

            # Words the original replaces by the unknown token: drop their pieces, one [UNK].
            unknown = too_long | (
                tf.scatter_nd(tf.expand_dims(failed, 1), tf.ones_like(failed), [m]) > 0)
            keep = _where(tf.logical_not(tf.gather(unknown, all_words)))
            unknown_words = _where(unknown)
            all_words = tf.concat([tf.gather(all_words, keep), unknown_words], 0)
            all_positions = tf.concat(
                [tf.gather(all_positions, keep), tf.zeros_like(unknown_words)], 0)
            all_ids = tf.concat([tf.gather(all_ids, keep),
                                 tf.fill(tf.shape(unknown_words),
                                         tf.constant(self._unk_id, tf.int64))], 0)
            per_word = tf.math.unsorted_segment_sum(tf.ones_like(all_words), all_words, m)
            word_start = tf.cumsum(per_word, exclusive=True)
            ids = tf.scatter_nd(
                tf.expand_dims(tf.gather(word_start, all_words) + all_positions, 1),
                all_ids, tf.shape(all_ids, out_type=tf.int64))
            piece_ends = tf.concat([[0], tf.cumsum(per_word)], 0)
            return tf.RaggedTensor.from_row_splits(
                ids, tf.gather(piece_ends, words.row_splits), validate=False)

        def _normalize_ascii(self, texts):
            """Texts of printable ASCII, tab, newline and CR only -> normalized as `normalize`:
            there the original's steps reduce to ASCII lower-casing and spaces around its
            ASCII punctuation (tab, newline and CR stay: the split on whitespace drops them)."""
            if self.do_lower_case:
                texts = tf.strings.lower(texts)  # ASCII only, as str.lower on ASCII
            return tf.strings.regex_replace(texts, "([!-/:-@\\[-`{-~])", " \\1 ")

        def _tokenize_core(self, texts):
            if not self.ascii_lane:
                normalized, _, inexact = self.normalize(texts)
                return self._wordpiece_core(normalized), inexact
            n = tf.shape(texts, out_type=tf.int64)[0]
            is_ascii = tf.strings.regex_full_match(texts, "[\\t\\n\\r -~]*")

            def all_ascii():
                return self._normalize_ascii(texts), tf.zeros([n], tf.bool)

            def mixed():
                ascii_rows = _where(is_ascii)
                other_rows = _where(tf.logical_not(is_ascii))
                other, _, other_inexact = self.normalize(tf.gather(texts, other_rows))
                normalized = tf.dynamic_stitch(
                    [tf.cast(ascii_rows, tf.int32), tf.cast(other_rows, tf.int32)],
                    [self._normalize_ascii(tf.gather(texts, ascii_rows)), other])
                inexact = tf.scatter_nd(tf.expand_dims(other_rows, 1), other_inexact, [n])
                return normalized, inexact

            normalized, inexact = tf.cond(tf.reduce_all(is_ascii), all_ascii, mixed)
            return self._wordpiece_core(normalized), inexact

        def _tokenize_ascii(self, texts):
            """Texts of printable ASCII, tab, newline and CR only: the original's steps reduce
            to ASCII lower-casing, and the end-to-end tokenizer splits such text exactly as
            the original does (checked by `ascii_lane_is_exact` at construction); its byte
            limit per word is the original's 200 characters, as bytes are characters here."""
            if self.do_lower_case:
                texts = tf.strings.lower(texts)  # ASCII only, as str.lower on ASCII
            return self._ascii_end_to_end.tokenize(texts)

        def _tokenize(self, texts):
            texts = tf.convert_to_tensor(texts, tf.string)
            if self.core_ops:
                return self._tokenize_core(texts)
            if self._ascii_end_to_end is None:
                return self._tokenize_general(texts)
            n = tf.shape(texts, out_type=tf.int64)[0]
            is_ascii = tf.strings.regex_full_match(texts, "[\\t\\n\\r -~]*")

            def all_ascii():
                return self._tokenize_ascii(texts), tf.zeros([n], tf.bool)

            def mixed():
                ascii_rows = tf.where(is_ascii)[:, 0]
                other_rows = tf.where(tf.logical_not(is_ascii))[:, 0]
                other_ids, other_inexact = self._tokenize_general(tf.gather(texts, other_rows))
                ids = tf.concat([self._tokenize_ascii(tf.gather(texts, ascii_rows)), other_ids], 0)
                order = tf.math.invert_permutation(tf.concat([ascii_rows, other_rows], 0))
                inexact = tf.scatter_nd(other_rows[:, None], other_inexact, [n])
                return tf.gather(ids, order), inexact

            return tf.cond(tf.reduce_all(is_ascii), all_ascii, mixed)

        @tf.function(input_signature=[tf.TensorSpec([None], tf.string)], autograph=False)
        def tokenize_with_check(self, texts):
            """texts [N] -> (ids RaggedTensor int64 [N, None], inexact bool [N]).

            Where `inexact` is True the ids may differ from FullTokenizer's (see module
            docstring); everywhere else they are identical.
            """
            return self._tokenize(texts)

        @tf.function(input_signature=[tf.TensorSpec([None], tf.string)], autograph=False)
        def __call__(self, texts):
            """texts [N] -> ids RaggedTensor int64 [N, None]; raises on an inexact text."""
            ids, inexact = self._tokenize(texts)
            check = tf.debugging.Assert(
                tf.logical_not(tf.reduce_any(inexact)),
                ["bert_tf TokenizerModule: a text holds two or more combining characters that "
                 "NFD may reorder; tokenize it with bert_tf.bert.tokenization.FullTokenizer. Texts:",
                 tf.boolean_mask(texts, inexact)], summarize=3)
            with tf.control_dependencies([check]):
                return tf.identity(ids)

    return TokenizerModule


@functools.lru_cache(maxsize=1)
def _module_class():
    return _make_module_class()


def TokenizerModule(vocab, do_lower_case=True, **kwargs):  # noqa: N802 (a class factory)
    """Builds the in-graph tokenizer `tf.Module` (see `_make_module_class`).

    Args:
      vocab: dict token -> id (e.g. `load_vocab(path)`); it must hold the unknown token.
      do_lower_case: as for FullTokenizer.
      core_ops: True (default): a graph of core TensorFlow ops only (WordPiece by hash-table
        lookups; SavedModels need only `tensorflow`); False: tensorflow-text's WordPiece
        (faster; SavedModels need `import tensorflow_text` before loading).
      ascii_lane: the printable-ASCII shortcut (module docstring, points 3 and 5; off only to
        measure the general route).
      unk_token, max_input_chars_per_word, name: as FullTokenizer's WordPiece; the tf.Module
        name.
    Returns: the module; `module(texts)` and `module.tokenize_with_check(texts)` take
      tf.string [N] and give ids tf.RaggedTensor int64 [N, None] (and inexact bool [N]).
    """
    return _module_class()(vocab, do_lower_case=do_lower_case, **kwargs)


class FastTokenizer:
    """Batch tokenizer with the ids of `FullTokenizer`, computed in TensorFlow ops.

    Args:
      vocab_file: path of the vocab file.
      do_lower_case: as for FullTokenizer.
      batch_size: texts per TensorFlow call.
      num_threads: batches tokenized at once (default: min(2, CPU count)).
      ascii_lane: send printable-ASCII texts through tensorflow-text's own splitting (exact,
        see module docstring; off only to measure the general route).

    Attributes:
      vocab: dict token -> id; inv_vocab: dict id -> token.
      special_tokens: WordPiece's, as FullTokenizer's (class attribute).
      full_tokenizer: the pure-Python FullTokenizer used for texts the graph flags.
      module: the in-graph TokenizerModule (tf.Module), in its tensorflow-text mode
        (core_ops=False).
    """

    special_tokens = tokenization.WORDPIECE_SPECIAL_TOKENS

    def __init__(self, vocab_file, do_lower_case=True, batch_size=_BATCH_TEXTS, num_threads=None,
                 ascii_lane=True):
        self.full_tokenizer = tokenization.FullTokenizer(vocab_file, do_lower_case=do_lower_case)
        self.vocab = self.full_tokenizer.vocab
        self.inv_vocab = self.full_tokenizer.inv_vocab
        self.do_lower_case = do_lower_case
        self.batch_size = int(batch_size)
        self.num_threads = int(num_threads or min(2, os.cpu_count() or 1))
        self.module = TokenizerModule(self.vocab, do_lower_case=do_lower_case,
                                      ascii_lane=ascii_lane, core_ops=False)
        self.num_fallbacks = 0  # texts handed to FullTokenizer so far (for the curious)

    def _run_batches(self, batches):
        """Yields the graph's (ids, inexact) per batch, computing up to `num_threads` batches
        at once (TensorFlow ops release the GIL, so batches run on separate cores)."""
        if self.num_threads <= 1 or len(batches) <= 1:
            for batch in batches:
                yield self.module.tokenize_with_check(batch)
            return
        with concurrent.futures.ThreadPoolExecutor(self.num_threads) as pool:
            yield from pool.map(self.module.tokenize_with_check, batches)

    def tokenize(self, text):
        """Tokens (str) of one text, as FullTokenizer.tokenize."""
        return self.convert_ids_to_tokens(self.tokenize_to_ids([text])[0])

    def convert_tokens_to_ids(self, tokens):
        return self.full_tokenizer.convert_tokens_to_ids(tokens)

    def convert_ids_to_tokens(self, ids):
        return self.full_tokenizer.convert_ids_to_tokens(ids)

    def tokenize_to_ids(self, texts):
        """Ids of each text (str or bytes): list of lists of int, equal to
        `[full.convert_tokens_to_ids(full.tokenize(t)) for t in texts]`."""
        if isinstance(texts, (str, bytes)):
            raise TypeError("tokenize_to_ids takes a sequence of texts, not a single text")
        texts = list(texts)
        encoded = []
        fallback = []
        for i, text in enumerate(texts):
            if isinstance(text, str):
                try:
                    encoded.append(text.encode("utf-8"))
                except UnicodeEncodeError:  # lone surrogates: let the reference handle them
                    encoded.append(b"")
                    fallback.append(i)
            elif isinstance(text, (bytes, bytearray)):
                text = bytes(text)
                try:
                    text.decode("utf-8")
                    encoded.append(text)
                except UnicodeDecodeError:
                    encoded.append(text.decode("utf-8", "ignore").encode("utf-8"))
            else:
                raise ValueError(
                    f"tokenize_to_ids: text {i} has unsupported type {type(text).__name__} "
                    "(expected str or bytes)")
        batches = [np.asarray(encoded[b:b + self.batch_size], dtype=object)
                   for b in range(0, len(encoded), self.batch_size)]
        results = []
        for begin, (ids, inexact) in zip(range(0, len(encoded), self.batch_size),
                                         self._run_batches(batches)):
            flat = ids.flat_values.numpy().tolist()
            splits = ids.row_splits.numpy().tolist()
            results.extend(flat[splits[j]:splits[j + 1]] for j in range(len(splits) - 1))
            fallback.extend(begin + int(j) for j in np.flatnonzero(inexact.numpy()))
        for i in fallback:
            results[i] = self.full_tokenizer.tokenize_to_ids(texts[i])
        self.num_fallbacks += len(fallback)
        return results
