"""Metrics and output lines of sentence (pair) classification, in numpy.

The original run_classifier.py reports only eval_accuracy and eval_loss (computed in the
training code). The GLUE tasks are usually reported with more; `task_metrics` gives them:

  mrpc, qqp   eval_f1        F1 of the positive class (label id 1)
  cola        eval_mcc       Matthews correlation coefficient
  sts-b       eval_pearson   Pearson correlation of predicted and gold scores
              eval_spearman  Spearman rank correlation (average ranks for ties)

Weights (the records' is_real_example, so 0 for padding examples) scale each example's
count in accuracy, F1 and MCC; the correlations use the examples with a positive weight.
Whenever a metric's formula divides by zero (no examples, no positive predictions and no
positive labels, a constant vector) it is defined as 0.0, so results never hold NaN.
Values are np.float32, like the original's metrics, so `str()` in eval_results.txt (written by
`bert_tf.training.metrics.format_results`) prints them the same way.
"""

import numpy as np

from bert_tf.data.classifier_tasks import ALIASES


def _as_arrays(labels, predictions, weights):
    labels = np.asarray(labels).reshape(-1)
    predictions = np.asarray(predictions).reshape(-1)
    if weights is None:
        weights = np.ones(labels.shape, np.float64)
    weights = np.asarray(weights, np.float64).reshape(-1)
    if not labels.shape == predictions.shape == weights.shape:
        raise ValueError(f"labels, predictions and weights differ in size: {labels.size}, "
                         f"{predictions.size}, {weights.size}")
    if np.any(weights < 0):
        raise ValueError("weights must be non-negative")
    return labels, predictions, weights


def _ratio(numerator, denominator):
    return np.float32(numerator / denominator) if denominator else np.float32(0.0)


def accuracy(labels, predictions, weights=None):
    """sum(w * [label == prediction]) / sum(w); 0.0 when sum(w) is 0.

    Args: labels, predictions: int arrays [N]; weights: float array [N] or None (all 1).
    """
    labels, predictions, weights = _as_arrays(labels, predictions, weights)
    return _ratio(np.sum(weights * (labels == predictions)), np.sum(weights))


def f1_score(labels, predictions, weights=None, positive=1):
    """F1 of the class `positive`: 2 TP / (2 TP + FP + FN), the harmonic mean of precision
    TP / (TP + FP) and recall TP / (TP + FN), counts weighted by w; 0.0 when no label and
    no prediction is positive.
    """
    labels, predictions, weights = _as_arrays(labels, predictions, weights)
    gold, predicted = labels == positive, predictions == positive
    tp = np.sum(weights * (gold & predicted))
    fp = np.sum(weights * (~gold & predicted))
    fn = np.sum(weights * (gold & ~predicted))
    return _ratio(2 * tp, 2 * tp + fp + fn)


def matthews_corrcoef(labels, predictions, weights=None):
    """Matthews correlation coefficient, from the (weighted) confusion matrix C:

      MCC = (c s - sum_k p_k t_k) / sqrt((s^2 - sum_k p_k^2) (s^2 - sum_k t_k^2))

    with s = sum of C, c = its trace, t_k = row sums (true class k), p_k = column sums
    (predicted k). For two classes this is (TP TN - FP FN) / sqrt((TP+FP)(TP+FN)(TN+FP)(TN+FN)).
    0.0 when the denominator is 0 (all labels, or all predictions, in one class).
    """
    labels, predictions, weights = _as_arrays(labels, predictions, weights)
    classes, index = np.unique(np.concatenate([labels, predictions]), return_inverse=True)
    k = len(classes)
    true_index, pred_index = index[:labels.size], index[labels.size:]
    confusion = np.zeros((k, k), np.float64)
    np.add.at(confusion, (true_index, pred_index), weights)
    s, c = confusion.sum(), np.trace(confusion)
    t, p = confusion.sum(axis=1), confusion.sum(axis=0)
    product = (s * s - np.dot(p, p)) * (s * s - np.dot(t, t))
    return _ratio(c * s - np.dot(p, t), np.sqrt(product) if product > 0 else 0.0)


def _selected(x, y, weights):
    x = np.asarray(x, np.float64).reshape(-1)
    y = np.asarray(y, np.float64).reshape(-1)
    _, _, weights = _as_arrays(x, y, weights)
    keep = weights > 0
    return x[keep], y[keep]


def _pearson(x, y):
    if x.size < 2:
        return np.float32(0.0)
    dx, dy = x - x.mean(), y - y.mean()
    denominator = np.sqrt(np.dot(dx, dx) * np.dot(dy, dy))
    if not denominator:
        return np.float32(0.0)
    return np.float32(np.clip(np.dot(dx, dy) / denominator, -1.0, 1.0))


def pearson(x, y, weights=None):
    """Pearson correlation sum(dx dy) / sqrt(sum(dx^2) sum(dy^2)), d = deviation from the mean,
    over the examples with a positive weight; 0.0 with fewer than 2 of them or a constant x or
    y."""
    return _pearson(*_selected(x, y, weights))


def average_ranks(x):
    """1-based ranks of x [N]; tied values share the mean of the ranks they span."""
    x = np.asarray(x).reshape(-1)
    order = np.argsort(x, kind="stable")
    sorted_x = x[order]
    # Starts of the runs of equal values, and each run's mean rank (first + last + 2) / 2.
    starts = np.flatnonzero(np.concatenate([[True], sorted_x[1:] != sorted_x[:-1]]))
    ends = np.concatenate([starts[1:], [x.size]])
    ranks = np.empty(x.size, np.float64)
    ranks[order] = np.repeat((starts + ends + 1) / 2.0, ends - starts)
    return ranks


def spearman(x, y, weights=None):
    """Spearman rank correlation: the Pearson correlation of the average ranks of x and y
    (over the examples with a positive weight); 0.0 when it is undefined (see `pearson`)."""
    x, y = _selected(x, y, weights)
    return _pearson(average_ranks(x), average_ranks(y))


def task_metrics(task_name, labels, outputs, weights=None):
    """The metrics usually reported for a task, beyond eval_accuracy and eval_loss.

    Args:
      task_name: str (case-insensitive; sst2/stsb aliases accepted).
      labels: int label ids [N], or float scores [N] for sts-b.
      outputs: logits or probabilities [N, num_labels] (argmax taken), or predicted label
        ids [N]; for sts-b the predicted scores [N] or [N, 1].
      weights: [N] or None (is_real_example).

    Returns:
      dict: mrpc/qqp {"eval_f1"}, cola {"eval_mcc"}, sts-b {"eval_pearson", "eval_spearman"},
      other tasks {}. Values np.float32.
    """
    name = (task_name or "").lower()
    name = ALIASES.get(name, name)
    outputs = np.asarray(outputs)
    if name == "sts-b":
        return {"eval_pearson": pearson(outputs, labels, weights),
                "eval_spearman": spearman(outputs, labels, weights)}
    predictions = outputs.argmax(axis=-1) if outputs.ndim == 2 else outputs
    if name in ("mrpc", "qqp"):
        return {"eval_f1": f1_score(labels, predictions, weights)}
    if name == "cola":
        return {"eval_mcc": matthews_corrcoef(labels, predictions, weights)}
    return {}


def format_probabilities_line(probabilities):
    """A line of test_results.tsv as the original writes it: the class probabilities [K] as
    float32, each as `str()` (shortest round-tripping text, e.g. 0.99123454), tab-joined,
    ending in a newline."""
    return "\t".join(str(p) for p in np.asarray(probabilities, np.float32).reshape(-1)) + "\n"
