"""SQuAD in a SavedModel: (question, context) -> run_squad.py's predicted answer, in the graph.

`SquadExport` is the module `python -m bert_tf.export --task=squad` saves (see its class
docstring for how it reproduces run_squad.py's windows, n-best spans and `get_final_text`).
"""

import functools
import re

import numpy as np
import tensorflow as tf

from bert_tf.evaluation.squad_predictions import NO_ANSWER_NULL_ODDS
from bert_tf.serving.windows import (max_context, pieces_of_words, split_words,
                                     split_words_with_offsets, window_pieces, window_spans,
                                     word_pieces)

# run_squad.py's word split: runs of characters other than space, tab, CR, LF and U+202F.
_SEPARATOR_CODE_POINTS = [0x20, 0x09, 0x0D, 0x0A, 0x202F]
_SQUAD_SEPARATORS = "[" + "".join("\\x{%x}" % c for c in _SEPARATOR_CODE_POINTS) + "]+"
_STRING = tf.TensorSpec([None], tf.string)
# run_squad.py's initial null score ("large and positive").
_SQUAD_NULL_START = 1e6


def _single_spaced(texts):
    """Each string's space-separated words joined by single spaces (texts: string [N])."""
    return tf.strings.regex_replace(tf.strings.regex_replace(texts, " +", " "), "^ | $", "")


@functools.lru_cache(maxsize=1)
def _python_whitespace():
    """An RE2 class of the characters `str.isspace` holds for (what `str.strip` strips)."""
    return "[" + "".join("\\x{%x}" % c for c in range(0x110000)
                         if not 0xD800 <= c <= 0xDFFF and chr(c).isspace()) + "]"


def _stripped(texts):
    """`str.strip()` of each string (texts: string [N])."""
    spaces = _python_whitespace()
    return tf.strings.regex_replace(texts, f"^{spaces}+|{spaces}+$", "")


def _gather_or(values, index, default):
    """values[index] where 0 <= index < len(values), else `default` (values [M], index int
    [K])."""
    index = tf.cast(index, tf.int64)
    inside = (index >= 0) & (index < tf.size(values, out_type=tf.int64))
    padded = tf.concat([values, tf.cast([default], values.dtype)], 0)
    return tf.gather(padded, tf.where(inside, index, tf.size(values, out_type=tf.int64)))


def _row_values(ragged, index, default):
    """ragged[i][index[i]] for each row i, `default` where index[i] is outside row i."""
    lengths = tf.cast(ragged.row_lengths(), index.dtype)
    inside = (index >= 0) & (index < lengths)
    flat = tf.concat([ragged.flat_values, [tf.cast(default, ragged.dtype)]], 0)
    position = tf.where(inside, tf.cast(ragged.row_splits[:-1], index.dtype) + index,
                        tf.cast(tf.size(ragged.flat_values), index.dtype))
    return tf.gather(flat, position)


class SquadExport(tf.Module):
    """`serving_default`: (question, context) -> run_squad.py's predicted answer and its score.

    As run_squad.py: the context is split into words at space, tab, CR, LF and U+202F, each
    word is tokenized, the question is cut to max_query_length pieces, and the document is cut
    into windows of max_seq_length - len(question) - 3 pieces advancing by doc_stride. In each
    window the n_best_size largest start and end logits (ties to the lower position) give the
    candidate spans, valid when both ends are in the window's document part, the start is in
    the window giving it the most context, end >= start and the span has at most
    max_answer_length pieces. The best is the largest start + end logit (in float64), ties to
    the first in the script's loop order (window, start rank, end rank).

    Its text is the script's `get_final_text`, in the graph: pred_text is the span's pieces
    (vocab strings) joined by " " with " ##" and "##" removed; orig_text is the context words
    from the start piece's word to the end piece's word joined by " "; tok_text is orig_text's
    BasicTokenizer words joined by " " (the tokenizer's own character mapping,
    `TokenizerModule.normalize`). The first occurrence of pred_text in tok_text is mapped onto
    orig_text by index among non-space characters, so "(1990)," with the pieces "1990" gives
    "1990"; orig_text itself is the answer when pred_text is not found (e.g. an [UNK] piece) or
    when the two texts differ in length without spaces (e.g. accents stripped, a soft hyphen or
    an NBSP inside a word).

    Pieces that mark word starts with a graph tokenizer that gives each piece's bytes of the
    text (`tokenize_with_offsets`: ALBERT's SentencePiece; `by_offsets`) are mapped back as
    run_squad.py's post-processing does with the host tokenizer's characters
    (bert_tf.data.squad, bert_tf.evaluation.squad_predictions), not by `get_final_text`: each
    word is tokenized with its pieces' bytes, and the answer is the context's bytes from the
    span's first piece's start to its last piece's end, whitespace at the ends stripped, as the
    context writes them (accents, combining marks, case, runs of spaces, "1,000"); where the
    pieces stand for no character (a lone "▁"), the context from the first piece's word's
    start to the last piece's word's end.

    Version 1.1: no valid span (e.g. an empty context) gives "empty" with score 0, as the
    script. Version 2.0 (`version_2_with_negative`): score_null is the smallest
    start_logit[0] + end_logit[0] over the question's windows (the script's start value 1e6
    when none is below it); the answer is "" when score_null - start_logit - end_logit of the
    best span exceeds null_score_diff_threshold (strictly), else the best span's text; that
    difference is output as null_score_diff (float64: the value the script writes to
    null_odds.json). Without a valid span the script crashes (its n-best list holds only the
    null entry); then, as `bert_tf.evaluation.squad_predictions`, the answer is "", null_score_diff
    1.7976931348623157e308 and the score and logits 0.

    The script's n-best list (duplicate texts skipped, the null entry inserted by score) is
    not built: the prediction is its first entry (1.1) or first non-null entry (2.0), which is
    always the best valid span (its text is never empty nor a duplicate; with n_best_size 1 a
    window's only candidate pairs its largest start and end logits, so it scores at least
    the window's null span and precedes it in the stable sort). The answer is therefore the
    script's for the same logits; it can differ only where two candidates score equal, or
    nearly so, and the export's logits differ from another run of the model in the last bits.

    The n best start and end positions of a window are taken among its real positions, so
    that they do not depend on how far the window's batch is padded (see `ServingInputs`):
    the script ranks the logits of all max_seq_length positions, padding included, so where a
    padding position ranks among a window's n_best_size largest logits (a fine-tuned model
    pushes their logits far down: its loss has them in the softmax) it considers one real
    position fewer, which can only leave it a lower-scoring span.
    """

    def __init__(self, model, inputs, vocab, max_query_length=64, doc_stride=128,
                 n_best_size=20, max_answer_length=30, version_2_with_negative=False,
                 null_score_diff_threshold=0.0):
        super().__init__(name="squad_export")
        self.model = model
        self.inputs = inputs
        self.max_query_length = int(max_query_length)
        self.doc_stride = int(doc_stride)
        self.n_best_size = int(n_best_size)
        self.max_answer_length = int(max_answer_length)
        self.version_2_with_negative = bool(version_2_with_negative)
        self.null_score_diff_threshold = float(null_score_diff_threshold)
        tokens = [""] * (max(vocab.values()) + 1)
        for token, index in vocab.items():
            tokens[index] = token
        self.vocab_tokens = tf.constant(tokens, tf.string)
        # As bert_tf.data.squad: pieces that mark word starts, with a tokenizer that gives each
        # piece's place in the text, are mapped back to the context by it; WordPiece's by
        # get_final_text.
        self.by_offsets = (hasattr(inputs.tokenizer, "tokenize_with_offsets")
                           and inputs.special_tokens.continuation_prefix is None)

    def _document(self, context):
        """The context's words and pieces.

        context: string [N] -> (words ragged string [N, None]; doc ragged int64 [N, None], the
        pieces; word_of_piece int64 [P], see `word_pieces`; spans: None, or with
        `by_offsets` (piece_start, piece_end int64 [P], the bytes of the context each piece
        stands for; word_start, word_end int64 [total words], each word's bytes)).
        """
        tokenizer = self.inputs.tokenizer
        if not self.by_offsets:
            words = split_words(context, _SQUAD_SEPARATORS)
            doc, word_of_piece, _ = word_pieces(tokenizer, words)
            return words, doc, word_of_piece, None
        words, word_starts = split_words_with_offsets(context, _SEPARATOR_CODE_POINTS)
        ids, starts, ends = tokenizer.tokenize_with_offsets(words.flat_values)
        doc, word_of_piece, _ = pieces_of_words(ids, words)
        word_start = word_starts.flat_values
        word_end = word_start + tf.cast(tf.strings.length(words.flat_values), tf.int64)
        offset = tf.gather(word_start, ids.value_rowids())
        return words, doc, word_of_piece, (starts.flat_values + offset,
                                           ends.flat_values + offset, word_start, word_end)

    def _windows(self, question, context):
        """The script's features for every window, as dense tensors (see class docstring)."""
        seq_length = self.inputs.max_seq_length
        tokenizer = self.inputs.tokenizer
        query = tokenizer(question)[:, :self.max_query_length]  # ragged int64 [N, None]
        words, doc, word_of_piece, spans = self._document(context)

        special = self.inputs.special_tokens  # the layout of `SpecialTokens.lay_out`
        query_length = query.row_lengths()
        max_tokens = special.pair_budget(seq_length) - query_length  # >= 1, checked by export
        num_tokens = doc.row_lengths()
        example, _, start, length = window_spans(num_tokens, max_tokens, self.doc_stride)
        window_query = tf.gather(query, example)
        ones = tf.ones_like(example)
        ids = tf.concat([
            tf.RaggedTensor.from_row_lengths(tf.fill([tf.size(example)], self._cls_id), ones),
            window_query,
            tf.RaggedTensor.from_row_lengths(
                tf.fill([tf.size(example) * special.pair_separators], self._sep_id),
                ones * special.pair_separators),
            tf.gather(doc.flat_values, window_pieces(doc, example, start, length)),
            tf.RaggedTensor.from_row_lengths(tf.fill([tf.size(example)], self._sep_id), ones),
        ], axis=1)
        # The model position of the window's first piece: after [CLS] query [SEP].
        offset = tf.gather(query_length, example) + 1 + special.pair_separators
        padded = self.inputs.padded_length(ids)  # S: max_seq_length, or the longest window's
        positions = tf.range(padded, dtype=tf.int64)[None, :]
        in_doc = (positions >= offset[:, None]) & (positions < (offset + length)[:, None])
        features = {
            "input_ids": tf.cast(self.inputs.padded(ids, self.inputs.pad_id, padded), tf.int32),
            "input_mask": self.inputs.padded(tf.ones_like(ids, tf.int32), 0, padded),
            "segment_ids": tf.cast(in_doc | (positions == (offset + length)[:, None]), tf.int32)
                           * int(special.pair_segments),
        }
        piece = start[:, None] + positions - offset[:, None]  # [W, S], within the document
        valid_start = max_context(example, start, length, piece)
        doc_piece = tf.clip_by_value(piece, 0, tf.maximum(
            tf.gather(num_tokens, example)[:, None] - 1, 0))
        # [W, S]: the index in doc.flat_values of the piece at each position (clipped).
        piece_of_position = tf.gather(doc.row_splits[:-1], example)[:, None] + doc_piece
        word_of_position = tf.gather(word_of_piece, piece_of_position)
        return (features, example, in_doc, valid_start, word_of_position, words,
                piece_of_position, spans)

    def _answer(self, question, context):
        (features, example, valid_end, valid_start, word_of_position, words, piece_of_position,
         spans) = self._windows(question, context)
        outputs = self.model(features, training=False)
        # Padding is never a candidate; -inf keeps it out of the n best, so that a window's
        # candidates do not depend on how far its batch is padded (see class docstring).
        real = features["input_mask"] > 0
        start_logits = tf.where(real, tf.cast(outputs["start_logits"], tf.float64), -np.inf)
        end_logits = tf.where(real, tf.cast(outputs["end_logits"], tf.float64), -np.inf)
        padded = tf.shape(features["input_ids"], out_type=tf.int64)[1]
        k = tf.minimum(tf.cast(self.n_best_size, tf.int64), padded)
        k32 = tf.cast(k, tf.int32)
        # top_k puts equal values in index order, like the script's stable sort.
        start_top, start_index = tf.math.top_k(start_logits, k32)
        end_top, end_index = tf.math.top_k(end_logits, k32)
        ok = (tf.gather(valid_start, start_index, batch_dims=1)[:, :, None]
              & tf.gather(valid_end, end_index, batch_dims=1)[:, None, :])
        span = end_index[:, None, :] - start_index[:, :, None]
        ok &= (span >= 0) & (span + 1 <= self.max_answer_length)
        total = start_top[:, :, None] + end_top[:, None, :]  # [W, k, k]

        n = tf.size(question)
        flat_ok = tf.reshape(ok, [-1])
        flat_total = tf.where(flat_ok, tf.reshape(total, [-1]), -float("inf"))
        candidate_example = tf.repeat(example, k * k)
        best = tf.math.unsorted_segment_max(flat_total, candidate_example, n)
        has_answer = tf.math.unsorted_segment_max(
            tf.cast(flat_ok, tf.int32), candidate_example, n) > 0
        order = tf.range(tf.size(flat_ok, out_type=tf.int64))
        winner = flat_ok & tf.equal(flat_total, tf.gather(best, candidate_example))
        chosen = tf.math.unsorted_segment_min(
            tf.where(winner, order, tf.int64.max), candidate_example, n)
        # An example without a valid span reads a padding row (there may be no window at all).
        num_windows = tf.size(example, out_type=tf.int64)
        window = tf.where(has_answer, chosen // (k * k), num_windows)
        start_rank, end_rank = (chosen // k) % k, chosen % k
        start_rank, end_rank = (tf.where(has_answer, r, 0) for r in (start_rank, end_rank))

        def pick(values, rank):
            padded = tf.pad(values, [[0, 1], [0, 0]])
            return tf.gather_nd(padded, tf.stack([window, tf.cast(rank, tf.int64)], axis=1))

        start_position, end_position = pick(start_index, start_rank), pick(end_index, end_rank)
        first_word = tf.where(has_answer, pick(word_of_position, start_position), 0)
        last_word = tf.where(has_answer, pick(word_of_position, end_position), -1)
        if spans is not None:
            text = self.context_text(context, spans, words,
                                     tf.where(has_answer, pick(piece_of_position,
                                                               start_position), -1),
                                     tf.where(has_answer, pick(piece_of_position,
                                                               end_position), -1),
                                     first_word, last_word)
        else:
            # Ranges shifted to flat indexes before they are built (adding a column to a
            # ragged range would trace ragged broadcasting).
            word_base = words.row_splits[:-1]
            chosen_words = tf.ragged.range(first_word + word_base, last_word + 1 + word_base)
            orig_text = tf.strings.reduce_join(tf.gather(words.flat_values, chosen_words),
                                               axis=1, separator=" ")
            start_position = tf.where(has_answer, start_position, 0)
            end_position = tf.where(has_answer, end_position, -1)
            window_base = window * padded
            positions = tf.ragged.range(tf.cast(start_position, tf.int64) + window_base,
                                        tf.cast(end_position, tf.int64) + 1 + window_base)
            input_ids = tf.reshape(tf.pad(features["input_ids"], [[0, 1], [0, 0]]), [-1])
            pred_ids = tf.gather(input_ids, positions)
            text = self.final_text(self.pred_text(pred_ids), orig_text)
        start_logit = tf.where(has_answer, pick(start_top, start_rank), 0.0)
        end_logit = tf.where(has_answer, pick(end_top, end_rank), 0.0)
        if not self.version_2_with_negative:
            return {"answer": tf.where(has_answer, text, "empty"),
                    "score": tf.cast(start_logit + end_logit, tf.float32),
                    "start_logit": tf.cast(start_logit, tf.float32),
                    "end_logit": tf.cast(end_logit, tf.float32)}

        # The null score: the smallest start[0] + end[0] over the windows, if below the
        # script's initial 1e6.
        null = start_logits[:, 0] + end_logits[:, 0]  # [W]
        score_null = tf.minimum(tf.math.unsorted_segment_min(null, example, n), _SQUAD_NULL_START)
        # The best valid span is the script's best non-null entry (see class docstring).
        null_score_diff = tf.where(has_answer, score_null - start_logit - end_logit,
                                   NO_ANSWER_NULL_ODDS)
        answer = tf.where(has_answer & ~(null_score_diff > self.null_score_diff_threshold),
                          text, "")
        return {"answer": answer,
                "score": tf.cast(start_logit + end_logit, tf.float32),
                "start_logit": tf.cast(start_logit, tf.float32),
                "end_logit": tf.cast(end_logit, tf.float32),
                "null_score_diff": null_score_diff}

    def context_text(self, context, spans, words, first_piece, last_piece, first_word,
                     last_word):
        """The answer's text when pieces are mapped back by their offsets (`by_offsets`), as
        bert_tf.evaluation.squad_predictions: the context's bytes from the first piece's start
        to the last piece's end, whitespace at the ends stripped; where that is empty (the
        pieces stand for no character, e.g. a lone "▁"), the context from the first word's
        start to the last word's end.

        Args:
          context: string [N]; spans, words: from `_document`;
          first_piece, last_piece: int64 [N], indexes into the document's pieces (-1: none);
          first_word, last_word: int64 [N], the pieces' words within their text.
        Returns: string [N] ("" where there is no piece).
        """
        piece_start, piece_end, word_start, word_end = spans
        begin = _gather_or(piece_start, first_piece, 0)
        end = _gather_or(piece_end, last_piece, 0)
        text = tf.strings.substr(context, begin, tf.maximum(end - begin, 0))
        text = tf.where(end > begin, _stripped(text), "")
        base = words.row_splits[:-1]
        word_begin = _gather_or(word_start, base + first_word, 0)
        word_text = tf.strings.substr(
            context, word_begin,
            tf.maximum(_gather_or(word_end, base + last_word, 0) - word_begin, 0))
        valid = (first_piece >= 0) & (last_piece >= 0)
        return tf.where(valid, tf.where(tf.equal(text, ""), word_text, text), "")

    def pred_text(self, pred_ids):
        """run_squad.py's text of predicted pieces, `SpecialTokens.detokenize` in graph ops:
        WordPiece's vocab strings joined by " ", " ##" and "##" removed; word-start prefixes
        (SentencePiece's, byte-level BPE's) joined by "", each prefix a space; then spaces
        collapsed (pieces hold no other whitespace).

        pred_ids: ragged int [N, None] -> string [N].
        """
        special = self.inputs.special_tokens
        pieces = tf.gather(self.vocab_tokens, pred_ids)
        # str.replace's left-to-right non-overlapping matches, as RE2's global replace.
        if special.continuation_prefix is not None:
            prefix = re.escape(special.continuation_prefix)
            text = tf.strings.reduce_join(pieces, axis=1, separator=" ")
            text = tf.strings.regex_replace(text, " " + prefix, "")
            text = tf.strings.regex_replace(text, prefix, "")
        else:
            text = tf.strings.reduce_join(pieces, axis=1)
            text = tf.strings.regex_replace(text, re.escape(special.word_start_prefix), " ")
        return _single_spaced(text)

    def final_text(self, pred_text, orig_text):
        """run_squad.py's `get_final_text(pred_text, orig_text, do_lower_case)` in graph ops
        (see class docstring), do_lower_case being the tokenizer's.

        pred_text, orig_text: string [N] -> string [N].
        """
        # BasicTokenizer's character mapping. Its "inexact" flag is not needed: the serving
        # path tokenized every word of orig_text and fails on an inexact word, and NFD only
        # reorders within a word.
        normalized = self.inputs.tokenizer.normalize(orig_text)[0]
        tok_text = _single_spaced(normalized)

        def find(texts):
            tok, pred = texts
            # The part before the first occurrence (split on "" would split at whitespace).
            parts = tf.strings.split(tok, sep=tf.where(tf.equal(pred, ""), " ", pred), maxsplit=1)
            return tf.concat([parts, [""]], 0)[0], tf.size(parts) == 2

        prefix, found = tf.map_fn(find, (tok_text, pred_text),
                                  fn_output_signature=(tf.string, tf.bool))
        found |= tf.equal(pred_text, "")
        prefix = tf.where(tf.equal(pred_text, ""), "", prefix)
        # Python indexes code points; the byte prefix ends at a character boundary.
        start = tf.strings.length(prefix, unit="UTF8_CHAR")
        end = start + tf.strings.length(pred_text, unit="UTF8_CHAR") - 1
        tok_chars = tf.strings.unicode_decode(tok_text, "UTF-8")
        orig_chars = tf.strings.unicode_decode(orig_text, "UTF-8", errors="replace")
        tok_space, orig_space = tf.equal(tok_chars, 32), tf.equal(orig_chars, 32)

        def non_space_count(spaces):
            return tf.reduce_sum(tf.cast(~spaces, tf.int32), axis=1)

        # Each character's index within its row (flat: a ragged [N, None] compared with a
        # column [N, 1] would trace ragged broadcasting).
        tok_row = tok_space.value_rowids()
        tok_index = (tf.range(tf.size(tok_space.flat_values, out_type=tf.int64))
                     - tf.gather(tok_space.row_splits, tok_row))

        def non_space_index(position):
            """position's index among tok_text's non-space characters, or -1 on a space or
            outside tok_text."""
            at_or_after = tok_index >= tf.cast(tf.gather(position, tok_row), tf.int64)
            before = non_space_count(tok_space.with_flat_values(tok_space.flat_values
                                                                | at_or_after))
            on_space = _row_values(tok_space, position, True)
            return tf.where(on_space, -1, before)

        ns_start, ns_end = non_space_index(start), non_space_index(end)
        mapped = (found & tf.equal(non_space_count(orig_space), non_space_count(tok_space))
                  & (ns_start >= 0) & (ns_end >= 0))
        # Position in orig_text of each of its non-space characters.
        orig_positions = tf.ragged.boolean_mask(
            tf.ragged.range(tf.cast(orig_chars.row_lengths(), tf.int32)), ~orig_space)
        orig_start = _row_values(orig_positions, ns_start, 0)
        orig_end = _row_values(orig_positions, ns_end, -1)
        begin = tf.where(mapped, orig_start, 0)
        limit = tf.where(mapped, orig_end + 1, 0)
        row_start = orig_chars.row_splits[:-1]
        chars = tf.ragged.range(tf.cast(begin, tf.int64) + row_start,
                                tf.cast(limit, tf.int64) + row_start)  # in flat_values
        trimmed = tf.strings.unicode_encode(tf.gather(orig_chars.flat_values, chars), "UTF-8")
        return tf.where(mapped, trimmed, orig_text)

    @tf.function(input_signature=[_STRING, _STRING], autograph=False)
    def serve(self, question, context):
        """question, context: string [N] -> answer string [N], score, start_logit, end_logit
        float32 [N] (and null_score_diff float64 [N] for version 2.0)."""
        return self._answer(question, context)

    @property
    def _cls_id(self):
        return tf.constant(self.inputs.cls_id, tf.int64)

    @property
    def _sep_id(self):
        return tf.constant(self.inputs.sep_id, tf.int64)

    def signatures(self):
        return {"serving_default": self.serve}
