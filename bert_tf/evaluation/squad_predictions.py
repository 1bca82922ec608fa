"""SQuAD post-processing: start/end logits per window -> predictions.json, nbest, null odds.

`write_predictions` writes the same three files, byte for byte, as google-research/bert's
run_squad.py (FINETUNING.md §2.5-2.6), with its global FLAGS as parameters:

  - per window, the `n_best_size` highest start and end logits (stable sort, ties to the lower
    position, over all positions including padding) form candidate spans; a span is kept when
    both ends are in the window's document part, the window gives its start the most context,
    end >= start and its length is at most `max_answer_length`;
  - 2.0: the null score is the smallest `start[0] + end[0]` over the example's windows and is
    added as a candidate;
  - candidates are sorted by start + end logit (stable); their texts are the WordPiece span
    mapped back to the original words by `get_final_text` (pieces whose characters the
    tokenizer gave, SentencePiece's: the context's characters from the span's first piece to
    its last, see `bert_tf.data.squad`), taking `n_best_size` distinct texts
    (2.0 adds the "" entry if it was not among them, so up to n_best_size + 1 entries);
    with no candidate at all the single entry is "empty" (0.0, 0.0);
  - probabilities are a softmax over the kept entries' start + end logits (float64);
  - 1.1 predicts the first entry's text ("empty" included); 2.0 predicts "" when
    `null score - best non-null score > null_score_diff_threshold`, else the best non-null text,
    and writes that difference to null_odds.json;
  - JSON with indent 4 (ASCII escapes), floats as the float64 repr of the float32 logits.

Where we differ (the original crashes): in 2.0, when no non-null candidate survives (only the
null entry, or an example with no window at all because its context is empty), the original
raises AttributeError (or IndexError). We predict "" (no answer: it is the only candidate) and
write the largest finite float, 1.7976931348623157e+308, to null_odds.json (the difference to a
non-null score that does not exist, +inf, which JSON cannot hold), so that every
`na_prob_thresh` of the evaluation also treats the question as unanswered. The nbest entry of an
example with no window is ("", 0, 0) with probability 1.0.

Speed (same output): best indexes and the span filter in numpy for all windows of an example
at once; candidates taken from numpy in score order a chunk at a time (usually only the first
few are needed); BasicTokenizer output memoized per context word (the original builds a
tokenizer and tokenizes the whole span for every candidate); a JSON encoder specialised to
these three shapes that produces `json.dumps(..., indent=4)`'s bytes.
"""

import bisect
import collections
import itertools
import json
import math
import sys

import numpy as np
from absl import logging

from bert_tf import families, files
from bert_tf.data.squad import context_of
from bert_tf.text import BasicTokenizer

__all__ = [
    "RawResult",
    "PredictionError",
    "write_predictions",
    "compute_predictions",
    "get_final_text",
    "get_best_indexes",
    "compute_softmax",
    "NO_ANSWER_NULL_ODDS",
]

RawResult = collections.namedtuple("RawResult", ["unique_id", "start_logits", "end_logits"])

# null_odds.json value when no non-null answer exists (see the module docstring).
NO_ANSWER_NULL_ODDS = sys.float_info.max


class PredictionError(ValueError):
    """Results that do not match the features (a missing unique_id, logits of the wrong size)."""


def _best_indexes(logits, n_best_size):
    """Positions of the n_best_size largest logits along the last axis of a float64 array,
    largest first, ties to the lower position (the original's stable `sorted`).

    A partial sort (argpartition) finds them; a row where the n-th largest value is tied with
    a position left out (the partition chose among ties arbitrarily) is sorted fully.
    """
    n = max(n_best_size, 0)
    length = logits.shape[-1]
    negative = -logits
    if n >= length:
        return np.argsort(negative, axis=-1, kind="stable")
    if n == 0:
        return np.zeros(logits.shape[:-1] + (0,), np.int64)
    chosen = np.argpartition(negative, n - 1, axis=-1)[..., :n]
    values = np.take_along_axis(negative, chosen, -1)
    best = np.take_along_axis(chosen, np.lexsort((chosen, values), axis=-1), -1)
    tied = (negative <= values.max(axis=-1, keepdims=True)).sum(axis=-1) != n
    if tied.any():
        best[tied] = np.argsort(negative[tied], axis=-1, kind="stable")[..., :n]
    return best


def get_best_indexes(logits, n_best_size):
    """The original's helper on one list of logits: a list of positions."""
    return _best_indexes(np.asarray(logits, dtype=np.float64), n_best_size).tolist()


def compute_softmax(scores):
    """Softmax over a list of floats (math.exp, summed in order, as the original)."""
    if not scores:
        return []
    max_score = max(scores)
    exp_scores = [math.exp(score - max_score) for score in scores]
    total = 0.0
    for x in exp_scores:
        total += x
    return [x / total for x in exp_scores]


def _non_space_position(text, ns_index):
    """Index in `text` of its ns_index-th character other than " " (None past the end)."""
    seen = position = 0
    for piece in text.split(" "):
        if ns_index < seen + len(piece):
            return position + ns_index - seen
        seen += len(piece)
        position += len(piece) + 1
    return None


class _WordTokens(dict):
    """word -> its BasicTokenizer tokens joined with spaces ("" if none), filled on demand."""

    def __init__(self, do_lower_case):
        super().__init__()
        self.tokenizer = BasicTokenizer(do_lower_case)

    def __missing__(self, word):
        value = " ".join(self.tokenizer.tokenize(word))
        if len(self) < 1_000_000:
            self[word] = value
        return value


class _FinalText:
    """`get_final_text` with BasicTokenizer results memoized per word."""

    def __init__(self, verbose_logging=False):
        self.verbose_logging = verbose_logging
        self._word_tokens = {}  # do_lower_case -> _WordTokens

    def _memo(self, do_lower_case):
        memo = self._word_tokens.get(do_lower_case)
        if memo is None:
            memo = self._word_tokens[do_lower_case] = _WordTokens(do_lower_case)
        return memo

    def __call__(self, pred_text, orig_text, do_lower_case):
        tok_text = " ".join(self._memo(do_lower_case).tokenizer.tokenize(orig_text))
        return self._final_text(pred_text, orig_text, tok_text,
                                lambda k: _non_space_position(orig_text, k))

    def of_words(self, pred_text, words, do_lower_case):
        """The final text for orig_text = " ".join(words), words without " " inside.

        The BasicTokenizer tokens of such a text are its words' tokens one after the other,
        and its k-th non-space character is in word bisect_right(cumulative lengths, k).
        """
        memo = self._word_tokens.get(do_lower_case) or self._memo(do_lower_case)
        tok_text = " ".join(filter(None, map(memo.__getitem__, words)))
        orig_text = " ".join(words)
        if orig_text.count(" ") != len(words) - 1:
            return self(pred_text, orig_text, do_lower_case)
        ends = []

        def position(k):
            if not ends:
                ends.extend(itertools.accumulate(map(len, words)))
            word = bisect.bisect_right(ends, k)
            return k + word if word < len(words) else None

        return self._final_text(pred_text, orig_text, tok_text, position)

    def _log(self, *args):
        if self.verbose_logging:
            logging.info(*args)

    def _final_text(self, pred_text, orig_text, tok_text, non_space_position):
        start = tok_text.find(pred_text)
        if start == -1:
            self._log("Unable to find text: '%s' in '%s'" % (pred_text, orig_text))
            return orig_text
        end = start + len(pred_text) - 1
        if len(orig_text) - orig_text.count(" ") != len(tok_text) - tok_text.count(" "):
            self._log("Length not equal after stripping spaces: '%s' vs '%s'",
                      orig_text.replace(" ", ""), tok_text.replace(" ", ""))
            return orig_text
        # Without spaces the two texts correspond character by character: map the predicted
        # span's ends from tok_text to orig_text through their index among non-space characters.
        orig_start = orig_end = None
        if tok_text[start:start + 1] not in ("", " "):
            orig_start = non_space_position(start - tok_text.count(" ", 0, start))
        if orig_start is None:
            self._log("Couldn't map start position")
            return orig_text
        if 0 <= end and tok_text[end] != " ":
            orig_end = non_space_position(end - tok_text.count(" ", 0, end))
        if orig_end is None:
            self._log("Couldn't map end position")
            return orig_text
        return orig_text[orig_start:orig_end + 1]


def get_final_text(pred_text, orig_text, do_lower_case, verbose_logging=False):
    """Projects a de-tokenized prediction back onto the original words' text.

    `orig_text` is BasicTokenizer-ed and joined with spaces; the first occurrence of
    `pred_text` in it is mapped character by character (spaces ignored) onto `orig_text`.
    Falls back to `orig_text` when `pred_text` is not found, when the two texts differ in
    length without spaces (e.g. accents stripped by lower-casing, removed control characters),
    or when an end cannot be mapped. E.g. ("steve smith", "Steve Smith's") -> "Steve Smith".
    """
    return _FinalText(verbose_logging)(pred_text, orig_text, do_lower_case)


def _block_arrays(features, result_of, example_of):
    """The arrays of consecutive windows (all windows of some examples).

    Returns:
      logits: float64 [N, 2, L] (start, end); valid_start, valid_end: bool [N, L], whether a
      position is in the window's document part (for the start also: the window gives it the
      most context); texts: per window (pieces, base, word_of, document) with the piece at
      output position i = pieces[base + i] and its word = word_of[base + i]; `document` is the
      window's `bert_tf.data.squad._Document` when it knows its pieces' characters, else None.
    """
    rows = []
    for feature in features:
        result = result_of.get(feature.unique_id)
        if result is None:
            raise PredictionError(
                f"no result for unique_id {feature.unique_id} (question id "
                f"{example_of(feature).qas_id!r}, window {feature.doc_span_index})")
        rows.append((result.start_logits, result.end_logits))
    try:
        logits = np.array(rows, dtype=np.float64).reshape(len(features), 2, -1)
    except ValueError:
        raise PredictionError("results with start and end logits of different lengths "
                              "(expected max_seq_length floats each)") from None
    length = logits.shape[2]
    valid_start = np.zeros((len(features), length), bool)
    valid_end = np.zeros((len(features), length), bool)
    texts = []
    best_arrays = {}  # the windows of an example share one list of max-context winners
    for f, feature in enumerate(features):
        compact = hasattr(feature, "doc_start")  # bert_tf.data.squad.InputFeatures
        num_positions = feature.num_tokens if compact else len(feature.tokens)
        if num_positions > length:
            raise PredictionError(
                f"result of unique_id {feature.unique_id}: {length} logits for a feature of "
                f"{num_positions} tokens (expected max_seq_length)")
        if compact:
            offset, n, s = feature.doc_offset, feature.doc_length, feature.doc_start
            key = id(feature.best_span)
            if key not in best_arrays:
                best_arrays[key] = (feature.best_span, np.asarray(feature.best_span))
            valid_end[f, offset:offset + n] = True
            valid_start[f, offset:offset + n] = (
                best_arrays[key][1][s:s + n] == feature.doc_span_index)
            document = feature.document
            texts.append((document.tokens, s - offset, document.tok_to_orig_index,
                           document if document.char_starts is not None else None))
        else:  # the original's InputFeatures (tokens, token_to_orig_map, token_is_max_context)
            orig_map, max_context = feature.token_to_orig_map, feature.token_is_max_context
            for i in orig_map:
                if 0 <= i < num_positions:
                    valid_end[f, i] = True
                    valid_start[f, i] = bool(max_context.get(i, False))
            texts.append((feature.tokens, 0, orig_map, None))
    return logits, valid_start, valid_end, texts


_BLOCK_EXAMPLES = 256
_CHUNK = 64


def compute_predictions(all_examples, all_features, all_results, n_best_size, max_answer_length,
                        do_lower_case, version_2_with_negative=False,
                        null_score_diff_threshold=0.0, verbose_logging=False,
                        special_tokens=None):
    """The three outputs of `write_predictions`, as dicts (qas_id keys in example order).

    Returns:
      (predictions: {qas_id: str}, nbest: {qas_id: [{"text", "probability", "start_logit",
      "end_logit"}]}, null_odds: {qas_id: float}, empty unless 2.0).
    """
    features_of = collections.defaultdict(list)
    for feature in all_features:
        features_of[feature.example_index].append(feature)
    result_of = {}
    for result in all_results:
        result_of[int(result.unique_id)] = result
    output = ({}, {}, {})
    predict = _ExamplePredictor(n_best_size, do_lower_case, version_2_with_negative,
                                null_score_diff_threshold, _FinalText(verbose_logging), output,
                                special_tokens or families.default_special_tokens())
    # Examples in blocks: numpy works on all windows of a block at once, memory stays bounded.
    for block_start in range(0, len(all_examples), _BLOCK_EXAMPLES):
        examples = all_examples[block_start:block_start + _BLOCK_EXAMPLES]
        features, example_of_window = [], []
        for k, example_index in enumerate(range(block_start, block_start + len(examples))):
            features += features_of[example_index]
            example_of_window += [k] * len(features_of[example_index])
        if features:
            arrays = _block_arrays(features, result_of,
                                   lambda f: all_examples[f.example_index])
            candidates = _block_candidates(*arrays[:3], np.array(example_of_window),
                                           len(examples), n_best_size, max_answer_length)
        else:
            arrays, candidates = (np.zeros((0, 2, 0)), None, None, []), None
        window_start = 0
        for k, example in enumerate(examples):
            count = len(features_of[block_start + k])
            predict(example, arrays[0][window_start:window_start + count], arrays[3],
                    candidates[k] if candidates else None)
            window_start += count
    return output


def _block_candidates(logits, valid_start, valid_end, example_of_window, num_examples,
                      n_best_size, max_answer_length):
    """Per example of a block (`num_examples`, those after the last window included): its
    valid spans sorted by total score (stable), as arrays (window, start, end, start logit,
    end logit, total) or None when it has none.

    The spans of a window are its n best starts x n best ends in the original's loop order
    (window, start, end), kept when both are in the document part, the start has max context,
    end >= start and the length is at most max_answer_length.
    """
    best = _best_indexes(logits, n_best_size)
    starts, ends = best[:, 0, :], best[:, 1, :]
    ok = (np.take_along_axis(valid_start, starts, 1)[:, :, None] &
          np.take_along_axis(valid_end, ends, 1)[:, None, :])
    span = ends[:, None, :] - starts[:, :, None]
    ok &= (span >= 0) & (span + 1 <= max_answer_length)
    window, i, j = np.nonzero(ok)
    start, end = starts[window, i], ends[window, j]
    start_l, end_l = logits[window, 0, start], logits[window, 1, end]
    total = start_l + end_l
    example = example_of_window[window]
    order = np.lexsort((-total, example))  # stable: ties keep the loop order
    columns = [c[order] for c in (window, start, end, start_l, end_l, total)]
    bounds = np.concatenate(([0], np.cumsum(np.bincount(example, minlength=num_examples))))
    return [tuple(c[a:b] for c in columns) if b > a else None
            for a, b in zip(bounds[:-1].tolist(), bounds[1:].tolist())]


class _ExamplePredictor:
    """The n-best list, prediction and null odds of one example, into `output` dicts.

    A span's text: where the tokenizer gave each piece's characters (SentencePiece), the
    paragraph's characters from the span's first piece to its last (`_context_text`); else
    run_squad.py's `get_final_text` of its de-tokenized pieces.
    """

    def __init__(self, n_best_size, do_lower_case, version_2_with_negative,
                 null_score_diff_threshold, final_text, output, special_tokens):
        self.n_best_size = n_best_size
        self.detokenize = special_tokens.detokenize
        self.do_lower_case = do_lower_case
        self.version_2 = version_2_with_negative
        self.threshold = null_score_diff_threshold
        self.final_text = final_text
        self.predictions, self.nbest, self.null_odds = output

    @staticmethod
    def _context_text(example, document, first_piece, last_piece, first_word, last_word):
        """The paragraph's text of pieces [first_piece, last_piece]; where they stand for no
        character (a lone "▁"), that of their words, as `get_final_text` falls back to."""
        context, word_starts = context_of(example)
        text = document.span_text(context, first_piece, last_piece)
        if not text:
            end = word_starts[last_word] + len(example.doc_tokens[last_word])
            text = context[word_starts[first_word]:end]
        return text

    def __call__(self, example, logits, texts, candidates):
        """logits: float64 [F, 2, L] of the example's windows; texts: the block's text access
        per window; candidates: from `_block_candidates` (None if none)."""
        n_best_size = self.n_best_size
        score_null = 1000000  # the original's "large and positive" start
        null_start_logit = null_end_logit = 0
        if self.version_2 and len(logits):
            nulls = logits[:, 0, 0] + logits[:, 1, 0]
            f = int(np.argmin(nulls))  # the first window with the smallest null score
            if nulls[f] < score_null:
                score_null = float(nulls[f])
                null_start_logit, null_end_logit = logits[f, :, 0].tolist()
        null_total = null_start_logit + null_end_logit
        # The null span is the last candidate of the original's list: in the stable sort it
        # comes after every span with a total >= its own.
        null_pending = self.version_2

        seen = set()
        nbest = []

        def add(text, start_logit, end_logit):
            seen.add(text)
            nbest.append((text, start_logit, end_logit))

        count = len(candidates[0]) if candidates else 0
        for chunk_start in range(0, count, _CHUNK):
            if len(nbest) >= n_best_size:
                break
            chunk = slice(chunk_start, chunk_start + _CHUNK)
            for window, start, end, start_logit, end_logit, total in zip(
                    *(c[chunk].tolist() for c in candidates)):
                if null_pending and total < null_total and len(nbest) < n_best_size:
                    add("", null_start_logit, null_end_logit)
                    null_pending = False
                if len(nbest) >= n_best_size:
                    break
                pieces, base, word_of, document = texts[window]
                first, last = word_of[base + start], word_of[base + end]
                if document is not None:
                    text = self._context_text(example, document, base + start, base + end,
                                              first, last)
                else:
                    tok_text = self.detokenize(pieces[base + start:base + end + 1])
                    text = self.final_text.of_words(
                        tok_text, example.doc_tokens[first:last + 1], self.do_lower_case)
                if text not in seen:
                    add(text, start_logit, end_logit)
        if null_pending and len(nbest) < n_best_size:
            add("", null_start_logit, null_end_logit)
        if self.version_2 and "" not in seen:
            nbest.append(("", null_start_logit, null_end_logit))
        if not nbest:
            nbest.append(("empty", 0.0, 0.0))

        qas_id = example.qas_id
        probs = compute_softmax([s + e for _, s, e in nbest])
        self.nbest[qas_id] = [
            {"text": text, "probability": p, "start_logit": s, "end_logit": e}
            for (text, s, e), p in zip(nbest, probs)]
        best_entry = next((entry for entry in nbest if entry[0]), None)
        if not self.version_2:
            self.predictions[qas_id] = nbest[0][0]
        elif best_entry is None:
            self.null_odds[qas_id] = NO_ANSWER_NULL_ODDS
            self.predictions[qas_id] = ""
        else:
            score_diff = score_null - best_entry[1] - best_entry[2]
            self.null_odds[qas_id] = score_diff
            self.predictions[qas_id] = "" if score_diff > self.threshold else best_entry[0]


# ---------------------------------------------------------------------------------------------
# Output

_encode_string = json.encoder.encode_basestring_ascii


def _number(x):
    """json.dumps of an int or float."""
    if type(x) is float and x - x == 0:  # finite: the common case
        return float.__repr__(x)
    if isinstance(x, bool) or not isinstance(x, (int, float)):
        raise TypeError(x)
    if isinstance(x, int):
        return int.__repr__(x)
    if x != x:
        return "NaN"
    if x in (float("inf"), float("-inf")):
        return "Infinity" if x > 0 else "-Infinity"
    return float.__repr__(x)


_NBEST_KEYS = ("text", "probability", "start_logit", "end_logit")
_NBEST_ENTRY = "        {\n" + ",\n".join(
    f'            "{key}": %s' for key in _NBEST_KEYS) + "\n        }"


def _dumps_indent4(obj):
    """`json.dumps(obj, indent=4)` for the three outputs' shapes (str keys; values str,
    numbers, or lists of flat dicts), faster; anything else goes to json.dumps itself."""
    try:
        if not obj:
            return "{}"
        lines = []
        for key, value in obj.items():
            if not isinstance(key, str):
                raise TypeError(key)
            if isinstance(value, str):
                text = _encode_string(value)
            elif isinstance(value, list):
                entries = []
                for entry in value:
                    if tuple(entry) == _NBEST_KEYS:
                        entries.append(_NBEST_ENTRY % (
                            _encode_string(entry["text"]), _number(entry["probability"]),
                            _number(entry["start_logit"]), _number(entry["end_logit"])))
                        continue
                    fields = ",\n".join(
                        "            " + _encode_string(k) + ": " +
                        (_encode_string(v) if isinstance(v, str) else _number(v))
                        for k, v in entry.items())
                    entries.append("        {\n" + fields + "\n        }")
                text = "[\n" + ",\n".join(entries) + "\n    ]" if entries else "[]"
            else:
                text = _number(value)
            lines.append("    " + _encode_string(key) + ": " + text)
        return "{\n" + ",\n".join(lines) + "\n}"
    except TypeError:
        return json.dumps(obj, indent=4)


def write_predictions(all_examples, all_features, all_results, n_best_size, max_answer_length,
                      do_lower_case, output_prediction_file, output_nbest_file,
                      output_null_log_odds_file, version_2_with_negative=False,
                      null_score_diff_threshold=0.0, verbose_logging=False,
                      special_tokens=None):
    """Writes predictions.json, nbest_predictions.json and (2.0) null_odds.json.

    Args:
      all_examples: list of SquadExample (from read_squad_examples(..., is_training=False)).
      all_features: the InputFeatures of those examples (convert_examples_to_features).
      all_results: RawResult(unique_id, start_logits, end_logits) per feature, logits of
        max_seq_length floats (lists or arrays; float32 values are widened exactly).
      n_best_size, max_answer_length, do_lower_case, version_2_with_negative,
      null_score_diff_threshold, verbose_logging: the run_squad.py flags (20, 30, -, False,
        0.0, False).
      special_tokens: the tokenizer's `SpecialTokens`, whose `detokenize` joins a span's
        pieces; None: the default family's (WordPiece: run_squad.py's " ##" rule).
      output_*_file: paths; each is written whole or not at all (`files.write_atomic`).

    Returns:
      (predictions, nbest, null_odds) as `compute_predictions`.

    Raises:
      PredictionError: a feature without a result, or logits shorter than its tokens.
    """
    logging.info("Writing predictions to: %s" % output_prediction_file)
    logging.info("Writing nbest to: %s" % output_nbest_file)
    predictions, nbest, null_odds = compute_predictions(
        all_examples, all_features, all_results, n_best_size, max_answer_length, do_lower_case,
        version_2_with_negative, null_score_diff_threshold, verbose_logging, special_tokens)
    files.write_atomic(output_prediction_file, _dumps_indent4(predictions) + "\n")
    files.write_atomic(output_nbest_file, _dumps_indent4(nbest) + "\n")
    if version_2_with_negative:
        files.write_atomic(output_null_log_odds_file, _dumps_indent4(null_odds) + "\n")
    return predictions, nbest, null_odds
