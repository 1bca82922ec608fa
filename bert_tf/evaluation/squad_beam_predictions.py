"""SQuAD 2.0 post-processing of a beam head (XLNet's, google-research/albert's run_squad_v2):
per-window beams of start and end positions and an answerability logit -> predictions.json,
nbest_predictions.json, null_odds.json, with the null threshold chosen on the predict file's
answers.

The same files, byte for byte, as the original's `squad_utils.accumulate_predictions_v2`,
`write_predictions_v2` and `evaluate_v2`:

  - `accumulate`: per window, each of the start_n_top x end_n_top beam entries (start i, its
    end j at i * end_n_top + j) is a candidate span when its start is in the window's context
    (after the first `sep` token) and has there its most context, its end is in the context,
    end >= start and end - start + 1 <= max_answer_length; a span's (start, end) log-probs are
    listed under the window (calling `accumulate` again, e.g. for another pass over the same
    windows, lists more). The example's null score is the smallest cls_logits of its windows
    (1000000 when it has none).
  - `write_predictions`: a span's score is the mean of its listed start log-probs plus the mean
    of its end log-probs; spans of all the example's windows sorted by score (stable: window
    order, then beam order on ties); texts are the paragraph's characters from the start piece's
    first to the end piece's last character, `.strip()`ed (no `get_final_text`); the first
    `n_best_size` distinct texts are kept ("", -1e6, -1e6 when none); probabilities a softmax
    of the scores. null_odds.json holds the mean of the example's null scores; the prediction
    is the first text when there is no threshold or the null score is below it, else "".
  - `evaluate`: predictions without threshold, then the threshold maximising F1 on the predict
    file's answers (the official SQuAD 2.0 `best_f1_thresh`, `bert_tf.evaluation.squad_eval`),
    the files written again with it, and `exact`, `f1`, `total` of those predictions (no-answer
    above na_prob_thresh 1.0, as the original's default) with `null_score_diff_threshold`.

Where we differ: a window of an example without a result raises `PredictionError` naming
its unique_id (the original: KeyError).
"""

import collections
import json

from absl import logging

from bert_tf import files
from bert_tf.evaluation import squad_eval
from bert_tf.evaluation.squad_char_spans import features_by_example
from bert_tf.evaluation.squad_predictions import PredictionError, compute_softmax

__all__ = ["RawResultV2", "accumulate", "write_predictions", "evaluate",
           "NULL_SCORE_WITHOUT_WINDOWS"]

RawResultV2 = collections.namedtuple(
    "RawResultV2", ["unique_id", "start_top_log_probs", "start_top_index", "end_top_log_probs",
                    "end_top_index", "cls_logits"])

# The null score of an example without windows (the original's starting minimum).
NULL_SCORE_WITHOUT_WINDOWS = 1000000
# The n-best entry of an example without candidate spans.
_NO_SPAN = ("", -1e6, -1e6)


def accumulate(result_dict, cls_dict, all_examples, all_features, all_results, start_n_top,
               end_n_top, max_answer_length, sep_token):
    """Adds the candidate spans and null scores of `all_results` to `result_dict` and
    `cls_dict` (see the module docstring).

    Args:
      result_dict: {example index: {unique_id: {(start, end): [(start log-prob, end log-prob),
        ...]}}} (start, end: positions in the window's context), filled in place.
      cls_dict: {example index: [null score, ...]}, filled in place.
      all_examples: the examples (`paragraph_text`, `qas_id`), in order.
      all_features: their windows: `unique_id`, `example_index`, `tokens` (the pieces),
        `tok_start_to_orig_index`, `tok_end_to_orig_index` (context piece -> paragraph
        character), `token_is_max_context` ({position: bool}).
      all_results: a `RawResultV2` per window (lists or arrays of start_n_top and start_n_top
        * end_n_top values; float32 values are widened exactly).
      start_n_top, end_n_top, max_answer_length: the run's flags.
      sep_token: the tokenizer's separator ("[SEP]"): the context starts after the first.
    """
    by_example = features_by_example(all_features)
    by_id = {result.unique_id: result for result in all_results}
    for example_index in range(len(all_examples)):
        spans_of = result_dict.setdefault(example_index, {})
        null_score = NULL_SCORE_WITHOUT_WINDOWS
        for feature in by_example[example_index]:
            spans = spans_of.setdefault(feature.unique_id, {})
            result = by_id.get(feature.unique_id)
            if result is None:
                raise PredictionError(f"no result for the window of unique_id "
                                      f"{feature.unique_id}")
            null_score = min(null_score, float(result.cls_logits))
            offset = feature.tokens.index(sep_token) + 1
            num_starts = len(feature.tok_start_to_orig_index)
            num_ends = len(feature.tok_end_to_orig_index)
            for i in range(start_n_top):
                start = int(result.start_top_index[i])
                start_log_prob = float(result.start_top_log_probs[i])
                context_start = start - offset
                if (not 0 <= context_start < num_starts
                        or not feature.token_is_max_context.get(start, False)):
                    continue
                for j in range(i * end_n_top, (i + 1) * end_n_top):
                    end = int(result.end_top_index[j])
                    if (end - offset >= num_ends or end < start
                            or end - start + 1 > max_answer_length):
                        continue
                    spans.setdefault((context_start, end - offset), []).append(
                        (start_log_prob, float(result.end_top_log_probs[j])))
        cls_dict.setdefault(example_index, []).append(null_score)


def _mean(values):
    total = 0
    for value in values:
        total += value
    return total / len(values)


def compute_predictions(result_dict, cls_dict, all_examples, all_features, n_best_size,
                        null_score_diff_threshold=None):
    """(predictions, nbest, null_odds): OrderedDicts by qas_id of the answer text, the n-best
    list (dicts text, probability, start_log_prob, end_log_prob) and the null score, from
    `accumulate`'s dicts (see the module docstring)."""
    by_example = features_by_example(all_features)
    predictions = collections.OrderedDict()
    nbest_json = collections.OrderedDict()
    null_odds = collections.OrderedDict()
    for example_index, example in enumerate(all_examples):
        features = by_example[example_index]
        candidates = []
        for feature_index, feature in enumerate(features):
            for (start, end), log_probs in result_dict[example_index][feature.unique_id].items():
                candidates.append((feature_index, start, end,
                                   _mean([p[0] for p in log_probs]),
                                   _mean([p[1] for p in log_probs])))
        candidates.sort(key=lambda c: c[3] + c[4], reverse=True)
        seen, nbest = set(), []
        for feature_index, start, end, start_log_prob, end_log_prob in candidates:
            if len(nbest) >= n_best_size:
                break
            feature = features[feature_index]
            text = example.paragraph_text[feature.tok_start_to_orig_index[start]:
                                          feature.tok_end_to_orig_index[end] + 1].strip()
            if text in seen:
                continue
            seen.add(text)
            nbest.append((text, start_log_prob, end_log_prob))
        if not nbest:
            nbest.append(_NO_SPAN)
        probabilities = compute_softmax([s + e for _, s, e in nbest])
        nbest_json[example.qas_id] = [
            collections.OrderedDict(text=text, probability=probability, start_log_prob=s,
                                    end_log_prob=e)
            for (text, s, e), probability in zip(nbest, probabilities)]
        null_score = sum(cls_dict[example_index]) / len(cls_dict[example_index])
        null_odds[example.qas_id] = null_score
        if null_score_diff_threshold is None or null_score < null_score_diff_threshold:
            predictions[example.qas_id] = nbest[0][0]
        else:
            predictions[example.qas_id] = ""
    return predictions, nbest_json, null_odds


def write_predictions(result_dict, cls_dict, all_examples, all_features, n_best_size,
                      output_prediction_file, output_nbest_file, output_null_log_odds_file,
                      null_score_diff_threshold=None):
    """Writes predictions.json, nbest_predictions.json and null_odds.json (each whole or not
    at all) as the original's write_predictions_v2; returns (predictions, null_odds)."""
    logging.info("Writing predictions to: %s", output_prediction_file)
    logging.info("Writing nbest to: %s", output_nbest_file)
    predictions, nbest, null_odds = compute_predictions(
        result_dict, cls_dict, all_examples, all_features, n_best_size,
        null_score_diff_threshold)
    for path, value in ((output_prediction_file, predictions), (output_nbest_file, nbest),
                        (output_null_log_odds_file, null_odds)):
        files.write_atomic(path, json.dumps(value, indent=4) + "\n")
    return predictions, null_odds


def evaluate(result_dict, cls_dict, dataset_json, all_examples, all_features, n_best_size,
             output_prediction_file, output_nbest_file, output_null_log_odds_file):
    """The original's evaluate_v2: the files written with the null threshold that maximises
    F1 on `dataset_json`'s answers (the parsed predict file); returns an OrderedDict `exact`,
    `f1`, `total` (of the final predictions) and `null_score_diff_threshold`.

    Raises:
      squad_eval.SquadEvalError: `dataset_json` is not SQuAD data with answer lists.
    """
    paths = (output_prediction_file, output_nbest_file, output_null_log_odds_file)
    predictions, null_odds = write_predictions(result_dict, cls_dict, all_examples,
                                               all_features, n_best_size, *paths)
    scores = squad_eval.evaluate(dataset_json, predictions, na_probs=null_odds, version="2.0")
    threshold = scores["best_f1_thresh"]
    predictions, null_odds = write_predictions(result_dict, cls_dict, all_examples,
                                               all_features, n_best_size, *paths,
                                               null_score_diff_threshold=threshold)
    scores = squad_eval.evaluate(dataset_json, predictions, na_probs=null_odds, version="2.0")
    out = collections.OrderedDict((key, scores[key]) for key in ("exact", "f1", "total"))
    out["null_score_diff_threshold"] = threshold
    return out
