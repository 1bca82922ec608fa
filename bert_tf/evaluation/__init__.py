"""Evaluation: metrics of the fine-tuning tasks and SQuAD's answers and scores.

  classifier_metrics.py  classification metrics and output lines (run_classifier.py)
  tagging_metrics.py     entity-level scores, as conlleval (run_tagging.py)
  squad_predictions.py   SQuAD post-processing: per-window logits -> answers, n-best lists,
                         null odds (run_squad.py's write_predictions)
  squad_beam_predictions.py  SQuAD 2.0 post-processing of a beam head: start/end beams and
                         answerability per window -> answers, n-best lists, null odds, the
                         null threshold chosen on the answers (ALBERT's run_squad_v2)
  squad_eval.py          the official SQuAD 1.1 / 2.0 evaluation
                         (`python -m bert_tf.evaluation.squad_eval DATA.json predictions.json`)
"""
