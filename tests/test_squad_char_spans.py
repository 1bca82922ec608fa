"""bert_tf.evaluation.squad_char_spans against google-research/albert's
accumulate_predictions_v1 / write_predictions_v1 / evaluate_v1, recorded by
tests/data/albert_squad_v1/make_expected.py: the same logits give the same files, byte for
byte (ties, padding logits among a window's best, examples the alignment dropped)."""

import gzip
import json
from pathlib import Path

import pytest

from bert_tf.albert import squad_data
from bert_tf.albert.tokenization import FullTokenizer
from bert_tf.evaluation import squad_char_spans, squad_eval, squad_predictions
from conftest import load_recorder

DATA = Path(__file__).resolve().parent / "data" / "albert_squad_v1"
EXPECTED = json.load(gzip.open(DATA / "expected.json.gz", "rt", encoding="utf-8"))
recorder = load_recorder("albert_squad_v1")


@pytest.fixture(scope="module")
def predict_set():
    import numpy as np

    tokenizer = FullTokenizer(None, recorder.DO_LOWER_CASE, recorder.SPM_MODEL)
    examples = squad_data.read_squad_examples(recorder.SQUAD_FILE, False)
    features = []
    squad_data.convert_examples_to_features(
        examples, tokenizer, recorder.MAX_SEQ_LENGTH, recorder.DOC_STRIDE,
        recorder.MAX_QUERY_LENGTH, False, features.append, recorder.DO_LOWER_CASE)
    forward = np.load(DATA / "forward.npz")
    logits = {"model": (forward["start_logits"], forward["end_logits"]),
              "synthetic": recorder.synthetic_logits(features)}
    return examples, features, logits


def _write(predict_set, name, tmp_path):
    examples, features, logits = predict_set
    source, n_best, max_answer = recorder.PREDICTION_RUNS[name]
    start, end = logits[source]
    results = [squad_char_spans.RawResult(f.unique_id, start[i], end[i])
               for i, f in enumerate(features)]
    result_dict = {}
    squad_char_spans.accumulate_predictions_v1(result_dict, examples, features, results,
                                               n_best, max_answer)
    paths = [tmp_path / "predictions.json", tmp_path / "nbest_predictions.json"]
    predictions = squad_char_spans.write_predictions_v1(
        result_dict, examples, features, results, n_best, max_answer, *map(str, paths))
    return predictions, [p.read_text(encoding="utf-8") for p in paths]


@pytest.mark.parametrize("name", sorted(recorder.PREDICTION_RUNS))
def test_files_equal_the_originals(predict_set, name, tmp_path):
    expected = EXPECTED["predictions"][name]
    predictions, texts = _write(predict_set, name, tmp_path)
    assert texts[0] == expected["predictions.json"]
    assert texts[1] == expected["nbest_predictions.json"]
    dataset = json.loads(Path(recorder.SQUAD_FILE).read_text(encoding="utf-8"))
    assert dict(squad_eval.evaluate(dataset, predictions, version="1.1")) == \
        expected["evaluate_v1"]


def test_the_runs_cover_their_cases(predict_set, tmp_path):
    """Dropped examples answer "empty"; padding takes n-best places; ties exist; the
    "log_prob" fields are the logits themselves."""
    examples, features, logits = predict_set
    nbest = json.loads(EXPECTED["predictions"]["synthetic/20/30"]["nbest_predictions.json"])
    dropped = {e.qas_id for i, e in enumerate(examples)
               if not any(f.example_index == i for f in features)}
    assert dropped and all(nbest[q] == [{"text": "empty", "probability": 1.0,
                                         "start_log_prob": 0.0, "end_log_prob": 0.0}]
                           for q in dropped)
    start, end = logits["synthetic"]
    assert any(len(set(row.tolist())) < len(row) for row in start)
    padded = [i for i, f in enumerate(features)
              if i % 3 == 0 and features[i].paragraph_len < recorder.MAX_SEQ_LENGTH]
    assert padded and all(
        squad_predictions.get_best_indexes(start[i], 1)[0] >= features[i].paragraph_len
        for i in padded)
    values = {round(float(x), 6) for row in start for x in row}
    assert all(round(e["start_log_prob"], 6) in values
               for entries in nbest.values() for e in entries if e["text"] != "empty")


def test_best_indexes_ties_go_to_the_lower_position():
    assert squad_predictions.get_best_indexes([0.5, 1.0, 0.5, 1.0, 0.2], 3) == [1, 3, 0]
    assert squad_predictions.get_best_indexes([1.0], 5) == [0]
    assert squad_predictions.get_best_indexes([1.0, 2.0], 0) == []


def test_missing_result_is_named(predict_set):
    examples, features, _ = predict_set
    with pytest.raises(squad_predictions.PredictionError, match=str(features[0].unique_id)):
        squad_char_spans.accumulate_predictions_v1({}, examples, features, [], 20, 30)
