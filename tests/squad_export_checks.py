"""Checks shared by the SQuAD export tests (tests/test_export.py: WordPiece;
tests/test_serving_squad_albert.py: SentencePiece)."""

import numpy as np
import tensorflow as tf

from bert_tf.evaluation.squad_predictions import compute_predictions


def assert_v2_export_equals_run_squad(module, questions, contexts, examples, features, results,
                                      options, threshold, special_tokens=None):
    """A --version_2_with_negative SQuAD export module, called in this process on
    `questions` / `contexts` (string lists, one per example), answers as run_squad.py's
    predictions of `examples` from the Python path's `features` and `results`:
    the same answers; null_score_diff and the start / end logits of the best non-empty n-best
    entry (0, 0 without one) within 1e-5 (float32 logits of order 1, summed in float64).

    Args:
      options: dict with n_best_size and max_answer_length (the export's).
      threshold: --null_score_diff_threshold of the export.
      special_tokens: the family's (default WordPiece's), for compute_predictions.
    Returns:
      (answers: list of str, odds: list of float, the null odds per example), for the
      caller's checks of which cases occur.
    """
    got = {k: v.numpy() for k, v in module.serve(tf.constant(questions),
                                                   tf.constant(contexts)).items()}
    predictions, nbest, null_odds = compute_predictions(
        examples, features, results, options["n_best_size"], options["max_answer_length"],
        True, True, threshold, special_tokens=special_tokens)
    answers = [x.decode("utf-8") for x in got["answer"]]
    assert answers == [predictions[e.qas_id] for e in examples]
    odds = [null_odds[e.qas_id] for e in examples]
    np.testing.assert_allclose(got["null_score_diff"], odds, atol=1e-5, rtol=0)
    for i, example in enumerate(examples):
        best = next((x for x in nbest[example.qas_id] if x["text"]), None)
        logits = [best["start_logit"], best["end_logit"]] if best else [0.0, 0.0]
        np.testing.assert_allclose([got["start_logit"][i], got["end_logit"][i]], logits,
                                   atol=1e-5, rtol=0)
    return answers, odds
