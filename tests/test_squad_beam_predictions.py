"""bert_tf.evaluation.squad_beam_predictions against google-research/albert's
accumulate_predictions_v2 / write_predictions_v2 / evaluate_v2: the files they wrote and the
eval dicts they returned (tests/data/albert_squad_v2/make_expected.py) on the original's
predict features of tests/data/albert_squad_v2 and three sets of results (a trained tiny
model's, the same with --n_best_size=3 --max_answer_length=4, and results holding the gold
answers, where the threshold search has something to choose); and, with a copy of the
original, the original's functions live on random beams full of ties and repeated spans."""

import json
import random
import types
from pathlib import Path

import numpy as np
import pytest

from bert_tf.evaluation import squad_beam_predictions as beam
from bert_tf.evaluation import squad_predictions
from conftest import ALBERT_ORIGINAL_REPO

DATA = Path(__file__).resolve().parent / "data" / "albert_squad_v2"
EXPECTED = json.loads((DATA / "expected.json").read_text())
FLAGS = EXPECTED["flags"]
SEP = "[SEP]"


def fixture_features():
    """The recorded predict examples and features, as objects with the original's fields."""
    recorded = json.loads((DATA / "features.json").read_text(encoding="utf-8"))
    examples = [types.SimpleNamespace(**e) for e in recorded["examples"]]
    features = []
    for f in recorded["features"]:
        f = dict(f, token_is_max_context={int(k): v for k, v in
                                          f["token_is_max_context"].items()})
        features.append(types.SimpleNamespace(**f))
    return examples, features


def raw_results(name):
    values = np.load(DATA / name)
    return [beam.RawResultV2(int(uid), *(values[k][i] for k in beam.RawResultV2._fields[1:]))
            for i, uid in enumerate(values["unique_ids"])]


def run_ours(out_dir, results, n_best_size, max_answer_length, examples=None, features=None,
             dataset=None):
    if examples is None:
        examples, features = fixture_features()
    if dataset is None:
        dataset = json.loads((DATA / "predict.json").read_text())["data"]
    out_dir.mkdir(parents=True, exist_ok=True)
    result_dict, cls_dict = {}, {}
    beam.accumulate(result_dict, cls_dict, examples, features, results, FLAGS["start_n_top"],
                    FLAGS["end_n_top"], max_answer_length, SEP)
    return beam.evaluate(result_dict, cls_dict, {"data": dataset}, examples, features,
                         n_best_size, *(str(out_dir / f"{name}.json") for name in
                                        ("predictions", "nbest_predictions", "null_odds")))


CASES = {
    "original": ("results.npz", "eval", FLAGS["n_best_size"], FLAGS["max_answer_length"]),
    "original_small": ("results.npz", "eval_small", EXPECTED["small"]["n_best_size"],
                       EXPECTED["small"]["max_answer_length"]),
    "original_answers": ("results_answers.npz", "eval_answers", FLAGS["n_best_size"],
                         FLAGS["max_answer_length"]),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_files_and_eval_equal_the_originals(case, tmp_path):
    results, key, n_best_size, max_answer_length = CASES[case]
    scores = run_ours(tmp_path, raw_results(results), n_best_size, max_answer_length)
    assert dict(scores) == EXPECTED[key]
    assert list(scores) == ["exact", "f1", "total", "null_score_diff_threshold"]
    for name in ("predictions", "nbest_predictions", "null_odds"):
        assert (tmp_path / f"{name}.json").read_bytes() == \
            (DATA / case / f"{name}.json").read_bytes(), name


def test_the_fixture_covers_what_it_should():
    """The recorded cases hold what the comparison is for: an example without windows (its
    null score the original's 1000000), beams starting at [CLS] or ending before their
    start, a span listed twice in one window (averaged), fewer than n_best_size
    distinct texts, and a threshold that answers some questions and not others."""
    examples, features = fixture_features()
    windows = {f.example_index for f in features}
    assert len(windows) == len(examples) - 1
    null_odds = json.loads((DATA / "original" / "null_odds.json").read_text())
    assert list(null_odds.values()).count(1000000.0) == 1
    result_dict, cls_dict = {}, {}
    beam.accumulate(result_dict, cls_dict, examples, features, raw_results(
        "results_answers.npz"), FLAGS["start_n_top"], FLAGS["end_n_top"],
        FLAGS["max_answer_length"], SEP)
    assert any(len(p) == 2 for spans in result_dict.values() for window in spans.values()
               for p in window.values())
    small = json.loads((DATA / "original_small" / "nbest_predictions.json").read_text())
    assert {1, 3} <= {len(v) for v in small.values()}
    # starts at [CLS] (before the context) and ends before their start are in the beams
    values = np.load(DATA / "results.npz")
    assert (values["start_top_index"] == 0).any()
    ends = values["end_top_index"].reshape(len(features), FLAGS["start_n_top"], -1)
    assert (ends < values["start_top_index"][:, :, None]).any()
    predictions = json.loads((DATA / "original_answers" / "predictions.json").read_text())
    assert 0 < list(predictions.values()).count("") < len(predictions) - 1
    assert EXPECTED["eval_answers"]["null_score_diff_threshold"] != 0.0


def test_a_window_without_result_is_named(tmp_path):
    results = raw_results("results.npz")[1:]
    with pytest.raises(squad_predictions.PredictionError, match=str(1000000000)):
        run_ours(tmp_path, results, 20, 30)


@pytest.fixture(scope="module")
def original_squad_utils():
    if not (ALBERT_ORIGINAL_REPO / "squad_utils.py").exists():
        pytest.skip(f"no copy of google-research/albert at {ALBERT_ORIGINAL_REPO}")
    from tools.original import load_albert_module

    return load_albert_module(ALBERT_ORIGINAL_REPO, "squad_utils")


def random_results(rng, features, start_n_top, end_n_top):
    """Beams over every position of each window (question, context, padding), log-probs from
    a few values so that scores tie, spans repeated within a window."""
    values = [-0.5, -1.0, -1.5, -2.25]
    results = []
    for feature in features:
        length = len(feature.tokens) + 3
        starts = [rng.randrange(length) for _ in range(start_n_top)]
        ends = [rng.randrange(length) if rng.random() < 0.7 else starts[i // end_n_top] +
                rng.randrange(4) for i in range(start_n_top * end_n_top)]
        results.append(beam.RawResultV2(
            feature.unique_id, [rng.choice(values) for _ in starts], starts,
            [rng.choice(values) for _ in ends], ends, rng.choice([-1.0, 0.0, 0.5, 2.0])))
    return results


@pytest.mark.slow  # imports the original (TF1 graph code) once
def test_equals_the_original_functions_on_random_beams(original_squad_utils, tmp_path):
    su = original_squad_utils
    examples, features = fixture_features()
    dataset = json.loads((DATA / "predict.json").read_text())["data"]
    rng = random.Random(7)
    for trial in range(12):
        start_n_top, end_n_top = rng.choice([(5, 5), (2, 3), (1, 1)])
        n_best_size, max_answer_length = rng.choice([1, 2, 5, 20]), rng.choice([1, 3, 30])
        results = random_results(rng, features, start_n_top, end_n_top)
        passes = rng.choice([1, 2])  # a second accumulation lists every span twice
        theirs_dir, ours_dir = tmp_path / f"theirs{trial}", tmp_path / f"ours{trial}"
        theirs_dir.mkdir()
        result_dict, cls_dict = {}, {}
        for _ in range(passes):
            su.accumulate_predictions_v2(result_dict, cls_dict, examples, features,
                                         [su.RawResultV2(*r) for r in results], n_best_size,
                                         max_answer_length, start_n_top, end_n_top)
        theirs = su.evaluate_v2(result_dict, cls_dict, dataset, examples, features, results,
                                n_best_size, max_answer_length,
                                *(str(theirs_dir / f"{n}.json") for n in
                                  ("predictions", "nbest_predictions", "null_odds")))
        ours_dir.mkdir()
        result_dict, cls_dict = {}, {}
        for _ in range(passes):
            beam.accumulate(result_dict, cls_dict, examples, features, results, start_n_top,
                            end_n_top, max_answer_length, SEP)
        ours = beam.evaluate(result_dict, cls_dict, {"data": dataset}, examples, features,
                             n_best_size, *(str(ours_dir / f"{n}.json") for n in
                                            ("predictions", "nbest_predictions", "null_odds")))
        assert dict(ours) == dict(theirs), trial
        for name in ("predictions", "nbest_predictions", "null_odds"):
            assert (ours_dir / f"{name}.json").read_bytes() == \
                (theirs_dir / f"{name}.json").read_bytes(), (trial, name)
