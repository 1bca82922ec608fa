"""bert_tf.evaluation.classifier_metrics on hand-worked cases, against independent loop
formulas, and the original's output lines (tests/data/classifier/expected.json)."""

import itertools
import json
import math
import random
from pathlib import Path

import numpy as np
import pytest

from bert_tf.evaluation import classifier_metrics as m

EXPECTED = json.loads(
    (Path(__file__).parent / "data" / "classifier" / "expected.json").read_text("utf-8"))

# A 2x2 confusion matrix worked by hand: TP=3, FN=1, FP=2, TN=4 (10 examples).
LABELS = [1, 1, 1, 1, 0, 0, 0, 0, 0, 0]
PREDICTIONS = [1, 1, 1, 0, 1, 1, 0, 0, 0, 0]


def test_hand_worked_confusion_matrix():
    assert m.accuracy(LABELS, PREDICTIONS) == np.float32(7 / 10)
    # precision 3/5, recall 3/4 -> F1 = 2 * 0.6 * 0.75 / 1.35 = 2/3
    assert m.f1_score(LABELS, PREDICTIONS) == np.float32(2 / 3)
    # (3*4 - 2*1) / sqrt(5 * 4 * 6 * 5) = 10 / sqrt(600)
    assert m.matthews_corrcoef(LABELS, PREDICTIONS) == np.float32(10 / math.sqrt(600))


def test_weights_drop_padding_examples():
    labels = LABELS + [1, 0]
    predictions = PREDICTIONS + [0, 1]
    weights = [1] * 10 + [0, 0]
    assert m.accuracy(labels, predictions, weights) == np.float32(0.7)
    assert m.f1_score(labels, predictions, weights) == np.float32(2 / 3)
    assert m.matthews_corrcoef(labels, predictions, weights) == np.float32(10 / math.sqrt(600))
    assert m.pearson([1, 2, 3, 99], [2, 4, 7, -5], [1, 1, 1, 0]) == m.pearson([1, 2, 3],
                                                                             [2, 4, 7])


def test_degenerate_cases_are_zero_not_nan():
    assert m.accuracy([], []) == 0.0
    assert m.accuracy([1, 0], [1, 0], [0, 0]) == 0.0
    assert m.f1_score([0, 0, 0], [0, 0, 0]) == 0.0  # no positive label or prediction
    assert m.f1_score([1, 1], [0, 0]) == 0.0  # no positive prediction: recall 0
    assert m.matthews_corrcoef([1, 1, 1], [1, 0, 1]) == 0.0  # one true class
    assert m.matthews_corrcoef([0, 1, 0], [1, 1, 1]) == 0.0  # one predicted class
    assert m.pearson([1, 1, 1], [1, 2, 3]) == 0.0
    assert m.pearson([5], [3]) == 0.0
    assert m.spearman([2, 2], [1, 2]) == 0.0
    for value in (m.pearson([], []), m.spearman([], []), m.matthews_corrcoef([], [])):
        assert value == 0.0 and not np.isnan(value)


def test_perfect_and_inverse():
    assert m.matthews_corrcoef([0, 1, 1, 0], [0, 1, 1, 0]) == 1.0
    assert m.matthews_corrcoef([0, 1, 1, 0], [1, 0, 0, 1]) == -1.0
    assert m.pearson([1, 2, 3], [10, 20, 30]) == 1.0
    assert m.spearman([1, 2, 3], [30, 2, 1]) == -1.0


def test_pearson_hand_worked():
    # x = 1,2,3,4; y = 2,1,4,3: dx = -1.5,-.5,.5,1.5, dy = -.5,-1.5,1.5,.5
    # sum dx dy = .75+.75+.75+.75 = 3; sum dx^2 = sum dy^2 = 5 -> r = 0.6
    assert m.pearson([1, 2, 3, 4], [2, 1, 4, 3]) == np.float32(0.6)


def test_average_ranks_with_ties():
    assert m.average_ranks([10, 20, 20, 5, 20]).tolist() == [2.0, 4.0, 4.0, 1.0, 4.0]
    assert m.average_ranks([3.0, 3.0]).tolist() == [1.5, 1.5]


def test_spearman_hand_worked_with_ties():
    # ranks x = 1, 2.5, 2.5, 4; ranks y = 1, 2, 3, 4 -> dx = -1.5,0,0,1.5; dy = -1.5,-.5,.5,1.5
    # sum dx dy = 4.5, sum dx^2 = 4.5, sum dy^2 = 5 -> 4.5 / sqrt(22.5)
    assert m.spearman([1, 2, 2, 3], [10, 20, 30, 40]) == np.float32(4.5 / math.sqrt(22.5))


def _loop_mcc(labels, predictions):
    tp = sum(1 for a, b in zip(labels, predictions) if a == 1 and b == 1)
    tn = sum(1 for a, b in zip(labels, predictions) if a == 0 and b == 0)
    fp = sum(1 for a, b in zip(labels, predictions) if a == 0 and b == 1)
    fn = sum(1 for a, b in zip(labels, predictions) if a == 1 and b == 0)
    d = (tp + fp) * (tp + fn) * (tn + fp) * (tn + fn)
    return (tp * tn - fp * fn) / math.sqrt(d) if d else 0.0


def _loop_pearson(x, y):
    n = len(x)
    mx, my = sum(x) / n, sum(y) / n
    sxy = sum((a - mx) * (b - my) for a, b in zip(x, y))
    sxx = sum((a - mx) ** 2 for a in x)
    syy = sum((b - my) ** 2 for b in y)
    return sxy / math.sqrt(sxx * syy) if sxx and syy else 0.0


def _loop_ranks(x):
    # rank = 1 + (number smaller) + (number equal - 1) / 2
    return [1 + sum(b < a for b in x) + (sum(b == a for b in x) - 1) / 2 for a in x]


def test_against_independent_loop_formulas():
    rng = random.Random(7)
    for _ in range(200):
        n = rng.randrange(2, 30)
        labels = [rng.randrange(2) for _ in range(n)]
        predictions = [rng.randrange(2) for _ in range(n)]
        assert m.matthews_corrcoef(labels, predictions) == pytest.approx(
            _loop_mcc(labels, predictions), abs=1e-6)
        x = [rng.randrange(6) * 0.5 for _ in range(n)]
        y = [rng.uniform(0, 5) for _ in range(n)]
        assert m.pearson(x, y) == pytest.approx(_loop_pearson(x, y), abs=1e-6)
        assert m.spearman(x, y) == pytest.approx(
            _loop_pearson(_loop_ranks(x), _loop_ranks(y)), abs=1e-6)


def test_multiclass_mcc_matches_the_two_class_formula_when_binary():
    for labels in itertools.product([0, 1], repeat=5):
        predictions = labels[1:] + labels[:1]
        assert m.matthews_corrcoef(labels, predictions) == pytest.approx(
            _loop_mcc(labels, predictions), abs=1e-6)
    # Three classes, worked by hand: C = [[2,0,0],[0,1,1],[0,1,1]] (rows true), s=6, c=4,
    # t = p = (2,2,2): (4*6 - 12) / sqrt((36-12)(36-12)) = 0.5
    assert m.matthews_corrcoef([0, 0, 1, 1, 2, 2], [0, 0, 1, 2, 1, 2]) == np.float32(0.5)


def test_task_metrics_keys():
    logits = np.array([[0.1, 0.9], [2.0, -1.0], [0.3, 0.2], [-1.0, 1.0]], np.float32)
    labels = [1, 0, 1, 1]
    assert m.task_metrics("MRPC", labels, logits) == {"eval_f1": np.float32(2 * 2 / (4 + 1))}
    assert m.task_metrics("qqp", labels, [1, 0, 0, 1])["eval_f1"] == np.float32(0.8)
    assert set(m.task_metrics("cola", labels, logits)) == {"eval_mcc"}
    stsb = m.task_metrics("stsb", [1.0, 2.0, 3.0], np.array([[0.5], [2.5], [2.0]]))
    assert stsb == {"eval_pearson": m.pearson([0.5, 2.5, 2.0], [1, 2, 3]),
                    "eval_spearman": np.float32(0.5)}
    assert m.task_metrics("mnli", [0], [[1, 0, 0]]) == {}


def test_size_mismatch_is_an_error():
    with pytest.raises(ValueError, match="differ in size: 2, 3, 2"):
        m.accuracy([1, 0], [1, 0, 1], [1, 1])
    with pytest.raises(ValueError, match="non-negative"):
        m.f1_score([1], [1], [-1])


@pytest.mark.parametrize("case", EXPECTED["float_lines"], ids=lambda c: c["line"].strip())
def test_probability_lines_match_original(case):
    assert m.format_probabilities_line(case["probabilities"]) == case["line"]


def test_eval_results_text_matches_original():
    from bert_tf.training.metrics import format_results  # imports TensorFlow

    values = {key: getattr(np, kind)(value)
              for key, (kind, value) in EXPECTED["eval_results"]["values"].items()}
    assert format_results(values) == EXPECTED["eval_results"]["text"]
