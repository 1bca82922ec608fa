"""SQuAD evaluation: exact match and F1, as the official v1.1 and v2.0 scripts define them.

    python -m bert_tf.evaluation.squad_eval DATA.json predictions.json
        [--na_prob_file null_odds.json] [--na_prob_thresh 1.0] [--out_file eval.json]

Written from the definitions of the official evaluation scripts (evaluate-v1.1.py,
evaluate-v2.0.py of the SQuAD site), which are not copied here:

  normalize(s): lower case; remove every ASCII punctuation character (`string.punctuation`);
    remove the words "a", "an", "the" (regex `\\b(a|an|the)\\b`, replaced by a space); collapse
    whitespace (split and join with single spaces).
  EM(pred, gold) = normalize(pred) == normalize(gold).
  F1(pred, gold): on the normalized tokens (split on whitespace), common = the multiset
    intersection; 0 if it is empty, else 2PR / (P + R) with P = |common| / |pred tokens| and
    R = |common| / |gold tokens|.
  A question scores the maximum over its gold answers; the totals are percentages over all
    questions of the data file.

SQuAD 1.1 (data without unanswerable questions): {"exact_match", "f1"}. Gold answers are used
  as they are.
SQuAD 2.0 (data whose "version" starts with "v2" or that has `is_impossible` questions):
  - a question with an empty "answers" list is unanswerable; gold answers whose normalization
    is empty are dropped, and a question left without gold answers has the only gold answer "";
  - F1 with an empty side is 1 when both token lists are empty, else 0;
  - `na_probs` (null_odds.json) with `na_prob_thresh`: a question whose na_prob is above the
    threshold counts as answered "no answer" (score 1 if unanswerable, else 0);
  - result: exact, f1, total, then HasAns_exact/_f1/_total and NoAns_* over the answerable and
    unanswerable questions (each group present only when it has questions);
  - with `na_probs`: best_exact, best_exact_thresh, best_f1, best_f1_thresh: questions are
    taken in increasing na_prob; starting from "every question answered no-answer" (score =
    number of unanswerable questions), switching question q to its prediction adds its score
    (answerable), -1 (unanswerable, non-empty prediction) or 0; the best running total (only a
    strict improvement counts, from threshold 0.0) and the na_prob where it was reached.

Missing predictions: a question without a prediction scores 0 and counts in the totals, with
one warning naming how many are missing and the first ids (this is what the 1.1 script does;
the 2.0 script drops such questions from `exact`/`f1` and then fails on the HasAns/NoAns
splits, so we apply the 1.1 rule in both). A missing na_prob is an error: the file does not
belong to these predictions.
"""

import argparse
import collections
import json
import re
import string
import sys

from bert_tf import files

__all__ = ["SquadEvalError", "normalize_answer", "exact_match_score", "f1_score", "evaluate",
           "main"]

_PUNCTUATION = frozenset(string.punctuation)
_ARTICLES = re.compile(r"\b(a|an|the)\b", re.UNICODE)


class SquadEvalError(ValueError):
    """An input of the evaluation that cannot be used (names the file and what is wrong)."""


def normalize_answer(text):
    """Lower case, no punctuation, no articles, single spaces."""
    text = "".join(c for c in text.lower() if c not in _PUNCTUATION)
    return " ".join(_ARTICLES.sub(" ", text).split())


def exact_match_score(prediction, ground_truth):
    return int(normalize_answer(prediction) == normalize_answer(ground_truth))


def _f1(prediction_tokens, ground_truth_tokens):
    common = collections.Counter(prediction_tokens) & collections.Counter(ground_truth_tokens)
    num_same = sum(common.values())
    if num_same == 0:
        return 0
    precision = 1.0 * num_same / len(prediction_tokens)
    recall = 1.0 * num_same / len(ground_truth_tokens)
    return (2 * precision * recall) / (precision + recall)


def f1_score(prediction, ground_truth, version_2=False):
    """Token F1 of the normalized texts (2.0: 1 when both are empty, 0 when one is)."""
    pred_tokens = normalize_answer(prediction).split()
    gold_tokens = normalize_answer(ground_truth).split()
    if version_2 and (not pred_tokens or not gold_tokens):
        return int(pred_tokens == gold_tokens)
    return _f1(pred_tokens, gold_tokens)


def _questions(dataset_json, where="dataset"):
    """Yields (qid, list of gold answer texts, is_impossible flag) in file order."""
    if not isinstance(dataset_json, dict) or not isinstance(dataset_json.get("data"), list):
        raise SquadEvalError(f"{where}: not SQuAD data (expected an object with a 'data' list)")
    for entry in dataset_json["data"]:
        for paragraph in (entry.get("paragraphs") if isinstance(entry, dict) else None) or []:
            for qa in (paragraph.get("qas") if isinstance(paragraph, dict) else None) or []:
                if not isinstance(qa, dict) or "id" not in qa or not isinstance(
                        qa.get("answers"), list):
                    raise SquadEvalError(
                        f"{where}: a question without 'id' or 'answers' list: {str(qa):.80}")
                texts = []
                for answer in qa["answers"]:
                    if not isinstance(answer, dict) or not isinstance(answer.get("text"), str):
                        raise SquadEvalError(
                            f"{where}: question {qa['id']!r}: an answer without 'text'")
                    texts.append(answer["text"])
                yield qa["id"], texts, bool(qa.get("is_impossible", False))


def _is_version_2(dataset_json, questions):
    version = str(dataset_json.get("version", ""))
    return version.startswith("v2") or version.startswith("2") or any(
        impossible for _, _, impossible in questions)


def _find_best_thresh(predictions, scores, na_probs, has_answer):
    num_no_answer = sum(1 for qid in has_answer if not has_answer[qid])
    current = best = num_no_answer
    best_thresh = 0.0
    for qid in sorted(na_probs, key=lambda k: na_probs[k]):
        if qid not in scores:
            continue
        if has_answer[qid]:
            diff = scores[qid]
        else:
            # A missing prediction is wrong, like a non-empty one.
            diff = -1 if predictions.get(qid, True) else 0
        current += diff
        if current > best:
            best = current
            best_thresh = na_probs[qid]
    return 100.0 * best / len(scores), best_thresh


def evaluate(dataset_json, predictions, na_probs=None, na_prob_thresh=1.0, version=None):
    """Scores predictions against a SQuAD data file's gold answers.

    Args:
      dataset_json: the parsed data file (dict with "data").
      predictions: dict qid -> predicted text ("" = no answer).
      na_probs: dict qid -> no-answer score (null_odds.json), or None (all 0.0). 2.0 only.
      na_prob_thresh: questions whose na_prob is above it count as answered "no answer".
      version: "1.1" or "2.0" rules; None decides from the data (see the module docstring).

    Returns:
      OrderedDict: 1.1 {"exact_match", "f1"}; 2.0 {"exact", "f1", "total", "HasAns_*",
      "NoAns_*", and with na_probs "best_exact", "best_exact_thresh", "best_f1",
      "best_f1_thresh"}. Scores are percentages.

    Raises:
      SquadEvalError: data that is not SQuAD, predictions that are not {id: text}, or na_probs
        missing a question id.
    """
    questions = list(_questions(dataset_json))
    if not isinstance(predictions, dict) or not all(
            isinstance(v, str) for v in predictions.values()):
        raise SquadEvalError("predictions: expected a JSON object {question id: answer text}")
    if version is None:
        version_2 = _is_version_2(dataset_json, questions)
    elif str(version) in ("1.1", "2.0"):
        version_2 = str(version) == "2.0"
    else:
        raise SquadEvalError(f"version must be '1.1', '2.0' or None, got {version!r}")
    if not questions:
        raise SquadEvalError("dataset: no questions to evaluate")
    missing = [qid for qid, _, _ in questions if qid not in predictions]
    if missing:
        print(f"Warning: {len(missing)} of {len(questions)} questions have no prediction and "
              f"score 0 (first: {', '.join(map(str, missing[:5]))})", file=sys.stderr)

    exact, f1 = collections.OrderedDict(), collections.OrderedDict()
    has_answer = collections.OrderedDict()
    for qid, gold, _ in questions:
        if version_2:
            has_answer[qid] = bool(gold)
            gold = [g for g in gold if normalize_answer(g)] or [""]
        prediction = predictions.get(qid)
        if prediction is None or not gold:
            exact[qid] = f1[qid] = 0
            continue
        exact[qid] = max(exact_match_score(prediction, g) for g in gold)
        f1[qid] = max(f1_score(prediction, g, version_2) for g in gold)

    total = len(questions)
    if not version_2:
        return collections.OrderedDict(
            (("exact_match", 100.0 * sum(exact.values()) / total),
             ("f1", 100.0 * sum(f1.values()) / total)))

    if na_probs is not None:
        if not isinstance(na_probs, dict):
            raise SquadEvalError("na_probs: expected a JSON object {question id: number}")
        absent = [qid for qid in exact if qid in predictions and qid not in na_probs]
        if absent:
            raise SquadEvalError(
                f"na_probs: no value for {len(absent)} question(s) (first: {absent[0]!r}); "
                "is it the null_odds.json of these predictions?")
    probs = {qid: (na_probs or {}).get(qid, 0.0) for qid in exact}

    def thresholded(scores):
        # A missing prediction keeps its 0 whatever its na_prob.
        return {qid: float(not has_answer[qid])
                if qid in predictions and probs[qid] > na_prob_thresh else s
                for qid, s in scores.items()}

    exact_t, f1_t = thresholded(exact), thresholded(f1)

    def summary(qids):
        n = len(qids)
        return (("exact", 100.0 * sum(exact_t[q] for q in qids) / n),
                ("f1", 100.0 * sum(f1_t[q] for q in qids) / n), ("total", n))

    out = collections.OrderedDict(summary(list(exact)))
    for prefix, wanted in (("HasAns", True), ("NoAns", False)):
        qids = [q for q in exact if has_answer[q] == wanted]
        if qids:
            out.update((f"{prefix}_{k}", v) for k, v in summary(qids))
    if na_probs is not None:
        out["best_exact"], out["best_exact_thresh"] = _find_best_thresh(
            predictions, exact, probs, has_answer)
        out["best_f1"], out["best_f1_thresh"] = _find_best_thresh(
            predictions, f1, probs, has_answer)
    return out


def _load(path, what):
    try:
        with open(path, encoding="utf-8") as f:
            return json.load(f)
    except FileNotFoundError:
        raise SquadEvalError(f"{what} {path}: no such file") from None
    except (UnicodeDecodeError, json.JSONDecodeError) as e:
        raise SquadEvalError(f"{what} {path}: not JSON ({e})") from None


def main(argv=None):
    parser = argparse.ArgumentParser(
        prog="python -m bert_tf.evaluation.squad_eval",
        description="Exact match and F1 of SQuAD 1.1 / 2.0 predictions (official definitions).")
    parser.add_argument("data_file", help="SQuAD JSON data file with the gold answers")
    parser.add_argument("pred_file", help="predictions.json: {question id: answer text}")
    parser.add_argument("--na_prob_file", help="null_odds.json (2.0): {question id: score}")
    parser.add_argument("--na_prob_thresh", type=float, default=1.0,
                        help="predict no answer when the na_prob is above this (default 1.0)")
    parser.add_argument("--out_file", help="write the result JSON here instead of stdout")
    args = parser.parse_args(argv)
    try:
        dataset = _load(args.data_file, "data file")
        predictions = _load(args.pred_file, "prediction file")
        na_probs = _load(args.na_prob_file, "na_prob file") if args.na_prob_file else None
        result = evaluate(dataset, predictions, na_probs, args.na_prob_thresh)
    except SquadEvalError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    text = json.dumps(result, indent=2)
    if args.out_file:
        try:
            files.write_atomic(args.out_file, text + "\n")
        except files.OutputError as e:
            print(f"error: {e}", file=sys.stderr)
            return 2
    else:
        print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
