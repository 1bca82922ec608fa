"""ALBERT's SQuAD 1.1 / 2.0 data: google-research/albert's `squad_utils.py` features.

ALBERT's SQuAD is not BERT's (`bert_tf.data.squad`): the paragraph is kept as text (no word
split), tokenized whole by SentencePiece, and the pieces are tied back to the paragraph's
characters by a banded longest-common-subsequence. v1 and v2 share the reader, the features
and the records; only the heads, the post-processing and the parsing of `p_mask` differ.

Public API (what run_squad_v1 and run_squad_v2 use):
  read_squad_examples(input_file, is_training) -> list of SquadExample
      The original's reader for both versions: training reads `is_impossible` when present
      (absent = False) and exactly one answer per possible question; prediction reads no
      answer. Bad files: `SquadDataError` naming the file (and the question).
  convert_examples_to_features(examples, tokenizer, max_seq_length, doc_stride,
                               max_query_length, is_training, output_fn, do_lower_case)
      The original's converter, the same signature: calls `output_fn(InputFeatures)` for each
      window of each example in order, `unique_id` counting from FIRST_UNIQUE_ID over the
      windows written. `tokenizer` is anything with a loaded SentencePiece `sp_model`
      (`bert_tf.albert.tokenization.FullTokenizer(None, do_lower_case, spm_model_file)`, the
      family's `AlbertTokenizer`, or the original's). Returns a `ConversionSummary`.
  InputFeatures: the original's attributes (unique_id, example_index (None in training, as the
      original), doc_span_index, tok_start_to_orig_index, tok_end_to_orig_index,
      token_is_max_context, tokens, input_ids, input_mask, segment_ids, paragraph_len, p_mask,
      start_position, end_position, is_impossible).
  FeatureWriter(filename, is_training): `process_feature(feature)`, `close()`, `abort()`,
      `num_features`, a context manager; the original's records, written whole.
  record_feature_spec(max_seq_length, is_training, is_v2): the original reader's parsing spec.
  save_features(path, features) / load_features(path): --predict_feature_left_file, a pickle
      of the original's `albert.squad_utils.InputFeatures` objects (FEATURE_ATTRIBUTES), so
      the original reads ours; `load_features` reads ours and the original's (only that class
      is unpickled) as `FeatureRecord`s.
  align_paragraph(paragraph_text, pieces, do_lower_case): the character alignment alone.
The run around them (feature files reused or written, the prediction loop over checkpoints,
model.ckpt-best, eval_results.txt) is `bert_tf.albert.squad_task`'s (`train_records`,
`predict_features`, `evaluate_checkpoints` with a version's `get_result`).

Reading: `{"data": [{"paragraphs": [{"context", "qas": [{"id", "question", "answers",
"is_impossible"}]}]}]}`. A training example keeps the answer's first character
(`answer_start`) and its text; an impossible one has start -1 and text "".

Features, per example (as the original):
  - the question: `encode_ids(sp, preprocess_text(question, lower=do_lower_case))`, cut to
    `max_query_length` pieces;
  - the paragraph: `encode_pieces(sp, preprocess_text(paragraph, lower=do_lower_case))`; their
    text with "▁" read as a space is aligned to the paragraph's characters by the LCS below,
    each character compared as `preprocess_text(char, lower=do_lower_case, remove_space=False)`.
    The LCS only looks at a band of characters: piece character j is compared with paragraph
    character i when i - d <= j < i + d, d = |n - m| + 5 (n, m: the two lengths); when at most
    0.8 n characters match, once more with 2d. Still at most 0.8 n (or nothing matched): the
    example is dropped with the original's log line "MISMATCH DETECTED!" (no feature, no
    unique_id; prediction then answers it "empty");
  - each piece's first and last characters map to paragraph characters
    (`tok_start_to_orig_index`, `tok_end_to_orig_index`; a character the LCS left unmatched
    takes its nearest matched neighbour's, the original's `_convert_index`); a training
    answer's characters map to pieces the same way;
  - windows of `max_seq_length - len(query) - 3` pieces advanced by `min(window, doc_stride)`
    (`bert_tf.data.squad.make_doc_spans`), each one feature `[CLS] query [SEP] window [SEP]`
    zero-padded: `segment_ids` 1 on the window and its [SEP]; `p_mask` 1 where no answer can be
    (question, both [SEP], padding), 0 on [CLS] and the window; `paragraph_len` is the unpadded
    sequence length (the original's name); `tokens` are the pieces of all max_seq_length ids,
    padding included (the original's);
  - training positions: the answer's pieces offset into the window; a window not holding the
    whole answer, and every impossible question, gets 0 / 0 and is_impossible True.

Records (`FeatureWriter`): int64 `unique_ids` [1], `input_ids`, `input_mask`, `segment_ids`,
`p_mask` [max_seq_length]; training adds `start_positions`, `end_positions`, `is_impossible`
[1]. Written to `<file>.incomplete`, renamed by `close()`.

Where we differ from the original, each time where it crashes or silently goes wrong: a file
that is not SQuAD JSON, a missing key or a value of the wrong type, a possible training
question without exactly one answer, an empty answer text or an `answer_start` outside its
context (the original: KeyError / IndexError / assertion tracebacks, or a silently wrong span)
raise `SquadDataError` naming the file and the question id. `doc_stride <= 0` (the original
loops forever) and `max_seq_length <= max_query_length + 3` raise ValueError.

Speed (same output): the paragraph's pieces and alignment are computed once per paragraph and
lower-casing, not once per question; the LCS runs row by row on NumPy over the band; each
distinct character is normalised once. `InputFeatures` keeps references to the paragraph's
arrays and builds its lists on access.

This module does not import TensorFlow (only `record_feature_spec` does).
"""

import dataclasses
import os
import pickle

import numpy as np
from absl import logging

from bert_tf import files
from bert_tf.albert.tokenization import (SPIECE_UNDERLINE, encode_ids, encode_pieces,
                                         preprocess_text)
from bert_tf.data.features import Int64EntryHeads, varint
from bert_tf.data.squad import (FIRST_UNIQUE_ID, SquadDataError, json_field, load_json,
                                make_doc_spans, max_context_spans)
from bert_tf.data.writer import RoundRobinRecordWriter
from bert_tf.text import printable_text

__all__ = [
    "FIRST_UNIQUE_ID",
    "MISMATCH_MESSAGE",
    "SquadDataError",
    "SquadExample",
    "InputFeatures",
    "Alignment",
    "ConversionSummary",
    "FeatureWriter",
    "read_squad_examples",
    "convert_examples_to_features",
    "align_paragraph",
    "convert_index",
    "record_feature_spec",
    "FEATURE_ATTRIBUTES",
    "FeatureRecord",
    "save_features",
    "load_features",
]

# The original's log line for an example whose pieces do not align with its paragraph.
MISMATCH_MESSAGE = "MISMATCH DETECTED!"
NUM_LOGGED_EXAMPLES = 20
# An alignment keeps an example when more than this share of the paragraph's characters match.
MIN_MATCHED_SHARE = 0.8


class SquadExample:
    """One question on one paragraph (the original's attributes).

    Attributes:
      qas_id: the question's "id".
      question_text: str, as in the file.
      paragraph_text: str, the context as in the file (shared by its questions).
      orig_answer_text: str (training), "" when impossible, None in prediction.
      start_position: int, the answer's first character in paragraph_text (training), -1 when
        impossible, None in prediction.
      end_position: None (the original never sets it; the end is start + len(answer) - 1).
      is_impossible: bool (training; False in prediction).
    """

    __slots__ = ("qas_id", "question_text", "paragraph_text", "orig_answer_text",
                 "start_position", "end_position", "is_impossible")

    def __init__(self, qas_id, question_text, paragraph_text, orig_answer_text=None,
                 start_position=None, end_position=None, is_impossible=False):
        self.qas_id = qas_id
        self.question_text = question_text
        self.paragraph_text = paragraph_text
        self.orig_answer_text = orig_answer_text
        self.start_position = start_position
        self.end_position = end_position
        self.is_impossible = is_impossible

    def __repr__(self):
        return (f"SquadExample(qas_id={self.qas_id!r}, question_text={self.question_text!r}, "
                f"{len(self.paragraph_text)} characters, answer={self.orig_answer_text!r} "
                f"at {self.start_position}, is_impossible={self.is_impossible})")


# ---------------------------------------------------------------------------------------------
# Reading


def read_squad_examples(input_file, is_training):
    """Reads a SQuAD 1.1 or 2.0 JSON file, as the original's `read_squad_examples`.

    Args:
      input_file: path (local, or with a scheme through tf.io.gfile).
      is_training: read `is_impossible` (absent: False) and the answer of each possible
        question (exactly one).

    Returns:
      list of SquadExample, in file order.

    Raises:
      SquadDataError: naming the file (and the question id): see the module docstring.
    """
    path = str(input_file)
    data = json_field(load_json(path), "data", (list,), f"{path}: top level")
    examples = []
    for entry_index, entry in enumerate(data):
        entry_where = f"{path}: data[{entry_index}]"
        for paragraph_index, paragraph in enumerate(
                json_field(entry, "paragraphs", (list,), entry_where)):
            where = f"{entry_where}.paragraphs[{paragraph_index}]"
            paragraph_text = json_field(paragraph, "context", (str,), where)
            for qa_index, qa in enumerate(json_field(paragraph, "qas", (list,), where)):
                qas_id = json_field(qa, "id", (str, int), f"{where}.qas[{qa_index}]")
                qa_where = f"{path}: question id {qas_id!r}"
                example = SquadExample(qas_id, json_field(qa, "question", (str,), qa_where),
                                       paragraph_text)
                if is_training:
                    _read_answer(example, qa, qa_where)
                examples.append(example)
    return examples


def _read_answer(example, qa, where):
    is_impossible = qa.get("is_impossible", False)
    if not isinstance(is_impossible, bool):
        raise SquadDataError(f"{where}: 'is_impossible' must be true or false, found "
                             f"{is_impossible!r:.60}")
    example.is_impossible = is_impossible
    if is_impossible:
        example.start_position = -1
        example.orig_answer_text = ""
        return
    answers = json_field(qa, "answers", (list,), where)
    if len(answers) != 1:
        raise SquadDataError(f"{where}: {len(answers)} answers; for training, each question "
                             "should have exactly 1 answer")
    text = json_field(answers[0], "text", (str,), f"{where}, answer")
    start = json_field(answers[0], "answer_start", (int,), f"{where}, answer")
    if not text:
        raise SquadDataError(f"{where}: the answer text is empty")
    if start < 0 or start + len(text) > len(example.paragraph_text):
        raise SquadDataError(
            f"{where}: answer_start {start} with a {len(text)}-character answer lies outside "
            f"its {len(example.paragraph_text)}-character context")
    example.orig_answer_text = text
    example.start_position = start


# ---------------------------------------------------------------------------------------------
# Aligning the pieces with the paragraph's characters


@dataclasses.dataclass
class Alignment:
    """The pieces of one paragraph tied to its characters.

    Attributes:
      orig_to_chartok_index: list (n) of the piece-text character matched to each paragraph
        character, or None.
      chartok_to_orig_index: list (m) of the paragraph character matched to each piece-text
        character, or None. (The piece text is the pieces joined, "▁" read as a space.)
      score: the number of matched characters (the LCS length).
      max_dist: the band of the pass that made it (|n - m| + 5, doubled on the retry).
      retried: whether the first band matched at most 0.8 n characters.
    """

    orig_to_chartok_index: list
    chartok_to_orig_index: list
    score: int
    max_dist: int
    retried: bool


def _normalized_codes(text, do_lower_case):
    """int64 [len(text)]: the code point of each character's `preprocess_text(c,
    remove_space=False)` when that is one character, else -1 (it then equals no character)."""
    memo = {}
    codes = np.empty(len(text), np.int64)
    for i, c in enumerate(text):
        code = memo.get(c)
        if code is None:
            normalized = preprocess_text(c, lower=do_lower_case, remove_space=False)
            code = memo[c] = ord(normalized) if len(normalized) == 1 else -1
        codes[i] = code
    return codes


def _banded_lcs(orig_codes, tok_codes, max_dist):
    """The original's banded LCS: (score, moves).

    Cell (i, j) exists when i - max_dist <= j < i + max_dist and 0 <= j < m; it holds the
    longest common subsequence of orig[:i+1] and tok[:j+1] whose cells all exist (cells outside
    read as 0), and the move that reached it, as the original's `g`: 2 a match (from (i-1,
    j-1)), 1 from the left (j-1) when that is longer than from above, 0 from above (i-1); -1 no
    move (a cell of the first row the original leaves out of `g`, or no cell).

    The band is stored in columns k = j - i + max_dist: row i-1's cell above (i, j) is column
    k + 1, its diagonal one column k. A row is max(above, diagonal + 1 on a match), then its
    running maximum (the move from the left); the moves follow from the values.

    Returns:
      (int: the value of cell (n-1, m-1), int8 [n, 2 max_dist] moves).
    """
    n, m = len(orig_codes), len(tok_codes)
    width = 2 * max_dist
    j = np.arange(n)[:, None] - max_dist + np.arange(width)[None, :]
    exists = (j >= 0) & (j < m)
    match = exists & (np.where(exists, tok_codes[np.clip(j, 0, max(m - 1, 0))] if m else -2,
                               -2) == orig_codes[:, None])
    # values[i + 1, k]: cell (i, i - max_dist + k); row 0 and column `width` read as 0.
    values = np.zeros((n + 1, width + 1), np.int64)
    ends = np.clip(m - (np.arange(n) - max_dist), 0, width).tolist()  # columns k < end exist
    gain = match.astype(np.int64)
    best = np.empty(width, np.int64)
    for i in range(n):
        end = ends[i]
        if end:
            above = values[i]
            # max(above, diagonal + 1 where the characters match): all values are >= 0.
            np.add(above[:width], 1, out=best)
            np.multiply(best, gain[i], out=best)
            np.maximum(best, above[1:], out=best)
            np.maximum.accumulate(best[:end], out=values[i + 1, :end])
    up = values[:n, 1:]
    diagonal = values[:n, :width] + 1
    left = np.zeros((n, width), np.int64)
    left[:, 1:] = values[1:, :width - 1]
    moves = np.where(match & (diagonal > np.maximum(up, left)), 2,
                     np.where(left > up, 1, 0)).astype(np.int8)
    if n:
        moves[0][moves[0] == 0] = -1
    moves[~exists] = -1
    score = int(values[n, m - 1 - (n - 1) + max_dist]) if n and m else 0
    return score, moves


def align_paragraph(paragraph_text, pieces, do_lower_case):
    """Aligns SentencePiece pieces with the characters of the paragraph they came from.

    Args:
      paragraph_text: str, the context as in the file.
      pieces: list of str, `encode_pieces` of its `preprocess_text`.
      do_lower_case: as the pieces were made (each character is compared lower-cased then).

    Returns:
      (Alignment, kept): kept is False where the original drops the example ("MISMATCH
      DETECTED!": at most 0.8 n characters matched after the retry, or none).
    """
    piece_text = "".join(pieces).replace(SPIECE_UNDERLINE, " ")
    n, m = len(paragraph_text), len(piece_text)
    orig_codes = _normalized_codes(paragraph_text, do_lower_case)
    tok_codes = np.array([ord(c) for c in piece_text], np.int64)
    max_dist = abs(n - m) + 5
    score, moves = _banded_lcs(orig_codes, tok_codes, max_dist)
    retried = not score > MIN_MATCHED_SHARE * n
    if retried:
        max_dist *= 2  # once more on a band twice as wide, as the original
        score, moves = _banded_lcs(orig_codes, tok_codes, max_dist)
    orig_to_chartok = [None] * n
    chartok_to_orig = [None] * m
    i, j = n - 1, m - 1
    width = 2 * max_dist
    while i >= 0 and j >= 0:
        k = j - i + max_dist
        move = moves[i, k] if 0 <= k < width else -1
        if move == 2:
            orig_to_chartok[i] = j
            chartok_to_orig[j] = i
            i, j = i - 1, j - 1
        elif move == 1:
            j -= 1
        elif move == 0:
            i -= 1
        else:
            break
    kept = score >= MIN_MATCHED_SHARE * n and any(v is not None for v in orig_to_chartok)
    return Alignment(orig_to_chartok, chartok_to_orig, score, max_dist, retried), kept


def convert_index(index, pos, m=None, is_start=True):
    """`index[pos]`, or for an unmatched position (None) a neighbour's, as the original's
    `_convert_index`.

    Between the nearest matched positions to the left (front) and right (rear): a start takes
    front + 1 when that lies before rear's value, else rear's; an end takes rear - 1 when rear's
    value lies past front + 1, else front's. With nothing matched on the left: a start is 0 (or
    rear's value when that is 0), an end rear - 1 (or 0); with nothing on the right and `m`
    given: a start front + 1 and an end m - 1 while front < m - 1, else front's value.
    """
    if index[pos] is not None:
        return index[pos]
    n = len(index)
    rear = pos
    while rear < n - 1 and index[rear] is None:
        rear += 1
    front = pos
    while front > 0 and index[front] is None:
        front -= 1
    left, right = index[front], index[rear]
    if left is None and right is None:
        raise ValueError("convert_index: no matched position")
    if left is None:
        if right >= 1:
            return 0 if is_start else right - 1
        return right
    if right is None:
        if m is not None and left < m - 1:
            return left + 1 if is_start else m - 1
        return left
    if right > left + 1:
        return left + 1 if is_start else right - 1
    return right if is_start else left


class _Paragraph:
    """A paragraph's pieces, ids and piece-to-character maps (shared by its questions).

    Attributes:
      ids: list of the pieces' ids.
      tok_start_to_orig_index, tok_end_to_orig_index: lists, each piece's first / last
        paragraph character.
      chartok_to_tok_index: list, the piece of each piece-text character.
      alignment: the `Alignment`; kept: False when the original drops the paragraph's
        examples.
      spans: {max_tokens_for_doc: (doc spans, max_context_spans)} computed on first use.
    """

    __slots__ = ("ids", "tok_start_to_orig_index", "tok_end_to_orig_index",
                 "chartok_to_tok_index", "alignment", "kept", "spans", "length")

    def __init__(self, paragraph_text, sp_model, do_lower_case):
        pieces = encode_pieces(sp_model, preprocess_text(paragraph_text, lower=do_lower_case))
        self.length = len(paragraph_text)
        self.alignment, self.kept = align_paragraph(paragraph_text, pieces, do_lower_case)
        self.ids = [sp_model.PieceToId(piece) for piece in pieces]
        self.spans = {}
        if not self.kept:
            return
        chartok_to_tok, starts, ends = [], [], []
        for i, piece in enumerate(pieces):
            starts.append(len(chartok_to_tok))
            chartok_to_tok.extend([i] * len(piece))  # "▁" -> " " keeps the length
            ends.append(len(chartok_to_tok) - 1)
        self.chartok_to_tok_index = chartok_to_tok
        to_orig = self.alignment.chartok_to_orig_index
        n = self.length
        self.tok_start_to_orig_index = [convert_index(to_orig, s, n, is_start=True)
                                        for s in starts]
        self.tok_end_to_orig_index = [convert_index(to_orig, e, n, is_start=False)
                                      for e in ends]

    def windows(self, max_tokens_for_doc, doc_stride):
        value = self.spans.get(max_tokens_for_doc)
        if value is None:
            spans = make_doc_spans(len(self.ids), max_tokens_for_doc, doc_stride)
            value = self.spans[max_tokens_for_doc] = (
                spans, max_context_spans(spans, len(self.ids)))
        return value

    def answer_pieces(self, start, length):
        """(first, last) piece of the paragraph characters [start, start + length)."""
        to_chartok = self.alignment.orig_to_chartok_index
        first = convert_index(to_chartok, start, is_start=True)
        last = convert_index(to_chartok, start + length - 1, is_start=False)
        return self.chartok_to_tok_index[first], self.chartok_to_tok_index[last]


class InputFeatures:
    """One window of one example, with the original's attributes (lists built on access).

    Attributes (the original's):
      unique_id, doc_span_index: int; example_index: int (None for training, as the original).
      tok_start_to_orig_index, tok_end_to_orig_index: lists, the window's pieces' first / last
        paragraph characters.
      token_is_max_context: dict output position -> bool, for the window's pieces.
      tokens: list of max_seq_length str, the pieces of input_ids (padding "<pad>" included).
      input_ids, input_mask, segment_ids, p_mask: lists of max_seq_length ints.
      paragraph_len: the number of real positions (query, window and the three special ids).
      start_position, end_position: ints (training), else None.
      is_impossible: bool (training: no answer in this window; prediction: False).
    Ours:
      doc_offset: the position of the window's first piece (len(query) + 2).
      doc_start, doc_length: the window within the paragraph's pieces.
    """

    __slots__ = ("unique_id", "example_index", "doc_span_index", "start_position",
                 "end_position", "is_impossible", "_paragraph", "_best_span", "_query_ids",
                 "doc_start", "doc_length", "max_seq_length", "_special", "_sp_model")

    def __init__(self, unique_id, example_index, doc_span_index, paragraph, best_span,
                 query_ids, doc_start, doc_length, max_seq_length, special_ids, sp_model,
                 start_position=None, end_position=None, is_impossible=False):
        self.unique_id = unique_id
        self.example_index = example_index
        self.doc_span_index = doc_span_index
        self._paragraph = paragraph
        self._best_span = best_span
        self._query_ids = query_ids
        self.doc_start = doc_start
        self.doc_length = doc_length
        self.max_seq_length = max_seq_length
        self._special = special_ids
        self._sp_model = sp_model
        self.start_position = start_position
        self.end_position = end_position
        self.is_impossible = is_impossible

    @property
    def doc_offset(self):
        return len(self._query_ids) + 2

    @property
    def paragraph_len(self):
        return self.doc_offset + self.doc_length + 1

    def _window(self, values):
        return values[self.doc_start:self.doc_start + self.doc_length]

    @property
    def tok_start_to_orig_index(self):
        return self._window(self._paragraph.tok_start_to_orig_index)

    @property
    def tok_end_to_orig_index(self):
        return self._window(self._paragraph.tok_end_to_orig_index)

    @property
    def token_is_max_context(self):
        offset, j = self.doc_offset, self.doc_span_index
        return {offset + i: b == j for i, b in enumerate(self._window(self._best_span))}

    def _padding(self):
        return self.max_seq_length - self.paragraph_len

    @property
    def input_ids(self):
        cls, sep = self._special
        return ([cls] + self._query_ids + [sep] + self._window(self._paragraph.ids) + [sep] +
                [0] * self._padding())

    @property
    def tokens(self):
        return [self._sp_model.IdToPiece(i) for i in self.input_ids]

    @property
    def input_mask(self):
        return [1] * self.paragraph_len + [0] * self._padding()

    @property
    def segment_ids(self):
        return [0] * self.doc_offset + [1] * (self.doc_length + 1) + [0] * self._padding()

    @property
    def p_mask(self):
        return ([0] + [1] * (len(self._query_ids) + 1) + [0] * self.doc_length +
                [1] * (1 + self._padding()))


@dataclasses.dataclass
class ConversionSummary:
    """What `convert_examples_to_features` did: features written (with an answer in their
    window / without), examples dropped by the alignment ("MISMATCH DETECTED!")."""

    num_features: int = 0
    num_positive: int = 0
    num_negative: int = 0
    num_mismatched: int = 0


def check_feature_settings(max_seq_length, doc_stride, max_query_length):
    """ValueError unless a window has room ([CLS] query [SEP] window [SEP]) and advances."""
    if max_seq_length <= max_query_length + 3:
        raise ValueError(
            f"The max_seq_length ({max_seq_length}) must be greater than max_query_length "
            f"({max_query_length}) + 3")
    if doc_stride <= 0:
        raise ValueError(
            f"doc_stride must be positive, got {doc_stride} (the windows would never advance)")
    if max_query_length < 0:
        raise ValueError(f"max_query_length must be >= 0, got {max_query_length}")


def convert_examples_to_features(examples, tokenizer, max_seq_length, doc_stride,
                                 max_query_length, is_training, output_fn, do_lower_case):
    """Cuts each example into windows and calls `output_fn(InputFeatures)` for each, in order.

    Args:
      examples: list of SquadExample (training examples pre-shuffled by the caller, as the
        original's scripts do with `random.Random(12345)`).
      tokenizer: has `sp_model`, a loaded SentencePiece model (ALBERT's SQuAD is SentencePiece
        only, as the original's).
      max_seq_length, doc_stride, max_query_length: the run_squad_v1/v2 flags (384, 128, 64).
      is_training: set start / end positions and is_impossible.
      output_fn: called with each InputFeatures.
      do_lower_case: lower-case the question and the paragraph (and each compared character).

    Returns:
      ConversionSummary.

    Raises:
      ValueError: bad settings (`check_feature_settings`), a tokenizer without SentencePiece,
        or a training answer the alignment maps backwards (the original's assertion), naming
        the question.
    """
    check_feature_settings(max_seq_length, doc_stride, max_query_length)
    sp_model = getattr(tokenizer, "sp_model", None)
    if sp_model is None:
        raise ValueError("ALBERT's SQuAD features need a SentencePiece model (--spm_model_file)")
    special_ids = (sp_model.PieceToId("[CLS]"), sp_model.PieceToId("[SEP]"))
    paragraphs = {}  # paragraph text -> _Paragraph: each paragraph aligned once
    summary = ConversionSummary()
    unique_id = FIRST_UNIQUE_ID
    for example_index, example in enumerate(examples):
        if example_index % 100 == 0:
            logging.info("Converting %d/%d pos %d neg %d", example_index, len(examples),
                         summary.num_positive, summary.num_negative)
        query_ids = encode_ids(sp_model, preprocess_text(example.question_text,
                                                         lower=do_lower_case))
        query_ids = query_ids[:max_query_length]
        paragraph = paragraphs.get(example.paragraph_text)
        if paragraph is None:
            paragraph = paragraphs[example.paragraph_text] = _Paragraph(
                example.paragraph_text, sp_model, do_lower_case)
        if not paragraph.kept:
            logging.info(MISMATCH_MESSAGE)
            summary.num_mismatched += 1
            continue
        tok_start = tok_end = None
        if is_training and example.is_impossible:
            tok_start = tok_end = 0
        elif is_training:
            tok_start, tok_end = paragraph.answer_pieces(example.start_position,
                                                         len(example.orig_answer_text))
            if tok_start > tok_end:
                raise ValueError(
                    f"question id {example.qas_id!r}: the answer {example.orig_answer_text!r} "
                    f"at character {example.start_position} maps to pieces {tok_start} > "
                    f"{tok_end}")
        doc_spans, best_span = paragraph.windows(max_seq_length - len(query_ids) - 3,
                                                 doc_stride)
        doc_offset = len(query_ids) + 2
        for doc_span_index, (doc_start, doc_length) in enumerate(doc_spans):
            start_position = end_position = None
            impossible = example.is_impossible
            if is_training:
                if impossible or not (doc_start <= tok_start and
                                      tok_end <= doc_start + doc_length - 1):
                    start_position = end_position = 0
                    impossible = True
                else:
                    start_position = tok_start - doc_start + doc_offset
                    end_position = tok_end - doc_start + doc_offset
            feature = InputFeatures(
                unique_id, None if is_training else example_index, doc_span_index, paragraph,
                best_span, query_ids, doc_start, doc_length, max_seq_length, special_ids,
                sp_model, start_position, end_position, impossible)
            if example_index < NUM_LOGGED_EXAMPLES:
                _log_feature(feature, example_index, is_training, sp_model)
            output_fn(feature)
            unique_id += 1
            summary.num_features += 1
            if impossible:
                summary.num_negative += 1
            else:
                summary.num_positive += 1
    logging.info("Total number of instances: %d = pos %d neg %d", summary.num_features,
                 summary.num_positive, summary.num_negative)
    if summary.num_mismatched:
        logging.info("%d examples dropped: their pieces do not align with their paragraph",
                     summary.num_mismatched)
    return summary


def _log_feature(feature, example_index, is_training, sp_model):
    logging.info("*** Example ***")
    logging.info("unique_id: %s", feature.unique_id)
    logging.info("example_index: %s", example_index)
    logging.info("doc_span_index: %s", feature.doc_span_index)
    logging.info("tok_start_to_orig_index: %s",
                 " ".join(map(str, feature.tok_start_to_orig_index)))
    logging.info("tok_end_to_orig_index: %s", " ".join(map(str, feature.tok_end_to_orig_index)))
    logging.info("token_is_max_context: %s", " ".join(
        "%d:%s" % item for item in feature.token_is_max_context.items()))
    input_ids = feature.input_ids
    logging.info("input_pieces: %s", " ".join(
        sp_model.IdToPiece(i) for i in input_ids[:feature.paragraph_len]))
    logging.info("input_ids: %s", " ".join(map(str, input_ids)))
    logging.info("input_mask: %s", " ".join(map(str, feature.input_mask)))
    logging.info("segment_ids: %s", " ".join(map(str, feature.segment_ids)))
    if is_training and feature.is_impossible:
        logging.info("impossible example span")
    elif is_training:
        pieces = [sp_model.IdToPiece(i)
                  for i in input_ids[feature.start_position:feature.end_position + 1]]
        logging.info("start_position: %d", feature.start_position)
        logging.info("end_position: %d", feature.end_position)
        logging.info("answer: %s", printable_text(sp_model.DecodePieces(pieces)))


# ---------------------------------------------------------------------------------------------
# Records

def _record_feature_names(is_training):
    names = ["unique_ids", "input_ids", "input_mask", "segment_ids", "p_mask"]
    if is_training:
        names += ["start_positions", "end_positions", "is_impossible"]
    return names


def record_feature_spec(max_seq_length, is_training, is_v2):
    """The parsing spec of the original's `input_fn_builder`.

    Returns:
      dict name -> tf.io.FixedLenFeature int64: unique_ids [], input_ids / input_mask /
      segment_ids [max_seq_length], p_mask [max_seq_length] for v2 only (written for both);
      training adds start_positions, end_positions, is_impossible [].
    """
    import tensorflow as tf  # pylint: disable=g-import-not-at-top

    spec = {
        "unique_ids": tf.io.FixedLenFeature([], tf.int64),
        "input_ids": tf.io.FixedLenFeature([max_seq_length], tf.int64),
        "input_mask": tf.io.FixedLenFeature([max_seq_length], tf.int64),
        "segment_ids": tf.io.FixedLenFeature([max_seq_length], tf.int64),
    }
    if is_v2:
        spec["p_mask"] = tf.io.FixedLenFeature([max_seq_length], tf.int64)
    if is_training:
        for name in ("start_positions", "end_positions", "is_impossible"):
            spec[name] = tf.io.FixedLenFeature([], tf.int64)
    return spec


class FeatureWriter(RoundRobinRecordWriter):
    """Writes InputFeatures as the original's `tf.train.Example` records.

    Bytes are protobuf's deterministic serialization (map keys sorted); the original's differ
    only in map order, so parsed records are equal. Records go to `<filename>.incomplete`,
    renamed to `filename` by `close()`; `abort()` (or leaving the `with` block by an exception)
    removes it. Accepts any object with the original's InputFeatures attributes.
    """

    def __init__(self, filename, is_training):
        self.filename = str(filename)
        super().__init__([self.filename])
        self.is_training = is_training
        self._heads = [(name, Int64EntryHeads(name))
                       for name in sorted(_record_feature_names(is_training))]

    @property
    def num_features(self):
        return self.num_written

    def encode(self, feature):
        """The serialized Example of one feature (bytes)."""
        values = {
            "unique_ids": varint(feature.unique_id),
            "input_ids": b"".join(map(varint, feature.input_ids)),
            "input_mask": bytes(feature.input_mask),
            "segment_ids": bytes(feature.segment_ids),
            "p_mask": bytes(feature.p_mask),
        }
        if self.is_training:
            values["start_positions"] = varint(feature.start_position)
            values["end_positions"] = varint(feature.end_position)
            values["is_impossible"] = b"\x01" if feature.is_impossible else b"\x00"
        body = b"".join(heads[len(values[name])] + values[name] for name, heads in self._heads)
        return b"\x0a" + varint(len(body)) + body

    def process_feature(self, feature):
        self.write(self.encode(feature))


# ---------------------------------------------------------------------------------------------
# The prediction features file (--predict_feature_left_file)

# The attributes of the original's InputFeatures, which its prediction code reads.
FEATURE_ATTRIBUTES = ("unique_id", "example_index", "doc_span_index", "tok_start_to_orig_index",
                      "tok_end_to_orig_index", "token_is_max_context", "tokens", "input_ids",
                      "input_mask", "segment_ids", "paragraph_len", "start_position",
                      "end_position", "is_impossible", "p_mask")
# The original pickles its features as objects of this class (run as `python -m albert.*`).
_ORIGINAL_CLASS = b"albert.squad_utils\nInputFeatures\n"


class FeatureRecord:
    """One window's features as plain attributes (FEATURE_ATTRIBUTES): what `load_features`
    returns."""

    def __init__(self, **attributes):
        self.__dict__.update(attributes)


class _OriginalFeatures:
    """Stands for the original's class while pickling (see `save_features`)."""


def save_features(path, features):
    """Writes `features` (InputFeatures or FeatureRecords) to `path` as the original's
    --predict_feature_left_file: a pickle of a list of `albert.squad_utils.InputFeatures`
    objects with the original's attributes, so the original reads ours and `load_features`
    reads both. Written whole (`files.write_atomic`)."""
    stand_ins = []
    for feature in features:
        stand_in = _OriginalFeatures()
        stand_in.__dict__.update((name, getattr(feature, name)) for name in FEATURE_ATTRIBUTES)
        stand_ins.append(stand_in)
    # Protocol 2 names a class once, by a GLOBAL opcode before the first object's state (later
    # objects refer to it by memo): that name becomes the original's class.
    data = pickle.dumps(stand_ins, protocol=2)
    ours = b"c" + f"{__name__}\n{_OriginalFeatures.__qualname__}\n".encode()
    at = data.find(ours)
    if stand_ins:
        if not 0 <= at < 16:
            raise AssertionError(f"unexpected pickle layout ({at})")
        data = data[:at] + b"c" + _ORIGINAL_CLASS + data[at + len(ours):]
    files.write_atomic(path, data)


class _FeatureUnpickler(pickle.Unpickler):
    """Loads only the original's InputFeatures class (as FeatureRecord): the file is data, not
    code."""

    def find_class(self, module, name):
        if name == "InputFeatures" and module.rsplit(".", 1)[-1] == "squad_utils":
            return FeatureRecord
        raise pickle.UnpicklingError(f"it holds {module}.{name}, not squad_utils' features")


def load_features(path):
    """The features of a --predict_feature_left_file (ours or the original's): list of
    FeatureRecord. Raises SquadDataError naming the file when it is not one."""
    path = os.fspath(path)
    try:
        with open(path, "rb") if "://" not in path else files.tf_gfile().GFile(path, "rb") as f:
            features = _FeatureUnpickler(f).load()
    except FileNotFoundError:
        raise SquadDataError(f"{path}: no such file") from None
    except (pickle.UnpicklingError, EOFError, ValueError, TypeError, AttributeError,
            IndexError, KeyError) as e:
        raise SquadDataError(f"{path}: not a file of SQuAD features ({e})") from None
    if not isinstance(features, list) or not all(
            isinstance(f, FeatureRecord) and all(hasattr(f, a) for a in FEATURE_ATTRIBUTES)
            for f in features):
        raise SquadDataError(f"{path}: not a list of SQuAD features with the original's "
                             "attributes")
    return features
