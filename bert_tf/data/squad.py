"""SQuAD 1.1 / 2.0 data: the JSON reader, the windowed features and their TFRecords.

Exactly what google-research/bert's run_squad.py produces (FINETUNING.md §2.2-2.3), with every
setting a parameter (the original reads `version_2_with_negative` from its global FLAGS).

Reading (`read_squad_examples`):
  - a context is split into words on five characters only: space, tab, CR, LF and U+202F
    (NBSP and every other space stay inside words); all questions of a paragraph share one word
    list;
  - training: the answer's word span comes from `answer_start` and the answer's length; when
    those words, joined with spaces, do not contain the answer text (its whitespace collapsed),
    the question is skipped with the original's warning "Could not find answer: ...". An answer
    that starts or ends inside a word is kept with the whole words (the original's substring
    check), so is an `answer_start` off by a few characters within the same words;
  - 2.0 (`version_2_with_negative`): training reads `is_impossible`; an impossible question has
    span (-1, -1) and answer text "". Prediction never reads answers.

Features (`convert_examples_to_features`): the query is cut to `max_query_length` pieces, each
word is tokenized (WordPiece for BERT), the training answer is narrowed to the tightest piece
span equal to the tokenized answer, the document is cut into windows of
`max_seq_length - len(query) - 3` pieces advanced by `min(window, doc_stride)`, and each window
becomes one feature `[CLS] query [SEP] window [SEP]` with a `unique_id` counting from
1000000000. A training answer not entirely inside a window (and every impossible question) gets
start = end = 0. [CLS], [SEP] and the word-boundary rule of the answer narrowing are the
tokenizer's (its `special_tokens`); every piece belongs to the word it was tokenized from.

Pieces that mark word starts (SentencePiece's "▁") with a tokenizer that gives each piece's
characters (`tokenize_with_offsets`: ALBERT's): the words are still split as above and
tokenized one by one (SentencePiece pieces never cross whitespace, so they are the pieces of
the whole text), but each piece also carries the characters of the context it stands for
(`_Document.char_starts` / `char_ends`). The training answer is then the pieces holding
characters of `[answer_start, answer_start + len(text))` (not the token matching of
`_improve_answer_span`), and a predicted span's text is the context's characters from its
first piece to its last (`bert_tf.evaluation.squad_predictions`), not `get_final_text`'s
BasicTokenizer projection, which cannot undo SentencePiece's normalisation (its spacing
around punctuation, "1,000" as "▁1" "," "000", NFKD). The examples keep the context and
where each word starts in it for this (`paragraph_text`, `word_starts`, `answer_start`).
WordPiece tokenizers (BERT's) go the original's way, unchanged.

Where we differ from the original, each time where it crashes, hangs or silently goes wrong:
  - a file that is not SQuAD JSON, a question without id / question / answers, an answer without
    text / answer_start, and 2.0 training data without `is_impossible`: `SquadDataError` naming
    the file and the question id (the original: KeyError / TypeError tracebacks);
  - an `answer_start` outside its context (negative: the original silently takes a word from the
    end; past the end: IndexError), or an empty answer text: `SquadDataError`;
  - a question marked `is_impossible: true` without `version_2_with_negative`: `SquadDataError`
    naming the flag (the original fails in training with "exactly 1 answer" and, in prediction,
    silently predicts an answer for every question);
  - `doc_stride <= 0` (the original loops forever) and `max_seq_length <= max_query_length + 3`
    (no room for the document): ValueError. A `doc_stride` larger than the window is allowed:
    the original then advances by the window length, so windows just do not overlap.

Speed (same output): each distinct word is WordPiece-tokenized once per call, each paragraph
once (not once per question), windows and max-context flags once per paragraph and query
length, and the max-context flags in one pass over the windows instead of one pass per token.
`InputFeatures` keeps references to those per-paragraph arrays instead of its own token lists
and dicts; `tokens`, `token_to_orig_map`, `token_is_max_context`, `input_ids`, `input_mask` and
`segment_ids` are built on access, equal to the original's.

This module does not import TensorFlow (only `record_feature_spec` does).
"""

import array
import bisect
import collections
import json
import re

from absl import logging

from bert_tf.data.features import Int64EntryHeads, varint
from bert_tf.data.writer import RoundRobinRecordWriter
from bert_tf.families import default_special_tokens, special_tokens_of
from bert_tf.text import printable_text, whitespace_tokenize

__all__ = [
    "SquadDataError",
    "SquadExample",
    "InputFeatures",
    "DocSpan",
    "FeatureWriter",
    "read_squad_examples",
    "convert_examples_to_features",
    "record_feature_spec",
    "FIRST_UNIQUE_ID",
]

FIRST_UNIQUE_ID = 1000000000
NUM_LOGGED_EXAMPLES = 20

# The only characters the original's reader splits context words on.
_WORD = re.compile("[^ \t\r\n\u202f]+")


class SquadDataError(ValueError):
    """A SQuAD file or setting that cannot be used (names the file, question id or flag)."""


class SquadExample:
    """One question on one paragraph.

    Attributes:
      qas_id: the question's "id".
      question_text: str, as in the file (not stripped).
      doc_tokens: list of str, the paragraph's words (shared by its questions).
      orig_answer_text: str (training), "" for an impossible question, None in prediction.
      start_position, end_position: int word indexes of the answer (training; -1 when
        impossible), None in prediction.
      is_impossible: bool (2.0 training only; False otherwise).
    Ours (None when the example was built without them, e.g. by the original's code):
      paragraph_text: str, the context as in the file (shared by its questions).
      word_starts: list of int, the character where each word of `doc_tokens` starts in it.
      answer_start: int, the training answer's first character in it (None for an impossible
        question).
    A tokenizer that gives each piece's characters (`tokenize_with_offsets`) aligns answers by
    these; see `convert_examples_to_features`.
    """

    __slots__ = ("qas_id", "question_text", "doc_tokens", "orig_answer_text", "start_position",
                 "end_position", "is_impossible", "paragraph_text", "word_starts",
                 "answer_start")

    def __init__(self, qas_id, question_text, doc_tokens, orig_answer_text=None,
                 start_position=None, end_position=None, is_impossible=False,
                 paragraph_text=None, word_starts=None, answer_start=None):
        self.qas_id = qas_id
        self.question_text = question_text
        self.doc_tokens = doc_tokens
        self.orig_answer_text = orig_answer_text
        self.start_position = start_position
        self.end_position = end_position
        self.is_impossible = is_impossible
        self.paragraph_text = paragraph_text
        self.word_starts = word_starts
        self.answer_start = answer_start

    def __repr__(self):
        return (f"SquadExample(qas_id={self.qas_id!r}, question_text={self.question_text!r}, "
                f"{len(self.doc_tokens)} words, answer={self.orig_answer_text!r} "
                f"[{self.start_position}, {self.end_position}], "
                f"is_impossible={self.is_impossible})")


# ---------------------------------------------------------------------------------------------
# Reading


def load_json(input_file):
    """The parsed JSON of `input_file` (local, or with a scheme through tf.io.gfile);
    SquadDataError naming the file when it is missing, a directory, not UTF-8 or not JSON."""
    path = str(input_file)
    try:
        if "://" in path:
            import tensorflow as tf  # pylint: disable=g-import-not-at-top  (remote paths only)

            with tf.io.gfile.GFile(path, "r") as f:
                return json.load(f)
        with open(path, encoding="utf-8") as f:
            return json.load(f)
    except FileNotFoundError:
        raise SquadDataError(f"{path}: no such file") from None
    except IsADirectoryError:
        raise SquadDataError(f"{path}: is a directory, expected a SQuAD JSON file") from None
    except UnicodeDecodeError as e:
        raise SquadDataError(f"{path}: not UTF-8 text ({e})") from None
    except json.JSONDecodeError as e:
        raise SquadDataError(f"{path}: not JSON ({e})") from None


def json_field(obj, key, types, where):
    """obj[key], checked to be of one of `types`; `where` says what obj is in the file."""
    if not isinstance(obj, dict):
        raise SquadDataError(f"{where}: expected a JSON object, found {type(obj).__name__}")
    if key not in obj:
        raise SquadDataError(f"{where}: no {key!r}")
    value = obj[key]
    if not isinstance(value, types) or isinstance(value, bool) and bool not in types:
        names = " or ".join(t.__name__ for t in types)
        raise SquadDataError(f"{where}: {key!r} must be {names}, found {value!r:.60}")
    return value


def split_context(paragraph_text):
    """The original's word split: (words, start character of each word).

    Words are maximal runs of characters other than space, tab, CR, LF and U+202F. The
    original's `char_to_word_offset[c]` is `bisect_right(word_starts, c) - 1`.
    """
    words, starts = [], []
    for match in _WORD.finditer(paragraph_text):
        words.append(match.group())
        starts.append(match.start())
    return words, starts


def context_of(example):
    """(paragraph_text, word_starts) of an example: as read from the file, or, for an example
    built without them, its words joined by single spaces and where each starts there."""
    if example.paragraph_text is not None and example.word_starts is not None:
        return example.paragraph_text, example.word_starts
    starts, position = [], 0
    for word in example.doc_tokens:
        starts.append(position)
        position += len(word) + 1
    return " ".join(example.doc_tokens), starts


def read_squad_examples(input_file, is_training, version_2_with_negative=False):
    """Reads a SQuAD JSON file (`{"data": [{"paragraphs": [{"context", "qas"}]}]}`).

    Args:
      input_file: path (local, or with a scheme through tf.io.gfile).
      is_training: read the answers (exactly one per possible question) and skip, with the
        original's warning, those whose text is not found in their word span.
      version_2_with_negative: the data is SQuAD 2.0 (questions may be `is_impossible`).

    Returns:
      list of SquadExample, in file order.

    Raises:
      SquadDataError: see the module docstring; the message names the file and question id.
    """
    path = str(input_file)
    data = json_field(load_json(path), "data", (list,), f"{path}: top level")
    examples = []
    for entry_index, entry in enumerate(data):
        entry_where = f"{path}: data[{entry_index}]"
        paragraphs = json_field(entry, "paragraphs", (list,), entry_where)
        for paragraph_index, paragraph in enumerate(paragraphs):
            where = f"{entry_where}.paragraphs[{paragraph_index}]"
            context = json_field(paragraph, "context", (str,), where)
            qas = json_field(paragraph, "qas", (list,), where)
            doc_tokens, word_starts = split_context(context)
            for qa_index, qa in enumerate(qas):
                qa_where = f"{where}.qas[{qa_index}]"
                qas_id = json_field(qa, "id", (str, int), qa_where)
                qa_where = f"{path}: question id {qas_id!r}"
                question_text = json_field(qa, "question", (str,), qa_where)
                if qa.get("is_impossible") and not version_2_with_negative:
                    raise SquadDataError(
                        f"{qa_where} is marked is_impossible (SQuAD 2.0 data): pass "
                        "version_2_with_negative=True (--version_2_with_negative)")
                example = SquadExample(qas_id, question_text, doc_tokens,
                                       paragraph_text=context, word_starts=word_starts)
                if is_training and not _read_answer(
                        example, qa, qa_where, context, word_starts, version_2_with_negative):
                    continue
                examples.append(example)
    return examples


def _read_answer(example, qa, where, context, word_starts, version_2_with_negative):
    """Fills the training answer of `example`; False when the original skips the question."""
    is_impossible = False
    if version_2_with_negative:
        if "is_impossible" not in qa:
            raise SquadDataError(
                f"{where}: no 'is_impossible' (every question of SQuAD 2.0 training data needs "
                "it; is this 1.1 data read with version_2_with_negative=True?)")
        is_impossible = bool(qa["is_impossible"])
    example.is_impossible = is_impossible
    if is_impossible:
        example.start_position = example.end_position = -1
        example.orig_answer_text = ""
        return True
    answers = json_field(qa, "answers", (list,), where)
    if len(answers) != 1:
        raise SquadDataError(
            f"{where}: {len(answers)} answers; for training, each question should have exactly "
            "1 answer")
    text = json_field(answers[0], "text", (str,), f"{where}, answer")
    answer_start = json_field(answers[0], "answer_start", (int,), f"{where}, answer")
    cleaned = " ".join(whitespace_tokenize(text))
    if not cleaned:
        raise SquadDataError(f"{where}: the answer text {text!r} is empty")
    if answer_start < 0 or answer_start + len(text) > len(context):
        raise SquadDataError(
            f"{where}: answer_start {answer_start} with a {len(text)}-character answer lies "
            f"outside its {len(context)}-character context")
    doc_tokens = example.doc_tokens
    start = bisect.bisect_right(word_starts, answer_start) - 1
    end = bisect.bisect_right(word_starts, answer_start + len(text) - 1) - 1
    # start is -1 when answer_start falls in whitespace before the first word; the slice then
    # behaves as the original's.
    actual_text = " ".join(doc_tokens[start:end + 1])
    if actual_text.find(cleaned) == -1:
        logging.warning("Could not find answer: '%s' vs. '%s'", actual_text, cleaned)
        return False
    example.orig_answer_text = text
    example.start_position = start
    example.end_position = end
    example.answer_start = answer_start
    return True


# ---------------------------------------------------------------------------------------------
# Features

DocSpan = collections.namedtuple("DocSpan", ["start", "length"])


def make_doc_spans(num_tokens, max_tokens_for_doc, doc_stride):
    """The original's sliding windows over `num_tokens` pieces: list of DocSpan.

    Windows of `max_tokens_for_doc` pieces (the last one shorter) advanced by
    `min(length, doc_stride)`; none for an empty document.
    """
    spans = []
    start = 0
    while start < num_tokens:
        length = min(num_tokens - start, max_tokens_for_doc)
        spans.append(DocSpan(start, length))
        if start + length == num_tokens:
            break
        start += min(length, doc_stride)
    return spans


def max_context_spans(doc_spans, num_tokens):
    """For each piece position, the index of the window giving it the most context.

    A window scores a position `min(left, right) + 0.01 * length`; a later window must score
    strictly more to win, so ties go to the earlier window. One pass over the windows, equal to
    the original's `_check_is_max_context` asked for every position.

    Returns:
      list of num_tokens ints (-1 where no window covers the position).
    """
    best_span = [-1] * num_tokens
    if len(doc_spans) == 1:
        start, length = doc_spans[0]
        best_span[start:start + length] = [0] * length
        return best_span
    best_score = [None] * num_tokens
    for span_index, (start, length) in enumerate(doc_spans):
        end = start + length - 1
        for position in range(start, end + 1):
            score = min(position - start, end - position) + 0.01 * length
            current = best_score[position]
            if current is None or score > current:
                best_score[position] = score
                best_span[position] = span_index
    return best_span


def _check_is_max_context(doc_spans, cur_span_index, position):
    """Whether window `cur_span_index` gives `position` its most context (the original's API)."""
    num_tokens = max([position + 1] + [start + length for start, length in doc_spans])
    return max_context_spans(doc_spans, num_tokens)[position] == cur_span_index


def _improve_answer_span(doc_tokens, input_start, input_end, tokenizer, orig_answer_text):
    """The tightest piece span within [input_start, input_end] whose pieces, joined with spaces,
    equal the tokenized answer (first by start, then longest); else the span unchanged.

    E.g. the word "(1895-1943)." for the answer "1895" becomes the single piece "1895".

    The tokenizer's word-boundary rule: where pieces mark a word's START (SentencePiece's "▁",
    byte-level BPE's "Ġ"), the answer tokenized alone starts a word, which inside a context word
    it need not ("(1895-1943)." -> "▁(", "1895", ...), so its first piece also matches without
    the mark (a lone mark piece dropped). WordPiece's "##" needs no such rule: BasicTokenizer
    makes punctuation-split parts words of their own, so there it is the original's test.
    """
    answer_tokens = tokenizer.tokenize(orig_answer_text)
    targets = {" ".join(answer_tokens)}
    prefix = special_tokens_of(tokenizer).word_start_prefix
    if prefix and answer_tokens and answer_tokens[0].startswith(prefix):
        inside_word = [answer_tokens[0][len(prefix):], *answer_tokens[1:]]
        targets.add(" ".join(inside_word if inside_word[0] else inside_word[1:]))
    for new_start in range(input_start, input_end + 1):
        for new_end in range(input_end, new_start - 1, -1):
            if " ".join(doc_tokens[new_start:new_end + 1]) in targets:
                return new_start, new_end
    return input_start, input_end


class _Document:
    """One paragraph's pieces, shared by all its questions and their features.

    Attributes:
      tokens: list of str, every word's word pieces in order (the original's
        `all_doc_tokens`).
      ids: list of int, their ids.
      tok_to_orig_index: array of int, the word of each piece.
      orig_to_tok_index: array of int, the first piece of each word (the next word's first piece
        for a word without pieces).
      char_starts, char_ends: arrays of int, the characters of the paragraph's text each piece
        stands for, [start, end) (empty for a piece standing for none, e.g. a lone "▁"), when
        the tokenizer gives them (`tokenize_with_offsets`); else None.
      windows: dict max_tokens_for_doc -> (list of DocSpan, max_context_spans list).
    """

    __slots__ = ("tokens", "ids", "tok_to_orig_index", "orig_to_tok_index", "char_starts",
                 "char_ends", "windows")

    def __init__(self, doc_words, word_ids, inv_vocab, word_offsets=None, word_starts=None):
        ids = []
        tok_to_orig = array.array("i")
        orig_to_tok = array.array("i")
        self.char_starts = self.char_ends = None
        if word_offsets is not None:
            self.char_starts, self.char_ends = array.array("i"), array.array("i")
        for i, word in enumerate(doc_words):
            orig_to_tok.append(len(ids))
            if word_offsets is None:
                pieces = word_ids(word)
            else:
                pieces, spans = word_offsets(word)
                start = word_starts[i]
                self.char_starts.extend(start + a for a, _ in spans)
                self.char_ends.extend(start + b for _, b in spans)
            ids += pieces
            tok_to_orig.extend([i] * len(pieces))
        self.ids = ids
        self.tokens = [inv_vocab[i] for i in ids]
        self.tok_to_orig_index = tok_to_orig
        self.orig_to_tok_index = orig_to_tok
        self.windows = {}

    def answer_pieces(self, first, last, answer_start, answer_end):
        """The pieces among [first, last] that hold characters of the answer
        [answer_start, answer_end): (first piece, last piece), or (first, last) when none
        does."""
        starts, ends = self.char_starts, self.char_ends
        inside = [i for i in range(first, last + 1)
                  if starts[i] < ends[i] and starts[i] < answer_end and ends[i] > answer_start]
        return (inside[0], inside[-1]) if inside else (first, last)

    def span_text(self, context, first, last):
        """The characters of `context` from piece `first`'s first to piece `last`'s last
        (whitespace at the ends stripped), "" when they hold none."""
        start, end = self.char_starts[first], self.char_ends[last]
        return context[start:end].strip() if end > start else ""

    def spans(self, max_tokens_for_doc, doc_stride):
        value = self.windows.get(max_tokens_for_doc)
        if value is None:
            spans = make_doc_spans(len(self.ids), max_tokens_for_doc, doc_stride)
            value = self.windows[max_tokens_for_doc] = (
                spans, max_context_spans(spans, len(self.ids)))
        return value


class InputFeatures:
    """One window of one example, as the original's InputFeatures (fields built on access).

    Attributes (the original's):
      unique_id, example_index, doc_span_index: int.
      tokens: list of str, `[CLS] query [SEP] window [SEP]` (unpadded; [CLS] and [SEP] are the
        tokenizer's `special_tokens.cls` / `.sep`).
      token_to_orig_map: dict output position -> word index, for the window's pieces, in order.
      token_is_max_context: dict output position -> bool, same keys.
      input_ids, input_mask, segment_ids: lists of max_seq_length ints.
      start_position, end_position: int output positions of the answer (training), else None.
      is_impossible: bool.
    Compact form (ours):
      doc_offset: output position of the window's first piece (`len(query) + 2` for BERT).
      doc_start, doc_length: the window's pieces within the paragraph's pieces.
      document: the shared `_Document`.
      best_span: the shared list of `max_context_spans` of this example's windows.
      query_ids, query_tokens: the (cut) query's piece ids and pieces, shared by the windows.
      special_tokens: the tokenizer's `SpecialTokens` (shared).
      pad_id: what input_ids holds past the tokens (`SpecialTokens.pad_id`).
    """

    __slots__ = ("unique_id", "example_index", "doc_span_index", "start_position",
                 "end_position", "is_impossible", "document", "best_span", "query_ids",
                 "query_tokens", "doc_start", "doc_length", "max_seq_length", "_cls_sep",
                 "special_tokens", "pad_id")

    def __init__(self, unique_id, example_index, doc_span_index, document, best_span,
                 query_ids, query_tokens, doc_start, doc_length, max_seq_length, cls_sep,
                 special_tokens, start_position=None, end_position=None, is_impossible=False,
                 pad_id=0):
        self.unique_id = unique_id
        self.example_index = example_index
        self.doc_span_index = doc_span_index
        self.document = document
        self.best_span = best_span
        self.query_ids = query_ids
        self.query_tokens = query_tokens
        self.doc_start = doc_start
        self.doc_length = doc_length
        self.max_seq_length = max_seq_length
        self._cls_sep = cls_sep
        self.special_tokens = special_tokens
        self.pad_id = pad_id
        self.start_position = start_position
        self.end_position = end_position
        self.is_impossible = is_impossible

    @property
    def doc_offset(self):
        """The position of the window's first piece: after `[CLS] query [SEP]`."""
        return len(self.query_ids) + 1 + self.special_tokens.pair_separators

    @property
    def num_tokens(self):
        """len(tokens): query, window and the special tokens (three for BERT)."""
        return self.doc_offset + self.doc_length + 1

    def _lay_out(self, query, document, cls, sep):
        """`[CLS] query [SEP] window [SEP]` of tokens or ids (a window is never empty)."""
        s = self.doc_start
        return self.special_tokens.lay_out(query, document[s:s + self.doc_length], cls, sep)[0]

    @property
    def tokens(self):
        special = self.special_tokens
        return self._lay_out(self.query_tokens, self.document.tokens, special.cls, special.sep)

    @property
    def token_to_orig_map(self):
        s, offset = self.doc_start, self.doc_offset
        return dict(zip(range(offset, offset + self.doc_length),
                        self.document.tok_to_orig_index[s:s + self.doc_length]))

    def max_context_flags(self):
        """list of bool: whether this window gives each of its pieces the most context."""
        j, s = self.doc_span_index, self.doc_start
        return [b == j for b in self.best_span[s:s + self.doc_length]]

    @property
    def token_is_max_context(self):
        offset = self.doc_offset
        return dict(zip(range(offset, offset + self.doc_length), self.max_context_flags()))

    @property
    def input_ids(self):
        ids = self._lay_out(self.query_ids, self.document.ids, *self._cls_sep)
        return ids + [self.pad_id] * (self.max_seq_length - len(ids))

    @property
    def input_mask(self):
        n = self.num_tokens
        return [1] * n + [0] * (self.max_seq_length - n)

    @property
    def segment_ids(self):
        a, b = self.doc_offset, self.doc_length + 1
        second = 1 if self.special_tokens.pair_segments else 0
        return [0] * a + [second] * b + [0] * (self.max_seq_length - a - b)


def _word_ids_function(tokenizer):
    """word -> list of piece ids, memoized for the call (each distinct word tokenized once)."""
    memo = {}
    if hasattr(tokenizer, "tokenize_to_ids"):
        tokenize = tokenizer.tokenize_to_ids
    else:
        def tokenize(text):
            return tokenizer.convert_tokens_to_ids(tokenizer.tokenize(text))

    def word_ids(word):
        ids = memo.get(word)
        if ids is None:
            ids = memo[word] = tokenize(word)
        return ids

    return word_ids


def _word_offsets_function(tokenizer):
    """word -> (piece ids, [(start, end)] character spans within the word), memoized for the
    call; None unless the tokenizer gives offsets (`tokenize_with_offsets`) for pieces that mark
    word starts. WordPiece's keep the original's alignment (its `##` pieces are mapped back to
    the text by `get_final_text`)."""
    method = getattr(tokenizer, "tokenize_with_offsets", None)
    if method is None or special_tokens_of(tokenizer).continuation_prefix is not None:
        return None
    memo = {}

    def word_offsets(word):
        value = memo.get(word)
        if value is None:
            pieces, spans = method(word)
            value = memo[word] = (tokenizer.convert_tokens_to_ids(pieces), spans)
        return value

    return word_offsets


def word_ids_of_text(tokenizer, text):
    """The piece ids of a whole text (the query)."""
    if hasattr(tokenizer, "tokenize_to_ids"):
        return tokenizer.tokenize_to_ids(text)
    return tokenizer.convert_tokens_to_ids(tokenizer.tokenize(text))


def check_feature_settings(max_seq_length, doc_stride, max_query_length, special_tokens=None):
    """ValueError unless the window has room and advances (see the module docstring);
    `special_tokens` (default: the default family's) say how many positions the layout takes."""
    special = special_tokens or default_special_tokens()
    reserved = max_seq_length - special.pair_budget(max_seq_length)  # 3 for BERT
    if max_seq_length <= max_query_length + reserved:
        raise ValueError(
            f"The max_seq_length ({max_seq_length}) must be greater than max_query_length "
            f"({max_query_length}) + {reserved}")
    if doc_stride <= 0:
        raise ValueError(
            f"doc_stride must be positive, got {doc_stride} (the windows would never advance)")
    if max_query_length < 0:
        raise ValueError(f"max_query_length must be >= 0, got {max_query_length}")


def convert_examples_to_features(examples, tokenizer, max_seq_length, doc_stride,
                                 max_query_length, is_training, output_fn):
    """Cuts each example into windows and calls `output_fn(InputFeatures)` for each, in order.

    Args:
      examples: list of SquadExample (training examples are pre-shuffled by the caller, as the
        original does with `random.Random(12345)`).
      tokenizer: a FullTokenizer (ours or the original's): `tokenize`, `convert_tokens_to_ids`,
        `inv_vocab`; its `special_tokens` (`families.special_tokens_of`) give the window's
        [CLS] and [SEP] and the word-boundary rule of the answer alignment.
      max_seq_length, doc_stride, max_query_length: the run_squad.py flags (384, 128, 64).
      is_training: set start/end positions (0 for an answer outside the window, or impossible).
      output_fn: called with each InputFeatures, unique_id counting from 1000000000.

    The first 20 examples' features are logged as the original logs them.
    """
    special = special_tokens_of(tokenizer)
    check_feature_settings(max_seq_length, doc_stride, max_query_length, special)
    try:
        cls_sep = tuple(tokenizer.convert_tokens_to_ids([special.cls, special.sep]))
    except KeyError as e:
        raise ValueError(f"the vocab has no {e.args[0]} token, which SQuAD features need") \
            from None
    inv_vocab = tokenizer.inv_vocab
    pad_id = special.pad_id(tokenizer.vocab)
    word_ids = _word_ids_function(tokenizer)
    word_offsets = _word_offsets_function(tokenizer)
    documents = {}  # id(doc_tokens) -> (doc_tokens, _Document): paragraphs tokenized once
    unique_id = FIRST_UNIQUE_ID
    for example_index, example in enumerate(examples):
        query_ids = word_ids_of_text(tokenizer, example.question_text)[:max_query_length]
        query_tokens = [inv_vocab[i] for i in query_ids]
        entry = documents.get(id(example.doc_tokens))
        if entry is None or entry[0] is not example.doc_tokens:
            entry = documents[id(example.doc_tokens)] = (
                example.doc_tokens, _Document(example.doc_tokens, word_ids, inv_vocab,
                                              word_offsets, context_of(example)[1]))
        document = entry[1]

        tok_start = tok_end = None
        if is_training and example.is_impossible:
            tok_start = tok_end = -1
        elif is_training:
            tok_start = document.orig_to_tok_index[example.start_position]
            if example.end_position < len(example.doc_tokens) - 1:
                tok_end = document.orig_to_tok_index[example.end_position + 1] - 1
            else:
                tok_end = len(document.ids) - 1
            if document.char_starts is not None and example.answer_start is not None:
                tok_start, tok_end = document.answer_pieces(
                    tok_start, tok_end, example.answer_start,
                    example.answer_start + len(example.orig_answer_text))
            else:
                tok_start, tok_end = _improve_answer_span(
                    document.tokens, tok_start, tok_end, tokenizer, example.orig_answer_text)

        max_tokens_for_doc = special.pair_budget(max_seq_length) - len(query_ids)
        doc_offset = len(query_ids) + 1 + special.pair_separators  # after [CLS] query [SEP]
        doc_spans, best_span = document.spans(max_tokens_for_doc, doc_stride)
        for doc_span_index, (doc_start, doc_length) in enumerate(doc_spans):
            start_position = end_position = None
            if is_training:
                if example.is_impossible or not (
                        tok_start >= doc_start and tok_end <= doc_start + doc_length - 1):
                    start_position = end_position = 0
                else:
                    start_position = tok_start - doc_start + doc_offset
                    end_position = tok_end - doc_start + doc_offset
            feature = InputFeatures(
                unique_id, example_index, doc_span_index, document, best_span, query_ids,
                query_tokens, doc_start, doc_length, max_seq_length, cls_sep, special,
                start_position, end_position, example.is_impossible,
                pad_id)
            if example_index < NUM_LOGGED_EXAMPLES:
                _log_feature(feature, example, is_training)
            output_fn(feature)
            unique_id += 1


def _log_feature(feature, example, is_training):
    printable = printable_text
    tokens = feature.tokens
    logging.info("*** Example ***")
    logging.info("unique_id: %s" % feature.unique_id)
    logging.info("example_index: %s" % feature.example_index)
    logging.info("doc_span_index: %s" % feature.doc_span_index)
    logging.info("tokens: %s" % " ".join(printable(x) for x in tokens))
    logging.info("token_to_orig_map: %s" % " ".join(
        "%d:%d" % item for item in feature.token_to_orig_map.items()))
    logging.info("token_is_max_context: %s" % " ".join(
        "%d:%s" % item for item in feature.token_is_max_context.items()))
    logging.info("input_ids: %s" % " ".join(map(str, feature.input_ids)))
    logging.info("input_mask: %s" % " ".join(map(str, feature.input_mask)))
    logging.info("segment_ids: %s" % " ".join(map(str, feature.segment_ids)))
    if is_training and example.is_impossible:
        logging.info("impossible example")
    if is_training and not example.is_impossible:
        answer_text = " ".join(tokens[feature.start_position:feature.end_position + 1])
        logging.info("start_position: %d" % feature.start_position)
        logging.info("end_position: %d" % feature.end_position)
        logging.info("answer: %s" % printable(answer_text))


# ---------------------------------------------------------------------------------------------
# TFRecords

def _record_feature_names(is_training):
    names = ["unique_ids", "input_ids", "input_mask", "segment_ids"]
    if is_training:
        names += ["start_positions", "end_positions", "is_impossible"]
    return names


def record_feature_spec(max_seq_length, is_training):
    """The parsing spec of the original's reader (its `input_fn_builder`).

    Returns:
      dict name -> tf.io.FixedLenFeature int64: unique_ids [], input_ids / input_mask /
      segment_ids [max_seq_length]; training adds start_positions [] and end_positions [].
      `is_impossible` is written but, as in the original, not parsed.
    """
    import tensorflow as tf  # pylint: disable=g-import-not-at-top

    spec = {
        "unique_ids": tf.io.FixedLenFeature([], tf.int64),
        "input_ids": tf.io.FixedLenFeature([max_seq_length], tf.int64),
        "input_mask": tf.io.FixedLenFeature([max_seq_length], tf.int64),
        "segment_ids": tf.io.FixedLenFeature([max_seq_length], tf.int64),
    }
    if is_training:
        spec["start_positions"] = tf.io.FixedLenFeature([], tf.int64)
        spec["end_positions"] = tf.io.FixedLenFeature([], tf.int64)
    return spec


class _VarintMemo(dict):
    def __missing__(self, value):
        encoded = self[value] = varint(value)
        return encoded


class FeatureWriter(RoundRobinRecordWriter):
    """Writes InputFeatures as the original's `tf.train.Example` records, streaming to disk.

    Features: int64 unique_ids [1], input_ids / input_mask / segment_ids [max_seq_length];
    training adds start_positions [1], end_positions [1], is_impossible [1] (0/1). Bytes are
    protobuf's deterministic serialization (map keys sorted); the original's own bytes differ
    only in map order, so parsed records are equal.

    Records go to `<filename>.incomplete`, renamed to `filename` by `close()`; `abort()` (or
    leaving the `with` block by an exception) removes it (a one-file RoundRobinRecordWriter).
    Accepts any object with the original's InputFeatures attributes.
    """

    def __init__(self, filename, is_training):
        self.filename = str(filename)
        super().__init__([self.filename])
        self.is_training = is_training
        self._varints = _VarintMemo()
        names = sorted(_record_feature_names(is_training))
        self._heads = [(name, Int64EntryHeads(name)) for name in names]

    @property
    def num_features(self):
        return self.num_written

    def encode(self, feature):
        """The serialized Example of one feature (bytes)."""
        table = self._varints
        values = {
            "unique_ids": table[feature.unique_id],
            "input_ids": b"".join(map(table.__getitem__, feature.input_ids)),
            "input_mask": bytes(feature.input_mask),
            "segment_ids": bytes(feature.segment_ids),
        }
        if self.is_training:
            values["start_positions"] = table[feature.start_position]
            values["end_positions"] = table[feature.end_position]
            values["is_impossible"] = b"\x01" if feature.is_impossible else b"\x00"
        body = b"".join(heads[len(values[name])] + values[name] for name, heads in self._heads)
        return b"\x0a" + varint(len(body)) + body

    def process_feature(self, feature):
        self.write(self.encode(feature))
