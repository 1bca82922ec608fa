"""CoNLL files for token classification (NER, chunking): reading, windows of word pieces,
records, and the way back from per-position predictions to one tag per word.

File format: one word per line, columns separated by whitespace, the tag in the LAST column
(so CoNLL-2003's "EU NNP B-NP B-ORG" and two-column "EU B-ORG" files both work); a blank line
ends a sentence; "-DOCSTART-" lines are skipped (they also end a sentence). Tags are "O" or
"B-TYPE" / "I-TYPE", in the BIO (IOB2) or IOB1 scheme (IOB1 starts an entity with I- and uses
B- only between two entities of the same type; both are read alike, see tagging_metrics).

Label list (`label_list`): "O" first (id 0), then every other tag of the training file in
sorted (code point) order, so ids do not depend on the order sentences appear in.

Windows. The original BERT paper predicts a word's tag from its FIRST word piece; the other
pieces are not predicted. A sentence's pieces go into windows of `max_seq_length - 2` pieces
laid out `[CLS] pieces [SEP]` (segment 0). Long sentences get several windows, advanced by
`min(window length, doc_stride)` pieces as SQuAD's doc_stride does (REFERENCE.md §12); a word,
even one with more pieces than a window holds, is never dropped. Each word is predicted
exactly once: by the window in which its first piece has the most context (SQuAD's
`min(pieces left, pieces right) + 0.01 * window length`, ties to the earlier window). That
position gets `label_weights` 1 and the word's label id; every other position (later pieces,
the same piece in other windows, [CLS], [SEP], padding) gets weight 0 and label id 0, so a
loss or metric weighted by `label_weights` ignores it. A word with no pieces at all (only
characters the tokenizer removes) cannot be predicted: it is tagged "O" on the way back.

Records (tf.train.Example, all int64 except label_weights): input_ids, input_mask,
segment_ids, label_ids, word_ids [max_seq_length] (the word index within the sentence of the
piece at each position, -1 for [CLS], [SEP] and padding), label_weights float [max_seq_length],
sentence_index [1], window_index [1]. Files are written to `<path>.tmp-<pid>` and renamed.
"""

import dataclasses
import os
import re

from bert_tf import files
from bert_tf.data.pairs import pad_to
from bert_tf.families import special_tokens_of

OUTSIDE = "O"
DOCSTART = "-DOCSTART-"
_TAG_PATTERN = re.compile(r"^(O|[BI]-\S+)$")

INT64_FEATURES = ("input_ids", "input_mask", "segment_ids", "label_ids", "word_ids")
FLOAT_FEATURES = ("label_weights",)
SCALAR_FEATURES = ("sentence_index", "window_index")


class ConllError(ValueError):
    """A CoNLL file (or an option for it) that cannot be used; names the file and line."""


@dataclasses.dataclass
class Sentence:
    """One sentence of a CoNLL file.

    words: list of str (the first column); tags: list of str (the last column), or None for a
    file read without tags; lines: the raw lines (without line end), for writing predictions;
    line_number: 1-based line of the first word; docstart: the raw "-DOCSTART-" line just
    before the sentence, or None.
    """

    words: list
    tags: list
    lines: list
    line_number: int
    docstart: str = None


def _read_text(path):
    path = os.fspath(path)
    try:
        if "://" in path:
            import tensorflow as tf  # pylint: disable=g-import-not-at-top

            with tf.io.gfile.GFile(path, "rb") as f:
                data = f.read()
        else:
            with open(path, "rb") as f:
                data = f.read()
    except (FileNotFoundError, IsADirectoryError) as e:
        raise ConllError(f"{path}: cannot read CoNLL file ({e.strerror})") from None
    except Exception as e:  # tf.errors.NotFoundError and friends for remote paths
        raise ConllError(f"{path}: cannot read CoNLL file ({e})") from None
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as e:
        line = data[:e.start].count(b"\n") + 1
        raise ConllError(f"{path}:{line}: not valid UTF-8 ({e.reason})") from None


def read_conll(path, has_tags=True):
    """Reads the sentences of a CoNLL file.

    Args:
      path: the file.
      has_tags: True if the last column is the tag (training/eval files); False for files to
        tag, where every line holds only words (or words and other columns) and `tags` is None.
    Returns:
      list of Sentence.
    Raises:
      ConllError naming file and line: a line with one column when tags are expected, a tag
      that is neither "O" nor B-/I-TYPE, not UTF-8, an unreadable file, or no sentence at all.
    """
    path = os.fspath(path)
    sentences = []
    words, tags, lines, first, docstart = [], [], [], None, None

    def finish():
        nonlocal words, tags, lines, first, docstart
        if words:
            sentences.append(Sentence(words, tags if has_tags else None, lines, first, docstart))
            docstart = None
        words, tags, lines, first = [], [], [], None

    for number, line in enumerate(_read_text(path).split("\n"), start=1):
        line = line.rstrip("\r")
        columns = line.split()
        if not columns:
            finish()
            continue
        if columns[0] == DOCSTART:
            finish()
            docstart = line
            continue
        if has_tags:
            if len(columns) < 2:
                raise ConllError(
                    f"{path}:{number}: expected a word and a tag (the tag in the last column), "
                    f"found one column: {line!r}")
            tag = columns[-1]
            if not _TAG_PATTERN.match(tag):
                raise ConllError(
                    f"{path}:{number}: tag {tag!r} is not O, B-TYPE or I-TYPE (BIO or IOB1)")
            tags.append(tag)
        if first is None:
            first = number
        words.append(columns[0])
        lines.append(line)
    finish()
    if not sentences:
        raise ConllError(f"{path}: no sentences (the file is empty or holds only blank and "
                         f"{DOCSTART} lines)")
    return sentences


def label_list(sentences):
    """"O" then the other tags of `sentences`, sorted: the label of id i is the i-th entry."""
    tags = {tag for sentence in sentences for tag in sentence.tags}
    return [OUTSIDE] + sorted(tags - {OUTSIDE})


def label_ids(tags, labels, path="", line_number=0):
    """Ids of `tags` in `labels`; a tag the label list lacks raises ConllError."""
    index = {label: i for i, label in enumerate(labels)}
    ids = []
    for i, tag in enumerate(tags):
        if tag not in index:
            raise ConllError(
                f"{path}:{line_number + i}: tag {tag!r} is not in the label list of the training "
                f"file ({', '.join(labels)})")
        ids.append(index[tag])
    return ids


@dataclasses.dataclass
class Window:
    """One record: a window of a sentence's word pieces. Lists have length max_seq_length."""

    sentence_index: int
    window_index: int
    tokens: list  # unpadded: [CLS] pieces [SEP]
    input_ids: list
    input_mask: list
    segment_ids: list
    label_ids: list
    label_weights: list
    word_ids: list


def _window_spans(num_pieces, max_pieces, doc_stride):
    """(start, length) of each window, SQuAD's rule: advance by min(length, doc_stride)."""
    spans, start = [], 0
    while start < num_pieces:
        length = min(num_pieces - start, max_pieces)
        spans.append((start, length))
        if start + length == num_pieces:
            break
        start += min(length, doc_stride)
    return spans


def _max_context_window(spans, position):
    """Index of the window where `position` has the most context (ties: the earlier one)."""
    best, best_score = None, None
    for index, (start, length) in enumerate(spans):
        end = start + length - 1
        if not start <= position <= end:
            continue
        score = min(position - start, end - position) + 0.01 * length
        if best_score is None or score > best_score:
            best, best_score = index, score
    return best


def check_window_options(max_seq_length, doc_stride):
    if max_seq_length < 3:
        raise ConllError(f"--max_seq_length={max_seq_length}: must be at least 3 "
                         "([CLS], one word piece, [SEP])")
    if doc_stride < 1:
        raise ConllError(f"--doc_stride={doc_stride}: must be at least 1")


def sentence_windows(words, word_label_ids, tokenizer, max_seq_length, doc_stride,
                     sentence_index=0):
    """The windows (records) of one sentence.

    Args:
      words: list of str; word_label_ids: list of int (one per word), or None to tag.
      tokenizer: FullTokenizer (tokenize, convert_tokens_to_ids; its `special_tokens` name
        [CLS] and [SEP]).
      max_seq_length: positions per record; doc_stride: pieces between window starts.
    Returns:
      list of Window (at least one, even for a sentence without pieces).
    """
    check_window_options(max_seq_length, doc_stride)
    pieces, piece_words, first_piece = [], [], []
    for w, word in enumerate(words):
        word_pieces = tokenizer.tokenize(word)
        first_piece.append(len(pieces) if word_pieces else None)
        pieces += word_pieces
        piece_words += [w] * len(word_pieces)
    spans = _window_spans(len(pieces), max_seq_length - 2, doc_stride) or [(0, 0)]
    predicted_in = {}  # first-piece position -> the window that predicts its word
    for position in first_piece:
        if position is not None:
            predicted_in[position] = _max_context_window(spans, position)
    special = special_tokens_of(tokenizer)
    cls_id, sep_id = tokenizer.convert_tokens_to_ids([special.cls, special.sep])
    pad_id = special.pad_id(tokenizer.vocab)
    windows = []
    for index, (start, length) in enumerate(spans):
        tokens = [special.cls] + pieces[start:start + length] + [special.sep]
        ids = [cls_id] + tokenizer.convert_tokens_to_ids(pieces[start:start + length]) + [sep_id]
        labels, weights, word_ids = [0], [0.0], [-1]
        for position in range(start, start + length):
            word = piece_words[position]
            predicted = predicted_in.get(position) == index
            labels.append(word_label_ids[word] if predicted and word_label_ids else 0)
            weights.append(1.0 if predicted else 0.0)
            word_ids.append(word)
        labels.append(0)
        weights.append(0.0)
        word_ids.append(-1)
        padding = max_seq_length - len(tokens)
        windows.append(Window(
            sentence_index=sentence_index, window_index=index, tokens=tokens,
            input_ids=pad_to(ids, max_seq_length, pad_id),
            input_mask=pad_to([1] * len(tokens), max_seq_length),
            segment_ids=[0] * max_seq_length,
            label_ids=pad_to(labels, max_seq_length),
            label_weights=weights + [0.0] * padding,
            word_ids=word_ids + [-1] * padding,
        ))
    return windows


def convert_sentences(sentences, labels, tokenizer, max_seq_length, doc_stride, path=""):
    """Windows of every sentence (tags looked up in `labels` when the sentences have them)."""
    windows = []
    for s, sentence in enumerate(sentences):
        ids = None
        if sentence.tags is not None:
            ids = label_ids(sentence.tags, labels, path, sentence.line_number)
        windows += sentence_windows(sentence.words, ids, tokenizer, max_seq_length, doc_stride,
                                    sentence_index=s)
    return windows


def feature_spec(max_seq_length):
    """The `tf.io.parse_example` spec of a tagging record."""
    import tensorflow as tf  # pylint: disable=g-import-not-at-top

    spec = {name: tf.io.FixedLenFeature([max_seq_length], tf.int64) for name in INT64_FEATURES}
    spec["label_weights"] = tf.io.FixedLenFeature([max_seq_length], tf.float32)
    spec.update({name: tf.io.FixedLenFeature([1], tf.int64) for name in SCALAR_FEATURES})
    return spec


def _example(window):
    import tensorflow as tf  # pylint: disable=g-import-not-at-top

    def ints(values):
        return tf.train.Feature(int64_list=tf.train.Int64List(value=values))

    feature = {name: ints(getattr(window, name)) for name in INT64_FEATURES}
    feature["label_weights"] = tf.train.Feature(
        float_list=tf.train.FloatList(value=window.label_weights))
    feature.update({name: ints([getattr(window, name)]) for name in SCALAR_FEATURES})
    return tf.train.Example(features=tf.train.Features(feature=feature))


def write_windows(path, windows):
    """Writes the windows as TFRecords of tf.train.Example; the file appears complete or not
    at all. Returns the number of records."""
    import tensorflow as tf  # pylint: disable=g-import-not-at-top

    with files.atomic_path(path) as tmp, tf.io.TFRecordWriter(tmp) as writer:
        for window in windows:
            writer.write(_example(window).SerializeToString())
    return len(windows)


def word_predictions(sentences, windows, position_predictions, labels):
    """One predicted tag per word, from per-position predictions of every window.

    Args:
      sentences: the Sentence list the windows were made from.
      windows: their Window list (or records carrying sentence_index, label_weights, word_ids).
      position_predictions: per window, a sequence [max_seq_length] of predicted label ids.
      labels: the label list.
    Returns:
      list (per sentence) of lists of str tags; a word no position predicts (no word pieces)
      gets "O".
    Raises:
      ConllError if a word is predicted twice or a window does not belong to `sentences`.
    """
    tags = [[None] * len(sentence.words) for sentence in sentences]
    if len(position_predictions) != len(windows):
        raise ConllError(f"{len(position_predictions)} predictions for {len(windows)} windows")
    for window, predicted in zip(windows, position_predictions):
        s = int(window.sentence_index)
        if not 0 <= s < len(sentences):
            raise ConllError(f"window of sentence {s}, but there are {len(sentences)} sentences")
        for position, weight in enumerate(window.label_weights):
            if not weight:
                continue
            word = int(window.word_ids[position])
            if tags[s][word] is not None:
                raise ConllError(f"sentence {s} word {word} is predicted by two positions")
            tags[s][word] = labels[int(predicted[position])]
    return [[tag or OUTSIDE for tag in sentence_tags] for sentence_tags in tags]


def write_conll_predictions(path, sentences, predicted_tags):
    """Writes the input lines with the predicted tag appended (space-separated), a blank line
    after each sentence, "-DOCSTART-" lines kept (tagged O) with their blank line. The file
    appears complete or not at all."""
    with files.atomic_open(path) as f:
        for sentence, tags in zip(sentences, predicted_tags, strict=True):
            if sentence.docstart is not None:
                f.write(f"{sentence.docstart} {OUTSIDE}\n\n")
            for line, tag in zip(sentence.lines, tags, strict=True):
                f.write(f"{line} {tag}\n")
            f.write("\n")
