"""bert_tf.evaluation.squad_eval: EM / F1 of the official SQuAD 1.1 and 2.0 definitions, worked
by hand."""

import json

import pytest

from bert_tf.evaluation import squad_eval
from bert_tf.evaluation.squad_eval import evaluate, exact_match_score, f1_score, normalize_answer


def _data(questions, version="1.1"):
    """questions: list of (id, [gold texts]) -> a SQuAD data dict."""
    return {"version": version, "data": [{"title": "t", "paragraphs": [{
        "context": "unused", "qas": [
            {"id": qid, "question": "?", "answers": [{"text": t, "answer_start": 0}
                                                     for t in gold],
             **({"is_impossible": not gold} if version.startswith("v2") else {})}
            for qid, gold in questions]}]}]}


def test_normalization():
    assert normalize_answer("The  Cat's\tHat!") == "cats hat"
    assert normalize_answer("An apple, a pear and THE end.") == "apple pear and end"
    # Articles only as whole words; punctuation removed before articles ("a-b" -> "ab").
    assert normalize_answer("theatre another a-b") == "theatre another ab"
    assert normalize_answer("  (1895-1943).  ") == "18951943"
    assert normalize_answer("the") == ""


def test_exact_and_f1_single_pair():
    assert exact_match_score("the Eiffel Tower", "Eiffel tower.") == 1
    assert exact_match_score("Eiffel", "Eiffel Tower") == 0
    # pred tokens [eiffel], gold [eiffel, tower]: P = 1, R = 1/2 -> F1 = 2/3.
    assert f1_score("Eiffel", "the Eiffel Tower") == pytest.approx(2 / 3)
    # pred [paris, paris, france], gold [paris, france]: common {paris:1, france:1} = 2,
    # P = 2/3, R = 1 -> F1 = 0.8.
    assert f1_score("Paris, Paris, France", "Paris France") == pytest.approx(0.8)
    assert f1_score("London", "Paris") == 0
    # Empty sides: 0 in 1.1; in 2.0, 1 when both are empty.
    assert f1_score("", "") == 0
    assert f1_score("", "", version_2=True) == 1
    assert f1_score("the", "", version_2=True) == 1  # "the" normalizes to nothing
    assert f1_score("Paris", "", version_2=True) == 0


def test_v1_max_over_gold_answers_and_missing_prediction(capsys):
    data = _data([("q1", ["Eiffel Tower", "the tower"]),  # pred "tower": EM 1 via "the tower"
                  ("q2", ["Paris France", "France"]),      # F1 max(0.8, 0.5) = 0.8, EM 0
                  ("q3", ["1895"]),                        # missing -> 0
                  ("q4", ["Denver Broncos"])])             # pred "Broncos": F1 2/3
    preds = {"q1": "tower", "q2": "Paris, Paris, France", "q4": "Broncos", "extra": "x"}
    result = evaluate(data, preds)
    assert list(result) == ["exact_match", "f1"]
    assert result["exact_match"] == pytest.approx(100.0 * 1 / 4)
    assert result["f1"] == pytest.approx(100.0 * (1 + 0.8 + 0 + 2 / 3) / 4)
    assert "1 of 4 questions have no prediction and score 0 (first: q3)" in \
        capsys.readouterr().err


V2_DATA = _data([("h1", ["Denver Broncos"]), ("h2", ["Paris"]), ("n1", []), ("n2", [])],
                version="v2.0")
V2_PREDS = {"h1": "Broncos", "h2": "Paris", "n1": "", "n2": "Paris"}
# Raw scores: h1 EM 0 F1 2/3; h2 1/1; n1 (gold "" vs "") 1/1; n2 0/0.


def test_v2_splits_without_na_probs():
    result = evaluate(V2_DATA, V2_PREDS)
    assert list(result) == ["exact", "f1", "total", "HasAns_exact", "HasAns_f1", "HasAns_total",
                            "NoAns_exact", "NoAns_f1", "NoAns_total"]
    assert result["exact"] == pytest.approx(100.0 * 2 / 4)
    assert result["f1"] == pytest.approx(100.0 * (2 / 3 + 1 + 1 + 0) / 4)
    assert result["HasAns_exact"] == pytest.approx(50.0)
    assert result["HasAns_f1"] == pytest.approx(100.0 * (2 / 3 + 1) / 2)
    assert result["NoAns_exact"] == result["NoAns_f1"] == pytest.approx(50.0)
    assert result["total"] == 4 and result["HasAns_total"] == result["NoAns_total"] == 2


def test_v2_na_prob_threshold_and_best_threshold():
    na_probs = {"h1": 0.5, "h2": -1.0, "n1": 3.0, "n2": 2.0}
    result = evaluate(V2_DATA, V2_PREDS, na_probs, na_prob_thresh=1.0)
    # Above 1.0: n1 (already "") and n2 become no-answer -> n2 scores 1.
    assert result["exact"] == pytest.approx(100.0 * 3 / 4)
    assert result["f1"] == pytest.approx(100.0 * (2 / 3 + 1 + 1 + 1) / 4)
    # Best threshold, exact: start at 2 (both unanswerable right when everything is null);
    # by na_prob: h2 (-1.0) +1 -> 3 (best, thresh -1.0); h1 (0.5) +0 -> 3; n2 (2.0) -1 -> 2;
    # n1 (3.0) +0 -> 2. So 75% at -1.0.
    assert result["best_exact"] == pytest.approx(75.0)
    assert result["best_exact_thresh"] == -1.0
    # F1: h2 +1 -> 3 (thresh -1.0); h1 +2/3 -> 3.667 (best, thresh 0.5); n2 -1; n1 0.
    assert result["best_f1"] == pytest.approx(100.0 * (3 + 2 / 3) / 4)
    assert result["best_f1_thresh"] == 0.5


def test_v2_gold_answers_that_normalize_to_nothing():
    # "The" normalizes to "": the question is answerable (answers non-empty) but its gold is "".
    data = _data([("q", ["The"])], version="v2.0")
    result = evaluate(data, {"q": ""})
    assert result["HasAns_exact"] == 100.0 and "NoAns_total" not in result


def test_version_detection_and_override():
    data = _data([("q", ["Paris"])])
    assert "exact_match" in evaluate(data, {"q": "Paris"})
    assert evaluate(data, {"q": "Paris"}, version="2.0")["exact"] == 100.0
    data["data"][0]["paragraphs"][0]["qas"].append(
        {"id": "n", "question": "?", "answers": [], "is_impossible": True})
    assert evaluate(data, {"q": "Paris", "n": ""})["NoAns_exact"] == 100.0


def test_errors():
    with pytest.raises(squad_eval.SquadEvalError, match="expected an object with a 'data'"):
        evaluate({"version": "1.1"}, {})
    with pytest.raises(squad_eval.SquadEvalError, match="predictions: expected a JSON object"):
        evaluate(_data([("q", ["x"])]), {"q": 3})
    with pytest.raises(squad_eval.SquadEvalError, match=r"na_probs: no value for 1 question\(s\) "
                                                        r"\(first: 'n2'\)"):
        evaluate(V2_DATA, V2_PREDS, {"h1": 0.0, "h2": 0.0, "n1": 0.0})


def test_command_line(tmp_path, capsys):
    data, preds, odds = tmp_path / "dev.json", tmp_path / "p.json", tmp_path / "odds.json"
    data.write_text(json.dumps(V2_DATA))
    preds.write_text(json.dumps(V2_PREDS))
    odds.write_text(json.dumps({"h1": 0.5, "h2": -1.0, "n1": 3.0, "n2": 2.0}))
    out = tmp_path / "eval.json"
    assert squad_eval.main([str(data), str(preds), "--na_prob_file", str(odds),
                            "--out_file", str(out)]) == 0
    assert json.loads(out.read_text())["best_exact"] == pytest.approx(75.0)
    assert squad_eval.main([str(data), str(preds)]) == 0
    assert json.loads(capsys.readouterr().out)["exact"] == pytest.approx(50.0)
    preds.write_text("{oops")
    assert squad_eval.main([str(data), str(preds)]) == 2
    assert f"prediction file {preds}: not JSON" in capsys.readouterr().err
