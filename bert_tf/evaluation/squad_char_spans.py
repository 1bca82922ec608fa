"""SQuAD 1.1 predictions as character spans of the paragraph: google-research/albert's v1
post-processing (`squad_utils.accumulate_predictions_v1`, `write_predictions_v1`).

Its features tie each window piece to paragraph characters (`tok_start_to_orig_index`,
`tok_end_to_orig_index`: `bert_tf.albert.squad_data`), so an answer is the paragraph's
characters from its first piece's start to its last piece's end, `.strip()`-ed: no
`get_final_text` (BERT's, `bert_tf.evaluation.squad_predictions`).

  - per window (`accumulate_predictions_v1`), the `n_best_size` highest start and end logits
    (ties to the lower position, over all positions, padding included) form spans
    (start, end) counted from the window's first piece (after the first "[SEP]"); a span is
    kept when both ends are within the window's pieces, the window gives its start the most
    context, end >= start and its length is at most `max_answer_length`;
  - per example (`write_predictions_v1`), the spans of all its windows sorted by start + end
    logit (stable), their texts filling the n-best list with `n_best_size` distinct texts; no
    span at all gives the single entry "empty" (0.0, 0.0), as for an example the alignment
    dropped (it has no window);
  - probabilities: a softmax over the entries' start + end; the prediction is the first
    entry's text;
  - the original names the logits "start_log_prob" / "end_log_prob" (in RawResult and the
    n-best entries) but they are the raw logits, not log-probabilities; the names and values
    are kept;
  - predictions.json and nbest_predictions.json are `json.dumps(..., indent=4)` + "\\n"
    (ASCII escapes), floats the float64 repr of the float32 logits; each file is written whole.

The official v1.1 score of these predictions is `bert_tf.evaluation.squad_eval.evaluate(...,
version="1.1")` (the original's `evaluate_v1`: the same sums in the same order).

Public helpers v2's post-processing shares: `dumps_json`, `features_by_example`; both use
`bert_tf.evaluation.squad_predictions`' `compute_softmax`, `get_best_indexes` (the original's
helpers) and `PredictionError`.
"""

import collections
import json

from absl import logging

from bert_tf import files
from bert_tf.evaluation.squad_predictions import (PredictionError, compute_softmax,
                                                get_best_indexes)

__all__ = [
    "RawResult",
    "dumps_json",
    "features_by_example",
    "accumulate_predictions_v1",
    "predictions_v1",
    "write_predictions_v1",
]

RawResult = collections.namedtuple("RawResult",
                                   ["unique_id", "start_log_prob", "end_log_prob"])

_PrelimPrediction = collections.namedtuple(
    "PrelimPrediction", ["feature_index", "start_index", "end_index", "start_log_prob",
                         "end_log_prob"])
_NbestPrediction = collections.namedtuple("NbestPrediction",
                                          ["text", "start_log_prob", "end_log_prob"])


def dumps_json(obj):
    """What the original writes: `json.dumps(obj, indent=4) + "\\n"`."""
    return json.dumps(obj, indent=4) + "\n"


def features_by_example(all_features):
    """{example_index: [its windows, in order]}."""
    by_example = collections.defaultdict(list)
    for feature in all_features:
        by_example[feature.example_index].append(feature)
    return by_example


def accumulate_predictions_v1(result_dict, all_examples, all_features, all_results,
                              n_best_size, max_answer_length):
    """Adds each window's candidate spans to `result_dict`.

    Args:
      result_dict: dict, filled as the original's: example index -> unique_id -> (start,
        end) (piece positions within the window) -> list of (start logit, end logit).
      all_examples: the SquadExamples (read with is_training=False).
      all_features: their InputFeatures (any objects with the original's attributes).
      all_results: RawResult per feature (logits of max_seq_length floats).
      n_best_size, max_answer_length: the flags (20, 30).

    Raises:
      PredictionError: a feature without a result.
    """
    by_example = features_by_example(all_features)
    result_of = {result.unique_id: result for result in all_results}
    for example_index in range(len(all_examples)):
        spans_of_window = result_dict.setdefault(example_index, {})
        for feature in by_example[example_index]:
            spans = spans_of_window.setdefault(feature.unique_id, {})
            result = result_of.get(feature.unique_id)
            if result is None:
                raise PredictionError(f"no result for the window with unique_id "
                                      f"{feature.unique_id}")
            start_logits, end_logits = result.start_log_prob, result.end_log_prob
            doc_offset = feature.tokens.index("[SEP]") + 1
            num_pieces = len(feature.tok_start_to_orig_index)
            max_context = feature.token_is_max_context
            end_indexes = get_best_indexes(end_logits, n_best_size)
            for start_index in get_best_indexes(start_logits, n_best_size):
                if start_index - doc_offset >= num_pieces:
                    continue
                if not max_context.get(start_index, False):
                    continue
                for end_index in end_indexes:
                    if end_index - doc_offset >= num_pieces or end_index < start_index:
                        continue
                    if end_index - start_index + 1 > max_answer_length:
                        continue
                    spans.setdefault((start_index - doc_offset, end_index - doc_offset),
                                     []).append((float(start_logits[start_index]),
                                                 float(end_logits[end_index])))


def predictions_v1(result_dict, all_examples, all_features, n_best_size):
    """(predictions, nbest): OrderedDicts qas_id -> text, and qas_id -> list of OrderedDicts
    (text, probability, start_log_prob, end_log_prob), from `accumulate_predictions_v1`'s
    result_dict."""
    by_example = features_by_example(all_features)
    all_predictions = collections.OrderedDict()
    all_nbest = collections.OrderedDict()
    for example_index, example in enumerate(all_examples):
        features = by_example[example_index]
        prelim = []
        for feature_index, feature in enumerate(features):
            for (start, end), logits in result_dict[example_index][feature.unique_id].items():
                start_sum = end_sum = 0
                for start_logit, end_logit in logits:
                    start_sum += start_logit
                    end_sum += end_logit
                prelim.append(_PrelimPrediction(feature_index, start, end,
                                                start_sum / len(logits), end_sum / len(logits)))
        prelim.sort(key=lambda p: p.start_log_prob + p.end_log_prob, reverse=True)
        seen, nbest = set(), []
        for pred in prelim:
            if len(nbest) >= n_best_size:
                break
            feature = features[pred.feature_index]
            if pred.start_index >= 0:
                first = feature.tok_start_to_orig_index[pred.start_index]
                last = feature.tok_end_to_orig_index[pred.end_index]
                text = example.paragraph_text[first:last + 1].strip()
                if text in seen:
                    continue
            else:
                text = ""
            seen.add(text)
            nbest.append(_NbestPrediction(text, pred.start_log_prob, pred.end_log_prob))
        if not nbest:
            nbest.append(_NbestPrediction("empty", 0.0, 0.0))
        probs = compute_softmax([e.start_log_prob + e.end_log_prob for e in nbest])
        entries = []
        for entry, prob in zip(nbest, probs):
            entries.append(collections.OrderedDict(
                (("text", entry.text), ("probability", prob),
                 ("start_log_prob", entry.start_log_prob),
                 ("end_log_prob", entry.end_log_prob))))
        all_predictions[example.qas_id] = entries[0]["text"]
        all_nbest[example.qas_id] = entries
    return all_predictions, all_nbest


def write_predictions_v1(result_dict, all_examples, all_features, all_results, n_best_size,
                         max_answer_length, output_prediction_file, output_nbest_file):
    """Writes predictions.json and nbest_predictions.json as the original's
    `write_predictions_v1` (the same signature; `all_results` and `max_answer_length` are
    unused there too: `accumulate_predictions_v1` used them). Returns the predictions
    (OrderedDict qas_id -> text)."""
    del all_results, max_answer_length
    logging.info("Writing predictions to: %s", output_prediction_file)
    logging.info("Writing nbest to: %s", output_nbest_file)
    predictions, nbest = predictions_v1(result_dict, all_examples, all_features, n_best_size)
    files.write_atomic(output_prediction_file, dumps_json(predictions))
    files.write_atomic(output_nbest_file, dumps_json(nbest))
    return predictions
